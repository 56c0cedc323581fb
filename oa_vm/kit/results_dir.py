"""Where ``openadapt-evals`` keeps runs: the one rule, shared by the run commands and
``oa-vm doctor`` (which names the folder so a user knows where to look)."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_RESULTS_DIR = "benchmark_results"
RESULTS_ENV = "OA_EVALS_RESULTS"


def results_root(explicit: str | Path | None = None) -> Path:
    """Where runs live: ``--results-dir``, else ``$OA_EVALS_RESULTS``, else ./benchmark_results."""
    if explicit is not None:
        return Path(explicit)
    return Path(os.environ.get(RESULTS_ENV) or DEFAULT_RESULTS_DIR)
