"""The OpenApps window: the calendar and the map drawn and listed in the accessibility tree,
their forms and Delete buttons played as an agent's clicks and keys, acting by the rules of the
``calendar``, ``map`` and ``goto`` verbs (same state, same refusals), and the seed back on every
reset."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from infra.local import gui
from infra.local.actions import run_action
from infra.local.commands import run
from infra.local.desktop import Desktop
from infra.local.render import accessibility_xml, draw

WHEN = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
EVENT_FIELDS = {"Title": "Dinner with Ada", "Date": "2026-05-01", "Location": "Paris",
                "Description": "Bring the notes", "URL": "https://example.org/ada",
                "Invitees": "Bob, Ada"}
EVENT_VERB = ('calendar add "Dinner with Ada" 2026-05-01 location=Paris '
              '"description=Bring the notes" url=https://example.org/ada "invitees=Bob, Ada"')


def control(desktop: Desktop, name: str, role: str | None = None) -> gui.Control:
    found = gui.find_control(desktop, name, role)
    assert found is not None, f"{name} not on screen"
    return found


def click(desktop: Desktop, name: str, role: str | None = None) -> None:
    x, y = control(desktop, name, role).center
    result = run_action(desktop, f"import pyautogui\npyautogui.click({x}, {y})")
    assert result.returncode == 0, result.error


def fill(desktop: Desktop, fields: dict[str, str]) -> None:
    """Click the form's first field, then type each value and tab to the next, as a user
    fills a form."""
    click(desktop, next(iter(fields)), "Edit")
    typed = "\n".join(f"pyautogui.typewrite({value!r})\npyautogui.press('tab')"
                      for value in fields.values())
    result = run_action(desktop, f"import pyautogui\n{typed}")
    assert result.returncode == 0, result.error


def ok(desktop: Desktop, command: str) -> str:
    result = run(desktop, command)
    assert result.returncode == 0, (command, result.error)
    return result.output


def row_of(desktop: Desktop, name: str) -> list[gui.Control]:
    """The controls on the row of the list item ``name``, left to right."""
    item = control(desktop, name, "ListItem")
    top, bottom = item.rect[1], item.rect[3]
    placed = [p for p in gui.layout(desktop) if p.window.app == "openapps"][0]
    same_row = [c for c in placed.controls if top <= c.center[1] < bottom]
    return sorted(same_row, key=lambda c: c.rect[0])


def test_the_calendar_and_the_map_are_drawn_with_their_entries(desktop: Desktop) -> None:
    refused = run(desktop, "goto shop")
    assert refused.returncode == 1 and "no app 'shop'" in refused.error
    assert desktop.titles() == []  # refused before any window opens
    assert ok(desktop, "goto calendar") == "/calendar"
    otto = row_of(desktop, "Otto's Birthday")
    assert [(c.role, c.name) for c in otto] == [
        ("Text", "1990-04-02"), ("ListItem", "Otto's Birthday"), ("Text", ""),
        ("Button", "Delete Otto's Birthday")]
    wacv = row_of(desktop, "WACV 2026 Abstract Deadline")
    assert [c.name for c in wacv][2] == "Online"  # the location beside date and title
    for name in EVENT_FIELDS:
        assert control(desktop, name, "Edit").value == ""
    calendar = draw(desktop, WHEN)
    ok(desktop, "goto map")
    times = row_of(desktop, "Times Square")
    assert [(c.role, c.name) for c in times] == [
        ("ListItem", "Times Square"), ("Text", "40.758, -73.9855"),
        ("Button", "Delete Times Square")]
    assert draw(desktop, WHEN).tobytes() != calendar.tobytes()
    tree = ET.fromstring(accessibility_xml(desktop))
    window = next(w for w in tree.iter("Window") if w.get("class") == "openapps")
    assert window.get("name") == "OpenApps" and window.get("active") == "true"
    assert {i.get("name") for i in window.iter("ListItem")} == {
        "Statue of Liberty", "Central Park", "Brooklyn Bridge", "Times Square",
        "Empire State Building"}
    assert {b.get("name") for b in window.iter("Button")} >= {
        "OpenCalendar", "OpenMaps", "Return to List of Apps", "Save Place",
        "Delete Times Square"}
    assert {e.get("name") for e in window.iter("Edit")} == {"Name", "Latitude", "Longitude"}


def test_clicks_and_keys_leave_the_state_the_verbs_leave(tmp_path: Path) -> None:
    by_hand, by_verb = Desktop(tmp_path / "a"), Desktop(tmp_path / "b")
    fresh = by_hand.app_state()
    ok(by_hand, "open openapps")  # the start page: the launcher's buttons go to the apps
    click(by_hand, "OpenCalendar", "Button")
    fill(by_hand, EVENT_FIELDS)
    click(by_hand, "Add Event")
    assert control(by_hand, "Dinner with Ada", "ListItem")
    click(by_hand, "Delete Otto's Birthday")
    click(by_hand, "OpenMaps", "Button")
    fill(by_hand, {"Name": "Eiffel Tower", "Latitude": "48.8584", "Longitude": "2.2945"})
    result = run_action(by_hand, "import pyautogui\npyautogui.press('enter')")  # Enter submits
    assert result.returncode == 0, result.error
    click(by_hand, "Delete Times Square")
    for command in (EVENT_VERB, 'calendar delete "Otto\'s Birthday"', "goto map",
                    'map save "Eiffel Tower" 48.8584 2.2945', 'map delete "Times Square"'):
        ok(by_verb, command)
    assert by_hand.app_state() == by_verb.app_state()
    assert by_hand.app_state() != fresh
    assert control(by_hand, "Name", "Edit").value == ""  # a form done with is emptied
    # every reset brings the seed back, and the window closes with the others
    for desktop in (by_hand, by_verb):
        desktop.close_all()
        desktop.clear_task_files()
        assert desktop.app_state() == fresh
        assert desktop.titles() == []


@pytest.mark.parametrize(("page", "fields", "verb"), [
    ("OpenCalendar", {"Title": "Dinner", "Date": "2026-02-30"}, 'calendar add Dinner 2026-02-30'),
    ("OpenCalendar", {"Title": "Dinner", "Date": "next friday"},
     'calendar add Dinner "next friday"'),
    ("OpenCalendar", {"Title": " ", "Date": "2026-02-03"}, 'calendar add " " 2026-02-03'),
    ("OpenMaps", {"Name": "Nowhere", "Latitude": "200", "Longitude": "10"},
     "map save Nowhere 200 10"),
    ("OpenMaps", {"Name": "Nowhere", "Latitude": "10", "Longitude": "east"},
     "map save Nowhere 10 east"),
    ("OpenMaps", {"Name": "", "Latitude": "10", "Longitude": "10"}, 'map save "" 10 10'),
])
def test_a_form_refuses_on_screen_what_the_verb_refuses(
        desktop: Desktop, page: str, fields: dict[str, str], verb: str) -> None:
    refused = run(desktop, verb)
    assert refused.returncode == 1
    before = {app: desktop.app_state()[app] for app in ("calendar", "map")}
    ok(desktop, "open openapps")
    click(desktop, page, "Button")
    fill(desktop, fields)
    click(desktop, "Add Event" if page == "OpenCalendar" else "Save Place")
    assert control(desktop, "Error", "Text").value == refused.error
    assert {app: desktop.app_state()[app] for app in ("calendar", "map")} == before
    assert {name: control(desktop, name, "Edit").value for name in fields} == fields
    tree = ET.fromstring(accessibility_xml(desktop))
    assert [t.get("value") for t in tree.iter("Text") if t.get("name") == "Error"] == [
        refused.error]


def test_a_list_longer_than_the_window_scrolls(desktop: Desktop) -> None:
    for day in range(1, gui.OPENAPPS_ROWS + 1):  # the seed's 13 events and these: too many
        ok(desktop, f'calendar add "Late event {day}" 2099-01-{day:02d}')
    ok(desktop, "goto calendar")
    assert gui.find_control(desktop, f"Late event {gui.OPENAPPS_ROWS}", "ListItem") is None
    x, y = control(desktop, "Otto's Birthday", "ListItem").center
    assert run_action(desktop, f"import pyautogui\npyautogui.scroll(-10, {x}, {y})"
                      ).returncode == 0
    last = control(desktop, f"Late event {gui.OPENAPPS_ROWS}", "ListItem")
    assert last.rect[3] <= gui.OPENAPPS_RECT[3]
    click(desktop, f"Delete Late event {gui.OPENAPPS_ROWS}")
    titles = [e["title"] for e in desktop.app_state()["calendar"]["events"]]
    assert f"Late event {gui.OPENAPPS_ROWS}" not in titles
    assert f"Late event {gui.OPENAPPS_ROWS - 1}" in titles


def test_a_text_longer_than_its_control_is_cut_at_the_control_edge(desktop: Desktop) -> None:
    title = " ".join(["Very long title"] * 8)
    ok(desktop, f'calendar add "{title}" 1900-01-01 "location=Lab"')
    ok(desktop, "goto calendar")
    item = control(desktop, title, "ListItem")
    details = row_of(desktop, item.name)[2]
    button = row_of(desktop, item.name)[3]
    picture = draw(desktop, WHEN)
    background = picture.getpixel((item.rect[2] + 2, item.rect[1] - 4))
    # the gap between the title's column and the details' is bare: the title stopped at its edge
    for x in range(item.rect[2], details.rect[0]):
        for y in range(item.rect[1], item.rect[3]):
            assert picture.getpixel((x, y)) == background, (x, y)
    # so does a button's label inside the button
    for y in range(button.rect[1], button.rect[3]):
        assert picture.getpixel((button.rect[2] + 1, y)) == background
