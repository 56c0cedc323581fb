"""``openadapt-evals runs``: the table across runs in a results folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evals.cli.commands.view import RESULTS_HELP


def runs(
    results_dir: Annotated[Path | None, typer.Option("--results-dir", help=RESULTS_HELP)] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help="Only runs of this agent (as given to --agent).")
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", metavar="DATE",
                                 help="Only runs started on or after DATE (2026-01-31).")
    ] = None,
    no_answers: Annotated[
        bool, typer.Option("--no-answers", help="Leave out runs whose agent saw the answers.")
    ] = False,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print JSON instead of the table.")
    ] = False,
) -> None:
    """One row per run: agent and arguments, tasks, trials, rate with its interval, score, cost."""
    from evals.errors import InvalidRunInputError
    from evals.report.run_list import format_runs, list_run_rows
    from evals.results.records import results_root
    from oa_vm.kit.results_dir import results_read_problem

    problem = results_read_problem(results_dir)  # a typo is a refusal, not "no runs"
    if problem is not None:
        raise InvalidRunInputError(problem)
    root = results_root(results_dir)
    rows = list_run_rows(root, agent=agent, since=since, hide_answers=no_answers)
    if json_out:
        from oa_vm.kit.clikit import print_json

        print_json({"results_dir": str(root), "runs": [r.to_json() for r in rows]})
        return
    typer.echo(f"Runs in {root}:")
    typer.echo(format_runs(rows))
