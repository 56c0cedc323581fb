"""``openadapt-eval-flow``: price a flow run on WAA before spending anything (``--dry-run``).

A dry run is the default and never touches a network or a cloud. ``--live`` replays compiled
workflow bundles on a pool through the sweep runner (same queue, records and caps as
``openadapt-evals run --agent replay``).
"""

from __future__ import annotations

import math
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

import oa_vm
from evals.compat.flow import DryRun, missing_bundles, plan_dry_run, read_task_ids, resolve_vm_price
from evals.compat.flow.cost import CostGuardConfig, estimate_flow_waa_cost
from evals.errors import EvalsError, MissingBundlesError
from evals.results.cost import (
    DEFAULT_FALLBACK_RATE,
    DEFAULT_MODEL,
    STARTUP_HOURS,
    EstimateInput,
    Mode,
    format_estimate,
)
from oa_vm.errors import InvalidInputError, OaVmError
from oa_vm.kit import timings
from oa_vm.kit.clikit import (
    plain_typer,
    print_json,
    run_main,
    target_option,
    typed_name,
    was_given,
)
from waa_client.catalog import WAA_SUITE, WAA_SUITE_TASKS, Catalog, check_count, selection_count

PROG = "openadapt-eval-flow"
PRICE_NAMES = ("--price-per-hour", "--vm-hourly")
RULE = "=" * 78

app = plain_typer("Estimate what a compiled-workflow (flow) run on Windows Agent Arena costs.",
                  name=PROG)


def _show_version(value: bool) -> None:
    """``--version``: print it and stop (as ``oa-vm --version`` and ``openadapt-evals``)."""
    if value:
        from oa_vm.kit.version import package_version

        typer.echo(f"{PROG} {package_version()}")
        raise typer.Exit()


LIVE_ONLY = {"pool": "--pool", "max_cost_usd": "--max-cost-usd", "run_name": "--run-name",
             "results_dir": "--results-dir"}
"""The options only a live run reads (parameter: option)."""
DRY_RUN_ONLY = {"workers": "--workers", "cloud": "--cloud", "size": "--size",
                "region": "--region", "spot": "--spot"}
"""The options of ours only the dry run's estimate reads: a live run replays on the pool's
workers. The reference's own (``--model``, ``--fallback-rate``, ``--vm-hourly``) stay
accepted with ``--live``, as its scripts give them."""


def _typed(ctx: typer.Context, params: dict[str, str]) -> list[str]:
    """The options of ``params`` given on the command line."""
    return [option for key, option in params.items() if was_given(ctx, key)]


def _check_mode_options(ctx: typer.Context, *, live: bool, mode: Mode) -> None:
    """Refuse an option the chosen kind of run does not read, which it ignored: the dry run
    took ``--pool`` (a user expecting a run on it got an estimate), and ``--live`` priced
    nothing of ``--workers`` or ``--cloud`` and replayed when ``--mode hybrid`` was asked.

    Raises:
        InvalidInputError: one line naming the option and the kind of run it is for.
    """
    if live:
        ignored = _typed(ctx, DRY_RUN_ONLY)
        if ignored:
            raise InvalidInputError(
                f"{ignored[0]} is for the dry run's estimate; --live replays the bundles on "
                "the pool's own workers: leave it out")
        if mode != Mode.REPLAY:
            raise InvalidInputError("--live replays compiled bundles only (--mode replay); "
                                    "--mode hybrid is for the dry run's estimate")
        return
    ignored = _typed(ctx, LIVE_ONLY)
    if ignored:
        raise InvalidInputError(
            f"{ignored[0]} is for a live run; add --live to run on the pool, or leave it out "
            "for the dry run's estimate")


@app.command(context_settings={"help_option_names": ["-h", "--help"]})
def flow(
    ctx: typer.Context,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan and its cost (the default).")
    ] = False,
    live: Annotated[
        bool, typer.Option("--live", help="Run on a pool (needs --task-ids, --bundles, --pool).")
    ] = False,
    mode: Annotated[
        Mode, typer.Option("--mode", help="replay: compiled bundles only; hybrid: agent fallback.")
    ] = Mode.REPLAY,
    tasks: Annotated[
        str | None, typer.Option("--tasks", help="Which tasks: N (the first N of WAA's 154), "
                                 "all (the default), IDs 'A,B' or @file; --live also takes the "
                                 "pool's index and domain:<name> selections.")
    ] = None,
    task_count: Annotated[
        int | None, typer.Option("--task-count", hidden=True, help="As --tasks N.")
    ] = None,
    task_ids: Annotated[
        str | None, typer.Option("--task-ids", help="Task IDs 'A,B,C', or '@file', one a line.")
    ] = None,
    bundles: Annotated[
        Path | None, typer.Option("--bundles", help="Folder of bundles, <task_id>/workflow.json.")
    ] = None,
    model: Annotated[
        str, typer.Option("--model", help="Agent model (hybrid fallback and the baseline).")
    ] = DEFAULT_MODEL,
    fallback_rate: Annotated[
        float, typer.Option("--fallback-rate", help="Share of tasks that fall back (hybrid).")
    ] = DEFAULT_FALLBACK_RATE,
    vm_hourly: Annotated[
        float | None, typer.Option(*PRICE_NAMES,
                                   help="VM $/hour per worker (default: the catalog's price of "
                                        "--cloud/--size/--region).")
    ] = None,
    workers: Annotated[int, typer.Option("--workers", help="Workers sharing the tasks.")] = 1,
    cloud: Annotated[
        str | None, typer.Option("--cloud", help="Price from the catalog: aws or azure (default: "
                                "the configured default cloud, else aws).")
    ] = None,
    size: Annotated[
        str | None, typer.Option("--size", help="Catalog size (default per cloud).")
    ] = None,
    region: Annotated[
        str | None, typer.Option("--region", help="Catalog region (default per cloud).")
    ] = None,
    spot: Annotated[bool, typer.Option("--spot", help="Use the catalog's spot price.")] = False,
    pool: Annotated[
        str | None, target_option("--pool", "-n", what="pool", help="Pool to run on (--live).")
    ] = None,
    max_cost_usd: Annotated[
        float | None,
        typer.Option("--max-cost-usd", help="--live: stop dispatching at this spend ($); exit 3."),
    ] = None,
    run_name: Annotated[str | None, target_option("--run-name", what="run folder",
                                                      help="--live: run name.")] = None,
    results_dir: Annotated[
        Path | None, typer.Option("--results-dir", help="--live: folder of run folders.")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the plan and estimate as JSON.")
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_show_version, is_eager=True,
                           help="Print the version and exit.")
    ] = False,
) -> None:
    """Print a flow run's plan and cost estimate (dry run), or hand it to the sweep runner."""
    if dry_run and live:
        raise InvalidInputError("give --dry-run or --live, not both")
    _check_mode_options(ctx, live=live, mode=mode)
    if task_count is not None:
        tasks = tasks or str(task_count)
    if tasks is not None and task_ids is not None:
        raise InvalidInputError("give either --tasks or --task-ids, not both")
    count, ids, selection = _selection(tasks, live=live)
    if task_ids is not None:
        ids = read_task_ids(task_ids)
    if live:
        _live(ids, bundles, pool, selection=selection, max_cost_usd=max_cost_usd,
              run_name=run_name, results_dir=results_dir, as_json=as_json)
        return
    _check_price(vm_hourly, cloud)
    price = resolve_vm_price(
        vm_hourly=vm_hourly, cloud=cloud, size=size, region=region, spot=spot
    )
    # the pool it prices could not be made larger (a price of your own: your own hosts)
    limit = oa_vm.cloud_facts(price.cloud or "ssh").max_workers
    if workers > limit:
        raise InvalidInputError(f"--workers {workers} is more than the limit of {limit}")
    inputs = EstimateInput(
        n_tasks=1, mode=mode, model=model, fallback_rate=fallback_rate, workers=workers
    )
    plan = plan_dry_run(
        n_tasks=count, task_ids=ids, bundles_dir=bundles, inputs=inputs, price=price
    )
    if as_json:
        print_json(reference_json(plan))
    else:
        typer.echo(render(plan))


def _selection(text: str | None, *, live: bool) -> tuple[int | None, list[str] | None, str | None]:
    """``--tasks`` as (a count, task IDs, a selection for the pool's catalog), one of them set
    (none for the default, all 154). A dry run reads no catalog: an index or domain name is
    refused there, naming what it takes.

    Raises:
        InvalidInputError: a count below 1; an index or domain name without ``--live``.
    """
    if text is None or text.strip() == "all":
        return None, None, None
    from evals.tasks.kinds import refuse_task_files

    refuse_task_files(text, "openadapt-eval-flow")
    count = selection_count(text.strip().removeprefix("-"))  # -3: a count, refused below
    if count is not None:
        count = -count if text.strip().startswith("-") else count
        if count < 1:
            raise InvalidInputError(f"--tasks {text.strip()}: give at least 1 task")
        if not live:  # --live: the pool's catalog says; a count past WAA's suite names no task
            check_count(text, WAA_SUITE_TASKS, WAA_SUITE)
        return (None, None, text) if live else (count, None, None)
    stripped = text.strip()
    if stripped.startswith("@") or "," in stripped or "-" in stripped:
        return None, read_task_ids(stripped), None
    if live:
        return None, None, stripped
    raise InvalidInputError(
        f"--tasks {stripped!r}: a dry run reads no task catalog, so it takes N, all, IDs 'A,B' "
        "or @file (index and domain names need --live and the pool's catalog)"
    )


def _check_price(vm_hourly: float | None, cloud: str | None) -> None:
    """The price option's value, named as the user typed it (``--price-per-hour`` or its old
    name ``--vm-hourly``).

    Raises:
        InvalidInputError: a negative or non-finite price, or a price and ``--cloud`` both.
    """
    if vm_hourly is None:
        return
    option = typed_name(PRICE_NAMES) or PRICE_NAMES[0]
    if not math.isfinite(vm_hourly) or vm_hourly < 0:
        raise InvalidInputError(
            f"{option} must be a non-negative number of $/hour, not {vm_hourly:g}"
        )
    if cloud is not None:
        raise InvalidInputError(
            f"give either {option} or --cloud (with --size/--region/--spot), not both"
        )


def _live(
    task_ids: list[str] | None,
    bundles: Path | None,
    pool: str | None,
    *,
    selection: str | None = None,
    max_cost_usd: float | None,
    run_name: str | None,
    results_dir: Path | None,
    as_json: bool,
) -> None:
    """Replay compiled workflows on a pool through the sweep runner, with its caps.

    Refuses to start, listing them, while any selected task lacks a bundle or a checker
    configuration (an ``evaluator.func``): a task nobody can score is not worth a VM-minute.
    """
    from evals.agents import AgentOptions
    from evals.cli.commands.run import execute
    from evals.run.runner import RunConfig, default_run_name

    if bundles is None:  # the reference's words: what is missing is the compiled workflows
        raise InvalidInputError("--live: no compiled bundle was given; pass --bundles DIR (a "
                                "<task_id>/workflow.json per task) and --pool NAME")
    if pool is None:
        raise InvalidInputError("--live needs --pool NAME (the pool whose workers replay them)")
    from evals.compat.flow.plan import check_bundles

    check_bundles(bundles)
    if task_ids is None and selection is None:
        task_ids = sorted(p.parent.name for p in bundles.glob("*/workflow.json"))
        if not task_ids:
            raise InvalidInputError(f"--bundles {bundles} holds no <task_id>/workflow.json")
    with oa_vm.connect(pool) as workers:
        catalog = Catalog.from_scoring(workers[0].scoring, source=f"pool {pool!r}")
        # N, an index or a domain: the pool's catalog says which tasks; unknown or synthetic
        # IDs are refused first (a misspelt ID is unknown, not a task missing its bundle)
        task_ids = catalog.resolve(selection or ",".join(task_ids or ()), live=True)
        missing = missing_bundles(task_ids, bundles)
        if missing:
            raise MissingBundlesError(str(bundles), missing)
        catalog.prefetch(task_ids)
        unscorable = [
            task_id for task_id in task_ids
            if not (catalog.load(task_id).get("evaluator") or {}).get("func")
        ]
    if unscorable:
        raise InvalidInputError(
            f"{len(unscorable)} task(s) have no checker configuration (evaluator.func): "
            + ", ".join(unscorable)
        )
    config = RunConfig(
        pool=pool, selection=",".join(task_ids), agent="replay",
        agent_options=AgentOptions(bundles=bundles), max_cost_usd=max_cost_usd,
        run_name=default_run_name("replay") if run_name is None else run_name,
        results_dir=results_dir,
    )
    execute(config, json_out=as_json)


def _bundle_line(plan: DryRun) -> str:
    if plan.bundles is None:
        return "not checked (no --bundles)"
    b = plan.bundles
    if plan.task_ids is None:
        return f"{b.present} present in {b.folder}"
    line = f"{b.present} of {len(plan.task_ids)} tasks have one in {b.folder}"
    if b.missing:
        shown = ", ".join(b.missing[:5]) + (", ..." if len(b.missing) > 5 else "")
        line += f"; missing {len(b.missing)}: {shown} (record and compile them first)"
    return line


def _display(model: str) -> str:
    from evals.compat.flow.cost import MODELS

    return MODELS[model].name if model in MODELS else model


def render(plan: DryRun) -> str:
    """The dry run as text, under the reference tool's headings."""
    est = plan.estimate
    lines = [
        "",
        RULE,
        f"  openadapt-flow on WAA  --  mode={est.mode}",
        RULE,
        f"  tasks:               {est.n_tasks}{UNCHECKED if plan.task_ids else ''}",
        f"  bundles:             {_bundle_line(plan)}",
        f"  VM price:            {plan.price.describe()}",
        f"  workers:             {est.workers}",
    ]
    if est.mode == Mode.HYBRID:
        lines.append(f"  fallback rate:       {est.fallback_rate:g}")
    lines += [
        "",
        RULE,
        f"  COST ESTIMATE  (mode={est.mode}, model={_display(est.model)})",
        RULE,
        "",
        format_estimate(est),
    ]
    if plan.full_suite is not None:
        full = f"{WAA_SUITE_TASKS} tasks (the full WAA suite)"
        lines += ["", format_estimate(plan.full_suite, title=full)]
    lines += [
        "",
        f"  {est.summary_line()}",
        "",
        "  HARD GUARDRAILS (enforced on any --live run):",
        "    spend cap:        --max-cost-usd (dispatching stops at it; exit 3)",
        "    model tokens:     --agent-arg token_cap=N (model-API agents, per run)",
        "",
        f"  {STARTUP_NOTE}",
        "  DRY-RUN: no VM provisioned, no task run, no money spent.",
    ]
    return "\n".join(lines)


UNCHECKED = " (IDs not checked: WAA's task catalog is on the workers; --live checks them)"
"""A dry run cannot know WAA's task IDs (they are on the workers), and says so."""

STARTUP_NOTE = (
    f"Times are estimates: the {STARTUP_HOURS:g} h start-up is the reference's figure; an "
    f"oa-vm cloud pool is ready in {timings.WARM_READY.text()} from an image, after "
    f"{timings.IMAGE_BUILD.text()} of image build in a new region "
    "('openadapt-evals sweep --plan' says which)."
)
"""The dry run's start-up is the reference formula's; the note says what a real pool takes
(both figures from :mod:`oa_vm.kit.timings`)."""


def reference_json(plan: DryRun) -> dict[str, object]:
    """The ``--json`` document: this tool's keys (``dry_run``, ``price``, ``estimate``,
    ``full_suite``) and the reference's (``plan`` with its fields, ``estimates`` rows,
    ``guardrails``)."""
    data = plan.to_json()
    est = plan.estimate
    ids = list(plan.task_ids) if plan.task_ids is not None else None
    missing = list(plan.bundles.missing) if plan.bundles is not None else None
    data["plan"] = {
        **data["plan"],
        "mode": est.mode,
        "server_url": None,
        "bundles_dir": plan.bundles.folder if plan.bundles is not None else None,
        "tasks_with_bundle": plan.bundles.present if plan.bundles is not None else 0,
        "tasks_missing_bundle": (len(missing) if missing is not None
                                 else est.n_tasks if plan.bundles is None else 0),
        "tasks": [{"task_id": t, "bundle_dir": None if missing is None or t in missing
                   else f"{plan.bundles.folder}/{t}" if plan.bundles else None}
                  for t in ids] if ids is not None else [],
    }
    counts = [est.n_tasks] + ([WAA_SUITE_TASKS] if plan.full_suite is not None else [])
    data["estimates"] = [
        estimate_flow_waa_cost(n, mode=est.mode, model_name=est.model,
                               fallback_rate=est.fallback_rate, vm_hourly=est.vm_hourly,
                               num_workers=est.workers).as_dict()
        for n in counts
    ]
    data["guardrails"] = asdict(CostGuardConfig())
    return data


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``main(["--dry-run", "--tasks", "10"])`` returns the exit code (0 on
    success), as the reference's ``main(argv)`` does; errors print one line on stderr."""
    saved = sys.argv
    if argv is not None:
        sys.argv = [PROG, *argv]
    try:
        run_main(app, PROG, known=(OaVmError, EvalsError))
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    finally:
        sys.argv = saved
    return 0  # pragma: no cover - run_main always exits
