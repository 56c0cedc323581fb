"""The ``random`` agent: solves each task with a known probability (for checking statistics).

With probability ``p`` it plays the task's reference solution (as the ``oracle`` does, so the
checker scores a success), otherwise it says ``DONE`` at once (the checker scores a failure, as
for ``noop``). Its true success rate is therefore ``p`` on the local task suite, which is what
``bench/stats_coverage.py`` checks the run statistics against.
"""

from __future__ import annotations

from evals.agents.base import BenchmarkTask
from evals.agents.oracle import OracleAgent
from evals.agents.seeding import task_draws
from evals.errors import InvalidRunInputError


class ChanceAgent(OracleAgent):
    """Solves a task with probability ``p`` (its reference solution), else gives up at once.

    The draw is made when the loop resets the agent for a task (or at the task's first step
    when a caller resets it without the task), one draw per attempt.

    Args:
        p: The probability of playing the reference solution (``--agent-arg p=0.3``).
        seed: Seeds the draws (``--agent-arg seed=7``). Each draw comes from the seed, the
            task's ID and the trial (:func:`evals.agents.seeding.task_draws`), so a seeded run
            gives every task's trial the same draw whatever the number of workers, the order
            they take tasks in, or a retry on another worker; draws of different tasks and
            trials are independent. Without a seed, each draw comes from the OS.
    """

    def __init__(self, p: float = 0.3, seed: int | None = None) -> None:
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= float(p) <= 1.0:
            raise InvalidRunInputError(
                f"the random agent's p must be a probability between 0 and 1, got {p!r}; "
                "e.g. --agent-arg p=0.3"
            )
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise InvalidRunInputError(
                f"the random agent's seed must be an integer, got {seed!r}; e.g. "
                "--agent-arg seed=7"
            )
        self.p = float(p)
        self.seed = seed
        self._solve: bool | None = None

    def reset(self, task: BenchmarkTask | None = None) -> None:
        """Draw whether this attempt plays the reference solution (at its first step when
        ``task`` is not given)."""
        self._solve = None if task is None else self._draw(task)

    def script(self, task: BenchmarkTask) -> list[str]:
        """The reference solution, or ``DONE`` (given up)."""
        if self._solve is None:
            self._solve = self._draw(task)
        return super().script(task) if self._solve else ["DONE"]

    def _draw(self, task: BenchmarkTask) -> bool:
        return task_draws(self.seed, task).random() < self.p
