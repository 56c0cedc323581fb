"""The progress lines a run prints say what they count."""

from __future__ import annotations

from evals.report.progress import event_line
from evals.results.events import EventKind, RunEvent, Snapshot


def test_the_start_line_counts_attempts_not_tasks() -> None:
    # 24 tasks with --trials 3: the queue holds 72 attempts
    snapshot = Snapshot(total=72, done=6, successes=6, failures=0, errors=0, not_run=0,
                        running={}, quarantined=[], elapsed_s=0.0, done_this_session=0)
    line = event_line(RunEvent(EventKind.STARTED, snapshot))
    assert line == "run started: 72 attempt(s), 6 already done"
