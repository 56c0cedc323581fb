"""The ``oracle`` agent: plays a local task's ``reference_solution`` (an upper bound and a check
that the harness, the worker and the checker agree)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evals.agents.base import BenchmarkTask
from evals.agents.scripted import ScriptedAgent, as_action_list
from evals.errors import AgentError, InvalidRunInputError

REFERENCE_KEY = "reference_solution"


class OracleAgent(ScriptedAgent):
    """Sends each action of the task's ``reference_solution``, one per step.

    Only the simulated worker's tasks carry a reference solution; WAA's own tasks do not, and a
    run selecting them with this agent is refused before it starts. It opts in to the task's
    answers (:attr:`~evals.agents.base.BenchmarkAgent.sees_answers`): its runs are marked as such.
    """

    sees_answers = True
    runs_module_oracle = True
    """On a Cua-Bench variant it plays the module's ``solve_task``
    (:mod:`evals.tasks.cua_bench`)."""

    def script(self, task: BenchmarkTask) -> list[str]:
        """The task's ``reference_solution``."""
        actions = as_action_list(task.raw.get(REFERENCE_KEY))
        if actions is None:
            raise AgentError(f"task {task.task_id} has no {REFERENCE_KEY}")
        return actions

    def check_tasks(self, tasks: Mapping[str, Mapping[str, Any]]) -> None:
        """Refuse tasks without a reference solution, listing them all."""
        lacking = [tid for tid, t in tasks.items()
                   if as_action_list(t.get(REFERENCE_KEY)) is None
                   and not (t.get("cua_bench") or {}).get("has_solve")]
        if lacking:
            shown = ", ".join(lacking[:20]) + (f" (and {len(lacking) - 20} more)"
                                               if len(lacking) > 20 else "")
            raise InvalidRunInputError(
                f"the oracle agent needs a {REFERENCE_KEY!r} in each task; "
                f"{len(lacking)} selected task(s) have none: {shown} "
                "(only the local task suite has them; use another agent for WAA tasks)"
            )
