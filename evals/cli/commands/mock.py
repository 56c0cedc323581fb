"""``openadapt-evals mock``: the offline quick start.

Creates a local pool of simulated workers, runs the selected tasks of the local suite (the first
N with ``--tasks N``) on it with a built-in agent through the same runner as ``openadapt-evals
run``, prints the summary, writes the run's page, and removes the pool, whatever happens (errors
and Ctrl-C included).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

import oa_vm
from evals.cli.commands.view import RESULTS_HELP
from evals.errors import InvalidRunInputError
from oa_vm.kit.clikit import target_option

if TYPE_CHECKING:
    from evals.run.runner import RunEvent

MOCK_AGENTS = ("noop", "oracle")


def mock(
    tasks: Annotated[
        str, typer.Option("--tasks", help="Which local tasks: N (the first N), all, local_small, "
                                          "domain:<name>, IDs 'A,B', @file.")
    ] = "5",
    task_count: Annotated[
        int | None, typer.Option("--task-count", min=1, hidden=True,
                                 help="The first N tasks (as --tasks N).")
    ] = None,
    agent: Annotated[
        str,
        typer.Option(
            "--agent",
            help="oracle: plays each task's reference solution (expect successes); "
            "noop: reports done at once (the baseline, expect failures).",
        ),
    ] = "oracle",
    workers: Annotated[
        int, typer.Option("--workers", min=1, max=16, help="Simulated workers in the pool.")
    ] = 2,
    run_name: Annotated[
        str | None, target_option("--run-name", what="run folder",
                                  help="Run folder name (default: mock-<time>).")
    ] = None,
    results_dir: Annotated[Path | None, typer.Option("--results-dir", help=RESULTS_HELP)] = None,
) -> None:
    """Run N local tasks on a throwaway local pool and print the summary (no cloud needed)."""
    import secrets

    from evals.report.viewer import write_view
    from evals.run.metrics import format_summary
    from evals.run.prechecks import check_before_run
    from evals.run.runner import RunConfig, default_run_name, run_evaluation
    from evals.tasks.kinds import refuse_task_files

    if agent not in MOCK_AGENTS:
        raise InvalidRunInputError(
            f"--agent {agent!r} is not available for mock; use one of {', '.join(MOCK_AGENTS)} "
            "(other agents run with 'openadapt-evals run' on a pool)"
        )
    if task_count is not None:
        tasks = str(task_count)
    refuse_task_files(tasks, "mock")
    selection = _local_selection(tasks)  # a bad selection: one line, before the pool
    pool = f"mock-{secrets.token_hex(4)}"
    config = RunConfig(
        pool=pool,
        selection=selection,
        agent=agent,
        run_name=run_name or default_run_name(f"mock-{agent}"),
        results_dir=results_dir,
        read_timeout_s=30.0,
    )
    # a bad run name or results folder: one line, before the pool is made (as sweep checks)
    checked = check_before_run(config, needs_home=True)
    _say(f"creating local pool {pool} with {workers} simulated worker(s)")
    try:
        oa_vm.create_pool(name=pool, cloud="local", workers=workers, ttl_hours=1.0)
        oa_vm.wait_pool(pool, timeout_s=120.0)
        result = run_evaluation(config, on_event=_progress, checked=checked)
    finally:
        _say(f"removing local pool {pool}")
        oa_vm.remove_temporary_pool(pool, _say)  # never raises: the run's own error stays
    summary = result.summary
    page = write_view(result.run_dir)
    typer.echo(format_summary(summary))
    typer.echo("")
    typer.echo(f"Run folder: {result.run_dir}")
    typer.echo(f"Page: {page}")
    if summary["status"] != "finished":
        raise typer.Exit(1)


def _local_selection(selection: str) -> str:
    """``selection`` checked against the local suite the mock pool serves; a count larger than
    the suite runs all of it (said on stderr), as the quick start always did."""
    from oa_vm import local_tasks_dir
    from waa_client.catalog import Catalog, selection_count

    catalog = Catalog.from_folder(local_tasks_dir())
    count = selection_count(selection)
    if count is not None and count > len(catalog):
        _say(f"the local suite has {len(catalog)} tasks; running all of them")
        selection = "all"
    catalog.resolve(selection, live=False)
    return selection


def _say(message: str) -> None:
    print(f"mock: {message}", file=sys.stderr, flush=True)


def _progress(event: RunEvent) -> None:
    if event.kind != "task_finished":
        return
    snap = event.snapshot
    where = f" on {event.worker}" if event.worker else ""
    detail = f" ({event.detail})" if event.detail and event.status != "success" else ""
    _say(f"[{snap.done}/{snap.total}] {event.task_id}: {event.status}{where}{detail}")
