"""``openadapt-evals run``: run tasks on existing pools and score them with WAA's checker.

Exit codes: 0 the run went to the end (task failures, and errors in a minority of tasks,
included), 2 bad input, 3 stopped at the budget cap, 4 the run is unhealthy (most tasks ended in
error, or every worker was lost; any error with ``--fail-on-errors``), 1 any other failure,
130 Ctrl-C.
"""

from __future__ import annotations

import atexit
import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

import oa_vm
from evals.errors import (
    AgentFailed,
    BudgetExceeded,
    InvalidRunInputError,
    RunInterrupted,
    RunUnhealthy,
)
from oa_vm.kit.clikit import target_option
from oa_vm.kit.duration_options import Duration, duration_option
from oa_vm.kit.durations import format_duration

if TYPE_CHECKING:
    from evals.results.events import RunEvent
    from evals.run.runner import Checked, RunConfig, RunResult


def tasks_help() -> str:
    """``--tasks``'s help, naming the indexes the bundled local suite has (a local pool serves
    no ``test_small``: offering it there sent users to an error)."""
    from oa_vm import local_tasks_dir

    indexes = ", ".join(sorted(p.stem for p in local_tasks_dir().glob("*.json")))
    return (f"Which tasks: all, N (the first N of all), an index of the pool's (a local pool: "
            f"{indexes}), domain:<name>, IDs 'A,B', @file, cua-bench:PATH[#N] (Cua-Bench task "
            "modules), openapps:FILE.yaml[#NAME] (OpenApps-style task entries; docs/tasks.md).")


TASKS_HELP = tasks_help()
AGENT_HELP = "noop, oracle, random, replay, http, api-claude, api-openai, or module:Class."
# sweep's: a resumed sweep, as a resumed run, runs its own tasks with its own agent
TasksOpt = Annotated[str | None, typer.Option(
    "--tasks", help=TASKS_HELP + " Required (but for --resume: the run's own).")]
AgentOpt = Annotated[str | None, typer.Option(
    "--agent", help=AGENT_HELP + " Required (but for --resume: the run's own).")]
MaxStepsOpt = Annotated[int, typer.Option("--max-steps", help="Steps per task at most.")]
TrialsOpt = Annotated[
    int, typer.Option("--trials", help="Run each task K times (each trial its own record; "
                      "pass@k, pass^k and flaky tasks in the summary).", metavar="K")
]
RunNameOpt = Annotated[
    str | None, target_option("--run-name", what="run folder",
                              help="Run folder name (default: <agent>-<UTC time>).")
]
ResumeOpt = Annotated[
    bool,
    typer.Option("--resume", help="Continue the run named by --run-name; finished tasks stay."),
]
TaskTimeoutOpt = Annotated[
    float, duration_option("--task-timeout", unit="s",
                           help="How long one attempt of one task may take: 90s, 10m")
]
TASK_TIMEOUT = Duration(600.0, "s")
MaxAttemptsOpt = Annotated[
    int,
    typer.Option("--max-attempts", help="Attempts per task on infrastructure errors/timeouts."),
]
MaxCostOpt = Annotated[
    float | None,
    typer.Option("--max-cost-usd", help="Stop dispatching before spend passes this ($); exit 3."),
]
ResultsDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--results-dir",
        help="Folder of run folders (default: $OA_EVALS_RESULTS, else ./benchmark_results).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")]
ResetOpt = Annotated[
    str,
    typer.Option(
        "--reset", metavar="<mode>",
        help="Before each task: clean (put back a snapshot of the whole machine; fails before "
        "any task if a worker cannot), stock (WAA's: close windows, clear files), "
        "clean-or-stock (clean where the worker can, else stock).",
    ),
]
BundlesOpt = Annotated[
    Path | None,
    typer.Option("--bundles", help="Replay agent: folder of <task_id>/workflow.json."),
]
AGENT_URL_ENV = "OA_EVALS_AGENT_URL"
AgentUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--agent-url",
        help="Http agent: the agent server's URL (or $OA_EVALS_AGENT_URL; a token may come "
        "from $OA_EVALS_AGENT_TOKEN). Credentials in it are never printed or stored.",
    ),
]
AgentArgOpt = Annotated[
    list[str] | None,
    typer.Option("--agent-arg", help="KEY=VALUE option for the agent (repeatable)."),
]
ReadTimeoutOpt = Annotated[
    float,
    duration_option("--read-timeout", unit="s",
                    help="How long to wait for a worker's answer to one request: 60s, 2m"),
]
READ_TIMEOUT = Duration(60.0, "s")
StepPauseOpt = Annotated[
    float, duration_option("--step-pause", unit="s", zero_ok=True,
                           help="Pause after each action: 0s, or 3s as WAA does")
]
STEP_PAUSE = Duration(0.0, "s")
RecordTreeOpt = Annotated[
    bool,
    typer.Option("--record-tree/--no-record-tree",
                 help="Keep the accessibility tree the agent was given at each step beside its "
                      "screenshot (gzip, at most 2 MB of XML a step)."),
]
"""``--no-record-tree``: see :func:`evals.results.records.save_tree`."""


def agent_url_option(given: str | None) -> str:
    """How refusals name the http agent's URL: the option, or the variable it came from."""
    return "--agent-url" if given else f"${AGENT_URL_ENV}"


WaitReadyOpt = Annotated[
    float | None,
    duration_option("--wait-ready", unit="s", bare=(),
                    help="Wait this long for the pool's workers to be ready (as oa-vm pool-wait) "
                         "before the run starts, e.g. right after pool-create: 20m"),
]
"""``--wait-ready``: readiness of the pool itself, not another run's lease (``--wait-for-pool``)."""

WaitForPoolOpt = Annotated[
    float | None,
    duration_option("--wait-for-pool", unit="s", bare=(),
                    help="If another run holds the pool, wait this long for it instead of "
                         "failing: 90s, 30m"),
]


# --- the command -------------------------------------------------------------------------------


VariationsOpt = Annotated[
    Path | None,
    typer.Option("--variations", metavar="FILE",
                 help="Goal variations to add after each selected task (<task_id>__<style>_<n>: "
                      "the instruction reworded, the original's checker); the local suite's: "
                      "local_all (infra/local/tasks/variations/local_all.json)."),
]

FailOnErrorsOpt = Annotated[
    bool,
    typer.Option(
        "--fail-on-errors",
        help="Exit 4 if any task ended in error (CI); otherwise only a mostly-failed run does.",
    ),
]


def execute(
    config: RunConfig, *, json_out: bool, finish: bool = True, fail_on_errors: bool = False,
    checked: Checked | None = None,
) -> RunResult:
    """Run with a progress display, print the summary (a warning first for an unhealthy run),
    and, with ``finish``, raise for a budget stop (exit 3) or an unhealthy run (exit 4).
    ``checked``: what the checks before the run built and read
    (:func:`evals.run.prechecks.check_before_run`)."""
    from evals.report.progress import make_progress as live_or_plain
    from evals.results.records import RunFolder, results_root
    from evals.run import metrics
    from evals.run.runner import run_evaluation
    from oa_vm.kit.clikit import print_json

    cap_note = _cap_note(config)
    progress = live_or_plain(json_out=json_out)

    def on_event(event: RunEvent) -> None:
        # said once the session starts: a resume with nothing left changes no cap
        nonlocal cap_note
        if cap_note is not None:
            typer.echo(f"Budget: {cap_note}", err=True)
            cap_note = None
        progress(event)

    try:
        with _signals_interrupt():
            result = run_evaluation(config, on_event=on_event, checked=checked)
    except KeyboardInterrupt:
        folder = results_root(config.results_dir) / (config.run_name or "")
        started = config.run_name is not None and RunFolder(folder).exists()
        raise RunInterrupted(str(folder) if started else None) from None
    finally:
        progress.close()
    result.fail_on_errors = fail_on_errors
    if result.settled:
        # the settings a resume that runs nothing changes are not recorded (_end_settled)
        # a --max-cost-usd with a note is a change of the cap (evals.run.runner.resumed_cap)
        given = [*config.allow_change,
                 *(["cap"] if cap_note is not None and config.max_cost_usd is not None else [])]
        named = " and ".join([", ".join(given[:-1]), given[-1]] if len(given) > 1 else given)
        kept = (f" and its {named} {'stays' if len(given) == 1 else 'stay'} as recorded (a "
                "change is recorded only by a resume that runs something)" if given else "")
        typer.echo(f"Run {result.run_dir.name}: nothing left to run (every task has its final "
                   f"record), so no pool was used{kept}; its summary follows", err=True)
    summary = result.summary  # the run's own, as summary.json holds it: never read back
    if json_out:
        print_json({**summary, "run_dir": str(result.run_dir), "warning": result.warning,
                    "agent_failed": result.agent_failed})
    else:
        if result.warning:
            typer.echo(f"WARNING: {result.warning}; the figures below are not a result")
        typer.echo(metrics.format_summary(summary))
        typer.echo(f"Run folder: {result.run_dir}")
        if result.unpriced_models:
            unpriced = ", ".join(result.unpriced_models)
            typer.echo(f"Tokens of unpriced models counted as $0: {unpriced}")
        if result.agent_failed:
            from evals.errors import where_to_look

            typer.echo(f"{result.agent_failed}; {where_to_look(str(result.run_dir))}")
    _debug_agent_tracebacks(result)
    if finish:
        finish_run(result)
    return result


def _cap_note(config: RunConfig) -> str | None:
    """On ``--resume``, what becomes of the run's cap (kept, or changed), to say."""
    if not config.resume or not config.run_name:
        return None
    from evals.results.records import results_root
    from evals.results.run_reader import read_started
    from evals.run.runner import resumed_cap

    previous = read_started(results_root(config.results_dir) / config.run_name)
    return resumed_cap(previous or {}, config.max_cost_usd)[1]


def _signals_interrupt() -> contextlib.AbstractContextManager[None]:
    """SIGTERM and SIGHUP (a closed terminal, a service stopping) end a run as Ctrl-C does: the
    run is marked interrupted and can be resumed, never left ``running``."""
    import signal

    from oa_vm.kit.signals import sigterm_as_interrupt

    return sigterm_as_interrupt((signal.SIGTERM, signal.SIGHUP))


def finish_run(result: RunResult, *, pool_removed: bool = False) -> None:
    """Raise what the ending calls for: a budget stop (exit 3), an unhealthy run (exit 4), or
    a run the agent spoiled by raising (exit 4, naming the agent, never the pool).
    ``pool_removed``: the run's pool is gone (a sweep's), which the advice says."""
    from evals.results.records import RunStatus

    if result.status is RunStatus.BUDGET_STOPPED:
        raise BudgetExceeded(result.cap_usd or 0.0, result.spent_usd, result.not_run)
    if result.warning:
        if result.blames_agent and result.agent_failed:
            raise AgentFailed(str(result.run_dir), result.warning)
        raise RunUnhealthy(str(result.run_dir), result.warning, pool_removed=pool_removed)
    errors = result.counts.get("error", 0)
    if result.fail_on_errors and errors:
        if result.agent_failed and result.agent_errors == errors:
            raise AgentFailed(str(result.run_dir), f"{result.agent_failed} (--fail-on-errors)")
        raise RunUnhealthy(
            str(result.run_dir), f"{errors} task(s) ended in error (--fail-on-errors)",
            pool_removed=pool_removed,
        )


def _debug_agent_tracebacks(result: RunResult) -> None:
    """With ``--debug``: the agent's traceback, once per kind of exception it raised (the
    others are in their tasks' ``execution.json``), on stderr."""
    from oa_vm.kit.clikit import debug_requested

    if not result.agent_failed or not debug_requested():
        return
    from evals.results.agent_failures import exception_name
    from evals.results.records import ErrorType
    from evals.results.run_reader import read_record_folders, record_file

    shown: set[str] = set()
    for folder, record in read_record_folders(result.run_dir):
        text = record.agent_traceback
        if record.error_type is not ErrorType.AGENT or not text:
            continue
        kind = exception_name(text)
        if kind in shown:
            continue
        shown.add(kind)
        typer.echo(f"The agent's traceback in task {record.task_id} "
                   f"({record_file(folder)}):\n{text.rstrip()}", err=True)


_ALLOW_CHANGE_HELP = (
    "With {resumes}: let this recorded setting change (max-steps, task-timeout, read-timeout, "
    "step-pause, reset, agent-arg, agent-module{pools}; repeatable); the change is recorded in "
    "the run's manifest. Without it, a resumed run keeps every setting it started with.")
AllowChangeOpt = Annotated[
    list[str] | None,
    typer.Option("--allow-change", metavar="SETTING", help=_ALLOW_CHANGE_HELP.format(
        resumes="--resume or --rerun-errors", pools=", pools")),
]
"""``--allow-change``: see :mod:`evals.run.settings`."""
SweepAllowChangeOpt = Annotated[
    list[str] | None,
    # a sweep has no --rerun-errors, and its pool is its own (made again on a resume)
    typer.Option("--allow-change", metavar="SETTING", help=_ALLOW_CHANGE_HELP.format(
        resumes="--resume", pools="")),
]
"""A sweep's ``--allow-change``."""


def given_settings(ctx: typer.Context) -> set[str]:
    """The recorded settings (:data:`evals.run.settings.SETTINGS`) whose options were given (on
    the command line or from the environment); the others take a resumed run's recorded values.
    A command's parameter is named as the field it sets (``--agent-arg``: ``agent_arg``)."""
    from evals.run.settings import SETTINGS
    from oa_vm.kit.clikit import was_given

    return {setting.name for setting in SETTINGS
            if was_given(ctx, setting.field or setting.name.replace("-", "_"), env=True)}


AGENT_OWN_OPTIONS = {"bundles": ("--bundles", "replay"), "agent_url": ("--agent-url", "http")}
"""The options only one built-in agent reads (parameter: (option, the agent)); the agent URL's
environment variable is no option typed, and is not refused for another agent."""


def run_config(ctx: typer.Context, **fixed: Any) -> RunConfig:
    """The command's options as the one :class:`evals.run.runner.RunConfig`, made (and checked)
    once: each parameter of ``ctx`` named as a field sets it, ``fixed`` the fields the command
    decides itself; a resumed run's recorded settings fill those whose options were not given
    (:mod:`evals.run.settings`: a resumed run is the same run), and a new run is named
    ``<agent>-<UTC time>`` (then ``-2``, ``-3``... if taken).

    Raises:
        InvalidRunInputError: a value no run can use, no ``--tasks`` or ``--agent`` (and no run
            recording them), or the resumed run's agent arguments were redacted and not given
            again.
    """
    from dataclasses import fields

    from evals.agents import AgentOptions
    from evals.results.records import results_root
    from evals.results.run_reader import find_run, read_started
    from evals.run.manifest import REDACTED, read_manifest
    from evals.run.runner import RunConfig, default_run_name
    from evals.run.settings import RESUME_NEEDS_NAME, recorded_settings, resumed_values

    params = {**ctx.params, **fixed}
    values = {f.name: params[f.name] for f in fields(RunConfig) if params.get(f.name) is not None}
    values.update(pool=params.get("pool"), allow_change=tuple(values.get("allow_change", ())))
    args = tuple(params.get("agent_arg") or ())
    agent_url = params.get("agent_url") or os.environ.get(AGENT_URL_ENV) or None
    run_name = params.get("run_name")
    results = results_root(params.get("results_dir"))
    folder = results / (run_name or "")
    if params.get("resume") and run_name is None:
        raise InvalidRunInputError(RESUME_NEEDS_NAME)  # said first: it decides the rest
    plain = run_name not in (None, "", ".", "..") and Path(str(run_name)).name == run_name
    if params.get("resume") and run_name is not None and not (
            plain and folder.is_dir()):  # a run killed before it started starts afresh
        # before "give --tasks": a mistyped --run-name is the likelier cause, and the line
        # names the runs there are
        find_run(run_name, params.get("results_dir"))
    metadata = read_started(folder) if params.get("resume") and run_name else None
    if metadata is not None:
        given = given_settings(ctx)
        recorded = recorded_settings(read_manifest(folder), metadata)
        values.update(resumed_values(recorded, given))
        agent_args = recorded.get("agent-arg")
        if "agent-arg" not in given and isinstance(agent_args, dict) and agent_args:
            hidden = sorted(k for k, v in agent_args.items() if v == REDACTED)
            if hidden:
                raise InvalidRunInputError(
                    f"run {folder.name!r}: its agent's {', '.join(hidden)} were not recorded; "
                    "give them again with --agent-arg KEY=VALUE"
                )
            args = tuple(f"{k}={v}" for k, v in agent_args.items())
    unstarted = params.get("resume") and metadata is None and folder.is_dir()
    if unstarted:
        from evals.results.records import RunFolder
        from evals.run.runner import unstarted_folder

        if not unstarted_folder(RunFolder(folder)):  # said before "give --tasks"
            raise InvalidRunInputError(
                f"{folder} is not a run (no metadata.json, and files a run does not write); "
                "check --run-name and --results-dir")
    if "selection" not in values or "agent" not in values:
        missing = " and ".join(option for field, option in (("selection", "--tasks"),
                                                            ("agent", "--agent"))
                               if field not in values)
        if unstarted:  # a run killed before it wrote anything: no tasks or agent on record
            held = "is empty" if not any(folder.iterdir()) else "has no metadata.json"
            raise InvalidRunInputError(
                f"run {folder.name!r} recorded nothing, so there is nothing to resume (its "
                f"folder {held}: the run never started); start it again with {missing}")
        rerun = " (or --rerun-errors RUN to rerun a run's errors)" if (
            "rerun_errors" in ctx.params) else ""
        raise InvalidRunInputError(f"give {missing}{rerun}")
    for key, (option, owner) in AGENT_OWN_OPTIONS.items():
        # as an option of another cloud is: it was ignored, and the run went on without it
        if params.get(key) is not None and values["agent"] != owner:
            raise InvalidRunInputError(
                f"{option} is for the {owner} agent (--agent {owner}), not --agent "
                f"{values['agent']}; leave it out")
    if values.get("run_name") is None and not values.get("resume"):
        # "" stays "" (and is refused), never silently replaced by a default; a plan makes
        # nothing and names the run it would make, a run reserves its name
        values["run_name"] = (default_run_name(values["agent"], results)
                              if params.get("plan_only") else _reserved(values["agent"], results))
    options = AgentOptions(bundles=params.get("bundles"), agent_url=agent_url, args=args)
    return RunConfig(**values, agent_options=options)


def _reserved(agent: str, results: Path) -> str:
    """A new run's default name, its folder made now (:func:`evals.run.runner.reserve_run_name`)
    so that a run started in the same second takes another, and removed when this process ends
    if the run never wrote to it, with the folders above it the reservation made (a process
    killed first leaves it to the next reservation there to remove)."""
    from evals.run.runner import default_run_name, drop_unused, reserve_run_name
    from oa_vm.errors import OaVmError

    made = next((p for p in reversed([results, *results.parents]) if not os.path.lexists(p)),
                None)
    try:
        name = reserve_run_name(agent, results)
    except (OaVmError, OSError):  # refused later in the results folder's own words
        return default_run_name(agent, results)
    atexit.register(drop_unused, results / name, made)
    return name


def run(
    ctx: typer.Context,
    selection: Annotated[
        str | None, typer.Option("--tasks", help=TASKS_HELP + " Required (but for --resume and "
                                 "--rerun-errors: the run's own).")
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help=AGENT_HELP + " Required (but for --resume and "
                                 "--rerun-errors: the run's own).")
    ] = None,
    pool: Annotated[
        list[str] | None,
        typer.Option("--pool", "-n", help="The pool's name (default: the only pool); repeat it "
                     "to run over several pools (--pool a --pool b)."),
    ] = None,
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
    repair: Annotated[
        bool, typer.Option("--repair", help="Replace workers quarantined for infrastructure "
                                            "reasons, and those that did not answer when the "
                                            "run started, from the pool (oa-vm pool-repair).")
    ] = False,
    fail_on_errors: FailOnErrorsOpt = False,
    wait_for_pool_s: WaitForPoolOpt = None,
    reset: ResetOpt = "clean-or-stock",
    trials: Annotated[
        int | None, typer.Option("--trials", metavar="K", help="Run each task K times (each "
                                 "trial its own record; pass@k, pass^k and flaky tasks in the "
                                 "summary). Default 1.")
    ] = None,
    variations: VariationsOpt = None,
    rerun_errors: Annotated[
        str | None, target_option(
            "--rerun-errors", what="run folder", metavar="RUN",
            help="Run again, in RUN's folder, only its tasks that ended in an infrastructure, "
                 "setup or timeout error; earlier attempts are kept. Every setting RUN "
                 "recorded (--tasks, --agent, --trials, --agent-arg, --max-steps...) "
                 "defaults to RUN's.")
    ] = None,
    allow_change: AllowChangeOpt = None,
    record_tree: RecordTreeOpt = True,
    wait_ready: WaitReadyOpt = None,
) -> None:
    """Run tasks on one or more existing pools (one queue); every task gets one final record."""
    from evals.run.prechecks import check_before_run

    if rerun_errors is not None:
        from evals.results.run_reader import find_run

        find_run(rerun_errors, results_dir)  # no such run: one line naming the runs there are
    several = pool is not None and len(pool) > 1
    config = run_config(
        ctx, pool=None if several or not pool else pool[0], pools=pool if several else None,
        run_name=rerun_errors or run_name, resume=resume or rerun_errors is not None,
        rerun_errors=rerun_errors is not None,
    )
    if wait_ready is not None:
        names: list[str | None] = [*config.pool_names()] or [None]
        _wait_ready(names, wait_ready)
    # before any lease is taken or any task runs (a dead agent server would fail every task)
    checked = check_before_run(config, agent_url_option=agent_url_option(agent_url))
    execute(config, json_out=json_out, fail_on_errors=fail_on_errors, checked=checked)


def _wait_ready(pools: list[str | None], timeout_s: float) -> None:
    """Follow each pool's workers until they are ready, at most ``timeout_s`` in all (the
    pool's own wait: :func:`oa_vm.api.wait_pool`, whose timeout names each stuck worker)."""
    import time

    deadline = time.monotonic() + timeout_s
    for name in pools:
        typer.echo(f"waiting for pool {name or '(the only one)'} to be ready (at most "
                   f"{format_duration(timeout_s)})", err=True)
        oa_vm.wait_pool(name, timeout_s=max(1.0, deadline - time.monotonic()))
