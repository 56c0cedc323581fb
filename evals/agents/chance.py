"""The ``random`` agent: solves each task with a known probability (for checking statistics).

With probability ``p`` it plays the task's reference solution (as the ``oracle`` does, so the
checker scores a success), otherwise it says ``DONE`` at once (the checker scores a failure, as
for ``noop``). Its true success rate is therefore ``p`` on the local task suite, which is what
``bench/stats_coverage.py`` checks the run statistics against.
"""

from __future__ import annotations

import itertools
import random
import secrets

from evals.agents.base import BenchmarkTask
from evals.agents.oracle import OracleAgent
from evals.errors import InvalidRunInputError

_instances = itertools.count()


class ChanceAgent(OracleAgent):
    """Solves a task with probability ``p`` (its reference solution), else gives up at once.

    The draw is made when the loop resets the agent for a task, one draw per attempt.

    Args:
        p: The probability of playing the reference solution (``--agent-arg p=0.3``).
        seed: Seeds the draws (``--agent-arg seed=7``). Each agent instance of a run (one per
            worker) draws from its own stream (the seed and the instance's number), so the
            draws are independent; which task gets which draw depends on the order workers
            take tasks in, so only a one-worker run repeats exactly. Without a seed, the
            streams are seeded from the OS.
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
        stream = secrets.randbits(64) if seed is None else (seed, next(_instances))
        self._rng = random.Random(str(stream))
        self._solve = False

    def reset(self, task: BenchmarkTask | None = None) -> None:
        """Draw whether this attempt plays the reference solution."""
        self._solve = self._rng.random() < self.p

    def script(self, task: BenchmarkTask) -> list[str]:
        """The reference solution, or ``DONE`` (given up)."""
        return super().script(task) if self._solve else ["DONE"]
