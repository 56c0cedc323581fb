"""Transport benchmark: ``waa_client.transport.LeanSession`` against urllib3 and requests.

The calls a task makes to its worker (``GET /probe``, ``GET /screenshot``, ``POST /execute``)
are sent to one real simulated worker (a local pool of one, on loopback) by three clients with
the same ``(connect, read)`` timeouts and no retries:

- ``lean``: :class:`waa_client.transport.LeanSession`, what the worker clients use;
- ``urllib3``: a ``urllib3.PoolManager`` (keep-alive pool, ``retries=False``), the body read
  whole, the raw bytes returned: the least a switch to urllib3 would cost (the clients would
  read its response object instead of a ``requests.Response``);
- ``httpcore``: an ``httpcore.ConnectionPool`` (HTTP/1.1 on h11, keep-alive, the same
  timeouts as its ``connect`` and ``read`` extensions), the body read whole, raw bytes;
- ``requests``: a ``requests.Session`` (``trust_env`` off), what the clients used before.

Each client sends ``--calls`` of each request per round, the clients taking turns in a
rotating order, for ``--rounds`` rounds; the figures are the medians over rounds of the
client's CPU per call (the calling thread's CPU clock: a controller at hundreds of workers is
CPU-bound, so this is what limits it) and of the wall time per call (the worker's own time
included), with each one's ratio to ``lean`` measured in the same run. Every answer is
checked (status 200, the same screenshot bytes for every client).

Usage (from the repository root)::

    .venv/bin/python bench/transport.py [--rounds 5] [--calls 200] [--json]
"""

from __future__ import annotations

import ipaddress
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import requests
import urllib3

from bench.harness import (
    BenchInputError,
    create_local_pool,
    emit,
    isolated_home,
    machine_info,
    parser,
    progress,
    run_cli,
)
from waa_client.transport import LeanSession

PROG = "bench/transport.py"
POOL = "bench-transport"
CONNECT_TIMEOUT_S = 5.0  # the worker clients' defaults (waa_client.http)
READ_TIMEOUT_S = 60.0
EXECUTE = {"command": "wait", "shell": False}  # a verb the simulated worker answers at once
CLIENTS = ("lean", "urllib3", "httpcore", "requests")
CALLS = ("probe", "screenshot", "execute")

Send = Callable[[str, str, "dict[str, Any] | None"], "tuple[int, bytes]"]


def _lean() -> tuple[Send, Callable[[], None]]:
    session = LeanSession()

    def send(method: str, url: str, body: dict[str, Any] | None) -> tuple[int, bytes]:
        answer = session.request(method, url, timeout=(CONNECT_TIMEOUT_S, READ_TIMEOUT_S),
                                 **({"json": body} if body is not None else {}))
        return answer.status_code, answer.content

    return send, session.close


def _urllib3() -> tuple[Send, Callable[[], None]]:
    pool = urllib3.PoolManager(
        maxsize=4, retries=False,
        timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT_S, read=READ_TIMEOUT_S),
        headers={"Accept-Encoding": "identity"},
    )

    def send(method: str, url: str, body: dict[str, Any] | None) -> tuple[int, bytes]:
        answer = pool.request(method, url, json=body)
        return answer.status, answer.data

    return send, pool.clear


def _httpcore() -> tuple[Send, Callable[[], None]]:
    import json

    import httpcore

    pool = httpcore.ConnectionPool(max_connections=4, retries=0)
    timeouts = {"connect": CONNECT_TIMEOUT_S, "read": READ_TIMEOUT_S, "write": READ_TIMEOUT_S,
                "pool": CONNECT_TIMEOUT_S}

    def send(method: str, url: str, body: dict[str, Any] | None) -> tuple[int, bytes]:
        headers = [(b"Accept", b"*/*"), (b"Accept-Encoding", b"identity")]
        content = b""
        if body is not None:
            content = json.dumps(body).encode("utf-8")
            headers.append((b"Content-Type", b"application/json"))
        answer = pool.request(method, url, headers=headers, content=content,
                              extensions={"timeout": timeouts})
        return answer.status, answer.content

    return send, pool.close


def _requests() -> tuple[Send, Callable[[], None]]:
    session = requests.Session()
    session.trust_env = False

    def send(method: str, url: str, body: dict[str, Any] | None) -> tuple[int, bytes]:
        answer = session.request(method, url, json=body,
                                 timeout=(CONNECT_TIMEOUT_S, READ_TIMEOUT_S))
        return answer.status_code, answer.content

    return send, session.close


MAKERS: dict[str, Callable[[], tuple[Send, Callable[[], None]]]] = {
    "lean": _lean, "urllib3": _urllib3, "httpcore": _httpcore, "requests": _requests,
}


def _requests_of(waa_url: str) -> dict[str, tuple[str, str, dict[str, Any] | None]]:
    base = waa_url.rstrip("/")
    return {
        "probe": ("GET", f"{base}/probe", None),
        "screenshot": ("GET", f"{base}/screenshot", None),
        "execute": ("POST", f"{base}/execute", EXECUTE),
    }


def _check_loopback(url: str) -> None:
    host = urlsplit(url).hostname or ""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name: not resolved, so not known to be loopback
        loopback = False
    if not loopback:
        raise BenchInputError(f"the worker's URL {url} is not on loopback; this benchmark "
                              "connects to loopback only")


def _timed(send: Send, request: tuple[str, str, dict[str, Any] | None],
           calls: int) -> tuple[float, float, bytes]:
    """CPU and wall seconds per call over ``calls`` calls, and the last body."""
    method, url, body = request
    status, data = send(method, url, body)  # a warm connection, as in a sweep
    cpu0, wall0 = time.thread_time(), time.perf_counter()
    for _ in range(calls):
        status, data = send(method, url, body)
        if status != 200:
            raise RuntimeError(f"{method} {url} answered {status}: {data[:200]!r}")
    cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
    return cpu / calls, wall / calls, data


def measure(waa_url: str, rounds: int, calls: int) -> dict[str, Any]:
    """Per call and client: median CPU and wall microseconds per call, and ratios to lean."""
    _check_loopback(waa_url)
    targets = _requests_of(waa_url)
    cpu: dict[tuple[str, str], list[float]] = {}
    wall: dict[tuple[str, str], list[float]] = {}
    bodies: dict[str, bytes] = {}
    for index in range(rounds):
        order = CLIENTS[index % len(CLIENTS):] + CLIENTS[:index % len(CLIENTS)]
        progress(f"round {index + 1}/{rounds}: {', '.join(order)}")
        for name in order:
            send, close = MAKERS[name]()
            try:
                for call in CALLS:
                    per_cpu, per_wall, data = _timed(send, targets[call], calls)
                    cpu.setdefault((call, name), []).append(per_cpu)
                    wall.setdefault((call, name), []).append(per_wall)
                    if call == "screenshot":
                        seen = bodies.setdefault(call, data)
                        if seen != data:
                            raise RuntimeError(f"{name} read a different screenshot")
            finally:
                close()
    figures: dict[str, Any] = {}
    for call in CALLS:
        row: dict[str, Any] = {}
        base_cpu = statistics.median(cpu[(call, "lean")])
        base_wall = statistics.median(wall[(call, "lean")])
        for name in CLIENTS:
            c, w = statistics.median(cpu[(call, name)]), statistics.median(wall[(call, name)])
            row[name] = {
                "cpu_us": round(c * 1e6, 1), "wall_us": round(w * 1e6, 1),
                "cpu_ratio_to_lean": round(c / base_cpu, 2),
                "wall_ratio_to_lean": round(w / base_wall, 2),
            }
        figures[call] = row
    figures["screenshot_bytes"] = len(bodies.get("screenshot", b""))
    return figures


def _text(result: dict[str, Any]) -> str:
    lines = [f"{'call':<11} {'client':<9} {'CPU us':>8} {'x lean':>7} {'wall us':>9} {'x lean':>7}"]
    for call in CALLS:
        for name in CLIENTS:
            f = result["calls"][call][name]
            lines.append(f"{call:<11} {name:<9} {f['cpu_us']:>8.1f} {f['cpu_ratio_to_lean']:>7.2f}"
                         f" {f['wall_us']:>9.1f} {f['wall_ratio_to_lean']:>7.2f}")
    lines.append(f"screenshot: {result['calls']['screenshot_bytes']} bytes; "
                 f"{result['rounds']} rounds of {result['calls_per_round']} calls; "
                 f"load average {result['machine']['load_average_1m']}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; returns the exit status."""
    p = parser(PROG, __doc__.splitlines()[0] if __doc__ else PROG)
    p.add_argument("--rounds", type=int, default=5, help="rounds, clients in turn (default 5)")
    p.add_argument("--calls", type=int, default=200, help="calls of each kind per round")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    if args.rounds < 1 or args.calls < 1:
        raise BenchInputError("--rounds and --calls must be at least 1")
    from oa_vm.model import state

    with isolated_home():
        progress("starting a local pool of one worker")
        create_local_pool(POOL, 1)
        worker = state.load(POOL).workers[0]
        if not worker.waa_url:
            raise BenchInputError("the local worker has no WAA URL")
        result = {
            "machine": machine_info(), "rounds": args.rounds, "calls_per_round": args.calls,
            "urllib3": version("urllib3"), "httpcore": version("httpcore"),
            "requests": version("requests"),
            "calls": measure(worker.waa_url, args.rounds, args.calls),
        }
    emit(result, args.json, _text(result))
    return 0


if __name__ == "__main__":
    run_cli(main, PROG)
