"""``openadapt-evals audit-verifier``: edit correct runs, replay them, check the checker.

``--benchmark local`` audits the local WAA suite (:mod:`evals.verifier_audit.local`): without
``--pool`` a temporary local pool is created for it and removed afterwards, whatever happens.
``--benchmark toy`` and ``--benchmark package.module:Adapter`` audit any benchmark through the
adapter protocol of :mod:`evals.verifier_audit`. Exit status: 0 with no false accept, 1 with
one (unless ``--exit-zero``), 2 on bad input.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

import oa_vm
from evals.errors import InvalidRunInputError
from oa_vm.errors import listing
from oa_vm.kit import safe_fs
from oa_vm.kit.clikit import target_option
from oa_vm.kit.validate import module_spec_problem

if TYPE_CHECKING:
    from evals.verifier_audit import BenchmarkAdapter

BENCHMARKS = ("local", "toy")
LOCAL_SUITE = BENCHMARKS[0]
"""The benchmark of the local pool's WAA tasks (a benchmark's name, not a cloud's)."""


def audit_verifier(
    benchmark: Annotated[
        str, typer.Option("--benchmark", help="Which benchmark to audit: local (the simulated "
                                              "worker's WAA tasks and their reference "
                                              "solutions), toy (built in, offline), or "
                                              "package.module:Adapter for your own.")
    ] = "local",
    pool: Annotated[
        str | None, target_option("--pool", "-n", what="pool",
                                  help="local: a ready pool to replay on (default: a temporary "
                                       "local pool).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the report as JSON here (a file it "
                                                "wrote is replaced; another only with --force; "
                                                "never a symlink or a device).")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace an --out file this tool did not write.")
    ] = False,
    tasks: Annotated[
        str | None, typer.Option("--tasks", help="Comma-separated task IDs (default: all; "
                                                 "for an adapter, its --split).")
    ] = None,
    split: Annotated[
        str | None, typer.Option("--split", help="Adapter: the dataset split to take tasks "
                                                 "from.")
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", help="Adapter: audit at most this many tasks of the "
                                          "split; 0 means all.")
    ] = 20,
    operators: Annotated[
        str | None, typer.Option("--operators", help="Adapter: a comma-separated subset of "
                                                     "claim-only, omit, partial, wrong-value, "
                                                     "extra, extra-ni.")
    ] = None,
    ignore_fields: Annotated[
        str | None, typer.Option("--ignore-fields", help="Adapter: fields the task leaves free "
                                                         "(field or table.field, comma-"
                                                         "separated); differences in them do "
                                                         "not count.")
    ] = None,
    jobs: Annotated[
        int, typer.Option("--jobs", help="Adapter: tasks audited in parallel.")
    ] = 1,
    as_json: Annotated[
        bool, typer.Option("--json", help="Adapter: print the JSON report instead of text.")
    ] = False,
    exit_zero: Annotated[
        bool, typer.Option("--exit-zero", help="Exit 0 even when a false accept is found.")
    ] = False,
) -> None:
    """Replay edited correct runs and classify the checker's verdicts; exit 1 on any false
    accept."""
    import secrets

    from evals.tasks.kinds import refuse_task_files

    refuse_task_files(tasks, "audit-verifier")
    if out is not None:  # refused before the audit, not after it
        from evals.verifier_audit.report import REPORT_MARKER

        safe_fs.check_out(out, marker=REPORT_MARKER, force=force)
    if benchmark != LOCAL_SUITE:
        if pool is not None:
            raise InvalidRunInputError("--pool is for --benchmark local; an adapter "
                                       "delivers its own runs")
        failed = _audit_adapter(benchmark, tasks=tasks, split=split, limit=limit,
                                operators=operators, ignore_fields=ignore_fields, jobs=jobs,
                                out=out, as_json=as_json, force=force)
        if failed and not exit_zero:
            raise typer.Exit(1)
        return
    adapter_only = {"--split": split is not None, "--operators": operators is not None,
                    "--ignore-fields": ignore_fields is not None, "--jobs": jobs != 1,
                    "--json": as_json, "--limit": limit != 20}
    given = [name for name, used in adapter_only.items() if used]
    if given:
        raise InvalidRunInputError(
            f"{', '.join(given)}: only for adapter benchmarks (--benchmark toy or "
            "module:Class); --benchmark local replays the local suite's reference solutions"
        )
    temporary = pool is None
    if temporary and tasks:
        _check_local_ids(tasks)  # before a pool is made for them
    name = pool or f"audit-{secrets.token_hex(4)}"
    try:
        if temporary:
            _say(f"creating local pool {name}")
            oa_vm.create_pool(name=name, cloud="local", workers=1, ttl_hours=1.0)
            oa_vm.wait_pool(name, timeout_s=120.0)
        failed = _audit(name, out, tasks, force=force)
    finally:
        if temporary:
            _say(f"removing local pool {name}")
            oa_vm.remove_temporary_pool(name, _say)  # never raises: the audit's own error stays
    if failed and not exit_zero:
        raise typer.Exit(1)


def _check_local_ids(
    wanted: str, known: set[str] | None = None, source: str = "the local suite"
) -> None:
    """Refuse IDs the pool's tasks do not have (default: the bundled local suite, what a
    temporary audit pool serves), by the one rule of :func:`waa_client.catalog.check_known`."""
    from waa_client.catalog import check_known

    if known is None:
        from oa_vm import local_tasks_dir
        from waa_client.catalog import Catalog

        known = set(Catalog.from_folder(local_tasks_dir()).task_ids())
    check_known((t.strip() for t in wanted.split(",") if t.strip()), known, source=source)


def _load_adapter(spec: str) -> BenchmarkAdapter:
    """The adapter named by ``--benchmark``: ``toy`` or ``package.module:Class``."""
    from evals.agents.module_spec import import_module_here

    if spec == "toy":
        from evals.verifier_audit.adapters.toy import ToyAdapter

        return ToyAdapter()
    module_name, sep, attr = spec.partition(":")
    if module_spec_problem("--benchmark", spec):
        raise InvalidRunInputError(
            f"--benchmark {spec!r}: use one of {', '.join(BENCHMARKS)}, or "
            "package.module:Class for your own adapter"
        )
    try:
        # the current folder first, as --agent module:Class (evals.agents.module_spec)
        factory = getattr(import_module_here(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise InvalidRunInputError(
            f"--benchmark {spec!r}: cannot load the adapter ({type(exc).__name__}: {exc}); "
            "check that the module is importable (PYTHONPATH) and defines the class"
        ) from exc
    try:
        adapter = factory()
    except Exception as exc:
        raise InvalidRunInputError(
            f"--benchmark {spec!r}: the adapter could not be made: {type(exc).__name__}: {exc}"
        ) from exc
    from evals.verifier_audit import BenchmarkAdapter

    if not isinstance(adapter, BenchmarkAdapter):
        raise InvalidRunInputError(
            f"--benchmark {spec!r} is not a benchmark adapter: it needs name, ignore_fields, "
            "policy, describe(), task_ids(), reference() and deliver() (see "
            "evals.verifier_audit.adapters.toy)"
        )
    return adapter


def _audit_adapter(spec: str, *, tasks: str | None, split: str | None, limit: int,
                   operators: str | None, ignore_fields: str | None, jobs: int,
                   out: Path | None, as_json: bool, force: bool = False) -> bool:
    """Audit an adapter benchmark; True when a false accept was found."""
    import json

    from evals.verifier_audit import OPERATORS, SetupError, audit
    from evals.verifier_audit.report import render, task_line

    chosen_ops = (list(OPERATORS) if operators is None
                  else [op.strip() for op in operators.split(",") if op.strip()])
    unknown = [op for op in chosen_ops if op not in OPERATORS]
    if unknown or not chosen_ops:
        raise InvalidRunInputError(
            f"--operators: unknown operator(s) {', '.join(unknown) or '(none given)'}; "
            f"choose from {', '.join(OPERATORS)}"
        )
    if jobs < 1:
        raise InvalidRunInputError(f"--jobs must be at least 1, not {jobs}")
    if limit < 0:
        raise InvalidRunInputError(f"--limit must be 0 (all) or more, not {limit}")
    ignore = [f.strip() for f in (ignore_fields or "").split(",") if f.strip()]
    adapter = _load_adapter(spec)
    try:
        if tasks:
            task_ids = list(dict.fromkeys(t.strip() for t in tasks.split(",") if t.strip()))
        else:
            task_ids = adapter.task_ids(split, limit or None)
    except SetupError as exc:
        raise InvalidRunInputError(f"--benchmark {spec}: {exc}") from exc
    if not task_ids:
        raise InvalidRunInputError(f"--benchmark {spec}: no tasks to audit")
    if tasks:
        try:
            known = set(adapter.task_ids(split, None))
        except SetupError:
            known = set()
        if known:
            from waa_client.catalog import check_known

            check_known(task_ids, known, source=f"--benchmark {spec}",
                        hint=f"the benchmark has {listing(sorted(known))}")
    result = audit(adapter, task_ids, chosen_ops, jobs=jobs, ignore_fields=ignore,
                   progress=lambda done, total, task: _say(task_line(done, total, task)))
    payload = result.to_dict()
    if out is not None:
        from evals.verifier_audit.report import write_report

        write_report(payload, out, force=force)
    if as_json:
        typer.echo(json.dumps(payload, indent=2, sort_keys=True))
    else:
        typer.echo(render(result))
        if out is not None:
            typer.echo(f"\nFull report: {out}")
    return bool(result.false_accepts)


def _audit(pool: str, out: Path | None, wanted: str | None, *, force: bool = False) -> bool:
    from evals.run.pools import hold_for
    from evals.verifier_audit.local import audit, format_row, format_table
    from evals.verifier_audit.report import write_report

    with oa_vm.connect(pool, read_timeout=60.0) as connections:
        worker = connections[0]
        ids = [tid for ids in worker.scoring.tasks().values() for tid in ids]
        if wanted:
            _check_local_ids(wanted, set(ids), f"pool {pool!r}")
            ids = [t.strip() for t in wanted.split(",") if t.strip()]
        tasks = {tid: worker.scoring.task(tid) for tid in ids}
        if not any(isinstance(t.get("reference_solution"), list) for t in tasks.values()):
            raise InvalidRunInputError(
                f"no selected task on pool {pool!r} has a reference solution to audit "
                "(only the local suite has them)"
            )
        # The audit resets and drives the worker as a run does: one at a time, under the
        # pool's lease, taken once every check above has passed (a refusal changes nothing).
        with hold_for(pool, "audit-verifier"):
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
        write_report(report.to_json(), out, force=force)
        typer.echo(f"Report: {out}")
    return bool(false_accepts)


def _say(message: str) -> None:
    print(f"audit-verifier: {message}", file=sys.stderr, flush=True)
