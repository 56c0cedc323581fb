"""Run events are typed: every kind the dispatcher emits is an EventKind, and the displays
decide by kind."""

from __future__ import annotations

import ast
import io
from pathlib import Path

import pytest

import evals.run.dispatcher
from evals.report.progress import LiveDisplay, PlainLines, event_line
from evals.results.events import NOTICES, EventKind, RunEvent, Snapshot, kind_of


def _snapshot() -> Snapshot:
    return Snapshot(total=3, done=1, successes=1, failures=0, errors=0, not_run=0,
                    running={"w0": "t2", "w1": None}, quarantined=[], elapsed_s=5.0,
                    done_this_session=1)


def _emitted_kinds() -> set[str]:
    """The first argument of every ``self._emit(...)`` in the dispatcher's source."""
    tree = ast.parse(Path(evals.run.dispatcher.__file__).read_text(encoding="utf-8"))
    kinds = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "_emit"):
            first = node.args[0]
            # a member of the enum, never a string spelled again
            assert (isinstance(first, ast.Attribute) and isinstance(first.value, ast.Name)
                    and first.value.id == "EventKind"), ast.unparse(node)
            kinds.add(EventKind[first.attr].value)
    return kinds


def test_every_kind_the_dispatcher_emits_is_an_event_kind() -> None:
    emitted = _emitted_kinds()
    assert len(emitted) >= 8
    assert emitted <= {k.value for k in EventKind}, emitted - {k.value for k in EventKind}


@pytest.mark.parametrize("kind", list(EventKind))
def test_each_kind_has_a_line_or_is_shown_only_in_the_table(kind: EventKind) -> None:
    event = RunEvent(kind.value, _snapshot(), task_id="t1", worker="w0", status="failure",
                     detail="why")
    assert kind_of(event) is kind
    line = event_line(event)
    if kind in (EventKind.TASK_STARTED, EventKind.WORKER_DRAINING):
        assert line is None
    else:
        assert line and ("why" in line or kind in (EventKind.STARTED, EventKind.FINISHED))


def test_an_unknown_kind_shows_nothing_anywhere() -> None:
    event = RunEvent("comet_sighted", _snapshot())
    assert kind_of(event) is None and event_line(event) is None
    out = io.StringIO()
    PlainLines(out)(event)
    assert out.getvalue() == ""


def test_the_live_display_prints_notices_above_itself() -> None:
    out = io.StringIO()
    show = LiveDisplay(out)
    for kind in NOTICES:
        show(RunEvent(kind.value, _snapshot(), task_id="t1", worker="w0", detail=f"n-{kind}"))
    show(RunEvent(EventKind.TASK_FINISHED.value, _snapshot(), task_id="t1", status="success"))
    show.close()
    text = out.getvalue()
    assert all(f"n-{kind}" in text for kind in NOTICES)
    assert "success t1" not in text  # a success is counted in the totals, not printed
