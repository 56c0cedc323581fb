"""The built-in OpenApps-style task classes: their fields, their reward, their reference solution.

A task's reward is :meth:`Task.check_if_task_is_complete` over the apps' state read from the
worker before the agent starts and after it ends (one JSON document per app: ``todo``,
``codeeditor``, ``messenger``, ``calendar``, ``map``, ``settings``, ``clock``, and ``_url``, the
path of the app on screen; see ``infra/local/workapps.py``). The calendar, map and navigation
classes are in :mod:`~evals.tasks.openapps.planner_classes`.

The state-comparison classes build a *target* from the initial state (what the apps must hold
if the task was done, and nothing else changed) and compare it with the final state over every
app but the code editor (whose files only :class:`EditFileTask` scores), by OpenApps' rule
(:func:`~evals.tasks.openapps.compare.states_match`: texts normalised, entries sorted, ids
dropped, places truncated to tenths of a degree and compared within a distance). A
:class:`CompositeTask` chains its state subtasks' targets, so two changes to one app make one
target, and checks its other subtasks on their own. A task finds the item it names as OpenApps'
classes do: by its exact title (or name), the last of several.

Each class carries a reference solution for the simulated desktop's command language
(:meth:`Task.reference_solution`), which ``--agent oracle`` plays.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, ClassVar

from evals.tasks.openapps.compare import DEFAULT_TOLERANCE_KM, is_done, states_match

ACT, CLARIFY, STOP = "act", "clarify", "stop"
OUTCOMES = (ACT, CLARIFY, STOP)


@dataclass(frozen=True)
class Episode:
    """What the reward sees: the two snapshots and how the agent ended."""

    initial: dict[str, Any]
    final: dict[str, Any]
    ended_by: str
    """``act`` (the agent changed an app, or ended without asking), ``clarify``
    (``send_msg_to_user``) or ``stop`` (``report_infeasible``)."""


@dataclass(kw_only=True)
class Task:
    """The base of every task class: a goal, and the reward over two snapshots.

    A user's own class (``package.module:Class``) subclasses it (or any built-in one) as a
    dataclass and overrides :meth:`check_if_task_is_complete`.
    """

    goal: str = ""
    """What the agent is asked (a nested subtask may leave it out)."""
    goal_style: str | None = None
    """A goal variation's style (``casual``, ``formal``...), recorded only."""
    expects_abstention: ClassVar[bool] = False

    def problem(self) -> str | None:
        """What is wrong with the fields beyond their types (``None``: nothing)."""
        return None

    def check_if_task_is_complete(self, initial_state: dict[str, Any],
                                  current_state: dict[str, Any]) -> bool:
        """Whether the task is done, from the state before and after the episode."""
        raise NotImplementedError

    def score(self, episode: Episode) -> bool:
        """The reward of an episode (an abstention-aware class also reads how it ended)."""
        return bool(self.check_if_task_is_complete(episode.initial, episode.final))

    def reference_solution(self) -> list[str] | None:
        """Commands that do the task on the simulated desktop (``None``: no reference)."""
        return None

    def setup(self) -> list[str]:
        """Commands run on the desktop after its reset and before the first state read (where
        the episode starts: :class:`NavigateToAppTask`'s ``source_app``)."""
        return []


@dataclass(kw_only=True)
class StateTask(Task):
    """A task scored by comparing the final state with a target built from the initial one."""

    normalize_ids: bool = False
    """Drop every ``id`` before comparing (the to-do list's and the calendar's always are)."""

    def target(self, state: dict[str, Any]) -> dict[str, Any]:
        """The state as it must be once the task is done (a new document)."""
        return copy.deepcopy(state)

    def comparison_tolerance_km(self) -> float:
        """How far apart two places' truncated coordinates may be and still be the same."""
        return DEFAULT_TOLERANCE_KM

    def check_if_task_is_complete(self, initial_state: dict[str, Any],
                                  current_state: dict[str, Any]) -> bool:
        """The final state is the target by OpenApps' rule, on every compared app."""
        return states_match(self.target(initial_state), current_state,
                            tolerance_km=self.comparison_tolerance_km(),
                            normalize_ids=self.normalize_ids)


@dataclass(kw_only=True)
class AppStateComparison(StateTask):
    """The generic state comparison: ``expected`` names, per app, the document it must hold
    at the end (apps left out must not change); ``solution`` is its reference solution."""

    expected: dict[str, Any]
    solution: list[str] = field(default_factory=list)

    def target(self, state: dict[str, Any]) -> dict[str, Any]:
        """The initial state with the expected apps' documents in place."""
        result = copy.deepcopy(state)
        for app, document in self.expected.items():
            result[app] = copy.deepcopy(document)
        return result

    def reference_solution(self) -> list[str] | None:
        """The entry's ``solution`` commands."""
        return list(self.solution) or None


@dataclass(kw_only=True)
class MarkToDoDoneTask(StateTask):
    """Mark the to-do item ``todo_name`` as done."""

    todo_name: str

    def problem(self) -> str | None:
        """An empty title."""
        return None if self.todo_name.strip() else "todo_name is empty"

    def target(self, state: dict[str, Any]) -> dict[str, Any]:
        """The item of exactly that title marked done, the last if several (none: a target
        no state can reach, as OpenApps' class then scores 0)."""
        result = copy.deepcopy(state)
        index = last_titled(todo_items(result), "title", self.todo_name)
        if index is None:
            return unreachable(result, "todo", self.todo_name)
        todo_items(result)[index]["done"] = True
        return result

    def reference_solution(self) -> list[str]:
        """``todo done``."""
        return [_command("todo", "done", self.todo_name)]


@dataclass(kw_only=True)
class AddToDoTask(StateTask):
    """Add the to-do item ``todo_name`` (done or not, as ``is_done`` says) to the list
    (where in it is not compared)."""

    todo_name: str
    is_done: bool | int | float | str | None = False
    """Done or not: ``true``/``false``, or as OpenApps also reads it, ``1``/``0``,
    ``"1"``/``"0"``, or ``null`` (not done)."""

    def problem(self) -> str | None:
        """An empty title, a done flag that is neither."""
        if not self.todo_name.strip():
            return "todo_name is empty"
        if not isinstance(is_done(self.is_done), bool):
            kind = "a string" if isinstance(self.is_done, str) else "a number"
            return (f"is_done must be true or false (or 1, 0, \"1\", \"0\", null), not {kind} "
                    f"{self.is_done!r}")
        return None

    def target(self, state: dict[str, Any]) -> dict[str, Any]:
        """The list with one more item (the app gives its id, which is not compared)."""
        result = copy.deepcopy(state)
        result.setdefault("todo", {}).setdefault("todos", []).append(
            {"done": is_done(self.is_done), "title": self.todo_name})
        return result

    def reference_solution(self) -> list[str]:
        """``todo add`` (and ``todo done`` when it is to be done)."""
        commands = [_command("todo", "add", self.todo_name)]
        if is_done(self.is_done):
            commands.append(_command("todo", "done", self.todo_name))
        return commands


@dataclass(kw_only=True)
class DeleteToDoTask(StateTask):
    """Delete the to-do item ``todo_name``."""

    todo_name: str

    def problem(self) -> str | None:
        """An empty title."""
        return None if self.todo_name.strip() else "todo_name is empty"

    def target(self, state: dict[str, Any]) -> dict[str, Any]:
        """The list without the item of exactly that title, the last if several (none: a
        target no state can reach)."""
        result = copy.deepcopy(state)
        index = last_titled(todo_items(result), "title", self.todo_name)
        if index is None:
            return unreachable(result, "todo", self.todo_name)
        del todo_items(result)[index]
        return result

    def reference_solution(self) -> list[str]:
        """``todo delete``."""
        return [_command("todo", "delete", self.todo_name)]


@dataclass(kw_only=True)
class SendMessageTask(StateTask):
    """Send ``message`` to ``to`` in the messenger (OpenApps' fields; ``recipient`` and
    ``text`` are this class's older names for them). ``expected_reply`` is recorded only:
    the simulated messenger does not reply."""

    to: str = ""
    message: str = ""
    expected_reply: str | None = None
    recipient: str = ""
    text: str = ""

    def __post_init__(self) -> None:
        self.to = self.to or self.recipient
        self.message = self.message or self.text

    def problem(self) -> str | None:
        """No recipient or no text (under either name)."""
        if not self.to.strip():
            return "SendMessageTask needs 'to' (who the message goes to)"
        if not self.message:
            return "SendMessageTask needs 'message' (the text to send)"
        return None

    def target(self, state: dict[str, Any]) -> dict[str, Any]:
        """The messenger with the message sent."""
        result = copy.deepcopy(state)
        result.setdefault("messenger", {}).setdefault("messages", []).append(
            {"text": self.message, "to": self.to})
        return result

    def reference_solution(self) -> list[str]:
        """``msg send``."""
        return [_command("msg", "send", self.to, self.message)]


@dataclass(kw_only=True)
class EditFileTask(Task):
    """A code editor file's saved contents: ``required_fragment`` (a substring) or
    ``expected_content`` (the whole file, whitespace-normalised). An unsaved edit or an
    unchanged file earns nothing; a file absent at the start counts once saved."""

    file_path: str
    required_fragment: str | None = None
    expected_content: str | None = None

    def problem(self) -> str | None:
        """Neither or both of the two checks."""
        if (self.required_fragment is None) == (self.expected_content is None):
            return "EditFileTask takes one of required_fragment or expected_content"
        return None

    def check_if_task_is_complete(self, initial_state: dict[str, Any],
                                  current_state: dict[str, Any]) -> bool:
        """The saved file matches, and differs from what it was."""
        after = editor_file(current_state, self.file_path)
        if after is None:
            return False
        before = editor_file(initial_state, self.file_path)
        if before is not None and before == after:
            return False
        if self.expected_content is not None:
            return _squash(after) == _squash(self.expected_content)
        return self.required_fragment is not None and self.required_fragment in after

    def reference_solution(self) -> list[str]:
        """Type the text into the editor, then save."""
        if self.expected_content is not None:
            typed = _command("editor", "write", self.file_path, self.expected_content)
        else:
            typed = _command("editor", "append", self.file_path,
                             f"\n{self.required_fragment or ''}\n")
        return [typed, _command("editor", "save", self.file_path)]


@dataclass(kw_only=True)
class AbstentionTask(Task):
    """Act, ask (``send_msg_to_user``) or say it cannot be done (``report_infeasible``).

    ``expected_outcome`` is ``act`` (then ``action_task``, a nested entry with its own
    ``_target_``, scores the act), ``clarify`` or ``stop``. The episode ends at the agent's
    first act, question or report; the reward is 1 only if that matches, and on ``clarify``
    and ``stop`` any app change (the code editor aside) counts as a wrong act.
    """

    expected_outcome: str
    action_task: Task | None = None
    message: str = "Could you tell me more about what you need?"
    """What the reference solution says when it asks or reports."""
    expects_abstention: ClassVar[bool] = True

    def problem(self) -> str | None:
        """An unknown outcome, or an act without the task that scores it."""
        if self.expected_outcome not in OUTCOMES:
            return (f"expected_outcome must be one of {', '.join(OUTCOMES)}, not "
                    f"{self.expected_outcome!r}")
        if self.expected_outcome == ACT and self.action_task is None:
            return "expected_outcome act needs an action_task (the entry that scores the act)"
        return None

    def score(self, episode: Episode) -> bool:
        """The first of act/clarify/stop matches the expected outcome (and, for act, the
        nested task holds)."""
        changed = not states_match(episode.initial, episode.final)
        if self.expected_outcome == ACT:
            return (episode.ended_by == ACT and self.action_task is not None
                    and self.action_task.score(episode))
        return episode.ended_by == self.expected_outcome and not changed

    def check_if_task_is_complete(self, initial_state: dict[str, Any],
                                  current_state: dict[str, Any]) -> bool:
        """Without how the episode ended, only an act can be checked."""
        return self.score(Episode(initial_state, current_state, ACT))

    def setup(self) -> list[str]:
        """The nested task's setup."""
        return [] if self.action_task is None else self.action_task.setup()

    def reference_solution(self) -> list[str] | None:
        """The nested task's solution, the question, or the report."""
        if self.expected_outcome == ACT:
            return None if self.action_task is None else self.action_task.reference_solution()
        verb = "SEND_MSG_TO_USER" if self.expected_outcome == CLARIFY else "REPORT_INFEASIBLE"
        return [f"{verb} {_quote(self.message)}"]


@dataclass(kw_only=True)
class CompositeTask(Task):
    """Every subtask must hold. State subtasks' targets are chained into one target (so two
    changes to one app do not fail each other); other subtasks are checked on their own.
    ``goal`` may be left out (the subtasks' goals joined)."""

    subtasks: list[Task]
    normalize_ids: bool = False

    def __post_init__(self) -> None:
        if not self.goal:
            self.goal = " Then ".join(t.goal for t in self.subtasks if t.goal)

    def problem(self) -> str | None:
        """No subtask."""
        return None if self.subtasks else "a CompositeTask needs at least one subtask"

    def check_if_task_is_complete(self, initial_state: dict[str, Any],
                                  current_state: dict[str, Any]) -> bool:
        """The chained target holds, and every other subtask does."""
        state_tasks = [t for t in self.subtasks if isinstance(t, StateTask)]
        target = copy.deepcopy(initial_state)
        for task in state_tasks:
            target = task.target(target)
        normalize = self.normalize_ids or any(t.normalize_ids for t in state_tasks)
        # one comparison at the default tolerance, as OpenApps compares a composite's target
        if state_tasks and not states_match(target, current_state, normalize_ids=normalize):
            return False
        return all(t.check_if_task_is_complete(initial_state, current_state)
                   for t in self.subtasks if not isinstance(t, StateTask))

    def setup(self) -> list[str]:
        """The subtasks' setups, one after the other."""
        return [command for task in self.subtasks for command in task.setup()]

    def reference_solution(self) -> list[str] | None:
        """The subtasks' solutions, one after the other."""
        commands: list[str] = []
        for task in self.subtasks:
            solution = task.reference_solution()
            if solution is None:
                return None
            commands.extend(solution)
        return commands


def todo_items(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The to-do list's items in a state (made there when absent)."""
    items: list[dict[str, Any]] = state.setdefault("todo", {}).setdefault("todos", [])
    return items


def last_titled(entries: list[Any], key: str, wanted: str) -> int | None:
    """The index of the last entry whose ``key`` is exactly ``wanted`` (``None``: none), as
    OpenApps' classes find the item a task names."""
    found = [i for i, e in enumerate(entries) if isinstance(e, dict) and e.get(key) == wanted]
    return found[-1] if found else None


def editor_file(state: dict[str, Any], path: str) -> str | None:
    """A code editor file's saved contents in a state (``None``: not in the tree)."""
    wanted = path.replace("\\", "/").strip()
    for item in (state.get("codeeditor") or {}).get("files") or []:
        if isinstance(item, dict) and item.get("path") == wanted:
            return str(item.get("content", ""))
    return None


def state_diff(before: Any, after: Any, path: str = "") -> list[dict[str, Any]]:
    """Where two snapshots differ: ``[{"path", "before", "after"}]``, leaves only.

    A dozen lines of our own: the records need the changed paths of two small JSON documents,
    not a diff library's report format.
    """
    if isinstance(before, dict) and isinstance(after, dict):
        changes: list[dict[str, Any]] = []
        for key in sorted(set(before) | set(after), key=str):
            changes += state_diff(before.get(key), after.get(key), f"{path}/{key}")
        return changes
    if isinstance(before, list) and isinstance(after, list):
        changes = []
        for index in range(max(len(before), len(after))):  # an item added or gone: None
            old = before[index] if index < len(before) else None
            new = after[index] if index < len(after) else None
            changes += state_diff(old, new, f"{path}/{index}")
        return changes
    return [] if before == after else [{"path": path or "/", "before": before, "after": after}]


def unreachable(state: dict[str, Any], app: str, missing: str) -> dict[str, Any]:
    """Mark a target no state can reach (the task names an item the app does not hold): a
    key no app document has, naming the item for whoever reads the target."""
    document = state.setdefault(app, {})
    if isinstance(document, dict):
        document["missing"] = missing
    return state


def _squash(text: str) -> str:
    return " ".join(text.split())


def _command(*words: str) -> str:
    """A command-language line, each argument quoted (the language has no escapes: a word is
    quoted with the quote it does not hold; newlines stand inside quotes as they are)."""
    return " ".join([words[0], words[1], *(_quote(w) for w in words[2:])])


def _quote(word: str) -> str:
    return f"'{word}'" if '"' in word else f'"{word}"'

