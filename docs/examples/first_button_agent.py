"""A user's own agent (docs/tasks.md): clicks the first button the accessibility tree shows,
then says it is done. It knows nothing of Cua-Bench: it reads the observation every agent gets
and answers with the actions every agent sends."""

from __future__ import annotations

import re
from typing import Any

from evals.agents.base import BenchmarkAction, BenchmarkAgent

_BUTTON = re.compile(r'<Button name="[^"]*" rect="(\d+),(\d+),(\d+),(\d+)"')


class Agent(BenchmarkAgent):
    """One click on the first button, then ``DONE``."""

    def act(self, observation: Any, task: Any, history: list[BenchmarkAction]) -> BenchmarkAction:
        """The next action: a click at the button's centre, or ``DONE``."""
        found = _BUTTON.search(observation.accessibility_tree or "")
        if history or found is None:
            return BenchmarkAction(type="done")
        left, top, right, bottom = map(int, found.groups())
        return BenchmarkAction(type="click", x=(left + right) // 2, y=(top + bottom) // 2)
