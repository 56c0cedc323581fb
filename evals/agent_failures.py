"""Tasks the agent ended itself (``error/agent``): grouped by what it raised, told in one line.

A raising agent is the agent's failure, not the pool's: the run's closing line says "the agent
raised" and names the agent, where an infrastructure failure points at the workers' logs
(:func:`evals.runner.health_warning`, :class:`evals.errors.AgentFailed`). The grouping reads
the records' ``agent_traceback`` (:class:`evals.records.TaskExecution`), whose last line is the
exception as Python prints it (``RuntimeError: ...``, ``mymod.MyError: ...``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from evals.records import ErrorType, TaskExecution, TaskStatus

NO_ACTION = "no BenchmarkAction"
"""The group of agent errors without an exception: ``act`` returned something else."""


def exception_name(agent_traceback: str) -> str:
    """The raised exception's type as the traceback's last line names it (``RuntimeError``)."""
    lines = [line for line in agent_traceback.splitlines() if line.strip()]
    if not lines:
        return "an exception"
    return lines[-1].split(":", 1)[0].strip() or "an exception"


def agent_failures(records: Iterable[TaskExecution]) -> dict[str, list[str]]:
    """The ``error/agent`` records by exception type (:data:`NO_ACTION` for those that raised
    nothing), each with the keys of its tasks (``task_id``, ``#<trial>`` beyond the first)."""
    groups: dict[str, list[str]] = {}
    for record in records:
        if record.status is not TaskStatus.ERROR or record.error_type is not ErrorType.AGENT:
            continue
        text = record.agent_traceback
        kind = exception_name(text) if text else NO_ACTION
        trial = record.trial
        key = record.task_id + (f"#{trial}" if trial > 1 else "")
        groups.setdefault(kind, []).append(key)
    return groups


def describe(agent: str, failures: Mapping[str, list[str]]) -> str:
    """``3 task(s): the agent (mymod:MyAgent) raised RuntimeError``; several kinds are counted
    (``raised RuntimeError (2), KeyError (1)``), and an agent that returned something else than
    an action is said so."""
    total = sum(len(keys) for keys in failures.values())
    raised = {kind: keys for kind, keys in failures.items() if kind != NO_ACTION}
    several = len(failures) > 1
    parts = []
    if raised:
        kinds = sorted(raised, key=lambda kind: (-len(raised[kind]), kind))
        parts.append("raised " + ", ".join(
            f"{kind} ({len(raised[kind])})" if several else kind for kind in kinds))
    if NO_ACTION in failures:
        count = len(failures[NO_ACTION])
        parts.append(f"returned {NO_ACTION}" + (f" ({count})" if several else ""))
    return f"{total} task(s): the agent ({agent}) " + " or ".join(parts)


def where_to_look(run_dir: str) -> str:
    """Where a raising agent's traceback is kept (the hint after :func:`describe`)."""
    from pathlib import Path

    path = Path(run_dir)
    return (f"see its traceback in {path}/tasks/<task>/execution.json, on the run page "
            f"(`openadapt-evals view {path.name} --results-dir {path.parent}`) or with --debug")
