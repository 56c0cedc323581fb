"""The kinds of a run's events (:class:`evals.dispatcher.RunEvent`), as one enum.

The dispatcher names each event by its kind's value; :func:`kind_of` reads it back as an
:class:`EventKind` (a ``str`` enum, so it also equals the plain name), and the displays
(:mod:`evals.progress`) decide by kind, never by a string spelled again.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol


class HasKind(Protocol):
    """What :func:`kind_of` reads of an event (:class:`evals.dispatcher.RunEvent`): its kind.

    A protocol rather than the dispatcher's class, so that the dispatcher, which emits these
    kinds, and this module do not import each other."""

    @property
    def kind(self) -> str:
        """The event's kind as emitted (an :class:`EventKind` value, or a newer one)."""
        ...


class EventKind(StrEnum):
    """What happened in a run."""

    STARTED = "started"
    TASK_STARTED = "task_started"
    TASK_FINISHED = "task_finished"
    TASK_RETRY = "task_retry"
    """An attempt failed for a reason not the agent's; the task goes back to the queue."""
    WORKER_QUARANTINED = "worker_quarantined"
    HOST_QUARANTINED = "host_quarantined"
    """Every worker of a shared host stopped answering: the host is out of the run (the event's
    ``worker`` names the host)."""
    WORKER_REPAIRED = "worker_repaired"
    WORKER_DRAINING = "worker_draining"
    """The worker's host is under notice (spot reclaim, scheduled event): it takes no task."""
    BUDGET_STOP = "budget_stop"
    FINISHED = "finished"


NOTICES = frozenset({
    EventKind.TASK_RETRY, EventKind.WORKER_QUARANTINED, EventKind.HOST_QUARANTINED,
    EventKind.WORKER_REPAIRED, EventKind.BUDGET_STOP,
})
"""Kinds a live display also prints above itself, so they stay in the scrollback."""


def kind_of(event: HasKind) -> EventKind | None:
    """The event's kind; ``None`` for a kind this version does not know (shown as nothing)."""
    try:
        return EventKind(event.kind)
    except ValueError:
        return None
