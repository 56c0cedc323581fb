"""``openadapt-evals compare``: two runs side by side over the tasks they share."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evals.cli.commands.view import FORCE_HELP, RESULTS_HELP

OUT_HELP = "Where to write the page (default: compare-<A>-vs-<B>.html in the results folder)."


def compare(
    run_a: Annotated[str, typer.Argument(help="The first run's name (the baseline).")],
    run_b: Annotated[str, typer.Argument(help="The second run's name.")],
    results_dir: Annotated[Path | None, typer.Option("--results-dir", help=RESULTS_HELP)] = None,
    out: Annotated[Path | None, typer.Option("--out", help=OUT_HELP)] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print JSON instead of the table.")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help=FORCE_HELP)] = False,
) -> None:
    """Print the shared tasks' results side by side and write the same as an HTML page."""
    from evals.report.compare import compare_runs, format_comparison, write_comparison
    from evals.results.run_reader import find_run

    if out is not None:  # refused before the comparison is computed (scipy, every record)
        from evals.report.viewer import check_page_target

        check_page_target(out, force=force)
    comparison = compare_runs(find_run(run_a, results_dir), find_run(run_b, results_dir))
    page = write_comparison(comparison, out, force=force)
    if json_out:
        from oa_vm.kit.clikit import print_json

        print_json({**comparison.to_json(), "page": str(page)})
        return
    typer.echo(format_comparison(comparison))
    typer.echo(f"\nPage: {page}")
