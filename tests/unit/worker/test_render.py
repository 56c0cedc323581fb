"""The screenshot and accessibility tree of the simulated desktop."""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from PIL import Image

from infra.local import render
from infra.local.actions import run_action
from infra.local.commands import run
from infra.local.desktop import Desktop
from infra.local.render import Screen, accessibility_xml, draw
from tests.support.controls import find_control


def test_screen_is_cached_until_the_desktop_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the clock on the screen changes each minute: held still, or a minute that turns between
    # two screenshots makes a new one
    monkeypatch.setattr(render, "_now", lambda: dt.datetime(2026, 1, 1, 9, 30, tzinfo=dt.UTC))
    desktop = Desktop(tmp_path / "root")
    screen = Screen(desktop)
    first = screen.png()
    assert screen.png() is first
    run(desktop, "open settings")
    second = screen.png()
    assert second != first
    with Image.open(io.BytesIO(second)) as image:
        assert image.format == "PNG"


@pytest.mark.parametrize(("setup", "target", "typed"), [
    ("open notepad", None, "pyautogui.typewrite('hello')"),
    ("open notepad", None, "computer.keyboard.write('hello')"),
    ("goto todo", "Title", "pyautogui.write('Buy milk')"),
    ("goto codeeditor", "script.py", "pyautogui.typewrite('x = 1')"),
])
def test_the_next_screenshot_shows_what_was_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setup: str, target: str | None,
    typed: str
) -> None:
    """Typed characters change the desktop as a click does: the cached screenshot is
    redrawn (within the same minute)."""
    monkeypatch.setattr(render, "_now", lambda: dt.datetime(2026, 1, 1, 9, 30, tzinfo=dt.UTC))
    desktop = Desktop(tmp_path / "root")
    assert run(desktop, setup).returncode == 0
    if target is not None:  # click the field (or the file, which opens it) to type there
        found = find_control(desktop, target)
        assert found is not None
        clicked = run_action(desktop, "import pyautogui\npyautogui.click({}, {})".format(
            *found.center))
        assert clicked.returncode == 0, clicked.error
    screen = Screen(desktop)
    before = screen.png()
    result = run_action(desktop, f"import pyautogui\n{typed}")
    assert result.returncode == 0, result.error
    assert screen.png() != before


def test_padding_keeps_a_valid_png(tmp_path: Path) -> None:
    desktop = Desktop(tmp_path / "root")
    plain = Screen(desktop).png()
    padded = Screen(desktop, min_bytes=len(plain) + 50_000).png()
    assert len(padded) >= len(plain) + 50_000
    with Image.open(io.BytesIO(padded)) as image:
        image.load()
        assert image.tobytes() == Image.open(io.BytesIO(plain)).tobytes()


def test_picture_shows_windows(tmp_path: Path) -> None:
    desktop = Desktop(tmp_path / "root")
    empty = draw(desktop, dt.datetime(2026, 1, 1, tzinfo=dt.UTC)).tobytes()
    run(desktop, "open notepad")
    run(desktop, 'type "text"')
    busy = draw(desktop, dt.datetime(2026, 1, 1, tzinfo=dt.UTC)).tobytes()
    assert empty != busy


def test_accessibility_tree(tmp_path: Path) -> None:
    desktop = Desktop(tmp_path / "root")
    run(desktop, "open clock")
    run(desktop, 'timer add 5m "tea"')
    run(desktop, "open notepad")
    run(desktop, 'type "<b>&"')
    root = ET.fromstring(accessibility_xml(desktop, "win32"))
    assert root.get("backend") == "win32"
    windows = root.findall("Window")
    assert [w.get("name") for w in windows] == ["Clock", "Untitled - Notepad"]
    assert windows[1].get("active") == "true"
    assert windows[1].find("Document").get("value") == "<b>&"  # type: ignore[union-attr]
    assert any("tea" in (t.get("name") or "") for t in windows[0].iter("ListItem"))
