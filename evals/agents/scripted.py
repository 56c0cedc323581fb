"""Agents that play a fixed list of actions per task (the oracle and replay agents share this)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

from evals.agents.base import (
    DONE,
    BenchmarkAction,
    BenchmarkAgent,
    BenchmarkObservation,
    BenchmarkTask,
    parse_action,
)
from evals.errors import AgentError


class ScriptedAgent(BenchmarkAgent):
    """Plays ``script(task)`` one action per step, ignoring the screen.

    Step ``n`` plays the ``n``-th action (the history's length says where it is), so one instance
    can serve any task without per-task state. A script that runs out without ``DONE``/``FAIL``
    ends with ``DONE``: the script is all the agent knows to do.
    """

    @abstractmethod
    def script(self, task: BenchmarkTask) -> list[str]:
        """The task's actions in WAA's string form."""

    def act(
        self,
        observation: BenchmarkObservation,
        task: BenchmarkTask,
        history: Sequence[BenchmarkAction] | None = None,
    ) -> BenchmarkAction:
        """The next action of the script."""
        actions = self.script(task)
        index = len(history or ())
        if index >= len(actions):
            return BenchmarkAction(DONE)
        try:
            return parse_action(actions[index])
        except ValueError as exc:
            raise AgentError(f"action {index} of task {task.task_id}: {exc}") from exc


def as_action_list(value: object) -> list[str] | None:
    """``value`` if it is a non-empty list of strings, else ``None``."""
    if isinstance(value, list) and value and all(isinstance(a, str) for a in value):
        return list(value)
    return None
