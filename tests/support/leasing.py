"""Leasing as the dispatcher does: the cap's reservation, then the next task (peek, then lease
that task; another worker may take it in between, then peek again)."""

from __future__ import annotations

from evals.results.ledger import Ledger
from evals.run.queue import QueuedTask, TaskQueue


def lease_next(queue: TaskQueue, worker: str) -> QueuedTask | None:
    """The task :meth:`TaskQueue.peek_next` offers ``worker``, leased; ``None`` when none is
    pending (the dispatcher's path, without its budget check)."""
    while True:
        candidate = queue.peek_next(worker)
        if candidate is None:
            return None
        leased = queue.lease(candidate.task_id, worker)
        if leased is not None:
            return leased


def reserved_for(ledger: Ledger, expected_seconds: float) -> float:
    """What the cap holds for a task expected to take ``expected_seconds`` (reserved, as the
    dispatcher does before leasing, then released)."""
    before = ledger.in_flight()
    assert ledger.try_reserve("probe", expected_seconds)
    held = ledger.in_flight() - before
    ledger.settle("probe", expected_seconds=0.0, actual_seconds=0.0, final=False)
    return held
