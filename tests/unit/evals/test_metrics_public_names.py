"""``evals`` re-exports the public API lazily: importing the package loads nothing heavy."""

from __future__ import annotations

import subprocess
import sys

import pytest

import evals
from evals.agents.base import BenchmarkAction
from evals.run.metrics import compute_metrics


def test_import_evals_stays_light() -> None:
    code = (
        "import sys, evals\n"
        "heavy = [m for m in ('requests', 'PIL', 'evals.compat.benchmark_api', 'oa_vm.api')"
        " if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    proc = subprocess.run(  # a fixed argv, no shell
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
    )
    assert proc.stdout.strip() == ""


def test_names_resolve_to_their_modules() -> None:
    assert evals.BenchmarkAction is BenchmarkAction
    assert evals.compute_metrics is compute_metrics
    for name in evals.__all__:
        assert getattr(evals, name) is not None
    assert set(evals.__all__) <= set(dir(evals))


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = evals.Nope
