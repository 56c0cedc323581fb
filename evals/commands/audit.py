"""``openadapt-evals audit-verifier``: edit each reference solution, replay it, check the checker.

See :mod:`evals.audit` for the operators and classes. Without ``--pool`` a temporary local pool
is created for the audit and removed afterwards, whatever happens.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

BENCHMARKS = ("local",)


def audit_verifier(
    benchmark: Annotated[
        str, typer.Option("--benchmark", help="Which suite to audit: local (the simulated "
                                              "worker's tasks, the ones with reference solutions).")
    ] = "local",
    pool: Annotated[
        str | None, typer.Option("--pool", "-n", help="A ready pool to replay on (default: a "
                                                      "temporary local pool).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the report as JSON here.")
    ] = None,
    tasks: Annotated[
        str | None, typer.Option("--tasks", help="Comma-separated task IDs (default: all).")
    ] = None,
) -> None:
    """Replay edited reference solutions and classify the checker's verdicts; exit 1 on any
    false accept."""
    import secrets

    from evals.errors import InvalidRunInputError
    from oa_vm import api

    if benchmark not in BENCHMARKS:
        raise InvalidRunInputError(
            f"--benchmark {benchmark!r} has no reference solutions to audit; use "
            f"{', '.join(BENCHMARKS)}"
        )
    if out is not None and not out.parent.is_dir():
        raise InvalidRunInputError(f"--out {out}: folder {out.parent} does not exist")
    temporary = pool is None
    name = pool or f"audit-{secrets.token_hex(4)}"
    try:
        if temporary:
            _say(f"creating local pool {name}")
            api.create_pool(name=name, cloud="local", workers=1, ttl_hours=1.0)
            api.wait_pool(name, timeout_s=120.0)
        failed = _audit(name, out, tasks)
    finally:
        if temporary:
            _remove(name)
    if failed:
        raise typer.Exit(1)


def _audit(pool: str, out: Path | None, wanted: str | None) -> bool:
    from evals.audit import audit, format_row, format_table, write_report
    from evals.errors import InvalidRunInputError
    from oa_vm import api

    with api.connect(pool, read_timeout=60.0) as connections:
        worker = connections[0]
        ids = [tid for ids in worker.scoring.tasks().values() for tid in ids]
        if wanted:
            chosen = [t.strip() for t in wanted.split(",") if t.strip()]
            unknown = [t for t in chosen if t not in ids]
            if unknown:
                raise InvalidRunInputError(
                    f"--tasks: unknown task(s) {', '.join(unknown)}; "
                    "'openadapt-evals tasks' lists them"
                )
            ids = chosen
        tasks = {tid: worker.scoring.task(tid) for tid in ids}
        if not any(isinstance(t.get("reference_solution"), list) for t in tasks.values()):
            raise InvalidRunInputError(
                f"no selected task on pool {pool!r} has a reference solution to audit "
                "(only the local suite has them)"
            )
        report = audit(tasks, worker.waa, worker.scoring,
                       on_row=lambda row: typer.echo(format_row(row)))
    typer.echo("")
    typer.echo(format_table(report))
    unconfirmed = [t for t, v in report.references.items() if v != "accepted"]
    if unconfirmed:
        typer.echo(f"\nReference solutions not accepted: {', '.join(unconfirmed)}")
    false_accepts = report.false_accepts
    typer.echo(f"\nFalse accepts: {len(false_accepts)}")
    if out is not None:
        write_report(report, str(out))
        typer.echo(f"Report: {out}")
    return bool(false_accepts)


def _remove(pool: str) -> None:
    from oa_vm import api
    from oa_vm.errors import OaVmError, PoolNotFoundError

    _say(f"removing local pool {pool}")
    try:
        api.cleanup_pool(pool)
    except PoolNotFoundError:
        return
    except OaVmError as exc:
        _say(f"could not remove pool {pool}: {exc}; run 'oa-vm pool-cleanup --name {pool}'")


def _say(message: str) -> None:
    print(f"audit-verifier: {message}", file=sys.stderr, flush=True)
