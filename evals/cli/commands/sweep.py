"""``openadapt-evals sweep``: create a pool, run tasks on it, and remove the pool afterwards.

The pool is removed whatever happens once it exists: the run ends, fails, or is stopped with
Ctrl-C or SIGTERM (both end the run as interrupted; ``--resume`` continues it on a new pool).
Exit codes as ``run``: 0, 2 bad input, 3 budget cap, 4 unhealthy run, 1 other failure,
130 interrupted. A sweep never removes a pool it did not create: a ``--pool`` that names an
existing pool is refused before anything is made. A ``--resume`` of a run with nothing left to
run (:func:`evals.run.runner.nothing_left`) makes no pool: it prints the run's summary, as
``run --resume`` does, with the finished run's exit code.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

import oa_vm
from evals.cli.commands.run import (
    READ_TIMEOUT,
    STEP_PAUSE,
    TASK_TIMEOUT,
    AgentArgOpt,
    AgentOpt,
    AgentUrlOpt,
    BundlesOpt,
    FailOnErrorsOpt,
    JsonOpt,
    MaxAttemptsOpt,
    MaxCostOpt,
    MaxStepsOpt,
    ReadTimeoutOpt,
    RecordTreeOpt,
    ResetOpt,
    ResultsDirOpt,
    ResumeOpt,
    RunNameOpt,
    StepPauseOpt,
    SweepAllowChangeOpt,
    TasksOpt,
    TaskTimeoutOpt,
    TrialsOpt,
    VariationsOpt,
    agent_url_option,
    execute,
    finish_run,
    run_config,
)
from evals.errors import InvalidRunInputError, RunExistsError, RunInterrupted
from oa_vm.cli import pool_options as pool_opts
from oa_vm.errors import InvalidInputError, PoolExistsError
from oa_vm.kit import safe_fs, timings
from oa_vm.kit.clikit import target_option
from oa_vm.kit.duration_options import Duration, duration_option
from oa_vm.kit.signals import sigterm_as_interrupt

if TYPE_CHECKING:
    from evals.cli.sweep_plan import SweepEstimate
    from evals.results.records import RunFolder
    from evals.run.runner import RunConfig
    from oa_vm import Plan, PoolSpec, VcpuQuota


def parse_faults(values: list[str] | None) -> dict[str, str]:
    """``["latency=0.5", "hang-after=20"]`` -> ``{"latency": "0.5", "hang-after": "20"}``.

    Raises:
        InvalidRunInputError: an item is not ``KEY=VALUE``.
    """
    faults: dict[str, str] = {}
    for item in values or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise InvalidRunInputError(
                f"--fault {item!r} is not KEY=VALUE (e.g. --fault latency=0.5)"
            )
        faults[key.strip()] = value.strip()
    return faults


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def sweep(
    ctx: typer.Context,
    selection: TasksOpt = None,
    agent: AgentOpt = None,
    cloud: Annotated[
        str, typer.Option("--cloud", help="Where the pool runs: local (default), aws, azure.")
    ] = "local",
    workers: Annotated[int, typer.Option("--workers", help="Workers in the pool.")] = 3,
    name: Annotated[
        str | None, target_option("--pool", "-n", "--name", what="pool",
                                  help="Pool name (default: generated).")
    ] = None,
    fault: Annotated[
        list[str] | None,
        typer.Option("--fault", help="Local pools: fault knob KEY=VALUE for every worker."),
    ] = None,
    price_per_hour: Annotated[
        float | None,
        typer.Option("--price-per-hour", help="Local pools: pretend $ per worker-hour."),
    ] = None,
    wait_timeout: Annotated[
        float, duration_option("--wait-timeout", unit="s",
                               help="How long to wait for the workers: 30m, 1h (the default "
                                    "covers a first cloud pool's own budget)")
    ] = Duration(timings.FIRST_POOL_WAIT_S, "s"),
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Cloud pools: create without asking.")
    ] = False,
    size: pool_opts.SizeOpt = None,
    region: pool_opts.RegionOpt = None,
    spot: pool_opts.SpotOpt = False,
    ttl_hours: pool_opts.TtlOpt = pool_opts.TTL_DEFAULT,
    allow_cidr: pool_opts.AllowCidrOpt = None,
    image: pool_opts.ImageOpt = None,
    build_image: pool_opts.BuildImageOpt = False,
    egress: pool_opts.EgressOpt = None,
    plan_only: pool_opts.PlanOpt = False,
    max_steps: MaxStepsOpt = 15,
    run_name: RunNameOpt = None,
    resume: ResumeOpt = False,
    task_timeout_s: TaskTimeoutOpt = TASK_TIMEOUT,
    max_attempts: MaxAttemptsOpt = 3,
    max_cost_usd: MaxCostOpt = None,
    results_dir: ResultsDirOpt = None,
    json_out: JsonOpt = False,
    bundles: BundlesOpt = None,
    agent_url: AgentUrlOpt = None,
    read_timeout_s: ReadTimeoutOpt = READ_TIMEOUT,
    step_pause_s: StepPauseOpt = STEP_PAUSE,
    agent_arg: AgentArgOpt = None,
    fail_on_errors: FailOnErrorsOpt = False,
    reset: ResetOpt = "clean-or-stock",
    trials: TrialsOpt = 1,
    variations: VariationsOpt = None,
    allow_change: SweepAllowChangeOpt = None,
    record_tree: RecordTreeOpt = True,
) -> None:
    """Create a pool, run the tasks, print the summary, and remove the pool (even on failure)."""
    from evals.run.prechecks import check_before_run, check_pool_tasks

    config = run_config(ctx, pool=None)
    if "--host" in oa_vm.cloud_facts(cloud).options:  # an unknown cloud: build_spec says so
        raise InvalidRunInputError(
            f"sweep makes a pool and removes it; for your own hosts (--cloud {cloud}) make "
            f"the pool once with 'oa-vm pool-create --cloud {cloud} --host user@host "
            "--ssh-key PATH' and run on it with 'openadapt-evals run --pool NAME'")
    faults = parse_faults(fault)
    # Everything checkable without a pool is checked before one is paid for.
    checked = check_before_run(config, agent_url_option=agent_url_option(agent_url),
                               needs_home=True, plan=plan_only)
    _check_run_folder(config.results_dir, config.run_name, config.resume)
    # A resumed sweep whose pool outlived it (the sweep was killed) reuses that pool rather
    # than paying for a second one.
    reused = _pool_to_reuse(config, name, cloud) if config.resume else None
    from evals.run.runner import nothing_left

    # a resumed run with nothing left to run gets no pool (on a cloud: its start-up and its
    # price for nothing); one this sweep left behind is removed all the same
    idle = nothing_left(config)
    spec = oa_vm.build_spec(
        name=reused or name, cloud=cloud, workers=workers, faults=faults or None,
        price_per_hour=price_per_hour, size=size, regions=pool_opts.parse_regions(region),
        spot=spot, ttl_hours=ttl_hours, allow_cidrs=list(allow_cidr or []), egress=egress,
        image=image, build_image=build_image,
    )
    config = replace(config, pool=spec.name)
    if spec.name != reused:
        # A sweep removes only the pool it made; an existing pool of that name is the user's.
        oa_vm.check_name_free(spec.name)
    if not idle:
        check_pool_tasks(config, spec, checked)
    if not reused and not idle and oa_vm.cloud_facts(cloud).simulated:
        pool_opts.preflight(spec)  # offline for a local pool: what this machine's memory holds
    if plan_only:
        if idle:
            _print_nothing_to_plan(config, json_out)
        else:
            pool_opts.warn_if_open_to_all(spec.allow_cidrs)
            _print_plan(spec, config, json_out)
        return
    if not reused and not idle and not oa_vm.cloud_facts(cloud).simulated:
        from evals.cli.sweep_plan import IDS_UNCHECKED, waa_ids

        counted = _image_task_count(config, spec)
        tasks = (f"Tasks: {counted[0]}, {counted[1]}" if counted is not None
                 else f"Tasks: the IDs given, {IDS_UNCHECKED}"
                 if waa_ids(config.selection) is not None else None)
        _show_plan_and_confirm(spec, yes, tasks)
    from evals.run.runner import hold_run

    with sigterm_as_interrupt():
        created = False
        try:
            # one command per run from here on: a second sweep of it (another --resume, or
            # this one still running) is refused before it touches the pool
            with hold_run(_run_folder(config)):
                if reused and oa_vm.pool_removing(reused):
                    # interrupted while it removed its pool: that removal is finished, never
                    # undone; the tasks left (if any) get a pool of their own
                    _say(f"finishing the removal of pool {reused}, begun before this sweep "
                         "was interrupted")
                    _cleanup(reused)
                    reused = None
                try:
                    if reused and not idle:
                        _say(f"reusing pool {reused}, which this sweep created before it was "
                             "interrupted")
                    elif not reused and not idle:
                        # recorded before it exists: a sweep killed from here on is found again
                        _record_pool(config, spec.name, cloud)
                        _say(f"creating pool {spec.name} ({cloud}, {workers} worker(s))")
                    try:
                        if not reused and not idle:
                            oa_vm.create_pool(spec, progress=_say)
                    except PoolExistsError:
                        raise  # made by someone else meanwhile: not ours to remove
                    except BaseException:
                        created = True  # a partial pool of ours may be left: remove it
                        raise
                    created = bool(reused) or not idle  # a pool of ours to remove
                    if not idle:
                        from oa_vm.cli.wait_display import wait_display

                        # as pool-wait shows it: a worker that does not come up is seen
                        # (its phase and why), not an hour of silence
                        with wait_display(_say, wait_timeout, plain=json_out) as show:
                            oa_vm.wait_pool(spec.name, timeout_s=wait_timeout, on_update=show)
                    result = execute(config, json_out=json_out, finish=False,
                                     fail_on_errors=fail_on_errors, checked=checked)
                    if result.warning:
                        _keep_logs(spec.name, config)  # the run is unhealthy: the logs say why
                except BaseException:
                    if created:
                        _keep_logs(spec.name, config)
                    raise
                finally:
                    if created:
                        _cleanup(spec.name)
            finish_run(result, pool_removed=True)
        except KeyboardInterrupt:
            raise RunInterrupted(None) from None


def _print_plan(spec: PoolSpec, config: RunConfig, json_out: bool) -> None:
    """``--plan``: the pool the sweep would create and its price, on stdout; nothing is
    created, recorded or written (no pool, no run folder), and no network is asked (the SSH
    CIDR stays a placeholder, as in ``oa-vm pool-create --plan``)."""
    from evals.tasks import is_cua_selection, is_openapps_selection
    from oa_vm.kit.clikit import print_json

    counted = None
    modules = is_cua_selection(config.selection) or is_openapps_selection(config.selection)
    if oa_vm.cloud_facts(spec.cloud).simulated and not modules:  # modules: counted as loaded
        counted = _local_task_count(config, spec.tasks_dir), "the local suite's catalog"
    elif not modules:
        counted = _image_task_count(config, spec)
    plan = oa_vm.plan_pool(spec)
    answer = _sweep_estimate(spec, config, plan, counted)
    if json_out:
        print_json({"sweep": {"pool": spec.name, "tasks": config.selection,
                              "agent": config.agent, "run_name": config.run_name,
                              "estimate": answer.json},
                    "plan": plan.to_json()})
        return
    typer.echo(plan.describe())
    typer.echo("")
    typer.echo(answer.describe())


def _print_nothing_to_plan(config: RunConfig, json_out: bool) -> None:
    """``--plan`` of a resume with nothing left to run: no pool to plan, and so no price."""
    from oa_vm.kit.clikit import print_json

    if json_out:
        print_json({"sweep": {"pool": None, "tasks": config.selection, "agent": config.agent,
                              "run_name": config.run_name, "nothing_left": True},
                    "plan": None})
        return
    typer.echo(f"Run {config.run_name} has nothing left to run: its --resume makes no pool "
               "and costs nothing (it prints the run's summary).")


def _local_task_count(config: RunConfig, tasks_dir: str | None) -> int:
    """How many tasks the selection is on a local pool (its catalog is here)."""
    from oa_vm import local_tasks_dir
    from waa_client.catalog import Catalog

    catalog = Catalog.from_folder(Path(tasks_dir) if tasks_dir else local_tasks_dir())
    return len(catalog.select(config.selection, live=False))


def _image_task_count(config: RunConfig, spec: PoolSpec) -> tuple[int, str] | None:
    """How many tasks the selection is on a cloud pool whose image recorded its workers'
    catalog (:func:`oa_vm.pool_catalog`), and that it was checked against it; else None."""
    catalog = oa_vm.pool_catalog(spec)
    if catalog is None:
        return None
    return len(catalog.resolve(config.selection, live=True)), f"checked against {catalog.source}"


def _check_quota(spec: PoolSpec, plan: Plan) -> tuple[VcpuQuota | None, int | None]:
    """The account's vCPU quota for the pool (cloud pools; None for local ones) and the vCPUs
    the pool needs.

    Raises:
        InvalidInputError: the pool needs more vCPUs than the quota leaves (one line: the
            quota, and what to do).
    """
    if oa_vm.cloud_facts(spec.cloud).simulated or not plan.region or not plan.size:
        return None, None
    found = oa_vm.read_vcpu_quota(spec.cloud, plan.region, plan.size, spot=spec.spot)
    problem = oa_vm.quota_refusal(found, plan.size, spec.workers)
    if problem:
        raise InvalidInputError(problem)
    return found, oa_vm.vcpus_needed(spec.cloud, plan.size, spec.workers)


def _sweep_estimate(
    spec: PoolSpec, config: RunConfig, plan: Plan, counted: tuple[int, str] | None
) -> SweepEstimate:
    """The one block of ``sweep --plan``: :func:`evals.cli.sweep_plan.estimate` fed with the
    account's quota (refused above it) and, when the region has no image, the build's plan."""
    import oa_vm
    from evals.cli.sweep_plan import estimate

    found, needed = _check_quota(spec, plan)
    image_plan = None
    if (not oa_vm.cloud_facts(spec.cloud).simulated and plan.image is not None
            and plan.image.get("id") is None):
        image_plan = oa_vm.plan_image(oa_vm.cloud_provider(spec.cloud), str(plan.region),
                                       size=spec.size)
    return estimate(
        plan=plan, config=config, counted=counted, quota=found, vcpus_needed=needed,
        image_plan=image_plan, price_date=_price_date(spec.cloud, plan),
    )


def _price_date(cloud: str, plan: Plan) -> str | None:
    """The date of the catalog's figure for the pool's machine (None when it has none)."""
    import oa_vm

    if oa_vm.cloud_facts(cloud).simulated or plan.price_per_hour is None:
        return None
    try:
        from oa_vm import load_catalog

        entry = load_catalog().lookup(cloud, plan.region, str(plan.size))
    except Exception:  # a figure without its date is still shown; the date is a courtesy
        return None
    return f"figure of {entry.date}"


def _keep_logs(pool: str, config: RunConfig) -> None:
    """Copy the workers' logs of a failed sweep next to its run (or its results folder), since
    removing the pool removes them, and the error may point at them; private (0700 and 0600)
    as the pool's own logs, which may quote requests."""
    from evals.results.records import results_root
    from evals.run.runner import KEPT_WORKER_LOGS

    logs = oa_vm.pool_dir(pool) / "logs"
    if not logs.is_dir() or not any(logs.iterdir()):
        return
    root = results_root(config.results_dir)
    target = (root / config.run_name if config.run_name else root) / f"{KEPT_WORKER_LOGS}{pool}"
    try:
        safe_fs.ensure_dir(target, root=root)
        for log in sorted(p for p in logs.iterdir() if p.is_file()):
            safe_fs.write_file(target / log.name, log.read_bytes())
    except (OSError, *safe_fs.LOCAL_FILE_ERRORS) as exc:  # one reason, not a list of each
        _say(f"the worker logs of pool {pool} could not be kept in {target}: "
             f"{getattr(exc, 'strerror', None) or exc}")
        return
    _say(f"worker logs kept in {target}")


def _show_plan_and_confirm(spec: PoolSpec, yes: bool, tasks: str | None) -> None:
    """A cloud pool costs money: show what it makes and costs (after ``tasks``, the line saying
    how many tasks), and ask (``-y`` skips; with no terminal, refused before anything is said).

    As ``oa-vm pool-create`` does: a region without an image (and no ``--build-image``) or a
    size that cannot nest is refused first, in one line; with ``--build-image`` the image is
    built before the pool's plan (its own plan, price and question first).
    """
    from oa_vm.cli.common import asking
    from oa_vm.cli.images import build_missing_image

    oa_vm.check_available(spec.cloud)
    pool_opts.preflight(spec)
    plan = oa_vm.plan_pool(spec)
    _check_quota(spec, plan)  # refused above the account's vCPU quota before anything is made
    if not spec.allow_cidrs:
        spec.allow_cidrs = [oa_vm.detect_caller_cidr()]
    with asking(f"Create pool {spec.name!r} for this sweep?", yes):
        pool_opts.warn_if_open_to_all(spec.allow_cidrs)
        if tasks:
            _say(tasks)
        # stdout: the summary (or JSON) only
        build_missing_image(spec, stdout_taken=True, yes=yes)
        _say(oa_vm.plan_pool(spec).describe())


SWEEP_POOL = "sweep-pool.json"
"""The run folder's record of the pool its sweep created (written before the pool is)."""


def _check_run_folder(results_dir: Path | None, run_name: str | None, resume: bool) -> None:
    from evals.results.records import RunFolder, results_root

    if run_name is None:
        return
    folder = RunFolder(results_root(results_dir) / run_name)
    # an empty folder is this sweep's own default name, reserved (run_config); one holding
    # anything, even only a pool a killed sweep made, is continued with --resume
    empty = folder.path.is_dir() and next(folder.path.iterdir(), None) is None
    if not resume and folder.path.exists() and not empty:
        raise RunExistsError(str(folder.path))
    # a sweep killed before its run began has a folder holding only the pool it made
    if resume and not folder.exists() and not (folder.path / SWEEP_POOL).is_file():
        raise InvalidRunInputError(
            f"there is no run {folder.path} to resume; check --run-name and --results-dir"
        )


def _run_folder(config: RunConfig) -> RunFolder:
    from evals.results.records import RunFolder, results_root

    assert config.run_name is not None  # run_config names every sweep's run
    return RunFolder(results_root(config.results_dir) / config.run_name)


def _sweep_pool_path(config: RunConfig) -> Path:
    return _run_folder(config).path / SWEEP_POOL


def _record_pool(config: RunConfig, pool: str, cloud: str) -> None:
    """Write down, in the run folder, the pool this sweep is about to create."""
    from evals.results.records import now_iso

    path = _sweep_pool_path(config)
    path.parent.mkdir(parents=True, exist_ok=True)
    oa_vm.atomic_write_json(path, {"pool": pool, "cloud": cloud, "recorded_at": now_iso()})


def _pool_to_reuse(config: RunConfig, name: str | None, cloud: str) -> str | None:
    """The pool an interrupted sweep of this run created and left, if it is still there.

    Raises:
        InvalidInputError: it is there, but ``--pool`` or ``--cloud`` asks for another pool
            (resuming would leave it billing unnoticed): the line says how to reuse or
            remove it; or the record of it cannot be read.
    """
    path = _sweep_pool_path(config)
    recorded = safe_fs.read_json_object(path)
    if recorded is None and path.exists():
        # read as none, the resume made a second pool and left the first one billing
        raise InvalidInputError(
            f"{path} cannot be read, so the pool this sweep made before it was interrupted is "
            "not known: find it with 'oa-vm pool-list' and remove it with 'oa-vm pool-cleanup "
            f"--pool NAME' (or resume with --pool NAME to reuse it), then delete {path}")
    recorded = recorded or {}
    pool = recorded.get("pool")
    if not isinstance(pool, str) or not oa_vm.pool_exists(pool):
        return None
    if (name is not None and name != pool) or recorded.get("cloud") != cloud:
        raise InvalidInputError(
            f"pool {pool!r} ({recorded.get('cloud')}), created by this sweep before it was "
            f"interrupted, still exists; resume with --pool {pool} --cloud "
            f"{recorded.get('cloud')} to reuse it, or remove it with "
            f"'oa-vm pool-cleanup --pool {pool}'"
        )
    return pool


def _cleanup(pool: str) -> None:
    """Remove the pool (one line below, so the summary stays in view); never raises, so the
    error that ended the sweep keeps its line and exit status (a failure is said instead)."""
    if not oa_vm.pool_exists(pool) and not oa_vm.pool_dir(pool).exists():
        return  # creation failed and already removed what it made
    # a folder without its record (pool.json removed meanwhile) is removed all the same: its
    # workers' processes are found by their folders, and were left running
    if oa_vm.remove_temporary_pool(pool, _say):
        _say(f"pool {pool} removed")
