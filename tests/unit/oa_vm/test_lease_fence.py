"""The pool lease's fence, proved by order: each race is forced by construction (a clock passed
in, a heartbeat paused or made fast, a lease written over the holder's, a spy on the lock the
cleanup waits for), never by which thread happens to run first.

Real files in a temporary oa-vm home, real processes as other holders (a live child, a zombie).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil
import pytest

from oa_vm.errors import PoolInUseError
from oa_vm.model import lease, state
from oa_vm.model.lease import Hold, LeaseLostError, PoolRemovingError
from oa_vm.model.state import PoolRecord, PoolState, WorkerRecord, WorkerState
from tests.support.waiting import WAIT_LIMIT_S, wait_until

POOL = "fenced"


def _record(workers: int) -> PoolRecord:
    return PoolRecord(
        name=POOL, cloud="local", state=PoolState.READY, created_at=datetime.now(UTC),
        workers=[WorkerRecord(name=f"worker-{i}", state=WorkerState.READY) for i in range(workers)],
    )


@pytest.fixture
def pool(oa_home: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    # the heartbeat paused unless a test asks for it: only what the test does changes the file
    monkeypatch.setattr(lease, "HEARTBEAT_S", 3600.0)
    monkeypatch.delenv("OA_VM_LEASE_STALE_S", raising=False)
    monkeypatch.delenv("OA_VM_HOST_ID", raising=False)
    state.save(_record(2))
    return POOL


@pytest.fixture
def live_child() -> Iterator[psutil.Process]:
    """Another live process on this host (a run's controller, as far as the lease can tell)."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],  # no shell
                            stdin=subprocess.PIPE)
    try:
        yield psutil.Process(proc.pid)
    finally:
        proc.kill()
        proc.wait(timeout=WAIT_LIMIT_S)


def _write_lease(pool: str, **fields: Any) -> None:
    """A lease on file as another holder wrote it (atomic, like every lease write)."""
    state.atomic_write_json(lease.lease_path(pool), {"run": "other", **fields})


def _held_by(proc: psutil.Process, token: str = "theirs") -> dict[str, Any]:
    return {"host": lease.host_id(), "pid": proc.pid, "pid_start": proc.create_time(),
            "token": token, "heartbeat": time.time()}


# --- liveness ------------------------------------------------------------------------------


def test_another_hosts_lease_goes_stale_by_the_clock_given(
    pool: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    beat = 1_000_000.0
    remote = {"host": "elsewhere", "pid": 1, "token": "t", "heartbeat": beat}
    limit = lease.STALE_AFTER_S
    assert lease.holder_alive(remote, now=beat + limit - 1)
    assert not lease.holder_alive(remote, now=beat + limit + 1)
    for bad in ("0", "-5", "soon"):
        monkeypatch.setenv("OA_VM_LEASE_STALE_S", bad)
        assert lease.stale_after_s() == lease.STALE_AFTER_S, bad


def test_a_reused_pid_holds_nothing(live_child: psutil.Process) -> None:
    mine = _held_by(live_child)
    assert lease.holder_alive(mine)
    # the same pid, but a process started at another time: the holder is gone, its pid reused
    assert not lease.holder_alive({**mine, "pid_start": live_child.create_time() - 1000.0})


def test_a_dead_unreaped_holder_holds_nothing() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])  # never waited for until the end
    try:
        wait_until(lambda: psutil.Process(proc.pid).status() == psutil.STATUS_ZOMBIE, "a zombie")
        assert not lease.holder_alive(_held_by(psutil.Process(proc.pid)))
    finally:
        proc.wait(timeout=WAIT_LIMIT_S)


# --- Hold.check: the file, every time it changed ---------------------------------------------


def test_the_fence_sees_a_takeover_after_it_was_verified(pool: str) -> None:
    with lease.hold_pool(pool, "a") as hold:
        hold.check()  # verified once: the cheap path from now on, while the file is unchanged
        hold.check()
        # taken over (another host's controller after a freeze); the heartbeat is paused, so
        # only the fence itself can notice
        lease.try_acquire(pool, "b", "their-token", take_over=True)
        with pytest.raises(LeaseLostError, match="run 'b'"):
            hold.check()
        assert not hold.held()


def test_every_acquisition_gets_a_higher_generation_than_any_before(pool: str) -> None:
    with lease.hold_pool(pool, "a") as first:
        assert isinstance(first.generation, int)
        lease.try_acquire(pool, "b", "their-token", take_over=True)
        taken = lease.read_lease(pool)
        assert taken is not None and taken["generation"] == first.generation + 1
    lease.release(pool, "their-token")
    assert lease.read_lease(pool) is None
    # the count outlives the lease: the next holder is later than both
    with lease.hold_pool(pool, "c") as third:
        assert third.generation == first.generation + 2


def test_the_fence_refuses_once_cleanup_marked_the_pool(pool: str) -> None:
    with lease.hold_pool(pool, "a") as hold:
        hold.check()
        # the cleanup's marker, the lease itself unchanged
        state.atomic_write_text(state.pool_dir(pool) / lease.REMOVING, "1\n")
        with pytest.raises(PoolRemovingError):
            hold.check()


def test_a_lease_written_by_anyone_else_is_not_ours(pool: str) -> None:
    hold = Hold(pool, "mine")
    _write_lease(pool, host="elsewhere", pid=1, token="theirs", heartbeat=time.time())
    with pytest.raises(LeaseLostError):
        hold.check()


# --- the heartbeat ---------------------------------------------------------------------------


def test_a_beat_on_a_lease_taken_over_says_so_and_leaves_it_alone(pool: str) -> None:
    with lease.hold_pool(pool, "a") as hold:
        taken = {"host": "elsewhere", "pid": 1, "token": "theirs", "heartbeat": 12345.0}
        _write_lease(pool, **taken)
        assert lease._beat(pool, hold.token) is False  # one beat, by hand: no thread involved
        assert lease.read_lease(pool) == {"run": "other", **taken}  # not refreshed by us


def test_the_heartbeat_thread_marks_the_hold_lost(
    pool: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lease, "HEARTBEAT_S", 0.05)
    with lease.hold_pool(pool, "a") as hold:
        _write_lease(pool, host="elsewhere", pid=1, token="theirs", heartbeat=12345.0)
        wait_until(hold.lost.is_set, "the heartbeat to notice the takeover")
        assert lease.read_lease(pool)["heartbeat"] == 12345.0  # type: ignore[index]


def test_the_heartbeat_beats_within_a_short_staleness_limit(
    pool: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # HEARTBEAT_S is an hour here: only the staleness limit can make it beat in time
    monkeypatch.setenv("OA_VM_LEASE_STALE_S", "0.4")
    with lease.hold_pool(pool, "a"):
        first = lease.read_lease(pool)
        assert first is not None
        wait_until(lambda: (lease.read_lease(pool) or {}).get("heartbeat", 0) > first["heartbeat"],
                   "a heartbeat within a quarter of the staleness limit")


def test_the_heartbeat_of_a_removed_pool_recreates_nothing(pool: str) -> None:
    token = "t"
    assert lease.try_acquire(pool, "a", token) is None
    shutil.rmtree(state.pool_dir(pool))
    assert lease._beat(pool, token) is False
    assert not state.pool_dir(pool).exists()


def test_a_lease_is_given_back_only_by_its_holder(pool: str) -> None:
    with lease.hold_pool(pool, "a") as hold:
        lease.release(pool, "not-" + hold.token)
        assert (lease.read_lease(pool) or {}).get("token") == hold.token
    assert lease.read_lease(pool) is None  # given back at the end of the block


# --- save_fenced: no record from a holder that lost -----------------------------------------


def test_a_taken_over_run_cannot_save_a_record(pool: str) -> None:
    before = state.record_path(pool).read_bytes()
    with lease.hold_pool(pool, "a") as hold:
        hold.check()
        lease.try_acquire(pool, "b", "their-token", take_over=True)
        # the record a repair would save: one worker dropped (it would bill for ever)
        with pytest.raises(LeaseLostError):
            lease.save_fenced(_record(1), hold.check)
    assert state.record_path(pool).read_bytes() == before


def test_no_record_is_saved_once_cleanup_began(pool: str) -> None:
    before = state.record_path(pool).read_bytes()
    state.atomic_write_text(state.pool_dir(pool) / lease.REMOVING, "1\n")
    with pytest.raises(PoolRemovingError):
        lease.save_fenced(_record(1))
    assert state.record_path(pool).read_bytes() == before


# --- guard_pool: pause and cleanup against a run --------------------------------------------


def test_a_forced_cleanup_takes_the_lease_of_a_live_run(
    pool: str, live_child: psutil.Process
) -> None:
    _write_lease(pool, **_held_by(live_child))
    run = Hold(pool, "theirs")
    run.check()  # the live run holds the pool
    with pytest.raises(PoolInUseError), lease.guard_pool(pool, "pool-cleanup"):
        pass
    assert (lease.read_lease(pool) or {}).get("token") == "theirs"  # refused: nothing written
    with lease.guard_pool(pool, "pool-cleanup", force=True) as overridden:
        assert overridden is not None and overridden["token"] == "theirs"
        with pytest.raises(PoolRemovingError):  # the marker: the run's next write is refused
            run.check()
        assert (lease.read_lease(pool) or {}).get("token") != "theirs"


def test_take_over_replaces_a_live_holders_lease(pool: str, live_child: psutil.Process) -> None:
    _write_lease(pool, **_held_by(live_child))
    assert lease.try_acquire(pool, "x", "mine") is not None  # refused without take_over
    assert lease.try_acquire(pool, "x", "mine", take_over=True) is None
    assert (lease.read_lease(pool) or {}).get("token") == "mine"


def test_a_run_may_pause_its_own_pool(pool: str) -> None:
    with lease.hold_pool(pool, "a"), lease.guard_pool(pool, "pool-pause") as holder:
        assert holder is None


def test_cleanup_marks_the_pool_before_it_waits_for_a_repair(
    pool: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    real = lease.fleet_lock

    @contextmanager
    def spy(name: str) -> Iterator[None]:
        seen.append((state.pool_dir(name) / lease.REMOVING).exists())
        with real(name):
            yield

    monkeypatch.setattr(lease, "fleet_lock", spy)
    with lease.guard_pool(pool, "pool-cleanup") as holder:
        assert holder is None
        assert (state.pool_dir(pool) / lease.REMOVING).exists()
    assert seen == [True]  # the repair's lock was taken, after the marker was written
    assert os.path.exists(state.pool_dir(pool) / lease.REMOVING)


def test_a_beat_that_cannot_be_written_is_tried_again_not_the_end_of_the_heartbeat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A full disk: the beat's write raised WriteFailedError (an OaVmError, not an OSError),
    # the heartbeat thread died with a traceback, and the lease went stale for good.
    from oa_vm.kit.safe_fs import WriteFailedError
    from tests.support.waiting import wait_until

    monkeypatch.setenv("OA_VM_LEASE_STALE_S", "0.4")  # a beat every 0.1 s
    calls: list[int] = []

    def beat(pool: str, token: str, ours: object = None) -> bool:
        calls.append(1)
        if len(calls) <= 2:
            raise WriteFailedError(Path("lease.json"), OSError(28, "No space left on device"))
        return True

    monkeypatch.setattr(lease, "_beat", beat)
    monkeypatch.setattr(lease, "release", lambda pool, token: None)
    with lease._kept("full", "token"):
        wait_until(lambda: len(calls) >= 4, "beats after the failed ones", interval=0.05)


def test_an_unreadable_lease_keeps_the_pool_held_and_its_holder_writes_it_back(
    pool: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # lease.json truncated by hand while a run held the pool: read as no lease, a second run
    # took the pool from the live one and pool-cleanup removed it under it.
    with lease.hold_pool(pool, "first") as hold:
        path = lease.lease_path(pool)
        path.write_text(path.read_text(encoding="utf-8")[:20], encoding="utf-8")
        assert lease.try_acquire(pool, "second", "token-2") is not None  # still held
        busy = lease.live_holder(pool)
        assert busy is not None and "unreadable lease.json" in lease.describe(busy)
        with pytest.raises(PoolInUseError), lease.guard_pool(pool, "pool-cleanup"):
            pass
        # the holder's next beat writes its own lease back
        assert lease._beat(pool, hold.token) is False  # without its own copy: not its lease
        taken = {"token": hold.token, "run": "first", "host": "h", "generation": 1}
        assert lease._beat(pool, hold.token, taken)
        restored = lease.read_lease(pool)
        assert restored is not None and restored.get("token") == hold.token
    # stale by the file's age: taken over, as a silent holder's lease is
    lease.lease_path(pool).write_text("{", encoding="utf-8")
    old = time.time() - lease.STALE_AFTER_S - 10
    os.utime(lease.lease_path(pool), (old, old))
    assert lease.try_acquire(pool, "third", "token-3") is None
