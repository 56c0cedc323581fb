"""The ``noop`` agent: reports done at once (a floor for every score; tests the harness)."""

from __future__ import annotations

from collections.abc import Sequence

from evals.agents.base import (
    DONE,
    BenchmarkAction,
    BenchmarkAgent,
    BenchmarkObservation,
    BenchmarkTask,
)


class NoopAgent(BenchmarkAgent):
    """Says ``DONE`` at the first step, whatever the task."""

    def act(
        self,
        observation: BenchmarkObservation,
        task: BenchmarkTask,
        history: Sequence[BenchmarkAction] | None = None,
    ) -> BenchmarkAction:
        """Always ``DONE``."""
        return BenchmarkAction(DONE)
