"""The clean-reset benchmark end to end, tiny: a few QEMU restores and one round of sweeps."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench import tiny_guest
from tests.conftest import ROOT


@pytest.mark.integration
@pytest.mark.slow  # three minutes of QEMU boots and sweeps; the restore itself is in the quick tier
def test_reset_bench_prints_restore_times_and_the_sweep_ratio() -> None:
    done = subprocess.run(  # our own script, fixed arguments
        [sys.executable, str(ROOT / "bench" / "reset.py"), "--restores", "2", "--workers", "1",
         "--rounds", "1", "--json"],
        capture_output=True, text=True, timeout=900, cwd=ROOT, check=False,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    try:
        tiny_guest.check_available()
    except tiny_guest.GuestUnavailable:
        assert "skipped" in figures["qemu"]
    else:
        qemu = figures["qemu"]
        assert qemu["restores"] == 2
        assert 0 < qemu["load_median_s"] <= qemu["load_max_s"]
        assert qemu["restore_median_s"] <= qemu["restore_max_s"]
    sweep = figures["local_sweep"]
    assert sweep["clean_over_stock"] > 0 and sweep["clean_reset_median_s"] > 0


def test_bad_counts_are_one_line() -> None:
    done = subprocess.run(  # our own script, fixed arguments
        [sys.executable, str(ROOT / "bench" / "reset.py"), "--restores", "0"],
        capture_output=True, text=True, timeout=120, cwd=ROOT, check=False,
    )
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "at least 1" in done.stderr
