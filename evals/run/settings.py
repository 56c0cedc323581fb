"""The settings that shape a run's results, recorded when it starts and held on ``--resume``.

A resumed run (``--resume``, ``--rerun-errors``) is the same run: its records are scored as one
set, so every setting that decides what a record says must be the one it started with. They are
written into ``manifest.json`` (``settings``) when the run is created and checked on every
resume (:func:`check_settings`):

- an option not given on the command line takes the recorded value (:func:`resumed_values`);
- a value that differs is refused in one line, naming the setting, both values and the flag;
- a change happens only with ``--allow-change SETTING`` (the settings in :data:`CHANGEABLE`),
  and is appended to the manifest's ``setting_changes`` (when, what, from, to), which the run
  page shows.

The task selection, the agent, the trials and the variations are not changeable: they decide
which records the run holds (its queue), so another value is another run.

Runs from before ``settings`` was recorded are checked against what their ``metadata.json`` and
manifest say (the selection, agent, trials, max steps, task timeout, reset mode, agent arguments
and module); what was never recorded cannot be checked and is taken as given.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.errors import InvalidRunInputError, ResumeMismatchError

if TYPE_CHECKING:
    from evals.agents import BenchmarkAgent

RunConfig = Any
"""An :class:`evals.run.runner.RunConfig` (not imported: the runner imports this module)."""


@dataclass(frozen=True)
class Setting:
    """One recorded setting: its name (as ``--allow-change`` takes it), the option that sets it,
    the :class:`~evals.run.runner.RunConfig` field (``None``: derived), whether it may change."""

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
)
BY_NAME = {s.name: s for s in SETTINGS}
CHANGEABLE = tuple(s.name for s in SETTINGS if s.changeable)
REDACTED = "<redacted>"


def allow_change_problem(names: tuple[str, ...]) -> str | None:
    """Why ``--allow-change`` values are unusable (an unknown or unchangeable setting), or None."""
    for name in names:
        setting = BY_NAME.get(name)
        if setting is None or not setting.changeable:
            return (f"--allow-change {name!r} is not a setting a resumed run can change; "
                    f"use one of {', '.join(CHANGEABLE)}")
    return None


def _file_sha256(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def module_sha256(agent: BenchmarkAgent) -> str | None:
    """The SHA-256 of the file the agent's class is defined in (``None``: not a file)."""
    import inspect

    try:
        source = inspect.getsourcefile(type(agent))
    except TypeError:
        return None
    return _file_sha256(Path(source)) if source else None


def agent_arguments(config: RunConfig) -> dict[str, str]:
    """The agent's ``--agent-arg`` values, secrets redacted as the manifest records them."""
    from evals.agents.model_api import parse_agent_args
    from evals.run.manifest import redact_argument

    args = parse_agent_args(config.agent_options.args)
    return {k: redact_argument(k, v) for k, v in sorted(args.items())}


def current_settings(config: RunConfig, agent: BenchmarkAgent) -> dict[str, Any]:
    """The settings of ``config`` (and its built ``agent``), as :data:`SETTINGS` names them."""
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        if setting.field is not None:
            values[setting.name] = getattr(config, setting.field)
    from evals.run.variations import variations_path  # a bare name: the shipped file's hash

    values["variations"] = _file_sha256(
        None if config.variations is None else variations_path(config.variations))
    values["agent-arg"] = agent_arguments(config)
    values["agent-module"] = module_sha256(agent)
    return values


def recorded_settings(manifest: Mapping[str, Any] | None,
                      metadata: Mapping[str, Any]) -> dict[str, Any]:
    """What the run recorded: its manifest's ``settings``, else (older runs) what its metadata
    and manifest say of the same settings. A setting never recorded is absent."""
    settings = (manifest or {}).get("settings")
    if isinstance(settings, dict):
        return {k: v for k, v in settings.items() if k in BY_NAME}
    old: dict[str, Any] = {}
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
        return ",".join(f"{k}={v}" for k, v in sorted(value.items())) or "(none)"
    if name in ("agent-module", "variations") and isinstance(value, str):
        return f"sha256 {value[:12]}"
    if value is None:
        return "(none)"
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
    current = current_settings(config, agent)
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
        raise InvalidRunInputError(
            f"--allow-change {unused[0]}: the run's {unused[0]} is unchanged "
            f"({shown(unused[0], recorded.get(unused[0], current[unused[0]]))}); "
            "give the new value with its option, or leave --allow-change out"
        )
    return changes


def resumed_values(recorded: Mapping[str, Any], given: set[str]) -> dict[str, Any]:
    """The :class:`~evals.run.runner.RunConfig` fields a resumed run takes from its record: each
    recorded setting whose option was not given (``given``: setting names)."""
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        if setting.field is None or setting.name in given or setting.name not in recorded:
            continue
        values[setting.field] = recorded[setting.name]
    return values
