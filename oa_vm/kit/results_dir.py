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


def results_read_problem(explicit: str | Path | None = None) -> str | None:
    """Why the results folder cannot be read by a command that reads runs (``runs``, ``view``,
    ``compare``, ``export``, ``--rerun-errors``); ``None`` when it can.

    A folder named on the command line (``--results-dir``) must exist and be a folder: a typo
    is a refusal, not an empty table. The configured place (``$OA_EVALS_RESULTS``, else
    ``./benchmark_results``) may be missing: it is where runs go, and no run was made there
    yet, which is an answer ("no runs"), as an empty folder is; it must not be a file.
    """
    from oa_vm.kit.validate import read_problem

    root = results_root(explicit)
    if explicit is not None:
        option, fix = "--results-dir", "give --results-dir the folder holding the run folders"
    elif not os.path.lexists(root):
        return None
    elif os.environ.get(RESULTS_ENV):
        option = f"${RESULTS_ENV}"
        fix = f"point ${RESULTS_ENV} at the folder holding the run folders"
    else:
        option, fix = "the results folder", "pass --results-dir with the folder of run folders"
    return read_problem(option, root, kind="folder", fix=fix)
