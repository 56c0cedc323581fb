"""``openadapt-evals view``: write a run's HTML page and print its path."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from oa_vm.kit.clikit import target_option

OUT_HELP = "Where to write the page (default: <run>/view.html)."
RESULTS_HELP = "Folder holding the runs (default: $OA_EVALS_RESULTS, else ./benchmark_results)."
FORCE_HELP = ("Replace an existing --out file that is not a page openadapt-evals wrote (never a "
              "symlink or a device).")


def view(
    run: Annotated[
        str | None, typer.Argument(metavar="RUN", help="The run folder's name (as in compare A B).")
    ] = None,
    run_name: Annotated[
        str | None, target_option("--run-name", what="run folder",
                                  help="The run folder's name (the same as RUN).")
    ] = None,
    results_dir: Annotated[Path | None, typer.Option("--results-dir", help=RESULTS_HELP)] = None,
    out: Annotated[Path | None, typer.Option("--out", help=OUT_HELP)] = None,
    force: Annotated[bool, typer.Option("--force", help=FORCE_HELP)] = False,
) -> None:
    """Write the run's self-contained page (summary, tasks, steps, screenshots); print its path."""
    from evals.report.viewer import write_view
    from evals.results.run_reader import find_run, missing_line

    if run is not None and run_name is not None and run != run_name:
        raise typer.BadParameter(
            f"two runs named ({run!r} and --run-name {run_name!r}); give one", param_hint="RUN"
        )
    name = run if run is not None else run_name
    if name is None:
        raise typer.BadParameter("missing; give the run's name: openadapt-evals view RUN",
                                 param_hint="RUN")
    folder = find_run(name, results_dir)
    missing: list[str] = []  # the page's, said here too: the records are read once
    path = write_view(folder, out, force=force, missing=missing)
    if missing:  # also on the page; said here so a missing record is never silent
        typer.echo(f"note: {missing_line(name, missing)}", err=True)
    typer.echo(str(path))
