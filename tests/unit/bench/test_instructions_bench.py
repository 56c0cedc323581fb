"""The instruction-count benchmark: its bad input, its reading of callgrind's dumps, and one
tiny run of the real thing under callgrind, beside this same checkout."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.instructions import _order, dump_totals, summarize, time_slope
from tests.conftest import ROOT

SCRIPT = str(ROOT / "bench" / "instructions.py")


def _run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # our own script, fixed arguments
        [sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=timeout,
        cwd=ROOT, check=False,
    )


@pytest.mark.parametrize(("args", "says"), [
    (["--repeat", "0"], "--repeat must be at least 1"),
    (["--workers", "0"], "--workers must be at least 1"),
    (["--beside", "no-such-checkout"], "--beside: no .venv/bin/python in"),
])
def test_bad_input_is_one_line_and_exit_2(args: list[str], says: str) -> None:
    done = _run(*args)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and says in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_dump_totals_reads_each_dump_by_its_label(tmp_path: Path) -> None:
    for suffix, trigger, total in (("", "Program termination", 7), (".1", "dump setup", 11),
                                   (".2", "dump dispatch", 12345)):
        (tmp_path / f"callgrind.out.42{suffix}").write_text(
            f"# callgrind format\nversion: 1\ndesc: Trigger: {trigger}\n"
            f"events: Ir\nsummary: {total}\nfn=(1) main\n1 {total}\ntotals: {total}\n",
            encoding="utf-8",
        )
    assert dump_totals(tmp_path) == {"Program termination": 7, "setup": 11, "dispatch": 12345}


def test_trees_alternate_and_the_ratio_is_of_means_with_its_extremes() -> None:
    assert _order(3, ["this", "beside"]) == ["this", "beside", "beside", "this", "this",
                                             "beside"]
    runs = {"this": [{"instructions_per_step": n, "wall_s_under_callgrind": 30}
                     for n in (102, 104)],
            "beside": [{"instructions_per_step": 100, "wall_s_under_callgrind": 30}] * 2}
    s = summarize(runs)
    assert "ratio_at_same_run_time" not in s  # every run as long: no slope to fit
    assert s["ratio_this_to_beside"] == 1.03
    assert (s["ratio_low"], s["ratio_high"]) == (1.02, 1.04)
    assert s["this"]["spread"] == round(2 / 103, 4)


@pytest.mark.slow  # two runs under callgrind, a minute or two
@pytest.mark.integration
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind not installed")
def test_a_tiny_run_beside_this_checkout_counts_the_dispatch_only(tmp_path: Path) -> None:
    keep = tmp_path / "cg"
    done = _run("--workers", "2", "--per-process", "2", "--tasks", "6", "--repeat", "1",
                "--beside", str(ROOT), "--keep", str(keep), "--json", timeout=900)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert [r["key"] for r in result["runs"]] == ["this", "beside"]
    for run in result["runs"]:
        assert (run["tasks"], run["steps"], run["errors"]) == (6, 18, 0)
        assert run["runner"].startswith(str(ROOT))
        # the setup (imports, the pool's creation) is counted apart from the dispatch
        assert run["instructions"] > 0 and run["setup_instructions"] > run["instructions"]
    # the same code twice: the two counts are within a few per cent of each other
    assert 0.9 < result["summary"]["ratio_this_to_beside"] < 1.1
    assert any(keep.glob("this-1/callgrind.out.*.2"))


def test_the_time_slope_is_fitted_within_each_tree_and_corrects_the_ratio() -> None:
    # each tree: 1,000 per step plus 10 per second of run time; this one is 2 % dearer but its
    # runs were slower, which the plain ratio of means overstates
    def run(base: float, wall: float) -> dict[str, float]:
        return {"instructions_per_step": base + 10 * wall, "wall_s_under_callgrind": wall}

    runs = {"this": [run(1020, 40), run(1020, 60)], "beside": [run(1000, 20), run(1000, 30)]}
    assert time_slope(runs) == pytest.approx(10)
    s = summarize(runs)
    assert s["time_slope_per_step_per_s"] == 10
    assert s["ratio_this_to_beside"] > 1.2
    # at the mean run time of all runs (37.5 s): 1,395 against 1,375
    assert s["ratio_at_same_run_time"] == round(1395 / 1375, 4)
    assert time_slope({"this": [run(1000, 20)], "beside": [run(1000, 20)]}) is None
