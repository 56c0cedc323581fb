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


def test_bad_input_is_one_line_and_exit_2() -> None:
    done = subprocess.run(  # our own script, fixed arguments
        [sys.executable, str(ROOT / "bench" / "dispatch.py"), "--workers", "0"],
        capture_output=True, text=True, timeout=60, cwd=ROOT, check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "--workers" in done.stderr
    assert done.stdout == ""
