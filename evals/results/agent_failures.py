"""Tasks the agent ended itself (``error/agent``): grouped by what it raised, told in one line.

A raising agent is the agent's failure, not the pool's: the run's closing line says "the agent
raised" and names the agent, where an infrastructure failure points at the workers' logs
(:func:`evals.run.runner.health_warning`, :class:`evals.errors.AgentFailed`). The grouping reads
the records' ``agent_traceback`` (:class:`evals.results.records.TaskExecution`), whose last line
is the exception as Python prints it (``RuntimeError: ...``, ``mymod.MyError: ...``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from enum import StrEnum

from evals.results.records import ErrorType, TaskExecution, TaskStatus
from waa_client.errors import ServerError, WaaError, WorkerTimeoutError

NO_ACTION = "no BenchmarkAction"
"""The group of agent errors without an exception: ``act`` returned something else."""


# --- who an action's failure is charged to ------------------------------------------------------


class Blame(StrEnum):
    """Who pays for an action the worker did not carry out (:func:`blame_action`)."""

    AGENT_STEP = "agent_step"
    """The agent's: the step is recorded as refused, the agent is told, the task goes on."""
    AGENT_TIMED_OUT = "agent_timed_out"
    """The agent's: its step outlasted the read timeout; the task ends ``error/agent``."""
    WORKER = "worker"
    """The infrastructure's: the task is retried elsewhere, the worker is a step nearer its
    quarantine."""


ACTION_TIMED_OUT = "an action past the read timeout"
"""The group of agent errors whose action the worker was still running when the read timeout
passed (:data:`Blame.AGENT_TIMED_OUT`); their message starts with this."""


def blame_action(exc: WaaError, *, command: bool, worker_answers: Callable[[], bool]) -> Blame:
    """Who an action's failure is charged to: by what happened, not by which timer fired.

    The rules, each asking the worker's probe (``worker_answers``) before it blames the agent,
    since a worker that does not answer it is failing whatever the action was:

    - **500 to an action** (``/execute_windows`` with WAA's JSON error body: the agent's code
      raised): the agent's step. The same body from ``/execute`` (which answers a failing
      command with its return code) is the server failing on this action (a path too long for
      its file system): the agent's step when the worker answers its probe, the worker's
      otherwise. A plain 5xx (no such body: the server itself failing) is the worker's.
    - **Still running at the read timeout**: the worker took the action (the request was sent)
      and was running it when the read timeout passed. When the worker answers its probe, the
      action is what took the time (its own size: 400,000 characters to type), so the agent's
      step timed out: the task ends ``error/agent`` and no healthy worker is quarantined; the
      worker stops the action itself once its caller is gone (``infra.local.cancel``) or at
      its own limit. A worker that does not answer is hung: the worker's.
    - **Unreachable** (refused, reset, no connection in time), 502/503/504: the worker's.
    - **Any 4xx** (the worker refused the action, nothing ran): the agent's step.
    """
    if isinstance(exc, WorkerTimeoutError) and exc.sent:
        return Blame.AGENT_TIMED_OUT if worker_answers() else Blame.WORKER
    if exc.is_infrastructure:
        return Blame.WORKER
    if isinstance(exc, ServerError):
        if not exc.endpoint_answered:
            return Blame.WORKER
        if command:
            return Blame.AGENT_STEP if worker_answers() else Blame.WORKER
        return Blame.AGENT_STEP
    return Blame.AGENT_STEP


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
        if text:
            kind = exception_name(text)
        elif (record.error_message or "").startswith(ACTION_TIMED_OUT):
            kind = ACTION_TIMED_OUT
        else:
            kind = NO_ACTION
        trial = record.trial
        key = record.task_id + (f"#{trial}" if trial > 1 else "")
        groups.setdefault(kind, []).append(key)
    return groups


def describe(agent: str, failures: Mapping[str, list[str]]) -> str:
    """``3 task(s): the agent (mymod:MyAgent) raised RuntimeError``; several kinds are counted
    (``raised RuntimeError (2), KeyError (1)``), and an agent that returned something else than
    an action is said so."""
    total = sum(len(keys) for keys in failures.values())
    raised = {kind: keys for kind, keys in failures.items()
              if kind not in (NO_ACTION, ACTION_TIMED_OUT)}
    several = len(failures) > 1
    parts = []
    if raised:
        kinds = sorted(raised, key=lambda kind: (-len(raised[kind]), kind))
        parts.append("raised " + ", ".join(
            f"{kind} ({len(raised[kind])})" if several else kind for kind in kinds))
    if NO_ACTION in failures:
        count = len(failures[NO_ACTION])
        parts.append(f"returned {NO_ACTION}" + (f" ({count})" if several else ""))
    if ACTION_TIMED_OUT in failures:
        count = len(failures[ACTION_TIMED_OUT])
        parts.append("sent " + ACTION_TIMED_OUT + (f" ({count})" if several else ""))
    return f"{total} task(s): the agent ({agent}) " + " or ".join(parts)
