"""What an agent is: one action per step, from an observation of the screen and the task.

An action is written either as a dataclass (:class:`BenchmarkAction`: the reference tool's GUI
actions such as ``click`` at ``x, y``, which become pyautogui source, the form WAA's agents send)
or as WAA's action string: ``DONE``, ``FAIL`` and ``WAIT`` are special (and so are the two
abstention actions, ``SEND_MSG_TO_USER "question"`` and ``REPORT_INFEASIBLE "why"``),
pyautogui source goes to ``/execute_windows``, anything else is a command for the local
worker's ``/execute``.
:func:`parse_action` and :meth:`BenchmarkAction.to_string` convert between them.

Agents may report the model tokens a step used through ``BenchmarkAction.usage``
(``{"model", "tokens_in", "tokens_out"}``); the ledger prices them. They never score: a score is
the checker's, whatever the agent claims.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

# The action type and its vocabulary live with their pyautogui form (the lower module);
# re-exported here with the rest of what an agent is.
from evals.agents.pyautogui_code import (
    ABSTENTION_TYPES,
    ACTION_TYPES,
    DONE,
    EXECUTE,
    EXECUTE_WINDOWS,
    FAIL,
    GUI_ACTION_TYPES,
    REPORT_INFEASIBLE,
    SEND_MSG_TO_USER,
    WAIT,
    BenchmarkAction,
)

__all__ = [  # the re-exported names; everything defined below is public as well
    "ABSTENTION_TYPES", "ACTION_TYPES", "DONE", "EXECUTE", "EXECUTE_WINDOWS", "FAIL",
    "GUI_ACTION_TYPES", "REPORT_INFEASIBLE", "SEND_MSG_TO_USER", "WAIT", "BenchmarkAction",
]

_SPECIAL = {"DONE": DONE, "FAIL": FAIL, "WAIT": WAIT}
_ABSTENTION_PATTERN = re.compile(
    r"^(send_msg_to_user|report_infeasible)\s*(?:\(\s*(.*?)\s*\)|\s(.*))?$",
    re.IGNORECASE | re.DOTALL)


_FIELDS = ("x", "y", "target_node_id", "target_bbox", "target_role", "target_name", "text",
           "key", "modifiers", "scroll_direction", "scroll_amount", "end_x", "end_y", "answer",
           "raw_action")


def parse_action(value: str | Mapping[str, Any]) -> BenchmarkAction:
    """An action from WAA's string form or from a mapping (``{"type", ...fields}``).

    A string is ``DONE``/``FAIL``/``WAIT``, Python source for the guest (``import pyautogui;
    ...``: an ``execute_windows`` action) or a command of the local worker's language.

    Raises:
        ValueError: the value is empty, or a mapping with an unknown type or missing field.
    """
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise ValueError("an empty action; send DONE, FAIL, WAIT, pyautogui code or a command")
        special = _SPECIAL.get(text.upper())
        if special:
            return BenchmarkAction(special)
        abstention = parse_abstention(text)
        if abstention is not None:
            return abstention
        if text.startswith(_PYTHON_STARTS):
            return BenchmarkAction(EXECUTE_WINDOWS, code=text)
        return BenchmarkAction(EXECUTE, command=text)
    kind = value.get("type")
    if not isinstance(kind, str):
        raise ValueError(f"an action object needs a 'type' ({', '.join(ACTION_TYPES)})")
    command = value.get("command")
    code = value.get("code")
    fields = {name: value[name] for name in _FIELDS if value.get(name) is not None}
    if "target_bbox" in fields:
        fields["target_bbox"] = tuple(fields["target_bbox"])
    return BenchmarkAction(
        kind.lower(),
        command=command if isinstance(command, str) else None,
        code=code if isinstance(code, str) else None,
        raw=dict(value),
        **fields,
    )


ABSTENTION_PROMPT = (
    " If the request is ambiguous, reply SEND_MSG_TO_USER \"your question\" instead of acting; "
    "if it cannot be done, reply REPORT_INFEASIBLE \"why\"."
)
"""What a model agent's instructions say of the two abstention actions."""


def parse_abstention(text: str, **fields: Any) -> BenchmarkAction | None:
    """``SEND_MSG_TO_USER "question"`` / ``report_infeasible('why')`` (either spelling, the
    text quoted or not) as its action, or None when ``text`` is not one."""
    match = _ABSTENTION_PATTERN.match(text.strip())
    if match is None:
        return None
    return BenchmarkAction(match.group(1).lower(), text=_unquote(match.group(2) or match.group(3)),
                           **fields)


def final_reply_action(text: str, **fields: Any) -> BenchmarkAction:
    """The action a model's reply without a tool call stands for: a question or an
    infeasibility report when it starts with one, ``fail`` for ``FAIL``, else ``done``."""
    stripped = text.strip()
    abstention = _ABSTENTION_PATTERN.match(stripped.splitlines()[0] if stripped else "")
    if abstention:
        rest = abstention.group(2) or abstention.group(3) or ""
        if "\n" in stripped and not rest:
            rest = stripped.split("\n", 1)[1]
        return BenchmarkAction(abstention.group(1).lower(), text=_unquote(rest), **fields)
    return BenchmarkAction(FAIL if stripped.upper().startswith("FAIL") else DONE, **fields)


def _unquote(text: str | None) -> str:
    """An abstention action's text: ``"..."``/``'...'`` (or a JSON string) unwrapped."""
    text = (text or "").strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        if text[0] == '"':
            try:
                return str(json.loads(text))
            except ValueError:
                pass
        return text[1:-1]
    return text


_PYTHON_STARTS = ("import pyautogui", "import time", "pyautogui.", "computer.")


@dataclass
class BenchmarkObservation:
    """What the agent sees before a step.

    Attributes:
        screenshot: The screen as PNG bytes (``None`` if the worker could not provide it).
        accessibility_tree: The UI Automation tree as XML text, when available (each element
            with ``rect="left,top,right,bottom"`` in screen pixels on the local worker).
        window_title: The title of the focused window, when available.
        step: The index of the step about to be taken (0-based).
        last_result: What the worker answered to the previous action (``output``,
            ``returncode``...), ``None`` at the first step or after ``WAIT``.
        last_error: Why the worker refused or failed the previous action, if it did.
        viewport: ``(width, height)`` of the screenshot.
        screenshot_path, url, app_name, focused_element, dom_html, raw_observation: The
            reference tool's other fields, ``None`` here unless a worker provides them.
    """

    # the reference's fields in its order (code that gives them by position reads the same),
    # then this project's
    screenshot: bytes | None = None
    screenshot_path: str | None = None
    viewport: tuple[int, int] | None = None
    accessibility_tree: str | None = None
    dom_html: str | None = None
    url: str | None = None
    window_title: str | None = None
    app_name: str | None = None
    focused_element: dict[str, Any] | None = None
    raw_observation: dict[str, Any] | None = None
    step: int = 0
    last_result: dict[str, Any] | None = None
    last_error: str | None = None


PUBLIC_TASK_FIELDS = ("id", "instruction", "domain", "snapshot", "source", "related_apps")
"""The task JSON fields every agent sees: what WAA's agents are told, no more. The rest
(``evaluator`` with its expected values, ``config``, ``trajectory``, ``reference_solution``,
comments) is the checker's or the harness's."""


def public_task_json(task: Mapping[str, Any]) -> dict[str, Any]:
    """The task JSON an agent that did not opt in sees (:data:`PUBLIC_TASK_FIELDS` only)."""
    return {key: task[key] for key in PUBLIC_TASK_FIELDS if key in task}


@dataclass(init=False)
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
        time_limit_steps: The task's own step limit, if it has one (the reference tool's
            field; the run's ``max_steps`` applies when it is ``None``).
        trial: Which trial of the task this is (from 1; ``--trials K`` runs K of them). A
            retry of a trial on another worker is the same trial: an agent that draws at random
            derives its draws from it (:func:`evals.agents.seeding.task_draws`).

    ``raw_config=`` (the reference tool's name) is accepted for ``raw`` and read back as
    ``task.raw_config``. The positional order is ``(task_id, domain, instruction, ...)``;
    the reference's is ``(task_id, instruction, domain, ...)``, so pass them by keyword.
    """

    task_id: str
    domain: str
    instruction: str
    infeasible: bool | None
    raw: dict[str, Any]
    time_limit_steps: int | None
    trial: int

    def __init__(
        self,
        task_id: str,
        domain: str = "",
        instruction: str = "",
        infeasible: bool | None = None,
        raw: dict[str, Any] | None = None,
        time_limit_steps: int | None = None,
        *,
        raw_config: dict[str, Any] | None = None,
        trial: int = 1,
    ) -> None:
        self.task_id = task_id
        self.domain = domain
        self.instruction = instruction
        self.infeasible = infeasible
        self.raw = dict(raw if raw is not None else raw_config or {})
        self.time_limit_steps = time_limit_steps
        self.trial = trial

    @property
    def raw_config(self) -> dict[str, Any]:
        """The reference tool's name for :attr:`raw`."""
        return self.raw


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
    infeasible: bool, trial: int = 1,
) -> BenchmarkTask:
    """The :class:`BenchmarkTask` an agent is given (trial ``trial`` of the task): the public
    view unless it opted in."""
    instruction = task.get("instruction", "")
    text = instruction if isinstance(instruction, str) else str(instruction)
    if agent.sees_answers:
        return BenchmarkTask(task_id, domain, text, infeasible, dict(task), trial=trial)
    return BenchmarkTask(task_id, domain, text, None, public_task_json(task), trial=trial)


def tasks_for_agent(
    agent: BenchmarkAgent, tasks: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Task JSON by ID as :meth:`BenchmarkAgent.check_tasks` may see it."""
    if agent.sees_answers:
        return {tid: dict(t) for tid, t in tasks.items()}
    return {tid: public_task_json(t) for tid, t in tasks.items()}
