"""The one live display (oa_vm.kit.live_display), used by the pool waits and the eval runs."""

from __future__ import annotations

import io
import sys

import pytest

from oa_vm.kit.live_display import LiveRegion, table_view, text_view, wants_live


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_live_only_for_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setattr(sys, "stdout", Tty())
    assert wants_live() and wants_live(Tty())
    assert not wants_live(io.StringIO())  # the display's own stream piped
    assert not wants_live(Tty(), json_out=True)
    monkeypatch.setenv("TERM", "dumb")
    assert not wants_live(Tty())
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert not wants_live() and not wants_live(Tty())


def test_region_prints_lines_above_and_keeps_the_last_state() -> None:
    out = io.StringIO()
    state = {"n": 0}
    region = LiveRegion(out, lambda: table_view(f"done {state['n']}", ("A", "B"),
                                                [["x", str(state["n"])]]))
    region.print_above("a notice [not markup]")
    state["n"] = 7
    region.close(keep=True)
    text = out.getvalue()
    assert "a notice [not markup]" in text
    assert "done 7" in text and text.rstrip().splitlines()[-1].split() == ["x", "7"]


def test_region_closed_without_keeping_leaves_only_the_printed_lines() -> None:
    out = io.StringIO()
    region = LiveRegion(out, lambda: text_view("never kept"))
    region.print_above("kept line")
    region.close(keep=False)
    assert out.getvalue() == "kept line\n"  # not a terminal: no control codes either
