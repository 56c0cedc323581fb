"""One run at a time per pool: a lease in the pool's folder (``lease.json``).

Two runs on one pool would share the workers' desktops and fail each other's tasks, so a run
holds the pool's lease for as long as it dispatches. The lease names its holder (host, pid, the
process's start: its start mark, which no clock step moves, and its wall-clock start for a
lease written without one, :mod:`oa_vm.kit.process_start`; the run) and carries a heartbeat the
holder refreshes. A lease is taken
over only when its holder is provably gone: on this host, its process no longer exists, is a
zombie (dead, not yet reaped), or the pid was reused by another process; on another host, its
heartbeat is older than :data:`STALE_AFTER_S`. Check-and-take happens under an ``flock`` on
``lease.lock``, so two runs starting at once cannot both win.

Fencing (as lock services do it): every acquisition gets a random token, never reused. A holder
(:class:`Hold`) checks, before each write it makes to the pool or to what runs on it
(dispatching a task, committing a result, repairing), that the lease on file is still the one it
took (:meth:`Hold.check`); once it was taken over (a controller frozen past
:data:`STALE_AFTER_S` on another host, or ``pool-cleanup --force``) the check raises
:class:`LeaseLostError` and the holder stops. The check looks at the file each time (it parses
it again whenever it changed), so a holder that wakes from a freeze is refused at its first
write, before its heartbeat thread runs.

Cleanup wins: ``pool-cleanup`` marks the pool as being removed (``removing`` in its folder)
before it removes anything, under the lease's lock, then waits for a repair in progress to save
its record (:func:`fleet_lock`). From then on :func:`save_fenced` refuses every record write
(:class:`PoolRemovingError`), so nothing recreates the pool or any of its workers.

The workers fence too. Between a holder's check and the request it then sends there is a
moment; a controller frozen in it (a laptop's lid closed mid-call) sends that one request on
waking, into the run that took its pool over. So every acquisition also gets a *generation*,
one more than any before it on the pool (kept in ``lease.generation``, which outlives the
lease), and the run's worker clients send it with each request (``X-OA-VM-Fence``,
:data:`waa_client.FENCE_HEADER`): a worker that has seen a higher generation refuses the
request unplayed (the simulated worker does; ``docs/reliability.md`` says what a cloud worker
does).

For drills and shared folders, ``OA_VM_HOST_ID`` replaces the host name a lease is taken under
and ``OA_VM_LEASE_STALE_S`` the staleness limit.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oa_vm.errors import OaVmError, PoolBusyError, PoolInUseError, PoolNotFoundError
from oa_vm.kit import safe_fs
from oa_vm.kit.env_knobs import seconds
from oa_vm.kit.lazy import psutil  # only a lease another process holds is checked with it
from oa_vm.kit.process_start import start_mark, started_as_recorded
from oa_vm.model import state

if TYPE_CHECKING:
    from oa_vm.model.state import PoolRecord

HEARTBEAT_S = 10.0
STALE_AFTER_S = 120.0
_WAIT_POLL_S = 0.5
GENERATION_FILE = "lease.generation"
"""The highest generation given on the pool so far (it outlives each lease)."""
REMOVING = "removing"
"""The file ``pool-cleanup`` leaves in a pool's folder before it removes anything."""


class LeaseLostError(OaVmError):
    """The pool's lease this process held was taken over (or is gone): it must stop writing."""

    def __init__(self, pool: str, holder: str | None) -> None:
        self.pool = pool
        self.holder = holder
        now = f"it is now held by {holder}" if holder else "it is gone"
        super().__init__(
            f"lost the lease of pool {pool!r} ({now}); stopped dispatching, unfinished tasks "
            "are kept for --resume"
        )


class PoolRemovingError(OaVmError):
    """``pool-cleanup`` has begun on the pool: nothing may recreate it or any of its workers."""

    def __init__(self, pool: str) -> None:
        self.pool = pool
        super().__init__(
            f"pool {pool!r} is being removed (pool-cleanup began); nothing is started on it "
            f"(if that cleanup was stopped, finish it with 'oa-vm pool-cleanup --pool {pool}')"
        )


def host_id() -> str:
    """The host a lease is taken under: ``OA_VM_HOST_ID``, else the host name."""
    return os.environ.get("OA_VM_HOST_ID") or socket.gethostname()


def stale_after_s() -> float:
    """Seconds of heartbeat silence after which another host's lease may be taken over:
    ``$OA_VM_LEASE_STALE_S`` (read by :mod:`oa_vm.kit.env_knobs`), else :data:`STALE_AFTER_S`."""
    return seconds("OA_VM_LEASE_STALE_S", STALE_AFTER_S)


def lease_path(pool: str) -> Path:
    """The pool's lease file."""
    return state.pool_dir(pool) / "lease.json"


def _process_start(pid: int) -> float | None:
    """The process's start time; ``None`` when it is gone or a zombie (dead, unreaped: it will
    never beat again, so it holds nothing)."""
    try:
        proc = psutil.Process(pid)
        if proc.status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
            return None
        return proc.create_time()
    except psutil.Error:
        return None


UNREADABLE = "unreadable"
"""The key of what :func:`read_lease` gives for a lease file it cannot read."""


def read_lease(pool: str) -> dict[str, Any] | None:
    """The lease as written, or ``None`` when there is none.

    A file that is there but cannot be read (truncated, not JSON: every write is an atomic
    replace, so only a hand or a failing disk makes one) is a lease of an unknown holder whose
    last heartbeat is the file's change time, ``{"unreadable": True, "heartbeat": ...}``: the
    pool stays held until it goes stale, as a silent holder's would. Read as no lease, a
    second run took the pool from a live one, and ``pool-cleanup`` removed it under it."""
    path = lease_path(pool)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        data = None
    if isinstance(data, dict):
        return data
    try:
        changed = path.stat().st_mtime
    except OSError:
        return None  # gone meanwhile
    return {UNREADABLE: True, "heartbeat": changed}


def holder_alive(lease: dict[str, Any], *, now: float | None = None) -> bool:
    """Whether the lease's holder may still be running (see the module docstring)."""
    if lease.get("host") == host_id():
        pid = lease.get("pid")
        if not isinstance(pid, int):
            return False
        started = _process_start(pid)
        if started is None:
            return False
        return started_as_recorded(pid, lease.get("start_mark"), lease.get("pid_start"),
                                   lambda: started)
    beat = lease.get("heartbeat")
    if not isinstance(beat, (int, float)):
        return False
    return (now or time.time()) - beat < stale_after_s()


def describe(lease: dict[str, Any]) -> str:
    """``run 'x' (pid 123 on host, heartbeat 4s ago)``; an operation's lease (see
    :func:`guard_pool`) reads ``oa-vm pool-pause (pid 123 ...)``."""
    age = time.time() - float(lease.get("heartbeat") or 0)
    if lease.get(UNREADABLE):
        return (f"an unreadable lease.json (changed {max(0, int(age))}s ago; held until "
                f"{int(stale_after_s())}s after that, or remove the file if no run holds it)")
    operation = lease.get("operation")
    who = f"oa-vm {operation}" if operation else f"run {lease.get('run')!r}"
    return (
        f"{who} (pid {lease.get('pid')} on {lease.get('host')}, "
        f"heartbeat {max(0, int(age))}s ago)"
    )


def held_by_this_process(lease: dict[str, Any]) -> bool:
    """Whether the lease was taken by the calling process (a run acting on its own pool)."""
    return lease.get("host") == host_id() and lease.get("pid") == os.getpid()


@contextlib.contextmanager
def _locked(pool: str) -> Iterator[None]:
    folder = state.pool_dir(pool)
    # 0600 whatever the umask, never through a symlink (oa_vm.kit.safe_fs)
    with os.fdopen(safe_fs.open_private(folder / "lease.lock"), "a", encoding="utf-8") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _ours(lease: dict[str, Any] | None, token: str) -> bool:
    return lease is not None and lease.get("token") == token


def try_acquire(
    pool: str, run: str, token: str, *, operation: str | None = None,
    take_over: bool = False,
) -> dict[str, Any] | None:
    """Take the lease if it is free or its holder is gone; else return the holder's lease.

    ``operation`` marks a lease taken by an ``oa-vm`` command rather than a run (it is named
    that way to whoever is refused). ``take_over`` takes it from a live holder too (``pool-cleanup
    --force``): the holder's next :meth:`Hold.check` fails."""
    with _locked(pool):
        current = read_lease(pool)
        if (current is not None and not _ours(current, token) and holder_alive(current)
                and not take_over):
            return current
        pid = os.getpid()
        generation = _next_generation(pool, current)
        lease: dict[str, Any] = {
            "host": host_id(), "pid": pid, "pid_start": _process_start(pid),
            "start_mark": start_mark(pid),
            "run": run, "token": token, "generation": generation,
            "acquired": time.time(), "heartbeat": time.time(),
        }
        if operation:
            lease["operation"] = operation
        state.atomic_write_json(lease_path(pool), lease)
        return None


def _next_generation(pool: str, current: dict[str, Any] | None) -> int:
    """One more than any generation given on ``pool`` (called under the lease's lock); the
    count is kept in :data:`GENERATION_FILE` before the lease that carries it is written."""
    path = state.pool_dir(pool) / GENERATION_FILE
    try:
        highest = int(path.read_text(encoding="utf-8").strip() or 0)
    except (OSError, ValueError):
        highest = 0
    if current is not None and isinstance(current.get("generation"), int):
        highest = max(highest, current["generation"])
    generation = highest + 1
    safe_fs.write_atomic(path, f"{generation}\n")
    return generation


def _beat(pool: str, token: str, ours: dict[str, Any] | None = None) -> bool:
    """Refresh our heartbeat; False once the lease is no longer ours (or the pool is gone).

    ``ours``: the lease as this holder took it, written back when the file became unreadable
    (no one else takes an unreadable lease before it is stale, so it is still this holder's).
    """
    if not state.exists(pool):
        return False  # never recreate the folder of a removed pool
    with _locked(pool):
        current = read_lease(pool)
        if current is not None and current.get(UNREADABLE) and ours is not None:
            current = dict(ours)
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


class Hold:
    """A lease this process holds, and its fence: :meth:`check` before every write.

    Attributes:
        pool: The pool.
        token: Identifies this acquisition (no two are alike): the fence compares it, and
            nothing else, with the lease on file.
        generation: The acquisition's place in the pool's order of holders (see the module):
            what the run's requests carry so that a worker refuses an earlier holder's.
    """

    def __init__(self, pool: str, token: str, generation: int | None = None) -> None:
        self.pool = pool
        self.token = token
        self.generation = generation
        self.lost = threading.Event()
        self._holder: str | None = None
        self._verified: tuple[int, int, int] | None = None
        # resolved once: the home and the name check cost more than the stats themselves
        self._lease_file = lease_path(pool)
        self._removing_file = state.pool_dir(pool) / REMOVING

    def check(self) -> None:
        """Return if the lease on file is still this one, else raise (and stay lost).

        Raises:
            LeaseLostError: it was taken over, given back or removed (the holder is named).
            PoolRemovingError: ``pool-cleanup`` has begun on the pool.
        """
        if not self.lost.is_set():
            # Asked before every request to a worker: the file is parsed again only when it
            # changed since it was last found ours (two stats instead of a read and a parse:
            # about 10 times cheaper).
            seen = _identity(self._lease_file)
            if seen is not None and seen == self._verified:
                if self._removing_file.exists():
                    raise PoolRemovingError(self.pool)
                return
            current = read_lease(self.pool)
            if current is not None and _ours(current, self.token):
                self._verified = seen
                if self._removing_file.exists():
                    raise PoolRemovingError(self.pool)
                return
            self._lose(current)
        if _removing(self.pool):
            raise PoolRemovingError(self.pool)
        raise LeaseLostError(self.pool, self._holder)

    def _lose(self, current: dict[str, Any] | None) -> None:
        self._holder = describe(current) if current is not None else None
        self.lost.set()

    def held(self) -> bool:
        """Whether :meth:`check` would pass."""
        try:
            self.check()
        except (LeaseLostError, PoolRemovingError):
            return False
        return True


@contextlib.contextmanager
def hold_pool(pool: str, run: str, *, wait_s: float = 0.0) -> Iterator[Hold]:
    """Hold the pool's lease for the block, refreshing its heartbeat in the background; the
    :class:`Hold` yielded is the fence of every write the run makes to the pool.

    Raises:
        PoolBusyError: another live run holds it (after ``wait_s`` seconds of waiting).
    """
    from waa_client.poll import poll_until  # not at the top: the lease is read at start-up

    token = _new_token()
    holder: dict[str, Any] | None = None

    def acquired() -> bool:
        nonlocal holder
        holder = try_acquire(pool, run, token)
        return holder is None

    if not poll_until(acquired, timeout_s=wait_s, interval_s=_WAIT_POLL_S):
        raise PoolBusyError(pool, describe(holder or {}))
    taken = read_lease(pool)
    generation = taken.get("generation") if taken is not None and _ours(taken, token) else None
    hold = Hold(pool, token, generation if isinstance(generation, int) else None)
    with _kept(pool, token, hold, taken):
        yield hold


def _identity(path: Path) -> tuple[int, int, int] | None:
    """The file's inode, change time and size: every lease write is an atomic replace (a new
    inode), so an unchanged identity means unchanged content."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _new_token() -> str:
    return f"{host_id()}:{os.getpid()}:{os.urandom(6).hex()}"


@contextlib.contextmanager
def _kept(pool: str, token: str, hold: Hold | None = None,
          taken: dict[str, Any] | None = None) -> Iterator[None]:
    """Refresh the lease taken with ``token`` in the background for the block, then give it
    back. A heartbeat that finds the lease taken over marks ``hold`` lost."""
    stop = threading.Event()

    # a beat several times within the staleness limit, however short it is set
    every = min(HEARTBEAT_S, stale_after_s() / 4.0)

    def beat() -> None:
        while not stop.wait(every):
            # a beat that could not be written (a full disk: WriteFailedError) is tried again
            # at the next one; the thread must not die of it, or the lease goes stale for good
            with contextlib.suppress(OSError, OaVmError):
                if not _beat(pool, token, taken):
                    if hold is not None:
                        hold._lose(read_lease(pool))
                    return

    thread = threading.Thread(target=beat, name=f"pool-lease-{pool}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5.0)
        with contextlib.suppress(OSError, OaVmError):
            release(pool, token)


def _removing(pool: str) -> bool:
    try:
        return (state.pool_dir(pool) / REMOVING).exists()
    except OaVmError:
        return False


def removing(pool: str) -> bool:
    """Whether ``pool-cleanup`` has begun on the pool (or it is already gone)."""
    return _removing(pool) or not state.exists(pool)


@contextlib.contextmanager
def fleet_lock(pool: str) -> Iterator[None]:
    """Serialise what starts workers (a repair: check, start, save) with ``pool-cleanup``, which
    takes it after marking the pool as being removed: a repair under way finishes saving what
    it started, and the cleanup then sees it and removes it.

    Raises:
        PoolRemovingError: the pool's folder is gone (removed).
        PoolNotFoundError: there never was such a pool (no folder, no tombstone).
    """
    try:  # 0600 as every file of the pool, never through a symlink planted as the lock
        fd = safe_fs.open_private(state.pool_dir(pool) / "fleet.lock")
    except safe_fs.WriteFailedError as exc:
        if exc.errno != errno.ENOENT:
            raise
        if not state.tombstone(pool).exists():
            raise PoolNotFoundError(pool, known=state.list_names()) from None
        raise PoolRemovingError(pool) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield  # the lock goes with the descriptor
    finally:
        os.close(fd)


def save_fenced(record: PoolRecord, fence: Callable[[], None] | None = None) -> None:
    """Save a pool's record unless ``pool-cleanup`` has begun (or removed it) or ``fence``
    refuses: the check and the write happen under the lease's lock, where the cleanup marks
    the pool, so a record is never saved after the cleanup began.

    Raises:
        PoolRemovingError: the pool is being (or was) removed; nothing was written.
        LeaseLostError: ``fence`` (a :meth:`Hold.check`) refused.
    """
    pool = record.name
    try:
        with _locked(pool):
            if removing(pool):
                raise PoolRemovingError(pool)
            if fence is not None:
                fence()
            state.save(record)
    except FileNotFoundError:
        raise PoolRemovingError(pool) from None


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
    own pool). Yields the live holder's lease when ``force`` overrides it, and the caller says
    what it overrode: ``pool-cleanup`` takes the lease over (a new token), so the run's next
    write is refused (:class:`Hold`); ``pool-pause`` leaves it to its holder.

    ``pool-cleanup`` also marks the pool as being removed before it yields, and waits for a
    repair in progress (:func:`fleet_lock`): from then on nothing recreates the pool or its
    workers.

    Raises:
        PoolInUseError: a live run (or another operation) holds the lease and ``force`` is
            false; nothing was written.
    """
    token = _new_token()
    holder = try_acquire(pool, operation, token, operation=operation)
    if holder is not None and held_by_this_process(holder):
        with _removal(pool, operation):
            yield None
        return
    if holder is not None and not force:
        raise PoolInUseError(pool, describe(holder), operation)
    if holder is not None and operation != "pool-cleanup":
        yield holder  # a forced pause leaves the lease to its holder, as it always did
        return
    if holder is not None:
        # Cleanup wins: the run's lease is taken over, so its next write is refused.
        try_acquire(pool, operation, token, operation=operation, take_over=True)
    with _kept(pool, token), _removal(pool, operation):
        yield holder


@contextlib.contextmanager
def _removal(pool: str, operation: str) -> Iterator[None]:
    """For ``pool-cleanup``: mark the pool as being removed (under the lease's lock, where
    :func:`save_fenced` checks it), then wait for any repair under way to save its record."""
    if operation != "pool-cleanup":
        yield
        return
    with _locked(pool):
        state.atomic_write_text(state.pool_dir(pool) / REMOVING, f"{os.getpid()}\n")
    with fleet_lock(pool):
        yield
