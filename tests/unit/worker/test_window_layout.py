"""No two controls of a window overlap, on every app's window and every OpenApps page, with a
form's refusal shown and a file open: an agent clicks a control's centre, and a label drawn
over a button hides it on the screenshot and sends the click to the wrong one."""

from __future__ import annotations

import itertools

import pytest

from infra.local import gui
from infra.local.commands import run
from infra.local.desktop import Desktop

SCREENS = {
    "notepad": ["open notepad"],
    "explorer": ["open explorer"],
    "settings": ["open settings"],
    "clock": ["open clock"],
    "calc": ["open calc"],
    "start page": ["goto start_page"],
    "to-do list": ["goto todo"],
    "calendar": ["goto calendar"],
    "messenger": ["msg send Bob \"see you at noon\"", "goto messages"],
    "map": ["goto map"],
    "code editor": ["editor write notes.txt \"a line\"", "goto codeeditor"],
}


def _overlapping(controls: list[gui.Control]) -> list[str]:
    found = []
    for a, b in itertools.combinations(controls, 2):
        if (max(a.rect[0], b.rect[0]) < min(a.rect[2], b.rect[2])
                and max(a.rect[1], b.rect[1]) < min(a.rect[3], b.rect[3])):
            found.append(f"{a.role} {a.name!r} {a.rect} ~ {b.role} {b.name!r} {b.rect}")
    return found


@pytest.mark.parametrize("screen", sorted(SCREENS))
def test_no_two_controls_of_a_window_overlap(screen: str, desktop: Desktop) -> None:
    for command in SCREENS[screen]:
        result = run(desktop, command)
        assert result.returncode == 0, (command, result.error)
    front = gui.layout(desktop)[-1]
    assert _overlapping(front.controls) == []


@pytest.mark.parametrize("page", ["calendar", "map", "todo", "messages"])
def test_a_refused_forms_message_overlaps_nothing(page: str, desktop: Desktop) -> None:
    from infra.local import launcher

    assert run(desktop, f"goto {page}").returncode == 0
    window = gui.layout(desktop)[-1].window
    with desktop.lock:
        launcher.submit(desktop, window)  # every field empty: refused, the reason on the page
    front = gui.layout(desktop)[-1]
    assert any(c.name == "Error" for c in front.controls), "the empty form was not refused"
    assert _overlapping(front.controls) == []
