"""The OpenApps window: the calendar, the map, the to-do list, the messenger and the code editor
drawn and listed in the accessibility tree, their forms, check boxes and Delete buttons played as
an agent's clicks and keys, acting by the rules of the ``calendar``, ``map``, ``todo``, ``msg``,
``editor`` and ``goto`` verbs (same state, same refusals), and the seed back on every reset."""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from infra.local import gui
from infra.local.actions import run_action
from infra.local.commands import run
from infra.local.desktop import Desktop
from infra.local.render import accessibility_xml, draw
from tests.support.controls import find_control
from tests.support.screen_text import shows_text

WHEN = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
EVENT_FIELDS = {"Title": "Dinner with Ada", "Date": "2026-05-01", "Location": "Paris",
                "Description": "Bring the notes", "URL": "https://example.org/ada",
                "Invitees": "Bob, Ada"}
EVENT_VERB = ('calendar add "Dinner with Ada" 2026-05-01 location=Paris '
              '"description=Bring the notes" url=https://example.org/ada "invitees=Bob, Ada"')


def control(desktop: Desktop, name: str, role: str | None = None) -> gui.Control:
    found = find_control(desktop, name, role)
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
    assert find_control(desktop, f"Late event {gui.OPENAPPS_ROWS}", "ListItem") is None
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


def type_keys(desktop: Desktop, *lines: str) -> None:
    result = run_action(desktop, "\n".join(("import pyautogui", *lines)))
    assert result.returncode == 0, result.error


def test_the_todo_list_messenger_and_code_editor_are_drawn_with_their_entries(
        desktop: Desktop) -> None:
    assert ok(desktop, "goto todo") == "/todo"
    assert [(c.role, c.name, c.value) for c in row_of(desktop, "Water plants")] == [
        ("CheckBox", "Done Water plants", "Off"), ("ListItem", "Water plants", ""),
        ("Button", "Delete Water plants", "")]
    assert control(desktop, "Done Call Aunt Lisa", "CheckBox").value == "On"  # seeded done
    assert control(desktop, "Title", "Edit").value == ""
    assert control(desktop, "Add", "Button")
    todo = draw(desktop, WHEN)
    ok(desktop, 'todo done "Water plants"')
    ticked = draw(desktop, WHEN)
    box = control(desktop, "Done Water plants", "CheckBox").rect
    assert ticked.crop(box).tobytes() != todo.crop(box).tobytes()  # the tick is drawn
    ok(desktop, "goto messages")
    assert control(desktop, "No messages yet.", "Text")
    ok(desktop, 'msg send Bob "Let\'s meet"')
    assert [(c.role, c.name) for c in row_of(desktop, "Let's meet")] == [
        ("Text", "to Bob"), ("ListItem", "Let's meet")]
    assert {control(desktop, name, "Edit").value for name in ("To", "Message")} == {""}
    ok(desktop, "goto codeeditor")
    script = control(desktop, "script.py", "ListItem")
    assert script.key and not script.selected
    assert control(desktop, "Text", "Edit").value == ""  # no file open yet
    assert control(desktop, "Save", "Button")
    tree = ET.fromstring(accessibility_xml(desktop))
    window = next(w for w in tree.iter("Window") if w.get("class") == "openapps")
    assert {e.get("name") for e in window.iter("Edit")} == {"File", "Text"}
    assert [i.get("name") for i in window.iter("ListItem")] == ["script.py"]
    ok(desktop, "goto todo")
    tree = ET.fromstring(accessibility_xml(desktop))
    boxes = {b.get("name"): b.get("value") for b in tree.iter("CheckBox")}
    assert boxes["Done Water plants"] == "On" and boxes["Done Buy groceries"] == "Off"
    assert len(boxes) == 14


def test_clicks_and_keys_on_the_other_apps_leave_the_state_the_verbs_leave(
        tmp_path: Path) -> None:
    by_hand, by_verb = Desktop(tmp_path / "a"), Desktop(tmp_path / "b")
    fresh = by_hand.app_state()
    ok(by_hand, "open openapps")

    def same(*commands: str) -> None:
        for command in commands:
            ok(by_verb, command)
        assert by_hand.app_state() == by_verb.app_state()

    click(by_hand, "OpenTodos", "Button")
    fill(by_hand, {"Title": "Buy milk"})  # tab leaves the field: nothing is added
    same("goto todo")
    click(by_hand, "Title", "Edit")
    type_keys(by_hand, "pyautogui.typewrite('Buy milk\\n')")  # Enter submits the form
    assert control(by_hand, "Title", "Edit").value == ""  # a form done with is emptied
    click(by_hand, "Done Water plants")
    click(by_hand, "Done Call Aunt Lisa")  # ticked in the seed: the click clears it
    click(by_hand, "Delete Buy groceries")
    same('todo add "Buy milk"', 'todo done "Water plants"', 'todo undone "Call Aunt Lisa"',
         'todo delete "Buy groceries"')

    click(by_hand, "OpenMessages", "Button")
    fill(by_hand, {"To": "Bob", "Message": "See you at 6"})
    click(by_hand, "Send")
    assert control(by_hand, "See you at 6", "ListItem")
    same("goto messages", 'msg send Bob "See you at 6"')

    click(by_hand, "OpenCodeEditor", "Button")
    click(by_hand, "script.py", "ListItem")  # opens it: its text in the text area
    assert control(by_hand, "File", "Edit").value == "script.py"
    assert control(by_hand, "Text", "Edit").value == ok(by_verb, "editor read script.py")
    click(by_hand, "Text", "Edit")  # the caret goes to the end; Enter and Tab type there
    type_keys(by_hand, "pyautogui.typewrite('# done\\n')", "pyautogui.press('tab')",
              "pyautogui.typewrite('x')")
    same("goto codeeditor", 'editor append script.py "# done\n    x"')  # typed, not saved
    assert by_hand.app_state()["codeeditor"]["files"][0]["unsaved"] is True
    click(by_hand, "File", "Edit")  # tab into the text area: the caret at the end again
    type_keys(by_hand, "pyautogui.press('tab')", "pyautogui.typewrite('y')")
    same('editor append script.py "y"')
    click(by_hand, "Save")
    same("editor save script.py")
    click(by_hand, "File", "Edit")  # a new name, a new text, Save: a new file
    type_keys(by_hand, "pyautogui.typewrite('notes.md')")
    click(by_hand, "Text", "Edit")
    type_keys(by_hand, "pyautogui.hotkey('ctrl', 'a')", "pyautogui.typewrite('# Notes')")
    same('editor write notes.md "# Notes"')  # typed and never saved: not in the tree yet
    assert control(by_hand, "notes.md", "ListItem").selected  # listed, as an editor's tab is
    click(by_hand, "Save")
    same("editor save notes.md")
    assert [f["path"] for f in by_hand.app_state()["codeeditor"]["files"]] == [
        "notes.md", "script.py"]
    assert by_hand.app_state() != fresh
    for desktop in (by_hand, by_verb):  # every reset brings the seed back
        desktop.close_all()
        desktop.clear_task_files()
        assert desktop.app_state() == fresh


@pytest.mark.parametrize(("page", "fields", "verb"), [
    ("OpenTodos", {"Title": "   "}, 'todo add "   "'),
    ("OpenMessages", {"To": " ", "Message": "hello"}, 'msg send " " hello'),
    ("OpenCodeEditor", {"File": "../outside.py", "Text": "x = 1"},
     'editor write ../outside.py "x = 1"'),
    ("OpenCodeEditor", {"File": "", "Text": "x = 1"}, 'editor write "" "x = 1"'),
])
def test_the_other_apps_forms_refuse_on_screen_what_the_verbs_refuse(
        desktop: Desktop, page: str, fields: dict[str, str], verb: str) -> None:
    refused = run(desktop, verb)
    assert refused.returncode == 1 and refused.error
    before = desktop.app_state()
    ok(desktop, "open openapps")
    click(desktop, page, "Button")
    for name, value in fields.items():  # the text area takes Tab as an indent: click each
        click(desktop, name, "Edit")
        type_keys(desktop, f"pyautogui.typewrite({value!r})")
    submit = {"OpenTodos": "Add", "OpenMessages": "Send", "OpenCodeEditor": "Save"}[page]
    click(desktop, submit, "Button")
    assert control(desktop, "Error", "Text").value == refused.error
    after = desktop.app_state()
    assert {k: v for k, v in after.items() if k != "_url"} == {
        k: v for k, v in before.items() if k != "_url"}
    assert {name: control(desktop, name, "Edit").value for name in fields} == fields


def test_the_todo_list_scrolls_and_a_long_file_shows_its_end_while_it_is_typed_in(
        desktop: Desktop) -> None:
    for number in range(1, gui.OPENAPPS_ROWS + 1):  # the seed's 14 items and these: too many
        ok(desktop, f'todo add "Late item {number}"')
    ok(desktop, "goto todo")
    last = f"Late item {gui.OPENAPPS_ROWS}"
    assert find_control(desktop, last, "ListItem") is None
    x, y = control(desktop, "Water plants", "ListItem").center
    type_keys(desktop, f"pyautogui.scroll(-10, {x}, {y})")
    click(desktop, f"Done {last}")
    assert ok(desktop, "todo list").splitlines()[-1] == f"[x] {last}"
    text = "\n".join(f"line {n}" for n in range(1, 61))
    ok(desktop, f'editor write long.py "{text}"')
    ok(desktop, "goto codeeditor")
    click(desktop, "long.py", "ListItem")
    area = control(desktop, "Text", "Edit")
    assert area.focused and area.value == text
    inside = (area.rect[0] + 2, area.rect[1] + 2, area.rect[2] - 2, area.rect[3] - 2)
    assert shows_text(png(desktop), "line 60", inside)  # the caret's line, at the end
    type_keys(desktop, "pyautogui.press('esc')")  # the caret leaves: the top shows
    assert not shows_text(png(desktop), "line 60", inside)
    assert shows_text(png(desktop), "line 1", inside)


def png(desktop: Desktop) -> bytes:
    buffer = io.BytesIO()
    draw(desktop, WHEN).save(buffer, format="PNG")
    return buffer.getvalue()
