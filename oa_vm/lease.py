"""One run at a time per pool: a lease in the pool's folder (``lease.json``).

Two runs on one pool would share the workers' desktops and fail each other's tasks, so a run
holds the pool's lease for as long as it dispatches. The lease names its holder (host, pid, the
process's start time, the run) and carries a heartbeat the holder refreshes. A lease is taken
over only when its holder is provably gone: on this host, its process no longer exists (or the
pid was reused by another process); on another host, its heartbeat is older than
:data:`STALE_AFTER_S`. Check-and-take happens under an ``flock`` on ``lease.lock``, so two runs
starting at once cannot both win.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil

from oa_vm import safe_fs, state
from oa_vm.errors import PoolBusyError, PoolInUseError

HEARTBEAT_S = 10.0
STALE_AFTER_S = 120.0
_WAIT_POLL_S = 0.5


def lease_path(pool: str) -> Path:
    """The pool's lease file."""
    return state.pool_dir(pool) / "lease.json"


def _process_start(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def read_lease(pool: str) -> dict[str, Any] | None:
    """The lease as written, or ``None`` when there is none (an unreadable one counts as none:
    it was half-written by a holder that died, since writes are atomic otherwise)."""
    try:
        data = json.loads(lease_path(pool).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def holder_alive(lease: dict[str, Any], *, now: float | None = None) -> bool:
    """Whether the lease's holder may still be running (see the module docstring)."""
    if lease.get("host") == socket.gethostname():
        pid = lease.get("pid")
        if not isinstance(pid, int):
            return False
        started = _process_start(pid)
        if started is None:
            return False
        recorded = lease.get("pid_start")
        return not isinstance(recorded, (int, float)) or abs(started - recorded) < 1.0
    beat = lease.get("heartbeat")
    if not isinstance(beat, (int, float)):
        return False
    return (now or time.time()) - beat < STALE_AFTER_S


def describe(lease: dict[str, Any]) -> str:
    """``run 'x' (pid 123 on host, heartbeat 4s ago)``; an operation's lease (see
    :func:`guard_pool`) reads ``oa-vm pool-pause (pid 123 ...)``."""
    age = time.time() - float(lease.get("heartbeat") or 0)
    operation = lease.get("operation")
    who = f"oa-vm {operation}" if operation else f"run {lease.get('run')!r}"
    return (
        f"{who} (pid {lease.get('pid')} on {lease.get('host')}, "
        f"heartbeat {max(0, int(age))}s ago)"
    )


def held_by_this_process(lease: dict[str, Any]) -> bool:
    """Whether the lease was taken by the calling process (a run acting on its own pool)."""
    return lease.get("host") == socket.gethostname() and lease.get("pid") == os.getpid()


@contextlib.contextmanager
def _locked(pool: str) -> Iterator[None]:
    folder = state.pool_dir(pool)
    # 0600 whatever the umask, never through a symlink (oa_vm.safe_fs)
    with os.fdopen(safe_fs.open_private(folder / "lease.lock"), "a", encoding="utf-8") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _ours(lease: dict[str, Any] | None, token: str) -> bool:
    return lease is not None and lease.get("token") == token


def try_acquire(
    pool: str, run: str, token: str, *, operation: str | None = None
) -> dict[str, Any] | None:
    """Take the lease if it is free or its holder is gone; else return the holder's lease.

    ``operation`` marks a lease taken by an ``oa-vm`` command rather than a run (it is named
    that way to whoever is refused)."""
    with _locked(pool):
        current = read_lease(pool)
        if current is not None and not _ours(current, token) and holder_alive(current):
            return current
        pid = os.getpid()
        lease: dict[str, Any] = {
            "host": socket.gethostname(), "pid": pid, "pid_start": _process_start(pid),
            "run": run, "token": token, "acquired": time.time(), "heartbeat": time.time(),
        }
        if operation:
            lease["operation"] = operation
        state.atomic_write_json(lease_path(pool), lease)
        return None


def _beat(pool: str, token: str) -> bool:
    """Refresh our heartbeat; False once the lease is no longer ours (or the pool is gone)."""
    if not state.exists(pool):
        return False  # never recreate the folder of a removed pool
    with _locked(pool):
        current = read_lease(pool)
        if not _ours(current, token):
            return False
        assert current is not None
        current["heartbeat"] = time.time()
        state.atomic_write_json(lease_path(pool), current)
        return True


def release(pool: str, token: str) -> None:
    """Give the lease back (only if it is still ours)."""
    if not state.exists(pool):
        return
    with _locked(pool):
        if _ours(read_lease(pool), token):
            lease_path(pool).unlink(missing_ok=True)


@contextlib.contextmanager
def hold_pool(pool: str, run: str, *, wait_s: float = 0.0) -> Iterator[None]:
    """Hold the pool's lease for the block, refreshing its heartbeat in the background.

    Raises:
        PoolBusyError: another live run holds it (after ``wait_s`` seconds of waiting).
    """
    token = f"{socket.gethostname()}:{os.getpid()}:{os.urandom(6).hex()}"
    deadline = time.monotonic() + max(0.0, wait_s)
    while True:
        holder = try_acquire(pool, run, token)
        if holder is None:
            break
        if time.monotonic() >= deadline:
            raise PoolBusyError(pool, describe(holder))
        time.sleep(_WAIT_POLL_S)
    with _kept(pool, token):
        yield


@contextlib.contextmanager
def _kept(pool: str, token: str) -> Iterator[None]:
    """Refresh the lease taken with ``token`` in the background for the block, then give it
    back."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(HEARTBEAT_S):
            with contextlib.suppress(OSError):
                if not _beat(pool, token):
                    return

    thread = threading.Thread(target=beat, name=f"pool-lease-{pool}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5.0)
        with contextlib.suppress(OSError):
            release(pool, token)


def live_holder(pool: str) -> dict[str, Any] | None:
    """The lease of a live holder other than the calling process, or None (free, stale or
    ours). A read only: :func:`guard_pool` is what decides, under the lock."""
    lease = read_lease(pool)
    if lease is None or held_by_this_process(lease) or not holder_alive(lease):
        return None
    return lease


@contextlib.contextmanager
def guard_pool(
    pool: str, operation: str, *, force: bool = False
) -> Iterator[dict[str, Any] | None]:
    """Hold the pool's lease for an ``oa-vm`` operation that would pull the workers from under a
    run (``pool-pause``, ``pool-cleanup``), so no run starts on the pool meanwhile.

    Yields ``None`` when the operation may go ahead as usual: the lease was free or stale (and
    is now held, as ``operation``), or the calling process holds it itself (a run acting on its
    own pool). Yields the live holder's lease when ``force`` overrides it: the lease is left to
    its holder, and the caller says what it overrode.

    Raises:
        PoolInUseError: a live run (or another operation) holds the lease and ``force`` is
            false; nothing was written.
    """
    token = f"{socket.gethostname()}:{os.getpid()}:{os.urandom(6).hex()}"
    holder = try_acquire(pool, operation, token, operation=operation)
    if holder is None:
        with _kept(pool, token):
            yield None
        return
    if held_by_this_process(holder):
        yield None
        return
    if not force:
        raise PoolInUseError(pool, describe(holder), operation)
    yield holder
