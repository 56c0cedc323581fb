"""What an agent is: one action per step, from an observation of the screen and the task.

An action is written either as a dataclass (:class:`BenchmarkAction`) or as WAA's action string:
``DONE``, ``FAIL`` and ``WAIT`` are special, anything else is a command for the WAA server's
``/execute``. :func:`parse_action` and :meth:`BenchmarkAction.to_string` convert between them.

Agents may report the model tokens a step used through ``BenchmarkAction.usage``
(``{"model", "tokens_in", "tokens_out"}``); the ledger prices them. They never score: a score is
the checker's, whatever the agent claims.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

EXECUTE = "execute"
EXECUTE_WINDOWS = "execute_windows"
DONE = "done"
FAIL = "fail"
WAIT = "wait"
ACTION_TYPES = (EXECUTE, EXECUTE_WINDOWS, DONE, FAIL, WAIT)
_SPECIAL = {"DONE": DONE, "FAIL": FAIL, "WAIT": WAIT}


@dataclass
class BenchmarkAction:
    """One action.

    Attributes:
        type: ``execute`` (``command`` for ``/execute``), ``execute_windows`` (``code`` for
            ``/execute_windows``), ``done``, ``fail`` or ``wait``.
        command: The command of an ``execute`` action.
        code: The Python source of an ``execute_windows`` action.
        raw: What the agent sent, when it came from outside (the http agent's answer).
        usage: Model tokens this step used, ``{"model", "tokens_in", "tokens_out"}``.
    """

    type: str
    command: str | None = None
    code: str | None = None
    raw: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.type not in ACTION_TYPES:
            raise ValueError(f"unknown action type {self.type!r}; use one of {ACTION_TYPES}")
        if self.type == EXECUTE and not self.command:
            raise ValueError("an execute action needs a command")
        if self.type == EXECUTE_WINDOWS and not self.code:
            raise ValueError("an execute_windows action needs code")

    @property
    def ends_task(self) -> bool:
        """True for ``done`` and ``fail``: the agent says it is finished."""
        return self.type in (DONE, FAIL)

    def to_string(self) -> str:
        """WAA's action string: ``DONE``/``FAIL``/``WAIT``, or the command/code itself."""
        if self.type == EXECUTE:
            return str(self.command)
        if self.type == EXECUTE_WINDOWS:
            return str(self.code)
        return self.type.upper()

    def to_json(self) -> dict[str, Any]:
        """The action as recorded in a step (``{"type", "command"?, "code"?}``)."""
        data: dict[str, Any] = {"type": self.type}
        if self.command is not None:
            data["command"] = self.command
        if self.code is not None:
            data["code"] = self.code
        return data


def parse_action(value: str | Mapping[str, Any]) -> BenchmarkAction:
    """An action from WAA's string form or from ``{"type", "command"?, "code"?}``.

    Raises:
        ValueError: the value is empty, or a mapping with an unknown type or missing field.
    """
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise ValueError("an empty action; send DONE, FAIL, WAIT or a command")
        special = _SPECIAL.get(text.upper())
        return BenchmarkAction(special) if special else BenchmarkAction(EXECUTE, command=text)
    kind = value.get("type")
    if not isinstance(kind, str):
        raise ValueError(f"an action object needs a 'type' ({', '.join(ACTION_TYPES)})")
    command = value.get("command")
    code = value.get("code")
    return BenchmarkAction(
        kind.lower(),
        command=command if isinstance(command, str) else None,
        code=code if isinstance(code, str) else None,
        raw=dict(value),
    )


@dataclass
class BenchmarkObservation:
    """What the agent sees before a step.

    Attributes:
        screenshot: The screen as PNG bytes (``None`` if the worker could not provide it).
        accessibility_tree: The UI Automation tree as XML text, when available.
        window_title: The title of the focused window, when available.
        step: The index of the step about to be taken (0-based).
    """

    screenshot: bytes | None
    accessibility_tree: str | None
    window_title: str | None
    step: int


PUBLIC_TASK_FIELDS = ("id", "instruction", "domain", "snapshot", "source", "related_apps")
"""The task JSON fields every agent sees: what WAA's agents are told, no more. The rest
(``evaluator`` with its expected values, ``config``, ``trajectory``, ``reference_solution``,
comments) is the checker's or the harness's."""


def public_task_json(task: Mapping[str, Any]) -> dict[str, Any]:
    """The task JSON an agent that did not opt in sees (:data:`PUBLIC_TASK_FIELDS` only)."""
    return {key: task[key] for key in PUBLIC_TASK_FIELDS if key in task}


@dataclass
class BenchmarkTask:
    """The task given to an agent.

    An agent sees what WAA's agents see: the instruction and the task's public fields
    (:data:`PUBLIC_TASK_FIELDS`). Only an agent whose class sets
    :attr:`BenchmarkAgent.sees_answers` (the oracle) is given the full task JSON and the
    infeasible flag; a run with such an agent says so in its metadata and summary.

    Attributes:
        task_id: The index ID (the task's identity).
        domain: The index domain (``chrome``, ``notepad``...).
        instruction: What the agent is asked to do.
        infeasible: True when the right answer is ``FAIL``; ``None`` (not told) unless the
            agent opted in.
        raw: The public task JSON, or the full task JSON for an agent that opted in.
    """

    task_id: str
    domain: str
    instruction: str
    infeasible: bool | None
    raw: dict[str, Any] = field(default_factory=dict)


class BenchmarkAgent(ABC):
    """The interface every agent implements.

    An agent instance serves one worker at a time (the runner makes one per worker), so it may
    keep per-task state between :meth:`reset` and the end of the task.
    """

    sees_answers: ClassVar[bool] = False
    """Opt-in to the task's evaluator data (evaluator, expected values, infeasible flag,
    reference solution). Off by default: set it only on test agents that replay known answers
    (the oracle); a run that used one is marked in ``metadata.json`` and the summary."""

    @abstractmethod
    def act(
        self,
        observation: BenchmarkObservation,
        task: BenchmarkTask,
        history: Sequence[BenchmarkAction] | None = None,
    ) -> BenchmarkAction:
        """The next action.

        Args:
            observation: The screen before this step.
            task: The task being run.
            history: The actions already taken in this task, oldest first.

        Raises:
            AgentError: (or any exception) the agent cannot act; the task ends as ``error/agent``.
        """

    def reset(self, task: BenchmarkTask) -> None:  # noqa: B027 - optional hook, default no-op
        """Called before a task starts (after the worker was reset). Default: nothing."""

    def check_tasks(self, tasks: Mapping[str, Mapping[str, Any]]) -> None:  # noqa: B027
        """Refuse a run before it starts if the agent cannot play some selected tasks.

        Args:
            tasks: Task JSON by task ID, every selected task (the public view unless the agent
                opted in with :attr:`sees_answers`).

        Raises:
            InvalidRunInputError: listing every task the agent cannot play.
        """


def task_for_agent(
    agent: BenchmarkAgent, task_id: str, domain: str, task: Mapping[str, Any],
    infeasible: bool,
) -> BenchmarkTask:
    """The :class:`BenchmarkTask` an agent is given: the public view unless it opted in."""
    instruction = task.get("instruction", "")
    text = instruction if isinstance(instruction, str) else str(instruction)
    if agent.sees_answers:
        return BenchmarkTask(task_id, domain, text, infeasible, dict(task))
    return BenchmarkTask(task_id, domain, text, None, public_task_json(task))


def tasks_for_agent(
    agent: BenchmarkAgent, tasks: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Task JSON by ID as :meth:`BenchmarkAgent.check_tasks` may see it."""
    if agent.sees_answers:
        return {tid: dict(t) for tid, t in tasks.items()}
    return {tid: public_task_json(t) for tid, t in tasks.items()}
