"""The dispatch benchmark end to end, tiny: real workers, the real runner, one JSON object."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT

KEYS = {"workers", "failures", "policy", "makespan_over_lb", "worker_time_over_work",
        "tasks_lost"}


def test_dispatch_prints_one_json_object_with_a_row_per_policy_and_drill() -> None:
    done = subprocess.run(  # our own script, fixed arguments
        [sys.executable, str(ROOT / "bench" / "dispatch.py"), "--workers", "2", "--tasks",
         "12", "--scale", "tiny", "--json"],
        capture_output=True, text=True, timeout=120, cwd=ROOT, check=False,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert set(figures) >= {"results", "machine"}
    assert figures["machine"]["nproc"] >= 1
    rows = figures["results"]
    assert {(r["failures"], r["policy"]) for r in rows} == {
        (f, p) for f in (0, 1) for p in ("ours", "static", "round_robin")
    }
    for row in rows:
        assert set(row) >= KEYS
        assert row["workers"] == 2
        assert row["makespan_over_lb"] > 0.5
        assert row["worker_time_over_work"] > 0
    by_key = {(r["failures"], r["policy"]): r for r in rows}
    # without a failure nothing is lost; the runner never loses a task to a dead worker
    assert all(by_key[(0, p)]["tasks_lost"] == 0 for p in ("ours", "static", "round_robin"))
    assert by_key[(1, "ours")]["tasks_lost"] == 0
    # the runner's own time between tasks, and each step of it on the wall clock
    ours = by_key[(0, "ours")]
    assert ours["gaps"] > 0 and 0 <= ours["gap_ms_median"] <= ours["gap_ms_max"]
    steps = ours["wall_ms_per_task"]
    assert steps["the task (agent loop, HTTP to the worker)"] > 0
    assert steps["  queue.complete (SQLite commit)"] > 0
    assert figures["workload"]["reset"] == "stock"


def test_one_line_per_scenario_names_the_ratio_with_a_target() -> None:
    from bench.dispatch import verdicts

    row = {"policy": "ours", "workers": 8, "tasks_lost": 0, "tasks_retried": 3,
           "makespan_over_lb": 1.3, "makespan_over_capacity_lb": 1.04}
    lines = verdicts([{**row, "failures": 0}, {**row, "failures": 2},
                      {**row, "failures": 2, "tasks_lost": 1}, {**row, "policy": "static"}])
    assert lines == [
        "dispatch W=8 killed=0: makespan/LB 1.300 (MISSED <= 1.05), 0 lost, 3 retried",
        "dispatch W=8 killed=2: makespan/capLB 1.040 (met <= 1.05), 0 lost, 3 retried",
        "dispatch W=8 killed=2: makespan/capLB 1.040 (MISSED <= 1.05), 1 lost, 3 retried",
    ]


def test_bad_input_is_one_line_and_exit_2() -> None:
    done = subprocess.run(  # our own script, fixed arguments
        [sys.executable, str(ROOT / "bench" / "dispatch.py"), "--workers", "0"],
        capture_output=True, text=True, timeout=60, cwd=ROOT, check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "--workers" in done.stderr
    assert done.stdout == ""
