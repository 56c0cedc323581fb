"""One tunnel per worker of a pool, kept alive by a background health loop."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Self

from waa_client.errors import TunnelError
from waa_client.ssh.backends import default_backend, make_tunnel
from waa_client.ssh.base import ForwardingTunnel, TunnelTarget

log = logging.getLogger("waa_client.ssh")


class PoolTunnels:
    """One :class:`WorkerTunnel` per worker, kept alive by a background health loop.

    Use as a context manager: entering opens every tunnel (in parallel) and starts the loop;
    leaving stops the loop and every tunnel, leaving no thread and no listening port behind.

    Args:
        targets: One per worker; names must be unique.
        known_hosts: The pool's known_hosts file.
        keepalive: Seconds between SSH keepalives.
        connect_timeout: Seconds for each connect.
        check_interval: Seconds between health checks of each tunnel.
        backoff_max: Cap of the wait before retrying a worker whose reconnect failed.
        allow_partial: When False (default), entering fails if any tunnel cannot be opened;
            when True, failed ones are retried by the loop and listed in :attr:`errors`.
        backend: ``openssh`` (``ssh`` child processes, one connection per host) or
            ``paramiko`` (forwarding in this process); default :func:`default_backend`.
    """

    def __init__(
        self,
        targets: Iterable[TunnelTarget],
        known_hosts: Path,
        *,
        keepalive: float = 15.0,
        connect_timeout: float = 10.0,
        check_interval: float = 5.0,
        backoff_max: float = 60.0,
        allow_partial: bool = False,
        backend: str | None = None,
    ) -> None:
        self.targets = list(targets)
        self.backend = backend or default_backend()
        names = [t.name for t in self.targets]
        if len(set(names)) != len(names):
            raise ValueError(f"worker names must be unique, got {names}")
        self.check_interval = check_interval
        self.backoff_max = backoff_max
        self.allow_partial = allow_partial
        self.tunnels: dict[str, ForwardingTunnel] = {
            t.name: make_tunnel(
                t, known_hosts, backend=self.backend, keepalive=keepalive,
                connect_timeout=connect_timeout, reconnect_attempts=1, backoff_max=backoff_max,
            )
            for t in self.targets
        }
        self.errors: dict[str, TunnelError] = {}
        self._stop = threading.Event()
        self._loop: threading.Thread | None = None

    def retry_delay(self, failures: int) -> float:
        """Seconds before the health loop tries a worker again after ``failures`` failed
        reconnects in a row: doubling from the check interval, capped at ``backoff_max``."""
        return float(min(self.backoff_max, self.check_interval * 2 ** failures))

    def __getitem__(self, name: str) -> ForwardingTunnel:
        return self.tunnels[name]

    def __iter__(self) -> Iterator[ForwardingTunnel]:
        return iter(self.tunnels.values())

    def urls(self) -> dict[str, tuple[str, str]]:
        """Worker name -> ``(local_waa_url, local_scoring_url)`` for every started tunnel."""
        return {
            name: (t.local_waa_url, t.local_scoring_url)
            for name, t in self.tunnels.items()
            if t.local_ports != (0, 0)
        }

    def start(self) -> None:
        """Open every tunnel and start the health loop.

        Raises:
            TunnelError: A tunnel failed and ``allow_partial`` is False (all are closed again).
        """
        def open_one(tunnel: ForwardingTunnel) -> tuple[str, TunnelError | None]:
            try:
                tunnel.start()
            except TunnelError as e:
                return tunnel.target.name, e
            return tunnel.target.name, None

        workers = max(1, min(8, len(self.tunnels)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tunnel-open") as pool:
            outcomes = list(pool.map(open_one, self.tunnels.values()))
        self.errors = {name: e for name, e in outcomes if e is not None}
        if self.errors and not self.allow_partial:
            self.stop()
            raise next(iter(self.errors.values()))
        self._stop.clear()
        self._loop = threading.Thread(target=self._run, name="pool-tunnels-health", daemon=True)
        self._loop.start()

    def stop(self) -> None:
        """Stop the health loop and every tunnel. Idempotent."""
        self._stop.set()
        if self._loop is not None:
            self._loop.join()
            self._loop = None
        for tunnel in self.tunnels.values():
            tunnel.stop()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _run(self) -> None:
        """Check each tunnel every ``check_interval``; back off per worker after a failure."""
        failures: dict[str, int] = {}
        next_try: dict[str, float] = {}
        while not self._stop.wait(self.check_interval):
            for name, tunnel in self.tunnels.items():
                if self._stop.is_set():
                    return
                if time.monotonic() < next_try.get(name, 0.0):
                    continue
                try:
                    tunnel.ensure()
                except TunnelError as e:
                    failures[name] = failures.get(name, 0) + 1
                    delay = self.retry_delay(failures[name])
                    next_try[name] = time.monotonic() + delay
                    self.errors[name] = e
                    log.warning("tunnel to %s still down (retry in %.0fs): %s", name, delay, e)
                except Exception:  # the loop must outlive any one worker's bug
                    log.exception("health check of %s failed unexpectedly", name)
                else:
                    failures.pop(name, None)
                    next_try.pop(name, None)
                    self.errors.pop(name, None)
