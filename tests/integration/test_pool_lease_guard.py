"""``pool-pause`` and ``pool-cleanup`` respect a running run's lease: the real oa-vm CLI as a
subprocess, real worker processes, and the lease held by another live process (a helper that
takes it through :func:`oa_vm.model.lease.hold_pool`, as a run does, then waits to be told to
stop)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_cli
from tests.support.pools import READY_TIMEOUT
from tests.support.waiting import WAIT_LIMIT_S, alive, wait_until

pytestmark = pytest.mark.integration

HOLDER = "holder-run"

_HOLD = """
import sys
from oa_vm.model.lease import hold_pool
with hold_pool(sys.argv[1], sys.argv[2]):
    print("held", flush=True)
    sys.stdin.read()  # until the test closes stdin (or kills this process)
"""


class Holder:
    """Another process holding the pool's lease, as a run's controller would."""

    def __init__(self, home: Path, pool: str) -> None:
        env = {**os.environ, "OA_VM_HOME": str(home)}
        self.proc = subprocess.Popen(  # fixed argv, no shell
            [sys.executable, "-c", _HOLD, pool, HOLDER],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=env,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # blocks until the lease is held (or it died)
        assert line.strip() == "held", self.proc.stderr.read() if self.proc.stderr else ""

    @property
    def pid(self) -> int:
        return self.proc.pid

    def kill(self) -> None:
        """End it without giving the lease back (a controller killed with -9)."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=WAIT_LIMIT_S)
        self._close()

    def stop(self) -> None:
        """End it the way a run ends: the lease is given back."""
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(timeout=WAIT_LIMIT_S)
        self._close()

    def _close(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None and not stream.closed:
                stream.close()


@pytest.fixture
def holders() -> Iterator[list[Holder]]:
    started: list[Holder] = []
    yield started
    for holder in started:
        if holder.proc.poll() is None:
            holder.kill()


def _create(home: Path, name: str, *extra: str) -> dict[str, Any]:
    created = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "1",
                      "--name", name, "-y", *extra, home=home)
    assert created.returncode == 0, created.stderr
    waited = run_cli("oa-vm", "pool-wait", "--name", name, "--timeout", READY_TIMEOUT, home=home)
    assert waited.returncode == 0, waited.stderr
    return _status(home, name)


def _status(home: Path, name: str) -> dict[str, Any]:
    result = run_cli("oa-vm", "pool-status", "--name", name, "--json", home=home)
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _digests(home: Path, name: str) -> dict[str, str]:
    """The pool's record and lease, by hash (the lease's heartbeat moves every 10 s, so the
    caller compares within a heartbeat or reads the lease's owner separately)."""
    folder = home / "pools" / name
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in (folder / "pool.json", folder / "lease.json") if p.is_file()}


def _lease(home: Path, name: str) -> dict[str, Any] | None:
    path = home / "pools" / name / "lease.json"
    return json.loads(path.read_text()) if path.is_file() else None


def test_pause_and_cleanup_are_refused_while_a_live_run_holds_the_pool(
    home: Path, holders: list[Holder]
) -> None:
    before = _create(home, "busy")
    worker_pid = before["workers"][0]["pid"]
    holder = Holder(home, "busy")
    holders.append(holder)
    record_before = _digests(home, "busy")["pool.json"]

    for args, verb in ((("pool-pause",), "pause"), (("pool-cleanup", "-y"), "remove")):
        refused = run_cli("oa-vm", *args, "--name", "busy", home=home)
        line = refused.assert_one_line_error()
        assert f"run {HOLDER!r} (pid {holder.pid} " in line, line
        assert "wait for it to end" in line and f"--force to {verb}" in line, line
        # nothing changed: the record byte for byte, the lease still the holder's, the worker up
        assert _digests(home, "busy")["pool.json"] == record_before
        lease = _lease(home, "busy")
        assert lease is not None and lease["pid"] == holder.pid and lease["run"] == HOLDER
        assert alive(worker_pid)
    # without --yes the refusal comes before the question (whose answer would not matter)
    asked = run_cli("oa-vm", "pool-cleanup", "--name", "busy", home=home)
    assert f"in use by run {HOLDER!r}" in asked.assert_one_line_error()
    status = _status(home, "busy")
    assert status["state"] == "ready" and status["workers"][0]["pid"] == worker_pid

    # extend, repair and resume leave the run's workers alone: allowed while it runs
    extended = run_cli("oa-vm", "pool-extend", "--name", "busy", "--by", "2h", home=home)
    assert extended.returncode == 0, extended.stderr
    repaired = run_cli("oa-vm", "pool-repair", "--name", "busy", home=home)
    assert repaired.returncode == 0 and "nothing to repair" in repaired.stdout, repaired.stderr

    # --force overrides, and says whose workers it stopped; the lease stays the holder's
    forced = run_cli("oa-vm", "pool-pause", "--name", "busy", "--force", home=home)
    assert forced.returncode == 0, forced.stderr
    assert f"in use by run {HOLDER!r}" in forced.stdout and "anyway (--force)" in forced.stdout
    assert _status(home, "busy")["state"] == "paused"
    lease = _lease(home, "busy")
    assert lease is not None and lease["pid"] == holder.pid
    resumed = run_cli("oa-vm", "pool-resume", "--name", "busy", "--timeout", READY_TIMEOUT,
                      home=home)
    assert resumed.returncode == 0, resumed.stderr
    resumed_pid = _status(home, "busy")["workers"][0]["pid"]
    removed = run_cli("oa-vm", "pool-cleanup", "--name", "busy", "-y", "--force", home=home)
    assert removed.returncode == 0, removed.stderr
    assert "removing it anyway (--force)" in removed.stdout and "removed" in removed.stdout
    assert not (home / "pools" / "busy").exists()
    assert not alive(resumed_pid)
    holder.stop()  # the holder gives its lease back to a pool that is gone: no error, no folder
    assert holder.proc.returncode == 0
    assert not (home / "pools" / "busy").exists()


def test_repair_of_a_named_worker_is_refused_while_a_live_run_holds_the_pool(
    home: Path, holders: list[Holder]
) -> None:
    """``pool-repair --worker W`` stops W whatever it is doing: during another's run it took
    the run's working worker from under it with no word (the run then quarantined it); now it
    is refused as a pause is, while the lost workers are still repaired."""
    worker_pid = _create(home, "busy")["workers"][0]["pid"]
    holder = Holder(home, "busy")
    holders.append(holder)
    record_before = _digests(home, "busy")["pool.json"]

    refused = run_cli("oa-vm", "pool-repair", "--name", "busy", "--worker", "worker-0",
                      "--timeout", READY_TIMEOUT, home=home)
    line = refused.assert_one_line_error()
    assert f"run {HOLDER!r} (pid {holder.pid} " in line, line
    assert "wait for it to end" in line and "--force to replace the named workers" in line, line
    assert _digests(home, "busy")["pool.json"] == record_before
    assert alive(worker_pid)
    lease = _lease(home, "busy")
    assert lease is not None and lease["pid"] == holder.pid and lease["run"] == HOLDER

    # a lost worker is still replaced during the run, as run --repair would
    os.kill(worker_pid, signal.SIGKILL)
    wait_until(lambda: not alive(worker_pid), "the killed worker to end", interval=0.1)
    repaired = run_cli("oa-vm", "pool-repair", "--name", "busy", "--timeout", READY_TIMEOUT,
                       home=home)
    assert repaired.returncode == 0 and "replaced worker-0" in repaired.stdout, repaired.stderr
    second_pid = _status(home, "busy")["workers"][0]["pid"]

    forced = run_cli("oa-vm", "pool-repair", "--name", "busy", "--worker", "worker-0",
                     "--force", "--timeout", READY_TIMEOUT, home=home)
    assert forced.returncode == 0, forced.stderr
    assert f"in use by run {HOLDER!r}" in forced.stdout and "anyway (--force)" in forced.stdout
    assert not alive(second_pid) and _status(home, "busy")["workers"][0]["pid"] != second_pid
    lease = _lease(home, "busy")
    assert lease is not None and lease["pid"] == holder.pid
    holder.stop()


def test_cleanup_of_several_pools_removes_none_while_one_is_in_use(
    home: Path, holders: list[Holder]
) -> None:
    """The lease rule of a one-pool cleanup holds for each pool named: one in use refuses the
    whole cleanup before any removal (``-n busy -n idle`` removed ``idle`` alone, the last
    named); ``--force`` removes both."""
    pids = [_create(home, name)["workers"][0]["pid"] for name in ("busy", "idle")]
    holder = Holder(home, "busy")
    holders.append(holder)
    refused = run_cli("oa-vm", "pool-cleanup", "-n", "busy", "-n", "idle", "-y", home=home)
    assert f"in use by run {HOLDER!r}" in refused.assert_one_line_error()
    assert all((home / "pools" / n / "pool.json").exists() for n in ("busy", "idle"))
    assert all(alive(pid) for pid in pids)
    forced = run_cli("oa-vm", "pool-cleanup", "-n", "busy", "-n", "idle", "-y", "--force",
                     home=home)
    assert forced.returncode == 0, forced.stderr
    assert "removing it anyway (--force)" in forced.stdout
    assert not (home / "pools" / "busy").exists() and not (home / "pools" / "idle").exists()
    assert not any(alive(pid) for pid in pids)


def test_a_stale_lease_never_blocks(home: Path, holders: list[Holder]) -> None:
    _create(home, "stale")
    holder = Holder(home, "stale")
    holders.append(holder)
    holder.kill()  # the lease file stays, naming a process that is gone
    assert _lease(home, "stale") is not None
    paused = run_cli("oa-vm", "pool-pause", "--name", "stale", home=home)
    assert paused.returncode == 0, paused.stderr
    assert "in use" not in paused.stdout + paused.stderr
    assert _lease(home, "stale") is None  # taken over for the pause, then given back
    resumed = run_cli("oa-vm", "pool-resume", "--name", "stale", "--timeout", READY_TIMEOUT,
                      home=home)
    assert resumed.returncode == 0, resumed.stderr
    holder = Holder(home, "stale")
    holders.append(holder)
    holder.kill()
    removed = run_cli("oa-vm", "pool-cleanup", "--name", "stale", "-y", home=home)
    assert removed.returncode == 0, removed.stderr
    assert not (home / "pools" / "stale").exists()


def test_expired_cleanup_skips_a_pool_in_use_and_removes_the_rest(
    home: Path, holders: list[Holder]
) -> None:
    busy = _create(home, "old-busy", "--ttl", "1s")
    _create(home, "old-idle", "--ttl", "1s")
    holder = Holder(home, "old-busy")
    holders.append(holder)
    wait_until(lambda: all(_status(home, n)["expired"] for n in ("old-busy", "old-idle")),
               "both pools to expire", interval=0.2)
    record_before = _digests(home, "old-busy")["pool.json"]

    swept = run_cli("oa-vm", "pool-cleanup", "--expired", "-y", home=home)
    assert swept.returncode == 0, swept.stderr
    assert f"pool 'old-busy' skipped: in use by run {HOLDER!r} (pid {holder.pid}" in swept.stdout
    assert "Removed 1 expired pool(s); skipped 1 in use" in swept.stdout, swept.stdout
    assert not (home / "pools" / "old-idle").exists()
    assert _digests(home, "old-busy")["pool.json"] == record_before
    assert alive(busy["workers"][0]["pid"])

    holder.stop()  # the run ended and gave its lease back: the next sweep removes the pool
    again = run_cli("oa-vm", "pool-cleanup", "--expired", "-y", home=home)
    assert again.returncode == 0, again.stderr
    assert "Removed 1 expired pool(s)." in again.stdout
    assert not (home / "pools" / "old-busy").exists()
    assert not alive(busy["workers"][0]["pid"])


def test_the_api_refuses_too_and_the_holder_itself_may_clean_up(
    home: Path, holders: list[Holder], monkeypatch: pytest.MonkeyPatch
) -> None:
    from oa_vm import api, fleet
    from oa_vm.errors import PoolInUseError
    from oa_vm.model.lease import hold_pool

    monkeypatch.setenv("OA_VM_HOME", str(home))
    _create(home, "api")
    holder = Holder(home, "api")
    holders.append(holder)
    with pytest.raises(PoolInUseError) as refused:
        fleet.pause_pool("api")
    assert refused.value.holder.startswith(f"run {HOLDER!r} (pid {holder.pid} ")
    with pytest.raises(PoolInUseError):
        api.cleanup_pool("api")
    assert api.pool_status("api").state.value == "ready"
    holder.stop()
    # a process that holds the lease (a run ending, cleaning up its own pool) is not refused
    with hold_pool("api", "mine"):
        assert api.cleanup_pool("api").left == []
    assert not (home / "pools" / "api").exists()
