"""What ``openadapt-evals run`` and ``sweep`` show while a run goes, fed by the runner's events.

On a terminal (standard output and the progress stream both terminals, no ``--json``) a live
display redrawn in place with ``rich``: tasks done, successes, failures, errors and not run,
elapsed time, ETA and cost so far, then one row per worker with its state, its task and the time
it has spent on it. Failures, errors, retries, quarantines and budget stops are also printed as
lines above the display, so they stay in the terminal's scrollback. Anywhere else (a pipe, a
log, CI, ``--json``) one plain line per event, each finished task's line ending with the ETA;
``rich`` is then never imported and no terminal control code is written.

Both are :data:`evals.run.runner.EventSink` callables, called from the dispatcher's threads, and
write to standard error so that ``--json`` on standard output stays one clean document.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TextIO

from evals.results.events import NOTICES, EventKind, kind_of
from oa_vm.kit.durations import format_duration
from oa_vm.kit.live_display import LiveRegion, table_view, text_view, wants_live
from oa_vm.kit.tables import money

if TYPE_CHECKING:
    from evals.run.runner import RunEvent, Snapshot


def _eta(snapshot: Snapshot) -> str:
    """The headline's ETA (whole minutes and seconds, ``?`` before the first task ends)."""
    seconds = eta_seconds(snapshot)
    if seconds is None:
        return "?"
    if seconds <= 0:
        return "0s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _done(snapshot: Snapshot) -> str:
    """``12/24 done: 10 success, 1 failure, 1 error, 0 not run``."""
    return (f"{snapshot.done}/{snapshot.total} done: {snapshot.successes} success, "
            f"{snapshot.failures} failure, {snapshot.errors} error, {snapshot.not_run} not run")


def headline(snapshot: Snapshot) -> str:
    """``12/24 done: 10 success, 1 failure, 1 error, 0 not run; ETA 40s``."""
    return f"{_done(snapshot)}; ETA {_eta(snapshot)}"


def _where(event: RunEvent) -> str:
    return f" on {event.worker}" if event.worker else ""


def _task_finished(event: RunEvent) -> str:
    snap = event.snapshot
    detail = f" ({event.detail})" if event.detail and event.status != "success" else ""
    if event.rejected:
        detail += f" [{event.rejected} action(s) rejected by the worker]"
    return f"[{snap.done}/{snap.total}] {event.status} {event.task_id}{_where(event)}{detail}"


_LINES: dict[EventKind, Callable[[RunEvent], str]] = {
    EventKind.STARTED: lambda e: (
        # the queue counts attempts (a task's trials and goal styles each one), not tasks
        f"run started: {e.snapshot.total} attempt(s), {e.snapshot.done} already done"),
    EventKind.TASK_FINISHED: _task_finished,
    EventKind.TASK_RETRY: lambda e: (
        f"retry {e.task_id}: failed{_where(e)} ({e.detail}); another worker takes it"),
    EventKind.TASK_GIVEN_BACK: lambda e: (
        f"given back {e.task_id}{_where(e)} ({e.detail}): it runs again, uncounted"),
    EventKind.WORKER_QUARANTINED: lambda e: f"worker {e.worker} quarantined: {e.detail}",
    EventKind.HOST_QUARANTINED: lambda e: f"host {e.worker} quarantined: {e.detail}",
    EventKind.WORKER_REPAIRED: lambda e: f"worker {e.worker} {e.detail}: back at work",
    EventKind.PATH_DOWN: lambda e: f"SSH endpoint {e.worker} is down: {e.detail}",
    EventKind.PATH_BACK: lambda e: f"SSH endpoint {e.worker} is back: {e.detail}",
    EventKind.BUDGET_STOP: lambda e: (
        f"budget cap reached ({e.detail}): no more tasks are started"),
    EventKind.FINISHED: lambda e: headline(e.snapshot),
}
"""The plain line of each kind worth one (not ``task_started`` nor ``worker_draining``: the
live display shows those in its table)."""


def event_line(event: RunEvent) -> str | None:
    """The plain line for an event, or ``None`` for events not worth a line."""
    kind = kind_of(event)
    show = None if kind is None else _LINES.get(kind)
    return None if show is None else show(event)


def eta_seconds(snapshot: Snapshot) -> float | None:
    """Seconds until the last task ends at this session's pace; None before the first ends."""
    remaining = snapshot.total - snapshot.done
    if remaining <= 0:
        return 0.0
    if snapshot.done_this_session == 0:
        return None
    return snapshot.elapsed_s / snapshot.done_this_session * remaining


def eta_text(snapshot: Snapshot) -> str:
    """The ETA as a short duration (``3m05s``), ``?`` while it cannot be estimated yet."""
    seconds = eta_seconds(snapshot)
    return "?" if seconds is None else format_duration(seconds)


def cost_text(snapshot: Snapshot) -> str:
    """Cost so far, ``$0.0123`` (``-`` when the runner did not say)."""
    return money(snapshot.spent_usd)


def totals_line(snapshot: Snapshot) -> str:
    """``12/24 done: 10 success, 1 failure, 1 error, 0 not run | elapsed 1m05s | ETA 40s |
    cost $0.0123``."""
    return (f"{_done(snapshot)} | elapsed {format_duration(snapshot.elapsed_s)} | "
            f"ETA {eta_text(snapshot)} | cost {cost_text(snapshot)}")


class PlainLines:
    """One line per finished task (with the ETA), retry, quarantine, repair or budget stop."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._lock = threading.Lock()

    def __call__(self, event: RunEvent) -> None:
        """Print the event's line, if it has one."""
        line = event_line(event)
        if line is None:
            return
        if kind_of(event) is EventKind.TASK_FINISHED:
            line += f" - ETA {eta_text(event.snapshot)}"
        with self._lock:
            self.stream.write(line + "\n")
            self.stream.flush()

    def close(self) -> None:
        """Nothing to tidy up."""


class LiveDisplay:
    """The run redrawn in place on a terminal (:class:`oa_vm.kit.live_display.LiveRegion`); see the
    module."""

    def __init__(self, stream: TextIO) -> None:
        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None
        self._since: dict[str, tuple[str | None, float]] = {}  # worker -> (task, monotonic)
        self._stamp = time.monotonic()
        self._region = LiveRegion(stream, self._render)
        self.console = self._region.console

    def __call__(self, event: RunEvent) -> None:
        """Take the run's new state; notable events are also printed above the display."""
        now = time.monotonic()
        with self._lock:
            self._snapshot = event.snapshot
            self._stamp = now
            for worker, task in event.snapshot.running.items():
                if self._since.get(worker, ("\0", 0.0))[0] != task:
                    self._since[worker] = (task, now)
        kind = kind_of(event)
        line = None
        if kind in NOTICES or (
            kind is EventKind.TASK_FINISHED and event.status not in (None, "success")
        ):
            line = event_line(event)
        if line:
            self._region.print_above(line)
        self._region.refresh()

    def _render(self) -> Any:
        with self._lock:
            snapshot = self._snapshot
            since = dict(self._since)
            stamp = self._stamp
        if snapshot is None:
            return text_view("starting the run...")
        now = time.monotonic()
        # the snapshot's clocks move on between events
        snapshot = replace(snapshot, elapsed_s=snapshot.elapsed_s + (now - stamp))
        rows = []
        for worker, task in sorted(snapshot.running.items()):
            if worker in snapshot.quarantined:
                row = ["quarantined", task or "", ""]
            elif task:
                row = ["running", task, format_duration(now - since.get(worker, (task, now))[1])]
            else:
                row = ["idle", "", ""]
            rows.append([worker, *row])
        return table_view(totals_line(snapshot), ("WORKER", "STATE", "TASK", "ON IT"), rows)

    def close(self) -> None:
        """Draw the last state and leave it on screen (nothing, if the run never started: the
        error that stopped it is then the only thing printed)."""
        with self._lock:
            keep = self._snapshot is not None
        self._region.close(keep=keep)


def make_progress(
    stream: TextIO | None = None, *, json_out: bool = False
) -> PlainLines | LiveDisplay:
    """The event sink for a run: a live display on a terminal, plain lines otherwise."""
    out = stream or sys.stderr
    return LiveDisplay(out) if wants_live(out, json_out=json_out) else PlainLines(out)
