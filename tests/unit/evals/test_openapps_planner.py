"""The calendar, map, to-do deletion, message and navigation task classes (OpenApps' own) on a
real simulated desktop, in process: each class's reward on the right change, a wrong one, the
right one with a spurious change beside it, and its tolerance's edge; the desktop's seed; and
the example suite that composes them (``defaults:`` itself: test_openapps_compose.py)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from evals.errors import InvalidRunInputError
from evals.tasks.openapps import (
    AddEventTask,
    AddToDoTask,
    CompositeTask,
    DeleteToDoTask,
    Episode,
    NavigateToAppTask,
    RemoveEventTask,
    RemoveLandmarkTask,
    SavePlaceTask,
    SendMessageTask,
    Task,
    load_selection,
)
from evals.tasks.openapps.classes import ACT
from evals.tasks.openapps.compare import KM_PER_DEGREE
from evals.tasks.openapps.planner_classes import APP_PATHS
from infra.local import planner
from infra.local.commands import run
from infra.local.desktop import Desktop

EXAMPLES = Path(__file__).resolve().parents[3] / "evals/tasks/openapps/examples"


def do(desktop: Desktop, *commands: str) -> None:
    for command in commands:
        result = run(desktop, command)
        assert result.returncode == 0, (command, result.error)


def scored(task: Task, desktop: Desktop, *commands: str) -> bool:
    """Set the task up, read the state, run the commands, score."""
    do(desktop, *task.setup())
    initial = desktop.app_state()
    do(desktop, *commands)
    return task.score(Episode(initial, desktop.app_state(), ACT))


def fresh(tmp_path: Path, name: str) -> Desktop:
    return Desktop(tmp_path / name)


EVENT = AddEventTask(goal="g", title="Einstein-Bob", date="2027-04-01",
                     description="paper reading", location="New York City",
                     invitees=["Einstein", "Bohr"])


@pytest.mark.parametrize(("commands", "passes"), [
    (EVENT.reference_solution(), True),
    # invitees are a set: typed in another order, spaced otherwise
    (['calendar add Einstein-Bob 2027-04-01 "description=paper reading" '
      '"location=New York City" "invitees=Einstein ,Bohr"'], True),
    (['calendar add Einstein-Bob 2027-04-02 "description=paper reading" '
      '"location=New York City" "invitees=Einstein, Bohr"'], False),  # wrong date
    (['calendar add Einstein-Bob 2027-04-01 "description=paper reading" '
      '"invitees=Einstein, Bohr"'], False),  # location left out
    ([*EVENT.reference_solution(), 'todo add "extra"'], False),  # a spurious change
    ([*EVENT.reference_solution(), *EVENT.reference_solution()], False),  # added twice
    ([], False),
])
def test_add_event(tmp_path: Path, commands: list[str], passes: bool) -> None:
    assert scored(EVENT, fresh(tmp_path, "d"), *commands) is passes


REMOVE = RemoveEventTask(goal="g", title="Otto's Birthday", date="1990-04-02")


@pytest.mark.parametrize(("task", "commands", "passes"), [
    (REMOVE, REMOVE.reference_solution(), True),
    (REMOVE, ['calendar delete "Zack\'s Birthday"'], False),  # the wrong event
    (REMOVE, [*REMOVE.reference_solution(), 'calendar delete "CPAL 2025 Deadline"'], False),
    (REMOVE, [], False),
    # an event the calendar does not hold: doing nothing must not pass
    (RemoveEventTask(goal="g", title="Otto's Birthday", date="1991-04-02"), [], False),
])
def test_remove_event(tmp_path: Path, task: Task, commands: list[str], passes: bool) -> None:
    assert scored(task, fresh(tmp_path, "d"), *commands) is passes


DELETE = DeleteToDoTask(goal="g", todo_name="Call Aunt Lisa")


@pytest.mark.parametrize(("task", "commands", "passes"), [
    (DELETE, DELETE.reference_solution(), True),
    (DELETE, ['todo delete "Answer emails"'], False),
    (DELETE, [*DELETE.reference_solution(), 'todo done "Water plants"'], False),
    (DELETE, [], False),
    (DeleteToDoTask(goal="g", todo_name="Feed the cat"), [], False),
])
def test_delete_todo(tmp_path: Path, task: Task, commands: list[str], passes: bool) -> None:
    assert scored(task, fresh(tmp_path, "d"), *commands) is passes


def north_of(lat: float, km: float) -> float:
    return lat + km / KM_PER_DEGREE


TOWER = SavePlaceTask(goal="g", name="Eiffel Tower", latitude=48.8584, longitude=2.2945,
                      tolerance_km=0.5)
PARIS = SavePlaceTask(goal="g", name="Paris, Île-de-France, France", latitude=48.8589,
                      longitude=2.32)


@pytest.mark.parametrize(("task", "commands", "passes"), [
    (TOWER, TOWER.reference_solution(), True),
    # both truncate to (48.8, 2.2), the tower's tenth (test_openapps_compare.py: the edge)
    (TOWER, [f'map save "eiffel tower" {north_of(48.8584, 4.5)} 2.2945'], True),  # 48.8999
    (TOWER, ['map save "Eiffel Tower" 48.9001 2.2945'], False),
    (TOWER, ['map save "Louvre" 48.8584 2.2945'], False),  # right spot, wrong place
    (TOWER, [*TOWER.reference_solution(), 'map delete "Central Park"'], False),
    (TOWER, [], False),
    # the default tolerance is 10 km; a geocoder's full name matches by its first part
    (PARIS, ['map save "Paris" 48.8 2.32'], True),  # 48.8589 and 48.8 truncate alike
    (PARIS, ['map save "Paris, France" 48.7999 2.32'], False),  # 48.7: 11.1 km south
    (PARIS, ['map save "Paris, France" 48.8589 2.2001'], True),  # 2.2: 7.3 km west of 2.3
    (PARIS, ['map save "Paris, France" 48.8589 2.1999'], False),  # 2.1: 14.6 km west
    (PARIS, PARIS.reference_solution(), True),
])
def test_save_place(tmp_path: Path, task: Task, commands: list[str], passes: bool) -> None:
    assert scored(task, fresh(tmp_path, "d"), *commands) is passes


def test_the_distance_is_east_west_shrunk_by_the_latitude(tmp_path: Path) -> None:
    # a tenth of a degree east at 48.8 is 7.3 km (inside 10 km), two tenths 14.6 km; a
    # tenth north is 11.1 km everywhere
    assert math.isclose(0.1 * KM_PER_DEGREE * math.cos(math.radians(48.8)), 7.31, abs_tol=0.01)
    assert scored(PARIS, fresh(tmp_path, "a"), 'map save "Paris" 48.8589 2.42')
    assert not scored(PARIS, fresh(tmp_path, "b"), 'map save "Paris" 48.8589 2.52')
    assert not scored(PARIS, fresh(tmp_path, "c"), 'map save "Paris" 48.9589 2.32')


LANDMARK = RemoveLandmarkTask(goal="g", name="Times Square")


@pytest.mark.parametrize(("task", "commands", "passes"), [
    (LANDMARK, LANDMARK.reference_solution(), True),
    (LANDMARK, ['map delete "Central Park"'], False),
    (LANDMARK, [*LANDMARK.reference_solution(), 'map save "Home" 40 -74'], False),
    (LANDMARK, [], False),
    (RemoveLandmarkTask(goal="g", name="Big Ben"), [], False),
])
def test_remove_landmark(tmp_path: Path, task: Task, commands: list[str], passes: bool) -> None:
    assert scored(task, fresh(tmp_path, "d"), *commands) is passes


NAVIGATE = NavigateToAppTask(goal="g", source_app="todo", target_app="map")


@pytest.mark.parametrize(("commands", "passes"), [
    (NAVIGATE.reference_solution(), True),
    (["goto start_page", "goto map"], True),
    (["goto calendar"], False),
    (["goto start_page"], False),
    ([], False),  # the episode starts in the source app
])
def test_navigate_to_app(tmp_path: Path, commands: list[str], passes: bool) -> None:
    assert scored(NAVIGATE, fresh(tmp_path, "d"), *commands) is passes


@pytest.mark.parametrize(("url", "target", "passes"), [
    ("/maps", "map", True), ("/maps/", "map", True), ("/maps/place/3", "map", True),
    ("http://apps.local:5000/maps?q=x", "map", True), ("/mapsx", "map", False),
    ("/", "start_page", True), ("http://apps.local", "start_page", True),
    ("/todo", "start_page", False), ("", "todo", False),
])
def test_navigation_reads_the_url_path(url: str, target: str, passes: bool) -> None:
    task = NavigateToAppTask(goal="g", source_app="codeeditor", target_app=target)
    assert task.check_if_task_is_complete({}, {"_url": url}) is passes


def test_the_tasks_and_the_desktop_agree_on_the_apps_paths() -> None:
    assert APP_PATHS == planner.APP_PATHS


@pytest.mark.parametrize("fields", [
    {"to": "Bob", "message": "Let's meet", "expected_reply": "Yes!"},  # OpenApps' names
    {"recipient": "Bob", "text": "Let's meet"},  # the older names
])
def test_send_message_takes_openapps_fields(tmp_path: Path, fields: dict[str, Any]) -> None:
    task = SendMessageTask(goal="g", **fields)
    assert scored(task, fresh(tmp_path, "a"), *task.reference_solution())
    assert not scored(task, fresh(tmp_path, "b"), 'msg send Bob "Let us meet"')
    assert not scored(task, fresh(tmp_path, "c"), *task.reference_solution(),
                      'msg send Alice "hi"')


def test_an_item_added_after_one_deleted_passes_in_either_order(tmp_path: Path) -> None:
    # the app numbers items on; the target cannot know the number, only that it is new
    task = CompositeTask(goal="g", subtasks=[
        DeleteToDoTask(todo_name="Read before bed"), AddToDoTask(todo_name="Buy the book")])
    assert scored(task, fresh(tmp_path, "a"), 'todo delete "Read before bed"',
                  'todo add "Buy the book"')
    assert scored(task, fresh(tmp_path, "b"), 'todo add "Buy the book"',
                  'todo delete "Read before bed"')
    assert not scored(task, fresh(tmp_path, "c"), 'todo add "Buy the book"')


def test_every_reset_brings_the_seed_back(desktop: Desktop) -> None:
    first = desktop.app_state()
    assert first["_url"] == "/"
    assert {"title": "Otto's Birthday", "date": "1990-04-02"}.items() <= \
        next(e for e in first["calendar"]["events"] if e["title"] == "Otto's Birthday").items()
    assert "Times Square" in [p["name"] for p in first["map"]["places"]]
    do(desktop, 'calendar delete "Otto\'s Birthday"', 'map delete "Times Square"',
       'todo delete "Call Aunt Lisa"', "goto map", 'calendar add "X" 2026-01-01')
    assert desktop.app_state() != first
    desktop.clear_task_files()
    assert desktop.app_state() == first


@pytest.mark.parametrize(("command", "said"), [
    ('calendar add "X" 2026-02-30', "is not a date"),
    ('calendar add "X" 2026-02-03 colour=red', "has no field 'colour'"),
    ('calendar delete "Nobody\'s Birthday"', "no event titled"),
    ('map save "X" 91 0', "outside -90..90"),
    ('map save "X" north 0', "is not a number"),
    ('map delete "Big Ben"', "no saved place"),
    ("goto shop", "no app 'shop'"),
])
def test_the_apps_refuse_bad_commands(desktop: Desktop, command: str, said: str) -> None:
    result = run(desktop, command)
    assert result.returncode == 1 and said in result.error


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_suite_example_composes_planner_tasks(tmp_path: Path) -> None:
    entries = {e.name: e for e in load_selection(f"openapps:{EXAMPLES / 'suite.yaml'}")}
    assert entries["navigate_to_the_map"].task.setup() == ["goto calendar"]
    assert entries["add_dinner_with_ada"].raw["date"] == "2026-05-14"  # an unquoted date
    classes = {type(e.task).__name__ for e in entries.values()}
    assert {"AddEventTask", "RemoveEventTask", "DeleteToDoTask", "SavePlaceTask",
            "RemoveLandmarkTask", "NavigateToAppTask", "SendMessageTask"} <= classes


@pytest.mark.parametrize(("text", "said"), [
    ("t:\n  _target_: AddEventTask\n  goal: g\n  title: x\n  date: 2026-02-30\n",
     "date must be a date written YYYY-MM-DD, not '2026-02-30'"),
    ("t:\n  _target_: AddEventTask\n  goal: g\n  title: x\n  date: 2026-02-03\n"
     "  invitees: [Ann, 'Bob, Jr']\n", "invitees: 'Bob, Jr' is not a name"),
    ("t:\n  _target_: AddEventTask\n  goal: g\n  date: 2026-02-03\n", "needs 'title'"),
    ("t:\n  _target_: RemoveEventTask\n  goal: g\n  title: x\n  date: soon\n",
     "date must be a date"),
    ("t:\n  _target_: SavePlaceTask\n  goal: g\n  name: x\n  latitude: 95\n  longitude: 0\n",
     "latitude must be within -90..90"),
    ("t:\n  _target_: SavePlaceTask\n  goal: g\n  name: x\n  latitude: 1\n  longitude: east\n",
     "longitude must be a number, not a string 'east'"),
    ("t:\n  _target_: SavePlaceTask\n  goal: g\n  name: x\n  latitude: 1\n  longitude: 2\n"
     "  tolerance_km: -1\n", "tolerance_km must be a distance"),
    ("t:\n  _target_: NavigateToAppTask\n  goal: g\n  source_app: todo\n"
     "  target_app: onlineshop\n", "target_app 'onlineshop' is not an app of the simulated"),
    ("t:\n  _target_: SendMessageTask\n  goal: g\n  message: hi\n", "needs 'to'"),
    ("t:\n  _target_: SendMessageTask\n  goal: g\n  to: Bob\n", "needs 'message'"),
    ("t:\n  _target_: RemoveLandmarkTask\n  goal: g\n  name: x\n  lat: 1\n",
     "RemoveLandmarkTask has no field 'lat'"),
    ("t:\n  _target_: open_apps.tasks.tasks.BuyWithCardTask\n  goal: g\n  sku: B06Y3VLDFB\n",
     "'open_apps.tasks.tasks.BuyWithCardTask' scores the online shop and the bank (OpenBanking)"
     ", which the simulated desktop does not have"),
])
def test_bad_planner_entries_are_refused_naming_the_field(
    tmp_path: Path, text: str, said: str
) -> None:
    with pytest.raises(InvalidRunInputError, match="openapps config") as caught:
        load_selection(f"openapps:{write(tmp_path, 'tasks', text)}")
    assert said in str(caught.value)


def test_an_entry_the_desktop_cannot_run_leaves_the_others_selectable(tmp_path: Path) -> None:
    path = write(tmp_path, "tasks", "buy:\n  _target_: open_apps.tasks.tasks.BuyWithCardTask\n"
                 "  goal: g\n" + "rm:\n  _target_: RemoveLandmarkTask\n  goal: g\n"
                 "  name: Times Square\n")
    with pytest.raises(InvalidRunInputError, match="task 'buy'"):
        load_selection(f"openapps:{path}")
    assert [e.name for e in load_selection(f"openapps:{path}#rm")] == ["rm"]
