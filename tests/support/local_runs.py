"""Ten real runs of three agents on one local pool, written once for a test module.

The runs are made by the real runner (:func:`evals.run.runner.run_evaluation`) in this process, over
one local pool of real simulated worker processes: the oracle (which sees the answers), the
``noop`` baseline and :class:`LookThenStop` (an agent of the user's own, by ``module:Class``)
with different arguments; the oracle once with trials.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evals.agents import (
    AgentOptions,
    BenchmarkAction,
    BenchmarkAgent,
    BenchmarkObservation,
    BenchmarkTask,
)
from evals.run.runner import RunConfig, RunEvent, run_evaluation
from oa_vm import api
from oa_vm.model import state
from tests.support.pools import READY_S

POOL = "runs-pool"
LOOK = "tests.support.local_runs:LookThenStop"
TASKS = "2"  # the first two local tasks: enough for every column, cheap on a busy machine
RUNS: tuple[tuple[str, str, tuple[str, ...], int], ...] = (
    # name, agent, --agent-arg values, trials
    ("oracle-trials", "oracle", (), 2),
    ("oracle-b", "oracle", (), 1),
    ("noop-a", "noop", (), 1),
    ("noop-b", "noop", (), 1),
    ("noop-c", "noop", (), 1),
    ("look-1", LOOK, ("looks=1",), 1),
    ("look-2", LOOK, ("looks=2",), 1),
    ("look-3", LOOK, ("looks=3", "label=slow"), 1),
    ("look-1b", LOOK, ("looks=1", "label=again"), 1),
    ("look-0", LOOK, ("looks=0",), 1),
)


def _interrupted_at_the_end(results: Path) -> None:
    """A run whose Ctrl-C lands once its last task has ended: raised in the main thread from the
    callback of the dispatcher's last event, where a real SIGINT would land."""

    def ctrl_c_after_the_last(event: RunEvent) -> None:
        if event.kind == "finished":
            raise KeyboardInterrupt

    try:
        run_evaluation(RunConfig(pool=POOL, selection=TASKS, agent="noop", run_name="cut",
                                 results_dir=results, reset="stock"),
                       on_event=ctrl_c_after_the_last)
    except KeyboardInterrupt:
        return
    raise AssertionError("the run was not interrupted")


class LookThenStop(BenchmarkAgent):
    """Reads the accessibility tree ``looks`` times, clicking the middle of the first document
    it finds there (a ``wait`` when there is none), then says it is done.

    It never sees the answers: a stand-in for an agent of one's own that is no oracle.
    """

    def __init__(self, looks: int = 1, label: str = "") -> None:
        self.looks = looks
        self.label = label

    def act(self, observation: BenchmarkObservation, task: BenchmarkTask,
            history: Sequence[BenchmarkAction] | None = None) -> BenchmarkAction:
        tree = observation.accessibility_tree
        if len(history or ()) >= self.looks or not tree:
            return BenchmarkAction(type="done")
        found = re.search(r'<Document [^>]*rect="(\d+),(\d+),(\d+),(\d+)"', tree)
        if found is None:
            return BenchmarkAction(type="wait")
        left, top, right, bottom = (int(v) for v in found.groups())
        return BenchmarkAction(type="click", x=(left + right) // 2, y=(top + bottom) // 2)


@dataclass(frozen=True)
class LocalRuns:
    """Where the runs are, and the oa-vm home whose pool made them."""

    results: Path
    home: Path


def make_runs(root: Path) -> LocalRuns:
    """Create a two-worker local pool under ``root``, make :data:`RUNS` in ``root/results``,
    and remove the pool. ``OA_VM_HOME`` must point at ``root/home`` (the caller sets it)."""
    results = root / "results"
    api.create_pool(name=POOL, cloud="local", workers=2, ttl_hours=1.0)
    try:
        api.wait_pool(POOL, timeout_s=READY_S)
        for name, agent, args, trials in RUNS:
            run_evaluation(RunConfig(
                pool=POOL, selection=TASKS, agent=agent, run_name=name, results_dir=results,
                trials=trials, agent_options=AgentOptions(args=args), reset="stock",
            ))
        _interrupted_at_the_end(root / "interrupted")
    finally:
        for pool in state.list_names():
            api.cleanup_pool(pool)
    return LocalRuns(results=results, home=root / "home")
