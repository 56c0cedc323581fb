"""Start a real simulated worker process (``python -m infra.local``) for a test.

Usage::

    from tests.support.worker_proc import running_worker

    def test_something(tmp_path):
        with running_worker(tmp_path, faults=["latency=0.1"]) as worker:
            requests.get(worker.waa_url + "/probe", timeout=5)

or, for a process the test stops itself (to check its exit status)::

    worker = start_worker_process(tmp_path)
    try:
        ...
        assert worker.stop() == 0
    finally:
        worker.kill()

The process logs to ``worker.log_path``; its tail is put in the error when it fails to start.

Like the local provider, the helper hands the worker a secret through a 0600 ``--secret-file``;
the URLs (``worker.waa_url``, ``worker.url(i, "scoring")``) carry it, as a pool record's do.
This is the one place tests get a worker's URL from: never build ``http://127.0.0.1:{port}``
from the ports alone (a request without the secret is refused with 403). A tunnel to a worker
forwards its ports; give the tunnel target ``base_path=worker.base_path``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.local.access import new_secret
from tests.support.waiting import WAIT_LIMIT_S
from waa_client.poll import poll_until

PROJECT_ROOT = Path(__file__).resolve().parents[2]


class WorkerStartError(RuntimeError):
    """The worker process exited or did not write its ready file in time."""


@dataclass
class WorkerProcess:
    """A running ``python -m infra.local`` and what its ready file says."""

    proc: subprocess.Popen[bytes]
    ready_file: Path
    log_path: Path
    ready: dict[str, Any] = field(default_factory=dict)
    secret: str | None = None

    @property
    def workers(self) -> list[dict[str, Any]]:
        """The ready file's ``workers`` entries (name, host, waa_port, scoring_port, root)."""
        return list(self.ready.get("workers", []))

    def url(self, index: int = 0, server: str = "waa") -> str:
        """``http://host:port/<secret>`` of worker ``index``'s ``waa`` or ``scoring`` server."""
        return str(self.workers[index][server + "_url"])

    @property
    def base_path(self) -> str:
        """The path every URL of this process's workers starts with (``/<secret>``)."""
        return "" if self.secret is None else f"/{self.secret}"

    @property
    def waa_url(self) -> str:
        """The first worker's WAA server."""
        return self.url(0, "waa")

    @property
    def scoring_url(self) -> str:
        """The first worker's scoring server."""
        return self.url(0, "scoring")

    def log(self) -> str:
        """What the process wrote to stderr so far."""
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def stop(self, timeout: float = 10.0) -> int:
        """Send SIGTERM and wait; returns the exit status (kills it if it does not exit)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise

    def kill(self) -> None:
        """Kill the process if it still runs (a finaliser: never raises)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


def start_worker_process(
    tmp_path: Path,
    *,
    name: str = "w",
    faults: Sequence[str] = (),
    count: int = 1,
    tasks: Path | None = None,
    extra_args: Sequence[str] = (),
    timeout: float = WAIT_LIMIT_S,
    auth: bool = True,
) -> WorkerProcess:
    """Start ``python -m infra.local`` under ``tmp_path`` and wait for its ready file.

    Args:
        tmp_path: folder for the worker's root, ready file and log.
        name: worker name.
        faults: ``KEY=VALUE`` fault knobs.
        count: workers in the process.
        tasks: task folder (default: the bundled suite).
        extra_args: more command-line arguments.
        timeout: seconds to wait for the ready file.
        auth: False starts it with ``--no-auth`` (a stand-in for a guest that WAA's own code
            calls at ``http://<vm_ip>:5000``, with no room for a secret).

    Raises:
        WorkerStartError: the process exited first, or timed out (the process is killed).
    """
    base = tmp_path / f"worker-{name}"
    base.mkdir(parents=True, exist_ok=True)
    ready_file, log_path = base / "ready.json", base / "worker.log"
    args = [sys.executable, "-m", "infra.local", "--name", name, "--root", str(base / "root"),
            "--ready-file", str(ready_file), "--count", str(count)]
    secret: str | None = None
    if auth:
        secret = new_secret()
        secret_file = base / "secret"
        fd = os.open(secret_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secret + "\n")
        args += ["--secret-file", str(secret_file)]
    else:
        args.append("--no-auth")
    for knob in faults:
        args += ["--fault", knob]
    if tasks is not None:
        args += ["--tasks", str(tasks)]
    args += list(extra_args)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            args, cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL, stderr=log, env=env
        )
    worker = WorkerProcess(proc=proc, ready_file=ready_file, log_path=log_path, secret=secret)

    def ready() -> bool:
        if proc.poll() is not None:
            raise WorkerStartError(f"worker exited with {proc.returncode}:\n{worker.log()[-2000:]}")
        return ready_file.exists()

    if not poll_until(ready, timeout_s=timeout, interval_s=0.02):
        worker.kill()
        raise WorkerStartError(f"no ready file after {timeout:g} s:\n{worker.log()[-2000:]}")
    worker.ready = json.loads(ready_file.read_text(encoding="utf-8"))
    return worker


@contextmanager
def running_worker(tmp_path: Path, **kwargs: Any) -> Iterator[WorkerProcess]:
    """:func:`start_worker_process` as a context manager that always stops the process."""
    worker = start_worker_process(tmp_path, **kwargs)
    try:
        yield worker
    finally:
        try:
            worker.stop()
        finally:
            worker.kill()
