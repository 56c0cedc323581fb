"""``openadapt-evals study ui-change``: scripted arms on the records app under UI changes.

Without ``--pool`` a temporary local pool of one worker is created for it and removed
afterwards, whatever happens. Exit status: 0 with the table printed, 1 when a run's store
readback failed (nothing counted), 2 on bad input.
"""

from __future__ import annotations

import json
import secrets
from typing import Annotated

import typer

import oa_vm
from evals.errors import EvalsError
from oa_vm.kit.clikit import plain_typer, target_option

app = plain_typer("Studies over the synthetic records app (docs/tasks.md).", name="study",
                  no_args_is_help=True)


@app.callback()
def study() -> None:
    """Studies over the synthetic records app (docs/tasks.md)."""


@app.command("ui-change")
def ui_change(
    agents: Annotated[
        str, typer.Option("--agents", help="The arms, comma-separated: by-role (finds elements "
                                           "by their place in the page), by-position (clicks "
                                           "where they were on the clean app), by-name (finds "
                                           "buttons by their label).")
    ] = "by-role,by-position,by-name",
    runs: Annotated[int, typer.Option("--runs", min=1, max=20,
                                      help="Runs per condition and arm.")] = 3,
    pool: Annotated[
        str | None, target_option("--pool", "-n", what="pool",
                                  help="A ready local pool whose workers have a browser "
                                       "(default: a temporary one).")
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")
                        ] = False,
) -> None:
    """Serve the records app to a worker's browser as clean, theme (restyled) and rename
    (Open -> View, Save Encounter -> Submit Encounter), run each arm --runs times per
    condition through the worker's input path, and print successes/runs per condition and
    arm. A success is counted only when the app's store, read back from the page, holds the
    encounter asked for."""
    from evals.run.pools import hold_for
    from evals.tasks.ui_change import ReadbackError, Worker, check_arms, run_study, table

    arms = check_arms(agents)  # a worker without a browser says so at the first launch
    name = pool or f"study-{secrets.token_hex(4)}"
    temporary = pool is None
    try:
        if temporary:
            typer.echo(f"creating local pool {name}", err=True)
            oa_vm.create_pool(name=name, cloud="local", workers=1, ttl_hours=1.0)
            oa_vm.wait_pool(name, timeout_s=120.0)
        with oa_vm.connect(name, read_timeout=60.0) as connections, \
                hold_for(name, "study ui-change"):
            try:
                cells = run_study(Worker(connections[0].waa), arms, runs,
                                  say=lambda line: typer.echo(line, err=True))
            except ReadbackError as exc:  # said by the one error rule (--json included)
                raise EvalsError(f"{exc}; no run is counted without its store readback") from None
    finally:
        if temporary:
            typer.echo(f"removing local pool {name}", err=True)
            # never raises: the error that ended the study keeps its line and exit status
            oa_vm.remove_temporary_pool(name, lambda line: typer.echo(line, err=True))
    if json_out:
        typer.echo(json.dumps({c: {a: {"successes": cell.successes, "runs": cell.runs,
                                        "stopped": cell.stopped, "seconds": cell.seconds}
                                   for a, cell in row.items()} for c, row in cells.items()},
                              indent=2))
    else:
        typer.echo(table(cells))
