"""One rule for every ``pool.json`` update: an extension acknowledged while a repair, a pause or
a resume holds the record is never lost, and ``pool-resume`` adds an extension made while the
pool was paused instead of replacing it. Each race is forced by construction: the repair is held
at its gate (:mod:`tests.support.repair_gate`) while the real ``pool-extend`` runs; the pause
and resume call ``extend_pool`` from inside their provider step. Real local pools.
"""

from __future__ import annotations

import subprocess
from datetime import timedelta
from pathlib import Path

import pytest

from oa_vm import api, fleet
from oa_vm.clouds.base import Capability, FleetOps, Progress
from oa_vm.model import state
from oa_vm.model.state import PoolRecord
from tests.support import repair_gate
from tests.support.cli import run_cli
from tests.support.pools import READY_S
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

HOUR = timedelta(hours=1)


def _expiry(name: str) -> object:
    return state.load(name).expires_at


def _pool(name: str) -> str:
    api.create_pool(name=name, cloud="local", workers=1)
    api.wait_pool(name, timeout_s=READY_S)
    return name


def test_an_extend_during_a_repair_is_kept(home: Path, tmp_path: Path) -> None:
    pool = _pool("held")
    gate = tmp_path / "gate"
    argv, env = repair_gate.command(gate, "oa-vm", "pool-repair", "--name", pool,
                                    "--worker", "worker-0")
    repair = subprocess.Popen(  # a fixed argv, no shell
        argv, env={**env, "OA_VM_HOME": str(home)},
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:

        def at_gate() -> bool:  # the repair read the record, and waits
            assert repair.poll() is None, repair.communicate()
            return Path(f"{gate}.waiting").exists()

        wait_until(at_gate, "the repair to reach its gate")
        before = state.load(pool).expires_at
        extended = run_cli("oa-vm", "pool-extend", "--name", pool, "--by", "1h", home=home)
        assert extended.returncode == 0, extended.stderr
        after_extend = state.load(pool).expires_at
        assert before is not None and after_extend == before + HOUR
    finally:
        gate.write_text("go")
        _, err = repair.communicate(timeout=240)
    # The repair's own outcome is not the point (on a loaded machine its 5 s wait for the old
    # worker to stop can fail): whatever it did, its save (made in a finally) keeps the extension.
    assert "Traceback" not in err, err
    assert state.load(pool).expires_at == after_extend


class _ExtendingOps:
    """The local provider's fleet operations, with ``pool-extend --by 1h`` run from inside the
    step (what a user does in another terminal while it runs)."""

    def __init__(self, inner: FleetOps, pool: str) -> None:
        self.inner, self.pool = inner, pool

    def pause(self, record: PoolRecord, progress: Progress) -> PoolRecord:
        fleet.extend_pool(self.pool, by_s=3600)
        return self.inner.pause(record, progress)

    def resume(self, record: PoolRecord, progress: Progress) -> list[str]:
        fleet.extend_pool(self.pool, by_s=3600)
        return self.inner.resume(record, progress)

    def repair(self, record: PoolRecord, progress: Progress, names: list[str] | None) -> list[str]:
        fleet.extend_pool(self.pool, by_s=3600)
        return self.inner.repair(record, progress, names)


def test_an_extend_during_a_pause_or_a_resume_is_kept(home: Path) -> None:
    pool = _pool("steps")
    ops = _ExtendingOps(fleet.fleet_ops("local", Capability.PAUSE), pool)
    start = state.utcnow()
    paused = fleet.pause_pool(pool, keep_days=1, ops=ops)
    end = state.utcnow()
    expiry = state.load(pool).expires_at
    assert paused.expires_at == expiry and expiry is not None
    # the pause sets now + 1 day after its step; the extension made during it comes on top
    assert start + timedelta(days=1) + HOUR <= expiry <= end + timedelta(days=1) + HOUR
    start = state.utcnow()
    fleet.resume_pool(pool, ttl_hours=2, wait=False, ops=ops)
    end = state.utcnow()
    expiry = state.load(pool).expires_at
    assert expiry is not None
    assert start + 2 * HOUR + HOUR <= expiry <= end + 2 * HOUR + HOUR


def test_resume_adds_an_extension_made_while_paused(home: Path) -> None:
    pool = _pool("later")
    fleet.pause_pool(pool, keep_days=1)
    extended = run_cli("oa-vm", "pool-extend", "--name", pool, "--by", "3h", home=home)
    assert extended.returncode == 0, extended.stderr
    start = state.utcnow()
    fleet.resume_pool(pool, ttl_hours=2, wait=False)
    end = state.utcnow()
    expiry = state.load(pool).expires_at
    assert expiry is not None
    assert start + 5 * HOUR <= expiry <= end + 5 * HOUR
