"""An agent that looks can act on OpenApps' apps: a real worker process, over HTTP.

The screenshot (read as pixels) holds the calendar's events, the map's places, the to-do
list's items, the messages sent and the code editor's files; the agent
finds their controls in the accessibility tree, as a model reading ``/accessibility`` would,
and clicks and types through ``/execute`` (pyautogui source, the path an agent's actions take).
OpenApps' own check (``evals.tasks.openapps``) scores what it did; the forms refuse bad input
on screen with the verbs' words; a reset brings the seed back.
"""

from __future__ import annotations

import json
from typing import Any
from xml.etree import ElementTree as ET

import pytest
import requests

from evals.tasks.openapps import AddEventTask, CompositeTask, Episode, RemoveLandmarkTask
from evals.tasks.openapps.classes import (
    ACT,
    AddToDoTask,
    DeleteToDoTask,
    EditFileTask,
    MarkToDoDoneTask,
    SendMessageTask,
)
from tests.support.screen_text import Rect, shows_text
from tests.support.worker_proc import WorkerProcess

pytestmark = pytest.mark.integration
TIMEOUT = 30


def execute(worker: WorkerProcess, command: str) -> dict[str, Any]:
    response = requests.post(f"{worker.waa_url}/execute",
                             json={"command": command, "shell": False}, timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def app_state(worker: WorkerProcess) -> dict[str, Any]:
    answer = execute(worker, "appstate")
    assert answer["returncode"] == 0, answer
    state: dict[str, Any] = json.loads(answer["output"])
    return state


def screen(worker: WorkerProcess) -> tuple[bytes, ET.Element]:
    """The screenshot and the accessibility tree."""
    png = requests.get(f"{worker.waa_url}/screenshot", timeout=TIMEOUT).content
    tree = requests.get(f"{worker.waa_url}/accessibility", timeout=TIMEOUT).json()["AT"]
    return png, ET.fromstring(tree)


def rect_of(tree: ET.Element, role: str, name: str) -> Rect:
    for node in tree.iter(role):
        if node.get("name") == name:
            left, top, right, bottom = (int(v) for v in str(node.get("rect")).split(","))
            return left, top, right, bottom
    raise AssertionError(f"no {role} {name!r} on screen")


def play(worker: WorkerProcess, *lines: str) -> None:
    answer = execute(worker, "\n".join(("import pyautogui", *lines)))
    assert answer["returncode"] == 0, answer


def click(worker: WorkerProcess, role: str, name: str) -> None:
    left, top, right, bottom = rect_of(screen(worker)[1], role, name)
    play(worker, f"pyautogui.click({(left + right) // 2}, {(top + bottom) // 2})")


def fill(worker: WorkerProcess, fields: dict[str, str]) -> None:
    """Click the first field, then type each value and tab on."""
    click(worker, "Edit", next(iter(fields)))
    play(worker, *(f"pyautogui.typewrite({v!r})\npyautogui.press('tab')"
                   for v in fields.values()))


def test_an_agent_reads_the_calendar_and_map_on_screen_and_changes_them(
        worker: WorkerProcess) -> None:
    assert execute(worker, "goto start_page")["output"] == "/"  # OpenApps' start page
    initial = app_state(worker)
    click(worker, "Button", "OpenCalendar")
    png, tree = screen(worker)
    assert shows_text(png, "Otto's Birthday", rect_of(tree, "ListItem", "Otto's Birthday"))
    fill(worker, {"Title": "Dinner with Ada", "Date": "2027-04-01", "Location": "Paris",
                  "Description": "paper reading", "URL": "", "Invitees": "Ada, Bob"})
    click(worker, "Button", "Add Event")
    png, tree = screen(worker)
    assert shows_text(png, "Dinner with Ada", rect_of(tree, "ListItem", "Dinner with Ada"))
    click(worker, "Button", "OpenMaps")
    png, tree = screen(worker)
    place = rect_of(tree, "ListItem", "Times Square")
    assert shows_text(png, "Times Square", place)
    click(worker, "Button", "Delete Times Square")
    png, tree = screen(worker)
    assert "Times Square" not in {n.get("name") for n in tree.iter("ListItem")}
    assert not shows_text(png, "Times Square", place)
    final = app_state(worker)
    added = AddEventTask(title="Dinner with Ada", date="2027-04-01", location="Paris",
                         description="paper reading", invitees=["Bob", "Ada"])
    removed = RemoveLandmarkTask(name="Times Square")
    assert CompositeTask(subtasks=[added, removed]).score(Episode(initial, final, ACT))
    # the wrong change does not pass: OpenApps' check reads what the clicks did
    assert not CompositeTask(subtasks=[added]).score(Episode(initial, final, ACT))
    # WAA's stock reset brings the seed back and closes the window
    for step in ("close_all", "clear_task_files"):
        assert requests.post(f"{worker.waa_url}/setup/{step}", json={},
                             timeout=TIMEOUT).status_code == 200
    assert app_state(worker) == initial
    assert not [w for w in screen(worker)[1].iter("Window") if w.get("class") == "openapps"]


def test_an_agent_reads_the_todo_list_messenger_and_editor_on_screen_and_changes_them(
        worker: WorkerProcess) -> None:
    execute(worker, "goto start_page")
    initial = app_state(worker)
    click(worker, "Button", "OpenTodos")
    png, tree = screen(worker)
    grandma = rect_of(tree, "ListItem", "Visit grandma")
    assert shows_text(png, "Visit grandma", grandma)
    box = rect_of(tree, "CheckBox", "Done Visit grandma")
    click(worker, "CheckBox", "Done Visit grandma")
    ticked, tree = screen(worker)
    assert [c.get("value") for c in tree.iter("CheckBox")
            if c.get("name") == "Done Visit grandma"] == ["On"]
    assert not shows_text(ticked, "Visit grandma", box)  # the box holds a tick, not text
    click(worker, "Button", "Delete Read before bed")
    click(worker, "Edit", "Title")
    play(worker, "pyautogui.typewrite('Buy the book')", "pyautogui.press('enter')")
    png, tree = screen(worker)
    assert shows_text(png, "Buy the book", rect_of(tree, "ListItem", "Buy the book"))
    assert "Read before bed" not in {n.get("name") for n in tree.iter("ListItem")}
    click(worker, "Button", "OpenMessages")
    fill(worker, {"To": "Alice", "Message": "Book club on the 5th"})
    click(worker, "Button", "Send")
    png, tree = screen(worker)
    assert shows_text(png, "Book club on the 5th",
                      rect_of(tree, "ListItem", "Book club on the 5th"))
    click(worker, "Button", "OpenCodeEditor")
    click(worker, "ListItem", "script.py")
    png, tree = screen(worker)
    left, top, right, bottom = rect_of(tree, "Edit", "Text")  # inside the box's border
    assert shows_text(png, 'print("hello")', (left + 2, top + 2, right - 2, bottom - 2))
    click(worker, "Edit", "Text")
    play(worker, "pyautogui.typewrite('# Reviewed by Bob\\n')")
    edited = EditFileTask(file_path="script.py", required_fragment="# Reviewed by Bob")
    assert not edited.score(Episode(initial, app_state(worker), ACT))  # typed, not saved
    click(worker, "Button", "Save")
    final = app_state(worker)
    done = [MarkToDoDoneTask(todo_name="Visit grandma"),
            DeleteToDoTask(todo_name="Read before bed"), AddToDoTask(todo_name="Buy the book"),
            SendMessageTask(to="Alice", message="Book club on the 5th"), edited]
    assert CompositeTask(subtasks=done).score(Episode(initial, final, ACT))
    for left_out in range(len(done)):  # each change counts: without it, no pass
        rest = [task for index, task in enumerate(done) if index != left_out]
        if not isinstance(done[left_out], EditFileTask):
            assert not CompositeTask(subtasks=rest).score(Episode(initial, final, ACT))
    for step in ("close_all", "clear_task_files"):
        assert requests.post(f"{worker.waa_url}/setup/{step}", json={},
                             timeout=TIMEOUT).status_code == 200
    assert app_state(worker) == initial


@pytest.mark.parametrize(("page", "fields", "submit", "verb"), [
    ("OpenCalendar", {"Title": "Dinner", "Date": "2027-13-01"}, "Add Event",
     "calendar add Dinner 2027-13-01"),
    ("OpenMaps", {"Name": "Nowhere", "Latitude": "200", "Longitude": "10"}, "Save Place",
     "map save Nowhere 200 10"),
    ("OpenTodos", {"Title": "  "}, "Add", 'todo add "  "'),
    ("OpenMessages", {"To": "", "Message": "hi"}, "Send", 'msg send "" hi'),
    ("OpenCodeEditor", {"File": "../up.py"}, "Save", 'editor write ../up.py ""'),
])
def test_bad_input_in_a_form_is_refused_on_screen_as_the_verb_refuses_it(
        worker: WorkerProcess, page: str, fields: dict[str, str], submit: str,
        verb: str) -> None:
    refused = execute(worker, verb)
    assert refused["returncode"] == 1 and refused["error"]
    before = app_state(worker)
    execute(worker, "goto start_page")
    click(worker, "Button", page)
    fill(worker, fields)
    click(worker, "Button", submit)
    _, tree = screen(worker)
    assert [t.get("value") for t in tree.iter("Text") if t.get("name") == "Error"] == [
        refused["error"]]
    after = app_state(worker)
    assert {k: v for k, v in after.items() if k != "_url"} == {
        k: v for k, v in before.items() if k != "_url"}
