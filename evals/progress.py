"""What ``openadapt-evals run`` and ``sweep`` show while a run goes, fed by the runner's events.

On a terminal (standard output and the progress stream both terminals, no ``--json``) a live
display redrawn in place with ``rich``: tasks done, successes, failures, errors and not run,
elapsed time, ETA and cost so far, then one row per worker with its state, its task and the time
it has spent on it. Failures, errors, retries, quarantines and budget stops are also printed as
lines above the display, so they stay in the terminal's scrollback. Anywhere else (a pipe, a
log, CI, ``--json``) one plain line per event, each finished task's line ending with the ETA;
``rich`` is then never imported and no terminal control code is written.

Both are :data:`evals.runner.EventSink` callables, called from the dispatcher's threads, and
write to standard error so that ``--json`` on standard output stays one clean document.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TextIO

from oa_vm.durations import format_duration

if TYPE_CHECKING:
    from evals.runner import RunEvent, Snapshot


def _eta(snapshot: Snapshot) -> str:
    remaining = snapshot.total - snapshot.done
    if remaining <= 0:
        return "0s"
    if snapshot.done_this_session == 0:
        return "?"
    seconds = snapshot.elapsed_s / snapshot.done_this_session * remaining
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def headline(snapshot: Snapshot) -> str:
    """``12/24 done: 10 success, 1 failure, 1 error, 0 not run; ETA 40s``."""
    return (
        f"{snapshot.done}/{snapshot.total} done: {snapshot.successes} success, "
        f"{snapshot.failures} failure, {snapshot.errors} error, {snapshot.not_run} not run; "
        f"ETA {_eta(snapshot)}"
    )


def event_line(event: RunEvent) -> str | None:
    """The plain line for an event, or ``None`` for events not worth a line."""
    snap = event.snapshot
    where = f" on {event.worker}" if event.worker else ""
    if event.kind == "started":
        return f"run started: {snap.total} task(s), {snap.done} already done"
    if event.kind == "task_finished":
        detail = f" ({event.detail})" if event.detail and event.status != "success" else ""
        if event.rejected:
            detail += f" [{event.rejected} action(s) rejected by the worker]"
        return f"[{snap.done}/{snap.total}] {event.status} {event.task_id}{where}{detail}"
    if event.kind == "task_retry":
        return f"retry {event.task_id}: failed{where} ({event.detail}); another worker takes it"
    if event.kind == "worker_quarantined":
        return f"worker {event.worker} quarantined: {event.detail}"
    if event.kind == "worker_repaired":
        return f"worker {event.worker} {event.detail}: back at work"
    if event.kind == "budget_stop":
        return f"budget cap reached ({event.detail}): no more tasks are started"
    if event.kind == "finished":
        return headline(snap)
    return None


REFRESHES_PER_SECOND = 2  # enough for the per-worker clocks; cheap beside a run's own work
NOTICE_KINDS = ("task_retry", "worker_quarantined", "worker_repaired", "budget_stop")


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
    if snapshot.spent_usd is None:
        return "-"
    value = snapshot.spent_usd
    return f"${value:.4f}" if 0 < value < 0.1 else f"${value:.2f}"


def totals_line(snapshot: Snapshot) -> str:
    """``12/24 done: 10 success, 1 failure, 1 error, 0 not run | elapsed 1m05s | ETA 40s |
    cost $0.0123``."""
    return (
        f"{snapshot.done}/{snapshot.total} done: {snapshot.successes} success, "
        f"{snapshot.failures} failure, {snapshot.errors} error, {snapshot.not_run} not run | "
        f"elapsed {format_duration(snapshot.elapsed_s)} | ETA {eta_text(snapshot)} | "
        f"cost {cost_text(snapshot)}"
    )


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
        if event.kind == "task_finished":
            line += f" - ETA {eta_text(event.snapshot)}"
        with self._lock:
            self.stream.write(line + "\n")
            self.stream.flush()

    def close(self) -> None:
        """Nothing to tidy up."""


class LiveDisplay:
    """The run redrawn in place on a terminal (``rich.live.Live``); see the module."""

    def __init__(self, stream: TextIO) -> None:
        from rich.console import Console
        from rich.live import Live

        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None
        self._since: dict[str, tuple[str | None, float]] = {}  # worker -> (task, monotonic)
        self._stamp = time.monotonic()
        self.console = Console(file=stream)
        self._live = Live(
            get_renderable=self._render, console=self.console,
            refresh_per_second=REFRESHES_PER_SECOND, transient=False, redirect_stdout=False,
            redirect_stderr=False,
        )
        self._live.start()

    def __call__(self, event: RunEvent) -> None:
        """Take the run's new state; notable events are also printed above the display."""
        now = time.monotonic()
        with self._lock:
            self._snapshot = event.snapshot
            self._stamp = now
            for worker, task in event.snapshot.running.items():
                if self._since.get(worker, ("\0", 0.0))[0] != task:
                    self._since[worker] = (task, now)
        line = None
        if event.kind in NOTICE_KINDS or (
            event.kind == "task_finished" and event.status not in (None, "success")
        ):
            line = event_line(event)
        if line:
            self.console.print(line, markup=False, highlight=False)
        self._live.refresh()

    def _render(self) -> Any:
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        with self._lock:
            snapshot = self._snapshot
            since = dict(self._since)
            stamp = self._stamp
        if snapshot is None:
            return Text("starting the run...")
        now = time.monotonic()
        # the snapshot's clocks move on between events
        snapshot = replace(snapshot, elapsed_s=snapshot.elapsed_s + (now - stamp))
        table = Table(box=None, pad_edge=False, show_edge=False)
        for header in ("WORKER", "STATE", "TASK", "ON IT"):
            table.add_column(header)
        for worker, task in sorted(snapshot.running.items()):
            if worker in snapshot.quarantined:
                row = ["quarantined", task or "", ""]
            elif task:
                row = ["running", task, format_duration(now - since.get(worker, (task, now))[1])]
            else:
                row = ["idle", "", ""]
            table.add_row(worker, *row)
        return Group(Text(totals_line(snapshot)), table)

    def close(self) -> None:
        """Draw the last state and leave it on screen (nothing, if the run never started: the
        error that stopped it is then the only thing printed)."""
        with self._lock:
            self._live.transient = self._snapshot is None
        self._live.refresh()
        self._live.stop()


def wants_live(stream: TextIO, *, json_out: bool = False) -> bool:
    """A live display only for a person at a terminal: not with ``--json``, not when standard
    output or ``stream`` is piped or redirected, not on a ``dumb`` terminal."""
    if json_out or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream: plain lines
        return False


def make_progress(
    stream: TextIO | None = None, *, json_out: bool = False
) -> PlainLines | LiveDisplay:
    """The event sink for a run: a live display on a terminal, plain lines otherwise."""
    out = stream or sys.stderr
    return LiveDisplay(out) if wants_live(out, json_out=json_out) else PlainLines(out)
