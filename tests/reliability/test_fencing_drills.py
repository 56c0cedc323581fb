"""Fencing drills: a cleanup during ``run --repair``, a frozen controller whose pool lease was
taken over by a second host, a controller frozen past its task leases. Real local pools created
by the CLI, real controllers as subprocesses, SIGSTOP/SIGCONT for a sleeping laptop.

Timings are not left to luck: the repair is held at its critical point by a test seam
(:mod:`tests.support.repair_gate`, around :func:`oa_vm.fleet.repair_pool`'s provider step) and
the cleanup is started before,
during or after it; a second host is a second controller under another ``OA_VM_HOST_ID``.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from datetime import datetime
from pathlib import Path

import pytest

from evals.run.queue import LEASE_ENV
from oa_vm.model import state
from tests.support.cli import BIN, run_cli
from tests.support.controller import Controller, worker_pid
from tests.support.pools import READY_TIMEOUT, processes_of
from tests.support.run_records import read_records
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

SMALL = "local_small"
SMALL_TASKS = 6
ONE_TASK = "c499b229-110c-5fc8-9895-f2f879ac1512-WOS"  # one of local_small


def _create(home: Path, name: str, workers: int) -> None:
    # by the CLI, not in this process: a worker that is the test's child would stay a zombie
    for args in (("pool-create", "--cloud", "local", "--workers", str(workers), "-y"),
                 ("pool-wait", "--timeout", READY_TIMEOUT)):
        done = run_cli("oa-vm", *args, "--name", name, home=home)
        assert done.returncode == 0, done.stderr


TASK_LEASE_S = 20.0


def _queue_rows(run_dir: Path) -> list[sqlite3.Row]:
    conn = sqlite3.connect(f"{(run_dir / 'queue.sqlite').resolve().as_uri()}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute("SELECT task_id, status, attempts, history FROM tasks").fetchall()
    finally:
        conn.close()


def _lines_with(output: str, text: str) -> list[str]:
    return [line for line in output.splitlines() if text in line]


@pytest.mark.parametrize("timing", ["cleanup-before-start", "cleanup-after-start",
                                    "cleanup-while-waiting"])
def test_cleanup_during_a_repairing_run_leaves_no_worker_and_no_record(
    home: Path, tmp_path: Path, controllers: list[Controller], monkeypatch: pytest.MonkeyPatch,
    timing: str,
) -> None:
    _create(home, "fixme", 2)
    gate = tmp_path / "repair-gate"
    results = tmp_path / "results"
    run = Controller(home, "run", "--pool", "fixme", "--agent", "oracle", "--tasks", "all",
                     "--run-name", "mend", "--repair", "--step-pause", "0.2",
                     "--results-dir", str(results), log_dir=tmp_path, repair_gate=gate)
    controllers.append(run)
    wait_until(lambda: len(read_records(results / "mend")) >= 1, "the run's first record")
    killed = worker_pid("fixme", "worker-0")
    os.kill(killed, signal.SIGKILL)  # the run quarantines worker-0 and asks for a repair
    waiting = Path(f"{gate}.waiting")
    wait_until(waiting.exists, "the repair to reach its critical point")
    removing = state.pool_dir("fixme") / "removing"

    def cleanup_now() -> subprocess.Popen[str]:
        return subprocess.Popen(  # fixed argv, no shell
            [str(BIN / "oa-vm"), "pool-cleanup", "--name", "fixme", "--force", "-y"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "OA_VM_HOME": str(home)}, stdin=subprocess.DEVNULL,
        )

    if timing == "cleanup-before-start":
        # the repair has checked the pool and waits at its start: the cleanup marks the pool
        # and waits for the repair to save what it starts, then removes it
        proc = cleanup_now()
        wait_until(removing.exists, "the cleanup to mark the pool")
        gate.touch()
    elif timing == "cleanup-after-start":
        gate.touch()
        wait_until(lambda: worker_pid("fixme", "worker-0") != killed, "the repair's new worker")
        proc = cleanup_now()
    else:
        gate.touch()
        proc = cleanup_now()
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err
    assert "Pool removed" in out or "removed" in out, out
    code = run.wait()
    output = run.output()
    assert code != 0, output
    assert "Traceback" not in output, output
    said = _lines_with(output, "pool 'fixme'")
    assert said and ("being removed" in said[-1] or "lost the lease" in said[-1]), output
    # nothing brought the pool back: no record, no folder, no worker process
    assert not state.exists("fixme")
    assert not state.pool_dir("fixme").exists()
    wait_until(lambda: not processes_of(home), "every worker process to be gone")
    again = run_cli("oa-vm", "pool-cleanup", "--name", "fixme", "-y", home=home)
    assert again.returncode == 0 and "already removed" in again.stdout + again.stderr
    metadata = json.loads((results / "mend" / "metadata.json").read_text())
    assert metadata["status"] == "interrupted" and "fixme" in metadata["stopped"]
    # finished tasks are kept; the rest wait, unleased, for a --resume
    assert {r["status"] for r in _queue_rows(results / "mend")} <= {"done", "pending"}


def test_a_frozen_controller_whose_lease_was_taken_over_stops_without_touching_the_pool(
    home: Path, tmp_path: Path, controllers: list[Controller], monkeypatch: pytest.MonkeyPatch,
) -> None:
    _create(home, "shared", 2)
    pids = [worker_pid("shared", f"worker-{i}") for i in range(2)]
    results = tmp_path / "results"
    monkeypatch.setenv("OA_VM_LEASE_STALE_S", "5")
    common = ("--pool", "shared", "--agent", "oracle", "--results-dir", str(results))
    monkeypatch.setenv("OA_VM_HOST_ID", "laptop")
    sleeper = Controller(home, "run", *common, "--tasks", "all", "--run-name", "asleep",
                         "--step-pause", "0.3", log_dir=tmp_path)
    controllers.append(sleeper)
    wait_until(lambda: len(read_records(results / "asleep")) >= 1, "the first run's record")
    sleeper.proc.send_signal(signal.SIGSTOP)  # the laptop's lid closes
    try:
        frozen_records = set(read_records(results / "asleep"))
        monkeypatch.setenv("OA_VM_HOST_ID", "desktop")  # the second host
        other = Controller(home, "run", *common, "--tasks", SMALL, "--run-name", "awake",
                           "--step-pause", "0.3", "--wait-for-pool", "3m", log_dir=tmp_path)
        controllers.append(other)
        wait_until(lambda: len(read_records(results / "awake")) >= 1, "the second run's record")
        lease = json.loads((state.pool_dir("shared") / "lease.json").read_text())
        assert lease["host"] == "desktop" and lease["run"] == "awake"
        taken_over_at = float(lease["acquired"])
    finally:
        sleeper.proc.send_signal(signal.SIGCONT)  # the lid opens, the second run still going
    code = sleeper.wait()
    output = sleeper.output()
    assert code != 0, output
    assert "Traceback" not in output, output
    said = _lines_with(output, "lost the lease")
    assert len(said) == 1 and "run 'awake'" in said[0] and "desktop" in said[0], output
    # It committed nothing obtained after it lost the lease, and gave its attempts in flight
    # back. (A result it had obtained, and checked its lease for, just before the lid closed
    # may be written on waking: every record ended before the takeover.)
    asleep = read_records(results / "asleep")
    assert frozen_records <= set(asleep)
    ended = [datetime.fromisoformat(r["ended_at"]).timestamp() for r in asleep.values()]
    assert all(t < taken_over_at for t in ended), (ended, taken_over_at)
    rows = _queue_rows(results / "asleep")
    assert {r["status"] for r in rows} <= {"done", "pending"}
    assert sum(r["status"] == "done" for r in rows) == len(asleep)
    # the second run drove the desktops alone: the oracle wins every task
    assert other.wait() == 0, other.output()
    awake = read_records(results / "awake")
    assert len(awake) == SMALL_TASKS and {r["status"] for r in awake.values()} == {"success"}
    assert [worker_pid("shared", f"worker-{i}") for i in range(2)] == pids
    assert state.load("shared").state.value == "ready"


@pytest.mark.long
def test_a_controller_frozen_past_its_task_leases_runs_no_task_twice(
    home: Path, tmp_path: Path, controllers: list[Controller], monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One task on two workers: while it runs, the other worker's loop is idle and asking for
    # work, the moment the defect needed (on wake it took the in-flight task's expired lease).
    _create(home, "nap", 2)
    # task leases of 20 s (60 s by default): long enough that a heartbeat on a busy machine
    # keeps them, short enough to freeze past without a minute's wait
    monkeypatch.setenv(LEASE_ENV, str(TASK_LEASE_S))
    results = tmp_path / "results"
    run = Controller(home, "run", "--pool", "nap", "--agent", "oracle", "--tasks", ONE_TASK,
                     "--run-name", "dozy", "--step-pause", "1.0", "--results-dir", str(results),
                     log_dir=tmp_path)
    controllers.append(run)
    run_dir = results / "dozy"

    def in_flight() -> bool:
        # leased, and its agent loop begun (a step's screenshot written): the reset before it
        # is over, so the freeze falls while the task runs and the other worker asks for work
        try:
            rows = _queue_rows(run_dir)
        except sqlite3.Error:
            return False
        steps = list((run_dir / "tasks").glob("*/step_*.png"))
        return [r["status"] for r in rows] == ["leased"] and bool(steps)

    wait_until(in_flight, "the task in flight")
    run.proc.send_signal(signal.SIGSTOP)
    try:
        # past the task lease: a freeze is a duration, not something to poll for
        time.sleep(TASK_LEASE_S + 5.0)
    finally:
        run.proc.send_signal(signal.SIGCONT)
    assert run.wait() == 0, run.output()
    assert "Traceback" not in run.output() and "LookupError" not in run.output()
    records = read_records(run_dir)
    assert list(records) == [ONE_TASK]
    rows = _queue_rows(run_dir)
    # Queue attempts equal recorded attempts: no attempt was overtaken while it ran (the defect
    # leased the in-flight task again, so two attempts ran and the first left no record). A
    # freeze that lands inside a request to the worker can end that attempt with an
    # infrastructure error when the worker drops the silent connection; it is then released
    # and recorded, and the task runs once more elsewhere, which is not running it twice.
    earlier = records[ONE_TASK].get("previous_attempts") or []
    assert [r["status"] for r in rows] == ["done"]
    assert rows[0]["attempts"] == 1 + len(earlier), earlier
    assert all(a["error_type"] == "infrastructure" for a in earlier), earlier
    record = records[ONE_TASK]
    assert int(record["attempts"]) == rows[0]["attempts"]
    folder = run_dir / "tasks" / ONE_TASK
    assert len(list(folder.glob("attempt_*"))) <= len(earlier)  # only a recorded attempt's
    shots = [step["screenshot"] for step in record["steps"] if step.get("screenshot")]
    assert shots and all((folder / shot).is_file() for shot in shots)  # no evidence deleted
