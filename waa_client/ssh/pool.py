"""One tunnel per worker of a pool, kept alive by a background health loop."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Self

from waa_client import retry
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
        backoff_max: Cap of the wait before retrying a worker whose reconnect failed (the
            wait doubles from twice ``check_interval``: a :class:`waa_client.retry.Backoff`).
        allow_partial: When False (default), entering fails if any tunnel cannot be opened;
            when True, failed ones are retried by the loop and listed in :attr:`errors`.
        backend: ``openssh`` (``ssh`` child processes, one connection per host) or
            ``paramiko`` (forwarding in this process); default :func:`default_backend`.
        clock: Monotonic seconds the backoff counts on (a test's fake clock).
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
        clock: Callable[[], float] = time.monotonic,
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
        # workers behind one SSH endpoint share a host: it goes down and comes back as one
        self._host_of = {t.name: t.endpoint for t in self.targets}
        self._down: set[str] = set()
        # one pass serves every worker, so a down one is skipped until due, not waited for
        self.backoff: retry.Backoff[str] = retry.Backoff(
            first=2 * check_interval, cap=backoff_max, clock=clock)
        self._stop = threading.Event()
        self._loop: threading.Thread | None = None

    def retry_delay(self, failures: int) -> float:
        """Seconds before the health loop tries a worker again after ``failures`` failed
        reconnects in a row: doubling from twice the check interval, capped at ``backoff_max``."""
        return self.backoff.wait(failures)

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
            KeyboardInterrupt: Ctrl-C (or a signal taken for one) while the tunnels opened:
                the ones already open are closed again first (``__exit__`` never runs for an
                ``__enter__`` that raised, and an ``ssh -M`` left open keeps forwarding).
        """
        def open_one(tunnel: ForwardingTunnel) -> tuple[str, TunnelError | None]:
            try:
                tunnel.start()
            except TunnelError as e:
                return tunnel.target.name, e
            return tunnel.target.name, None

        workers = max(1, min(8, len(self.tunnels)))
        try:
            with ThreadPoolExecutor(max_workers=workers,
                                    thread_name_prefix="tunnel-open") as pool:
                outcomes = list(pool.map(open_one, self.tunnels.values()))
        except BaseException:
            self.stop()
            raise
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
        while not self._stop.wait(self.check_interval):
            self.check_once()

    def check_once(self) -> None:
        """One pass of the health loop: ``ensure()`` every tunnel whose backoff is over.

        A failed reconnect is recorded in :attr:`errors` and puts the worker off for
        :meth:`retry_delay`; a success clears both. Workers behind one SSH endpoint (a host
        with several) are one host here: once one of them fails in a pass, the others are put
        off with the same error, untried, and a host going down is said once (one warning that
        names it and its workers), not once per worker and retry. No error escapes (the loop
        outlives any one worker's bug).
        """
        failed: dict[str, TunnelError] = {}  # host -> this pass's error
        for name, tunnel in self.tunnels.items():
            if self._stop.is_set():
                return
            if not self.backoff.due(name):
                continue
            host = self._host_of.get(name, name)
            try:
                if host in failed:
                    raise failed[host]
                tunnel.ensure()
            except TunnelError as e:
                delay = self.backoff.failed(name)
                self.errors[name] = failed[host] = e
                if host not in self._down:
                    self._down.add(host)
                    workers = [n for n in self.tunnels if self._host_of.get(n, n) == host]
                    log.warning("tunnels to %s (%s) are down; retrying quietly (next in %.0fs): %s",
                                host, ", ".join(workers), delay, e)
            except Exception:  # the loop must outlive any one worker's bug
                log.exception("health check of %s failed unexpectedly", name)
            else:
                self.backoff.succeeded(name)
                self.errors.pop(name, None)
                if host in self._down:
                    self._down.discard(host)
                    log.info("tunnels to %s are back", host)
