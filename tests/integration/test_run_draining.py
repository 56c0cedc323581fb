"""A draining worker takes no new task: its share of the queue goes to the others.

A local pool of three real worker processes runs the bundled suite through the real CLI
(``openadapt-evals run``). Mid-run, one worker is marked draining through its status file
(``<worker folder>/host-status``, the seam :mod:`oa_vm.reach.drain` documents for workers reached
directly: the same ``state=draining`` lines ``spot_watch.sh`` writes on a cloud host). The
run's drain check reads it before every lease (``OA_VM_DRAIN_CHECK_S=0``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil
import pytest

from oa_vm import api
from oa_vm.model import state
from oa_vm.reach.drain import DrainWatch, local_status_path
from tests.integration.test_drill_faults import LOCAL_TASKS
from tests.support.cli import run_cli
from tests.support.controller import RunController, wait_for_records
from tests.support.pools import READY_S
from tests.support.run_records import assert_summary_matches, read_records

pytestmark = pytest.mark.integration

NOTICE = ("state=draining\nstep=spot-interruption\n"
          "message=AWS spot interruption notice: terminate at 2026-11-30T22:02:00Z; no new task\n"
          "action=terminate\naction_time=2026-11-30T22:02:00Z\n")


@pytest.fixture(autouse=True)
def _drain_checked_before_every_lease(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OA_VM_DRAIN_CHECK_S", "0")


def _started(record: dict[str, object]) -> datetime:
    return datetime.fromisoformat(str(record["started_at"]))


@pytest.mark.long
def test_a_draining_worker_finishes_its_task_and_takes_no_new_one(
    home: Path, tmp_path: Path, controllers: list[RunController]
) -> None:
    api.create_pool(name="spotty", cloud="local", workers=3)
    api.wait_pool("spotty", timeout_s=READY_S)
    drained = next(w for w in state.load("spotty").workers if w.name == "worker-1")
    status_file = local_status_path(drained)
    assert status_file is not None
    watch = DrainWatch("spotty", interval_s=0)
    assert watch("worker-1") is None  # no status file: not draining

    results = tmp_path / "results"
    # A task takes about 3 s (3 steps x 1 s pause): the notice lands while tasks remain.
    run = RunController(home, results, "--pool", "spotty", "--agent", "oracle", "--tasks", "all",
                     "--run-name", "drained", "--step-pause", "1.0", "--read-timeout", "5")
    controllers.append(run)
    run_dir = results / "drained"
    wait_for_records(run_dir, 3, run)
    status_file.write_text(NOTICE, encoding="utf-8")
    noticed = datetime.now().astimezone()
    notice = watch("worker-1")
    assert notice is not None and notice.action == "terminate"
    assert run.wait() == 0, run.output()

    records = read_records(run_dir)
    assert len(records) == LOCAL_TASKS  # every task, exactly one final record each
    assert {r["status"] for r in records.values()} == {"success"}, run.output()
    queue_ids = json.loads((run_dir / "metadata.json").read_text())["task_ids"]
    assert sorted(records) == sorted(queue_ids)
    on_1 = [r for r in records.values() if r["worker"] == "worker-1"]
    assert on_1, "worker-1 ran nothing before the notice: the test did not bite"
    # Its task in flight when the notice came may finish (and one lease may race the write);
    # nothing else starts on it afterwards.
    after = [r for r in on_1 if _started(r) > noticed]
    assert len(after) <= 1, [r["task_id"] for r in after]
    later = [r for r in records.values() if _started(r) > noticed]
    assert len(later) >= 3, "the notice came too late to show where the queue went"
    assert {r["worker"] for r in later} - {"worker-1"} == {"worker-0", "worker-2"}
    assert_summary_matches(run_dir, records)


@pytest.mark.long
def test_with_repair_a_draining_worker_is_replaced_by_a_new_worker_that_takes_tasks(
    home: Path, tmp_path: Path, controllers: list[RunController]
) -> None:
    # Made by the CLI, as a user would: retiring the draining worker stops its process, which
    # must not be a child of this test (it would stay a zombie nobody here reaps).
    made = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "3",
                   "--name", "healspot", "-y", home=home)
    assert made.returncode == 0, made.stderr
    api.wait_pool("healspot", timeout_s=READY_S)
    before = next(w for w in state.load("healspot").workers if w.name == "worker-1")
    status_file = local_status_path(before)
    assert status_file is not None
    results = tmp_path / "results"
    run = RunController(home, results, "--pool", "healspot", "--agent", "oracle", "--tasks", "all",
                     "--run-name", "replaced", "--step-pause", "1.0", "--read-timeout", "5",
                     "--repair")
    controllers.append(run)
    run_dir = results / "replaced"
    wait_for_records(run_dir, 3, run)
    # due in an hour: the worker is still there, finishing its task, when its successor starts
    when = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    status_file.write_text(NOTICE.replace("2026-11-30T22:02:00Z", when), encoding="utf-8")
    noticed = datetime.now().astimezone()
    assert run.wait() == 0, run.output()

    records = read_records(run_dir)
    assert len(records) == LOCAL_TASKS  # every task, exactly one final record each
    assert {r["status"] for r in records.values()} == {"success"}, run.output()
    assert "worker worker-1 replaced from the pool" in run.output(), run.output()
    # the replacement is a new worker, worker-3, and it took tasks after the notice
    on_new = [r for r in records.values() if r["worker"] == "worker-3"]
    assert on_new, run.output()
    assert all(_started(r) > noticed for r in on_new)
    after = {w.name: w for w in state.load("healspot").workers}
    # the draining worker was retired once its last task was over; its successor stays
    assert sorted(after) == ["worker-0", "worker-2", "worker-3"]
    assert after["worker-3"].state.value == "ready"
    assert state.load("healspot").provider_data["replaced_by"] == {"worker-1": "worker-3"}
    assert before.pid is not None and not psutil.pid_exists(before.pid) or (
        psutil.Process(before.pid).status() == psutil.STATUS_ZOMBIE)
    assert_summary_matches(run_dir, records)
