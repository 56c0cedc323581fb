"""The statistics coverage benchmark end to end, tiny (``--quick``): one JSON object whose rows
carry every figure the docs' table quotes."""

from __future__ import annotations

import json
import subprocess
import sys

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
