"""``openadapt-evals view``: write a run's HTML page and print its path."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

OUT_HELP = "Where to write the page (default: <run>/view.html)."
RESULTS_HELP = "Folder holding the runs (default: $OA_EVALS_RESULTS, else ./benchmark_results)."


def view(
    run_name: Annotated[str, typer.Option("--run-name", help="The run folder's name.")],
    results_dir: Annotated[Path | None, typer.Option("--results-dir", help=RESULTS_HELP)] = None,
    out: Annotated[Path | None, typer.Option("--out", help=OUT_HELP)] = None,
) -> None:
    """Write the run's self-contained page (summary, tasks, steps, screenshots); print its path."""
    from evals.metrics import find_run
    from evals.viewer import write_view

    path = write_view(find_run(run_name, results_dir), out)
    typer.echo(str(path))
