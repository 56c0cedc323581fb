"""Fault drills: a worker killed, a worker hung, the controller killed and resumed.

Each drill runs the real ``openadapt-evals run`` as a subprocess against a real local pool, does
something bad to one process mid-run, and checks that every task still ends with exactly one
final record, that finished work is never redone, and that the summary agrees with the records.
Fault knobs are per pool, so one worker is made faulty by signalling its process (PIDs from the
pool record).
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from tests.support.controller import RunController, wait_for_records, worker_pid
from tests.support.run_records import assert_summary_matches, read_records

pytestmark = [pytest.mark.integration, pytest.mark.pool(name="drill", workers=3)]

LOCAL_TASKS = 24


def test_a_worker_killed_mid_sweep_has_its_task_finished_elsewhere(
    home: Path, pool: str, tmp_path: Path, controllers: list[RunController]
) -> None:
    results = tmp_path / "results"
    run = RunController(home, results, "--pool", pool, "--agent", "oracle", "--tasks", "all",
                     "--run-name", "killed", "--step-pause", "0.3", "--read-timeout", "5")
    controllers.append(run)
    run_dir = results / "killed"
    wait_for_records(run_dir, 3, run)
    os.kill(worker_pid(pool, "worker-1"), signal.SIGKILL)
    assert run.wait() == 0, run.output()

    records = read_records(run_dir)
    assert len(records) == LOCAL_TASKS
    assert {r["status"] for r in records.values()} == {"success"}, run.output()
    retried = [r for r in records.values()
               if any(a["worker"] == "worker-1" for a in r["previous_attempts"])]
    assert retried, "no task was retried after its worker died"
    for record in retried:
        assert record["worker"] != "worker-1"
        assert record["attempts"] == len(record["previous_attempts"]) + 1
        assert record["previous_attempts"][-1]["error_type"] == "infrastructure"
    metadata = json.loads((run_dir / "metadata.json").read_text())
    assert metadata["quarantined_workers"] == ["worker-1"]
    assert_summary_matches(run_dir, records)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["workers"]["worker-1"]["quarantined"] is True


@pytest.mark.long
def test_a_hung_worker_times_out_its_task_which_is_retried_and_the_worker_quarantined(
    home: Path, pool: str, tmp_path: Path, controllers: list[RunController]
) -> None:
    results = tmp_path / "results"
    # Timing: a healthy task takes at least 2.4 s (3 steps x 0.8 s pause), so the two healthy
    # workers need at least 26 s for the rest of the suite, while each attempt on the hung
    # worker ends within the 8 s task timeout (at its first request's 3 s read timeout, as a
    # rule): it fails twice (and is quarantined) before the queue drains. A busy machine only
    # slows the healthy tasks; their requests (under 0.5 s with the machine loaded) and their
    # tasks stay well inside those timeouts.
    run = RunController(home, results, "--pool", pool, "--agent", "oracle", "--tasks", "all",
                     "--run-name", "hung", "--step-pause", "0.8", "--read-timeout", "3",
                     "--task-timeout", "8")
    controllers.append(run)
    run_dir = results / "hung"
    wait_for_records(run_dir, 1, run)
    stopped = worker_pid(pool, "worker-2")
    os.kill(stopped, signal.SIGSTOP)
    try:
        assert run.wait() == 0, run.output()
    finally:
        os.kill(stopped, signal.SIGCONT)

    records = read_records(run_dir)
    assert len(records) == LOCAL_TASKS
    assert {r["status"] for r in records.values()} == {"success"}, run.output()
    hung_attempts = [a for r in records.values() for a in r["previous_attempts"]
                     if a["worker"] == "worker-2"]
    assert hung_attempts
    assert {a["error_type"] for a in hung_attempts} <= {"infrastructure", "timeout"}
    # A hung worker is noticed by the per-request read timeout (or the task's own deadline).
    assert all("no answer within" in (a["error_message"] or "") or a["error_type"] == "timeout"
               for a in hung_attempts)
    metadata = json.loads((run_dir / "metadata.json").read_text())
    assert metadata["quarantined_workers"] == ["worker-2"], run.output()
    assert "worker worker-2 quarantined" in run.output(), run.output()
    assert_summary_matches(run_dir, records)


def test_a_controller_killed_mid_run_resumes_without_redoing_or_losing_tasks(
    home: Path, pool: str, tmp_path: Path, controllers: list[RunController]
) -> None:
    results = tmp_path / "results"
    args = ("--pool", pool, "--agent", "oracle", "--tasks", "all", "--run-name", "crash",
            "--step-pause", "0.3")
    first = RunController(home, results, *args)
    controllers.append(first)
    run_dir = results / "crash"
    wait_for_records(run_dir, 6, first)
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait(timeout=10)
    finished_before = {t: r["started_at"] for t, r in read_records(run_dir).items()}
    assert 6 <= len(finished_before) < LOCAL_TASKS
    assert json.loads((run_dir / "metadata.json").read_text())["status"] == "running"

    second = RunController(home, results, *args, "--resume")
    controllers.append(second)
    assert second.wait() == 0, second.output()

    records = read_records(run_dir)
    assert len(records) == LOCAL_TASKS
    assert {r["status"] for r in records.values()} == {"success"}
    for task_id, started_at in finished_before.items():
        assert records[task_id]["started_at"] == started_at, f"{task_id} was redone"
    metadata = json.loads((run_dir / "metadata.json").read_text())
    assert metadata["status"] == "finished" and len(metadata["resumed_at"]) == 1
    assert_summary_matches(run_dir, records)
    assert "already done" in second.output()


def test_the_same_run_cannot_be_driven_by_two_controllers(
    home: Path, pool: str, tmp_path: Path, controllers: list[RunController]
) -> None:
    results = tmp_path / "results"
    args = ("--pool", pool, "--agent", "oracle", "--tasks", "all", "--run-name", "busy",
            "--step-pause", "0.3")
    first = RunController(home, results, *args)
    controllers.append(first)
    wait_for_records(results / "busy", 1, first)
    # Held still (alive, its lease and lock kept) while the second starts, however long that
    # takes: otherwise a slow start could find the run finished and rightly resume it.
    first.proc.send_signal(signal.SIGSTOP)
    try:
        second = RunController(home, results, *args, "--resume")
        controllers.append(second)
        assert second.wait() == 1, second.output()
    finally:
        first.proc.send_signal(signal.SIGCONT)
    # refused by the pool's lease (or the run's own lock), naming who holds it
    assert "in use by" in second.output() and "busy" in second.output()
    assert first.wait() == 0, first.output()
    assert len(read_records(results / "busy")) == LOCAL_TASKS

