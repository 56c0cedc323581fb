"""The run's options: one frozen :class:`RunConfig`, and the settings recorded when it starts.

The command line parses its options once into a :class:`RunConfig`, checked as it is made; the
layers below (the runner, the dispatcher, one attempt of one task) receive that object whole.

A resumed run (``--resume``, ``--rerun-errors``) is the same run: its records are scored as one
set, so every setting that decides what a record says must be the one it started with. They are
written into ``manifest.json`` (``settings``) when the run is created and checked on every
resume (:func:`check_settings`):

- an option not given on the command line takes the recorded value (:func:`resumed_values`);
- a value that differs is refused in one line, naming the setting, both values and the flag;
- a change happens only with ``--allow-change SETTING`` (the settings in :data:`CHANGEABLE`),
  and is appended to the manifest's ``setting_changes`` (when, what, from, to), which the run
  page shows.

The pools (``pools``) are those of the last session, as its metadata names them: a multi-pool
run resumes on its own pools unless ``--allow-change pools`` (one of them removed), while a
single-pool run may resume on any one pool (its workers are then told apart by pool,
:func:`evals.run.pools.session_pools`).

The task selection, the agent, the trials and the variations are not changeable: they decide
which records the run holds (its queue), so another value is another run.

Runs from before ``settings`` was recorded are checked against what their ``metadata.json`` and
manifest say (the selection, agent, trials, max steps, task timeout, reset mode, agent arguments
and module); what was never recorded cannot be checked and is taken as given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evals.agents import AgentOptions, BenchmarkAgent
from evals.errors import NOT_GIVEN, InvalidRunInputError, ResumeMismatchError
from evals.results.records import results_root
from evals.results.trials import MAX_TRIALS
from evals.run.manifest import REDACTED, module_sha256, recorded_arguments, sha256_file
from evals.run.queue import DEFAULT_MAX_ATTEMPTS, task_lease_seconds
from evals.run.reset import DEFAULT_RESET, ResetMode
from oa_vm.kit.validate import PLAIN_NAME_RE, folder_problem, number_problem

DEFAULT_TASK_TIMEOUT_S = 600.0
DEFAULT_QUARANTINE_AFTER = 2
RESUME_NEEDS_NAME = "--resume needs --run-name (the run to continue)"


@dataclass(frozen=True)
class RunConfig:
    """Everything a run needs (the ``run`` command's options), checked once, when it is made.

    Immutable: a config is checked as it is made (:meth:`validate`; a value no run can use
    raises :class:`InvalidRunInputError` then), so whatever holds one holds a valid one. To
    change a setting, make a new config with :func:`dataclasses.replace`, which is checked in
    turn.

    Attributes:
        pool: The pool's name (``None``: the only pool there is).
        pools: Several pools for one run (``run --pool a --pool b``: one queue, one ledger
            priced per pool, workers named ``<pool>/<worker>``; :mod:`evals.run.pools`). Leave
            ``None`` (or give one name) for a single-pool run; ``pool`` is then the pool.
        selection: The task selection (``all``, an index, ``domain:X``, IDs, ``@file``).
        agent: A built-in agent name or ``module:Class``.
        agent_options: Options of built-in agents (bundles, URL).
        max_steps: Steps per task at most.
        run_name: The run folder's name (default: ``<agent>-<UTC time>``).
        resume: Continue the run of that name instead of starting one.
        task_timeout_s: Wall-clock budget of one attempt of one task.
        max_attempts: Attempts per task when attempts fail for infrastructure reasons.
        max_cost_usd: Stop dispatching when the run's spend would pass it.
        results_dir: Where run folders live (default ``$OA_EVALS_RESULTS`` or
            ``./benchmark_results``).
        connect_timeout_s: Seconds to connect to a worker.
        read_timeout_s: Seconds to wait for a worker's answer (short values make hung workers
            show quickly).
        step_pause_s: Pause after each action (WAA's stock loop: 3 s; the simulated worker
            needs none).
        expected_seconds: Expected duration per task ID; others are estimated from the task.
        quarantine_after: Consecutive infrastructure failures/timeouts that quarantine a worker.
        lease_seconds: How long a lease outlives a silent controller.
        evaluate_backoff_s: First wait before retrying a checker that answered 5xx.
        wait_for_pool_s: How long to wait for another run's lease on the pool (0: refuse).
        reset: How each worker is reset before each task: ``clean``, ``stock`` or
            ``clean-or-stock`` (:mod:`evals.run.reset`).
        trials: Times each task is run (``--trials K``; :mod:`evals.results.trials`), each trial an
            attempt of its own with its own record.
        variations: A goal-variations file (``--variations``, :mod:`evals.run.variations`): each
            selected task's variations run after it, with its checker.
        rerun_errors: With ``resume``: run again the tasks (trials) of the run that ended in
            an error of :data:`RERUN_ERROR_TYPES`, keeping the earlier attempts.
        allow_change: With ``resume``: the recorded settings (:mod:`evals.run.settings`) this
            session may change (``--allow-change``); any other that differs is refused.
    """

    pool: str | None
    selection: str
    agent: str
    agent_options: AgentOptions = field(default_factory=AgentOptions)
    max_steps: int = 15
    run_name: str | None = None
    resume: bool = False
    task_timeout_s: float = DEFAULT_TASK_TIMEOUT_S
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    max_cost_usd: float | None = None
    results_dir: Path | None = None
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 60.0
    step_pause_s: float = 0.0
    expected_seconds: dict[str, float] | None = None
    quarantine_after: int = DEFAULT_QUARANTINE_AFTER
    lease_seconds: float = field(default_factory=task_lease_seconds)
    evaluate_backoff_s: float = 1.0
    repair: bool = False  # replace quarantined workers from the pool (evals.run.repair)
    wait_for_pool_s: float = 0.0
    pools: list[str] | None = None
    reset: str = DEFAULT_RESET.value
    trials: int = 1
    rerun_errors: bool = False
    variations: Path | None = None
    allow_change: tuple[str, ...] = ()
    record_tree: bool = True  # each step's accessibility tree beside its screenshot

    def __post_init__(self) -> None:
        self.validate()

    def pool_names(self) -> list[str]:
        """The pools asked for: ``pools`` if given, else ``[pool]``, else ``[]`` (the only one).

        Raises:
            InvalidRunInputError: ``pools`` repeats a name, or ``pool`` is not among them.
        """
        from evals.run.pools import check_pool_names

        if not self.pools:
            return [] if self.pool is None else [self.pool]
        check_pool_names(self.pools)
        if self.pool is not None and self.pool not in self.pools:
            raise InvalidRunInputError(
                f"pool {self.pool!r} and pools {', '.join(self.pools)} disagree; give pools only"
            )
        return list(self.pools)

    def validate(self) -> None:
        """Raise :class:`InvalidRunInputError` for values no run can use (run when the config
        is made)."""
        checks = [
            number_problem("--max-steps", self.max_steps, low=1),
            number_problem("--task-timeout", self.task_timeout_s, above=0),
            number_problem("--max-attempts", self.max_attempts, low=1),
            number_problem("--max-cost-usd", self.max_cost_usd, low=0),
            number_problem("--read-timeout", self.read_timeout_s, above=0),
            number_problem("connect timeout", self.connect_timeout_s, above=0),
            number_problem("--step-pause", self.step_pause_s, low=0),
            number_problem("lease seconds", self.lease_seconds, above=0),
            number_problem("--wait-for-pool", self.wait_for_pool_s, low=0),
            number_problem("quarantine threshold", self.quarantine_after, low=1),
            number_problem("--trials", self.trials, low=1, high=MAX_TRIALS),
            folder_problem("--results-dir", results_root(self.results_dir)),
        ]
        problems = [p for p in checks if p]
        if self.run_name is not None and not PLAIN_NAME_RE.match(self.run_name):
            problems.append(
                f"--run-name {self.run_name!r} is not a plain folder name "
                "(letters, digits, '.', '_', '-')"
            )
        if self.resume and not self.run_name:
            problems.append(RESUME_NEEDS_NAME)
        if self.allow_change and not self.resume:
            problems.append("--allow-change changes a resumed run's settings; give it with "
                            "--resume or --rerun-errors")
        problems.append(allow_change_problem(self.allow_change) or "")
        problems = [p for p in problems if p]
        if self.rerun_errors and not (self.resume and self.run_name):
            problems.append("--rerun-errors needs the run's name (the run to rerun errors of)")
        if not self.selection.strip():
            problems.append("--tasks is empty; give 'all', an index name, domain:<name> or IDs")
        if self.reset not in {m.value for m in ResetMode}:
            problems.append(f"--reset {self.reset!r} is not one of "
                            f"{', '.join(m.value for m in ResetMode)}")
        if problems:
            raise InvalidRunInputError("; ".join(problems))
        self.pool_names()  # a pool given twice


@dataclass(frozen=True)
class Setting:
    """One recorded setting: its name (as ``--allow-change`` takes it), the option that sets it,
    the :class:`RunConfig` field (``None``: derived), whether it may change."""

    name: str
    option: str
    field: str | None
    changeable: bool


SETTINGS: tuple[Setting, ...] = (
    Setting("tasks", "--tasks", "selection", False),
    Setting("agent", "--agent", "agent", False),
    Setting("trials", "--trials", "trials", False),
    Setting("variations", "--variations", None, False),
    Setting("max-steps", "--max-steps", "max_steps", True),
    Setting("task-timeout", "--task-timeout", "task_timeout_s", True),
    Setting("read-timeout", "--read-timeout", "read_timeout_s", True),
    Setting("step-pause", "--step-pause", "step_pause_s", True),
    Setting("reset", "--reset", "reset", True),
    Setting("agent-arg", "--agent-arg", None, True),
    Setting("agent-module", "the agent's module file", None, True),
    # a multi-pool run's pools (a single-pool run may resume on any one pool)
    Setting("pools", "the pools", None, True),
)
BY_NAME = {s.name: s for s in SETTINGS}
CHANGEABLE = tuple(s.name for s in SETTINGS if s.changeable)


def allow_change_problem(names: tuple[str, ...]) -> str | None:
    """Why ``--allow-change`` values are unusable (an unknown or unchangeable setting), or None."""
    for name in names:
        setting = BY_NAME.get(name)
        if setting is None or not setting.changeable:
            return (f"--allow-change {name!r} is not a setting a resumed run can change; "
                    f"use one of {', '.join(CHANGEABLE)}")
    return None


def current_settings(config: RunConfig, agent: BenchmarkAgent) -> dict[str, Any]:
    """The settings of ``config`` (and its built ``agent``), as :data:`SETTINGS` names them."""
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        if setting.field is not None:
            values[setting.name] = getattr(config, setting.field)
    from evals.agents.model_api import parse_agent_args
    from evals.run.variations import variations_path  # a bare name: the shipped file's hash

    values["variations"] = (None if config.variations is None
                            else sha256_file(variations_path(config.variations)))
    values["agent-arg"] = recorded_arguments(parse_agent_args(config.agent_options.args))
    values["agent-module"] = module_sha256(agent)
    return values


def recorded_settings(manifest: Mapping[str, Any] | None,
                      metadata: Mapping[str, Any]) -> dict[str, Any]:
    """What the run recorded: its manifest's ``settings``, else (older runs) what its metadata
    and manifest say of the same settings. A setting never recorded is absent."""
    from evals.run.pools import recorded_pool_names

    # the pools are the metadata's (the last session's), never in the manifest's settings
    metadata_pool = metadata.get("pool")
    pools = recorded_pool_names(metadata) or ([str(metadata_pool)] if metadata_pool else [])
    settings = (manifest or {}).get("settings")
    if isinstance(settings, dict):
        return {**{k: v for k, v in settings.items() if k in BY_NAME},
                **({"pools": pools} if pools else {})}
    old: dict[str, Any] = {"pools": pools} if pools else {}
    for key, name in (("selection", "tasks"), ("agent", "agent"), ("max_steps", "max-steps"),
                      ("task_timeout_s", "task-timeout")):
        if key in metadata:
            old[name] = metadata[key]
    old["trials"] = metadata.get("trials") or 1  # runs from before trials: 1
    reset = metadata.get("reset")
    if isinstance(reset, dict) and isinstance(reset.get("mode"), str):
        old["reset"] = reset["mode"]
    agent = (manifest or {}).get("agent")
    if isinstance(agent, dict):
        if isinstance(agent.get("arguments"), dict):
            old["agent-arg"] = agent["arguments"]
        if agent.get("module_sha256"):
            old["agent-module"] = agent["module_sha256"]
    return old


def _same(name: str, recorded: Any, current: Any) -> bool:
    if name == "pools" and isinstance(recorded, list) and isinstance(current, list):
        # in any order; one pool for another is no change (a single-pool run's workers are
        # told apart by pool where it matters: evals.run.pools.session_pools)
        return sorted(recorded) == sorted(current) or len(recorded) == len(current) == 1
    if name == "agent-arg" and isinstance(recorded, dict) and isinstance(current, dict):
        # a secret recorded as <redacted> cannot be compared: any value given again will do
        keys = set(recorded) | set(current)
        return all(recorded.get(k) == current.get(k) or recorded.get(k) == REDACTED
                   for k in keys)
    if isinstance(recorded, int | float) and isinstance(current, int | float):
        return float(recorded) == float(current)
    return bool(recorded == current)


def shown(name: str, value: Any) -> str:
    """A setting's value as a refusal shows it (``--agent-arg`` as ``K=V`` pairs, a hash short)."""
    if name == "agent-arg" and isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in sorted(value.items())) or NOT_GIVEN
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if name in ("agent-module", "variations") and isinstance(value, str):
        return f"sha256 {value[:12]}"
    if value is None:
        return NOT_GIVEN
    if isinstance(value, float):
        return f"{value:g}s" if name.endswith(("timeout", "pause")) else f"{value:g}"
    return str(value)


def differences(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """The recorded settings ``current`` changes, in :data:`SETTINGS` order."""
    return [s.name for s in SETTINGS
            if s.name in recorded and not _same(s.name, recorded[s.name], current.get(s.name))]


def check_settings(
    path: str, config: RunConfig, agent: BenchmarkAgent,
    manifest: Mapping[str, Any] | None, metadata: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """A resumed run's settings against the recorded ones: the changes ``--allow-change``
    allowed (``setting``, ``from``, ``to``), to record; nothing is written here.

    Raises:
        ResumeMismatchError: a setting differs and ``config.allow_change`` does not name it
            (the first such setting, in one line).
    """
    recorded = recorded_settings(manifest, metadata)
    # no --pool: the run's own pools
    current = {**current_settings(config, agent),
               "pools": config.pool_names() or recorded.get("pools")}
    changes = []
    for name in differences(recorded, current):
        setting = BY_NAME[name]
        before, after = shown(name, recorded[name]), shown(name, current[name])
        if name not in config.allow_change:
            fix = (f"pass --allow-change {name} to change it (the change is recorded)"
                   if setting.changeable else "start a new run with another --run-name")
            raise ResumeMismatchError(path, setting.option, before, after, fix=fix)
        changes.append({"setting": name, "from": recorded[name], "to": current[name]})
    unused = [n for n in config.allow_change if n not in {c["setting"] for c in changes}]
    if unused:
        raise InvalidRunInputError(unneeded_allow_change(unused[0], recorded, current))
    return changes


def unneeded_allow_change(name: str, recorded: Mapping[str, Any],
                          current: Mapping[str, Any]) -> str:
    """Why ``--allow-change NAME`` is refused when the setting does not change: it is the same,
    or (the pools of a single-pool run resumed on another one pool) the change needs no
    permission."""
    before, after = recorded.get(name, current[name]), current[name]
    if name == "pools" and sorted(before) != sorted(after):  # one pool for another (_same)
        return (f"--allow-change pools: not needed: a single-pool run may resume on any one "
                f"pool (it ran on {shown(name, before)}, now on {shown(name, after)}); leave "
                "--allow-change out")
    return (f"--allow-change {name}: the run's {name} {'are' if name == 'pools' else 'is'} "
            f"unchanged ({shown(name, before)}); "
            "give the new value with its option, or leave --allow-change out")


def resumed_values(recorded: Mapping[str, Any], given: set[str]) -> dict[str, Any]:
    """The :class:`RunConfig` fields a resumed run takes from its record: each
    recorded setting whose option was not given (``given``: setting names)."""
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        if setting.field is None or setting.name in given or setting.name not in recorded:
            continue
        values[setting.field] = recorded[setting.name]
    return values
