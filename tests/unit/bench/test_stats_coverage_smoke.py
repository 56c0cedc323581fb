"""The statistics coverage benchmark end to end, tiny (``--quick``): one JSON object whose rows
carry every figure the docs' table quotes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

KEYS = {"scenario", "rate_ci_coverage", "difference_ci_coverage", "test_calls_a_difference",
        "test_interval_disagree", "detectable_difference_points",
        "power_at_detectable_difference", "standard_error"}


def test_stats_coverage_quick_prints_the_tables_figures() -> None:
    done = subprocess.run(  # our own script, fixed arguments
        [sys.executable, str(ROOT / "bench" / "stats_coverage.py"), "--quick", "--json"],
        capture_output=True, text=True, timeout=900, cwd=ROOT, check=False,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    rows = figures["simulated"]
    assert len(rows) == 3 and figures["replications"] == 40
    for row in rows:
        assert set(row) >= KEYS
        assert 0 <= row["rate_ci_coverage"] <= 1 and 0 <= row["difference_ci_coverage"] <= 1
        assert row["test_interval_disagree"] == 0  # one construction: they always agree
    assert any(r["trials"] == [1, 5] for r in rows)  # unequal trials are in the smoke test


def test_exact_and_candidate_figures_at_24_tasks_and_a_five_percent_rate() -> None:
    from scipy import stats as sps

    done = subprocess.run(  # our own script, fixed arguments
        [sys.executable, str(ROOT / "bench" / "stats_coverage.py"), "--only", "0", "--exact",
         "--candidates", "--replications", "40", "--json"],
        capture_output=True, text=True, timeout=900, cwd=ROOT, check=False,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    (exact,) = figures["exact"]
    # 24 tasks at 5%, one trial: the interval holds 0.05 from 0 to 3 successes, not at 4 (the
    # binomial's step: 97.02%, whatever the method); McNemar's exact test calls 0.06%
    assert exact["rate_ci_coverage"] == pytest.approx(sps.binom.cdf(3, 24, 0.05), abs=1e-9)
    assert exact["mcnemar_exact_calls"] < exact["mcnemar_mid_p_calls"] < 0.01
    assert exact["test_calls_a_difference"] <= exact["mcnemar_mid_p_calls"] + 1e-12
    (candidate,) = figures["candidates"]
    assert candidate["replications"] == 40 and figures["simulated"] == []
