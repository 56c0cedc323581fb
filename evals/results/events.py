"""A run's events (:class:`RunEvent`, with the :class:`Snapshot` a progress display shows) and
their kinds, as one enum.

The dispatcher names each event by its kind's value; :func:`kind_of` reads it back as an
:class:`EventKind` (a ``str`` enum, so it also equals the plain name), and the displays
(:mod:`evals.report.progress`) decide by kind, never by a string spelled again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum


class EventKind(StrEnum):
    """What happened in a run."""

    STARTED = "started"
    TASK_STARTED = "task_started"
    TASK_FINISHED = "task_finished"
    TASK_RETRY = "task_retry"
    """An attempt failed for a reason not the agent's; the task goes back to the queue."""
    TASK_GIVEN_BACK = "task_given_back"
    """An attempt the SSH path's outage cut: back to the queue uncounted, no one blamed."""
    WORKER_QUARANTINED = "worker_quarantined"
    HOST_QUARANTINED = "host_quarantined"
    """Every worker of a shared host stopped answering: the host is out of the run (the event's
    ``worker`` names the host)."""
    WORKER_REPAIRED = "worker_repaired"
    WORKER_DRAINING = "worker_draining"
    """The worker's host is under notice (spot reclaim, scheduled event): it takes no task."""
    PATH_DOWN = "path_down"
    """The SSH server in front of some workers stopped answering (the event's ``worker`` names
    the endpoint): its workers wait for it, blamed for nothing (:mod:`evals.run.paths`)."""
    PATH_BACK = "path_back"
    """The SSH endpoint that was down answers again: its workers go on."""
    BUDGET_STOP = "budget_stop"
    FINISHED = "finished"


NOTICES = frozenset({
    EventKind.TASK_RETRY, EventKind.TASK_GIVEN_BACK, EventKind.WORKER_QUARANTINED,
    EventKind.HOST_QUARANTINED, EventKind.WORKER_REPAIRED, EventKind.BUDGET_STOP,
    EventKind.PATH_DOWN, EventKind.PATH_BACK,
})
"""Kinds a live display also prints above itself, so they stay in the scrollback."""


@dataclass(frozen=True)
class Snapshot:
    """Where a run stands (what a progress display shows)."""

    total: int
    done: int
    successes: int
    failures: int
    errors: int
    not_run: int
    running: dict[str, str | None]
    quarantined: list[str]
    """Workers that take no more tasks (quarantined alone, or with their host)."""
    elapsed_s: float
    done_this_session: int
    spent_usd: float | None = None
    """$ charged so far (finished attempts, and tasks of an earlier controller on resume)."""


@dataclass(frozen=True)
class RunEvent:
    """Something that happened in a run.

    ``kind`` is what happened: the dispatcher emits an :class:`EventKind` (a
    ``str`` enum, so it also equals its plain name: ``started``, ``task_started``, ...); it is
    typed ``str`` so a display built for an older version reads a newer kind as unknown
    (:func:`kind_of`) rather than failing.
    """

    kind: str
    snapshot: Snapshot
    task_id: str | None = None
    worker: str | None = None
    status: str | None = None
    detail: str | None = None
    rejected: int = 0
    """Actions the worker refused or failed in the finished task."""


EventSink = Callable[[RunEvent], None]


def kind_of(event: RunEvent) -> EventKind | None:
    """The event's kind; ``None`` for a kind this version does not know (shown as nothing)."""
    try:
        return EventKind(event.kind)
    except ValueError:
        return None
