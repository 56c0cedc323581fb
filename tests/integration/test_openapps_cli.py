"""OpenApps-style task configs end to end: the real ``openadapt-evals`` CLI, a real local pool
(its desktop starts with a to-do list holding "Water plants", a code editor holding
``script.py``, a calendar and a map), the examples of
``evals/tasks/openapps/examples/all_tasks.yaml`` (OpenApps' own documented entries among them,
as written there) and of ``suite.yaml`` (every OpenApps class of the calendar, map and
launcher, composed through ``defaults:``).

Every example scores 1 with ``--agent oracle`` and 0 with ``--agent noop``; an agent that acts
on a ``clarify`` task scores 0 and its episode ends at that act; each record and the run page
carry the class's reward and the state difference; bad configs are refused in one line with
nothing created.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cli import Result, run_cli
from tests.support.run_records import read_records as read_by_folder

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(600),
    pytest.mark.pool(name="oa", workers=2),
]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "evals" / "tasks" / "openapps" / "examples" / "all_tasks.yaml"
SUITE = EXAMPLES.with_name("suite.yaml")  # composes planner_tasks.yaml through defaults:
SUITE_TASKS = {
    "add_dinner_with_ada", "remove_otto_birthday", "delete_call_aunt_lisa", "save_eiffel_tower",
    "remove_times_square", "navigate_to_the_map", "message_bob_to_meet", "plan_the_book_club",
    "mark_visit_grandma_as_done",
}
EXAMPLE_TASKS = {
    "mark_water_plants_as_done", "add_my_special_item_to_todo",
    "edit_script_add_header_comment", "create_notes_file_in_code_editor",
    "abstention_act_mark_groceries", "abstention_clarify_paper_deadline",
    "abstention_stop_book_flight", "water_plants_and_log_it",
}
ACTOR = '''
from evals.agents.base import BenchmarkAction, BenchmarkAgent, parse_action


class Actor(BenchmarkAgent):
    """Acts at once (adds a to-do item), then would ask: the act must end the episode."""

    def act(self, observation, task, history=None):
        script = ['todo add "Paper deadline"', 'SEND_MSG_TO_USER "Which paper?"']
        index = len(history or ())
        return parse_action(script[index]) if index < len(script) else BenchmarkAction("done")
'''


def evals(*args: str, home: Path, results: Path, env: dict[str, str] | None = None) -> Result:
    """``openadapt-evals ARGS --results-dir RESULTS`` as a subprocess."""
    return run_cli("openadapt-evals", *args, "--results-dir", str(results), home=home,
                   timeout=400, env=env)


def records(run_dir: Path) -> dict[str, dict[str, Any]]:
    """The run's records by task ID."""
    return {r["task_id"]: r for r in read_by_folder(run_dir).values()}


@pytest.mark.slow  # two runs of eight tasks (test_openapps_tasks.py scores them in process)
def test_the_examples_score_one_with_the_oracle_and_zero_with_noop(
    pooled: Path, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    listed = run_cli("openadapt-evals", "tasks", f"openapps:{EXAMPLES}", "--json", home=pooled)
    assert listed.returncode == 0, listed.stderr
    assert {t["task_id"] for t in json.loads(listed.stdout)["tasks"]} == EXAMPLE_TASKS

    oracle = evals("run", "--pool", "oa", "--tasks", f"openapps:{EXAMPLES}", "--agent", "oracle",
                   "--run-name", "oracle", home=pooled, results=results)
    assert oracle.returncode == 0, oracle.stderr
    done = records(results / "oracle")
    assert set(done) == EXAMPLE_TASKS
    for tid, record in done.items():
        assert record["status"] == "success", (tid, record.get("error_message"),
                                               record.get("reason"))
        assert record["score"] == 1.0, tid
    diff = {c["path"]: c for c in done["mark_water_plants_as_done"]["state_diff"]}
    assert diff == {"/todo/todos/0/done": {"path": "/todo/todos/0/done", "before": False,
                                           "after": True}}
    assert done["abstention_clarify_paper_deadline"]["state_diff"] == []
    assert done["abstention_clarify_paper_deadline"]["steps"][-1]["action"]["type"] == \
        "send_msg_to_user"
    shown = evals("view", "oracle", home=pooled, results=results)
    assert shown.returncode == 0, shown.stderr
    page = (results / "oracle" / "view.html").read_text(encoding="utf-8")
    assert "/todo/todos/0/done" in page and "MarkToDoDoneTask: complete" in page

    noop = evals("run", "--pool", "oa", "--tasks", f"openapps:{EXAMPLES}", "--agent", "noop",
                 "--run-name", "noop", home=pooled, results=results)
    assert noop.returncode == 0, noop.stderr
    failed = records(results / "noop")
    assert set(failed) == EXAMPLE_TASKS
    for tid, record in failed.items():
        assert record["status"] == "failure", (tid, record.get("error_message"))
        assert record["score"] == 0.0 and record["state_diff"] == [], tid


def test_an_agent_that_acts_on_a_clarify_task_scores_zero(pooled: Path, tmp_path: Path) -> None:
    (tmp_path / "actor_agent.py").write_text(ACTOR, encoding="utf-8")
    results = tmp_path / "results"
    ran = evals("run", "--pool", "oa", "--tasks",
                f"openapps:{EXAMPLES}#abstention_clarify_paper_deadline",
                "--agent", "actor_agent:Actor", "--run-name", "actor", home=pooled,
                results=results, env={"PYTHONPATH": str(tmp_path)})
    assert ran.returncode == 0, ran.stderr
    record = records(results / "actor")["abstention_clarify_paper_deadline"]
    assert record["status"] == "failure" and record["score"] == 0.0
    # the act ended the episode: the question after it was never asked
    assert [s["action"]["type"] for s in record["steps"]] == ["execute"]
    assert [c["path"] for c in record["state_diff"]] == ["/todo/todos/14"]


def test_openapps_own_classes_and_a_composed_suite_score_one_and_zero(
    pooled: Path, tmp_path: Path
) -> None:
    """Every OpenApps class of the calendar, the map, the launcher, to-do deletion and
    messages, in a file composed through ``defaults:``: oracle 1, noop 0."""
    results = tmp_path / "results"
    listed = run_cli("openadapt-evals", "tasks", f"openapps:{SUITE}", "--json", home=pooled)
    assert listed.returncode == 0, listed.stderr
    assert {t["task_id"] for t in json.loads(listed.stdout)["tasks"]} == SUITE_TASKS

    oracle = evals("run", "--pool", "oa", "--tasks", f"openapps:{SUITE}", "--agent", "oracle",
                   "--run-name", "oracle", home=pooled, results=results)
    assert oracle.returncode == 0, oracle.stderr
    done = records(results / "oracle")
    assert set(done) == SUITE_TASKS
    for tid, record in done.items():
        assert (record["status"], record["score"]) == ("success", 1.0), (
            tid, record.get("error_message"), record.get("reason"))
    # the suite's own entry replaced planner_tasks.yaml's: the episode started in the calendar
    assert done["navigate_to_the_map"]["state_diff"] == [
        {"path": "/_url", "before": "/calendar", "after": "/maps"}]
    assert [c["path"] for c in done["remove_otto_birthday"]["state_diff"]][0].startswith(
        "/calendar/events/")

    noop = evals("run", "--pool", "oa", "--tasks", f"openapps:{SUITE}", "--agent", "noop",
                 "--run-name", "noop", home=pooled, results=results)
    assert noop.returncode == 0, noop.stderr
    failed = records(results / "noop")
    assert set(failed) == SUITE_TASKS
    for tid, record in failed.items():
        assert (record["status"], record["score"]) == ("failure", 0.0), (
            tid, record.get("error_message"))
        assert record["state_diff"] == [], tid


LOOSE = '''
from evals.agents.base import BenchmarkAction, BenchmarkAgent, parse_action

SCRIPTS = {
    # OpenApps' comparison: case, punctuation, spacing and order aside, the same end state
    "add_and_message": ['msg send bob "lets  meet at 5"', 'todo add "buy the BOOK!"'],
    # one word off
    "add_and_message_off": ['todo add "Buy the books"', 'msg send Bob "Let us meet at 5."'],
}


class Loose(BenchmarkAgent):
    """Types each task's script as a person might: loosely."""

    def act(self, observation, task, history=None):
        script = SCRIPTS.get(task.task_id, [])
        index = len(history or ())
        return parse_action(script[index]) if index < len(script) else BenchmarkAction("done")
'''
LOOSE_TASKS = """
add_and_message: &both
  _target_: open_apps.tasks.tasks.CompositeTask
  goal: Add 'Buy the book' to my todo list and tell Bob "Let's meet at 5."
  subtasks:
  - _target_: open_apps.tasks.tasks.SendMessageTask
    to: Bob
    message: Let's meet at 5.
  - _target_: open_apps.tasks.tasks.AddToDoTask
    todo_name: Buy the book
    is_done: 0
add_and_message_off: *both
stay_in_the_calendar:
  _target_: open_apps.tasks.tasks.NavigateToAppTask
  goal: Stay in the calendar.
  source_app: calendar
  target_app: calendar
"""


def test_an_end_state_is_scored_by_openapps_comparison(pooled: Path, tmp_path: Path) -> None:
    """Through the real CLI: texts without case, punctuation and spacing, entries in any
    order, ``is_done: 0``, a navigation within one app (which doing nothing passes, as
    OpenApps' check scores it)."""
    (tmp_path / "loose_agent.py").write_text(LOOSE, encoding="utf-8")
    (tmp_path / "loose.yaml").write_text(LOOSE_TASKS, encoding="utf-8")
    results = tmp_path / "results"
    ran = evals("run", "--pool", "oa", "--tasks", f"openapps:{tmp_path / 'loose.yaml'}",
                "--agent", "loose_agent:Loose", "--run-name", "loose", home=pooled,
                results=results, env={"PYTHONPATH": str(tmp_path)})
    assert ran.returncode == 0, ran.stderr
    scores = {tid: r["score"] for tid, r in records(results / "loose").items()}
    assert scores == {"add_and_message": 1.0, "add_and_message_off": 0.0,
                      "stay_in_the_calendar": 1.0}, scores


LOOKER = '''
from xml.etree import ElementTree as ET

from evals.agents.base import BenchmarkAction, BenchmarkAgent, parse_action


class Looker(BenchmarkAgent):
    """Acts from what the screen shows alone: the accessibility tree's buttons, clicked at
    their place (the launcher's OpenMaps, then the Delete button by the place)."""

    def act(self, observation, task, history=None):
        wanted = ["OpenMaps", "Delete Times Square"]
        step = len(history or ())
        if step == len(wanted):
            return BenchmarkAction("done")
        for node in ET.fromstring(observation.accessibility_tree).iter("Button"):
            if node.get("name") == wanted[step]:
                left, top, right, bottom = (int(v) for v in node.get("rect").split(","))
                x, y = (left + right) // 2, (top + bottom) // 2
                return parse_action(f"import pyautogui\\npyautogui.click({x}, {y})")
        return parse_action(f"REPORT_INFEASIBLE \\"no {wanted[step]} on screen\\"")
'''


def test_an_agent_that_only_looks_at_the_screen_removes_a_place(
    pooled: Path, tmp_path: Path
) -> None:
    """The episode starts on OpenApps' start page on the worker's screen: an agent reading the
    accessibility tree finds the map and the place's Delete button, and OpenApps' check
    scores what its clicks did."""
    (tmp_path / "looker_agent.py").write_text(LOOKER, encoding="utf-8")
    results = tmp_path / "results"
    ran = evals("run", "--pool", "oa", "--tasks", f"openapps:{SUITE}#remove_times_square",
                "--agent", "looker_agent:Looker", "--run-name", "looker", home=pooled,
                results=results, env={"PYTHONPATH": str(tmp_path)})
    assert ran.returncode == 0, ran.stderr
    record = records(results / "looker")["remove_times_square"]
    assert (record["status"], record["score"]) == ("success", 1.0), record.get("reason")
    assert {c["path"].split("/")[1] for c in record["state_diff"]} == {"_url", "map"}


TYPIST = '''
from xml.etree import ElementTree as ET

from evals.agents.base import BenchmarkAction, BenchmarkAgent, parse_action

SCRIPTS = {
    "mark_visit_grandma_as_done": [("Button", "OpenTodos", ""),
                                   ("CheckBox", "Done Visit grandma", "")],
    "plan_the_book_club": [
        ("Button", "OpenCalendar", ""), ("Edit", "Title", "Book club"),
        ("Edit", "Date", "2026-02-05"), ("Button", "Add Event", ""),
        ("Button", "OpenTodos", ""), ("Button", "Delete Read before bed", ""),
        ("Edit", "Title", "Buy the book\\n"), ("Button", "OpenMessages", ""),
        ("Edit", "To", "Alice"), ("Edit", "Message", "Book club on the 5th\\n")],
    "edit_script_add_header_comment": [
        ("Button", "OpenCodeEditor", ""), ("ListItem", "script.py", ""),
        ("Edit", "Text", "# Reviewed by Bob\\n"), ("Button", "Save", "")],
    "create_notes_file_in_code_editor": [
        ("Button", "OpenCodeEditor", ""), ("Edit", "File", "notes.txt"),
        ("Edit", "Text", "TODO: refactor"), ("Button", "Save", "")],
}


class Typist(BenchmarkAgent):
    """Acts from what the screen shows alone: each step finds a control in the accessibility
    tree by its role and name, clicks it at its place and types into it (Enter submits)."""

    def act(self, observation, task, history=None):
        script = SCRIPTS[task.task_id]
        step = len(history or ())
        if step == len(script):
            return BenchmarkAction("done")
        role, name, text = script[step]
        for node in ET.fromstring(observation.accessibility_tree).iter(role):
            if node.get("name") == name:
                left, top, right, bottom = (int(v) for v in node.get("rect").split(","))
                lines = ["import pyautogui",
                         f"pyautogui.click({(left + right) // 2}, {(top + bottom) // 2})"]
                if text:
                    lines.append(f"pyautogui.typewrite({text!r})")
                return parse_action("\\n".join(lines))
        return parse_action(f"REPORT_INFEASIBLE \\"no {role} {name} on screen\\"")
'''


def test_an_agent_that_only_looks_at_the_screen_does_the_todo_messenger_and_editor_tasks(
    pooled: Path, tmp_path: Path
) -> None:
    """A to-do task, a composite one (an event, a to-do item deleted and one added, a
    message) and two code editor tasks (a line added to a file, a new file) done by clicks
    and typing on what the screen shows, scored by OpenApps' checks through the real CLI."""
    (tmp_path / "typist_agent.py").write_text(TYPIST, encoding="utf-8")
    apps = {"mark_visit_grandma_as_done": {"_url", "todo"},
            "plan_the_book_club": {"_url", "calendar", "todo", "messenger"},
            "edit_script_add_header_comment": {"_url", "codeeditor"},
            "create_notes_file_in_code_editor": {"_url", "codeeditor"}}
    chosen: dict[str, Any] = {}  # the examples' entries, as written there, in one file
    for source in (SUITE.with_name("planner_tasks.yaml"), SUITE, EXAMPLES):
        entries = yaml.safe_load(source.read_text(encoding="utf-8"))
        chosen.update({name: entry for name, entry in entries.items() if name in apps})
    (tmp_path / "looks.yaml").write_text(yaml.safe_dump(chosen), encoding="utf-8")
    results = tmp_path / "results"
    ran = evals("run", "--pool", "oa", "--tasks", f"openapps:{tmp_path / 'looks.yaml'}",
                "--agent", "typist_agent:Typist", "--run-name", "typist", home=pooled,
                results=results, env={"PYTHONPATH": str(tmp_path)})
    assert ran.returncode == 0, ran.stderr
    done = records(results / "typist")
    assert set(done) == set(apps)
    for tid, record in done.items():
        assert (record["status"], record["score"]) == ("success", 1.0), (tid, record)
        assert {c["path"].split("/")[1] for c in record["state_diff"]} == apps[tid]


ASTRAY = '''
from dataclasses import dataclass

from evals.tasks.openapps import NavigateToAppTask


@dataclass(kw_only=True)
class Astray(NavigateToAppTask):
    """Starts in an app the desktop does not have: its setup is refused."""

    def setup(self):
        return ["goto shop"]
'''


def test_a_setup_the_desktop_refuses_ends_the_attempt_as_the_tasks_error(
    pooled: Path, tmp_path: Path
) -> None:
    (tmp_path / "astray_tasks.py").write_text(ASTRAY, encoding="utf-8")
    (tmp_path / "astray.yaml").write_text(
        "astray:\n  _target_: astray_tasks:Astray\n  goal: Open the map.\n"
        "  source_app: todo\n  target_app: map\n", encoding="utf-8")
    results = tmp_path / "results"
    ran = evals("run", "--pool", "oa", "--tasks", f"openapps:{tmp_path / 'astray.yaml'}",
                "--agent", "oracle", "--run-name", "astray", home=pooled, results=results,
                env={"PYTHONPATH": str(tmp_path)})
    assert ran.returncode == 4 and "1 of 1 task(s) ended in error" in ran.stderr, ran.stderr
    record = records(results / "astray")["astray"]
    assert (record["status"], record["error_type"]) == ("error", "task"), record
    assert "setting the task up (goto shop): no app 'shop'" in record["error_message"]
    assert record["steps"] == []  # the agent never started


BAD = {
    "no-target": ("t:\n  goal: g\n  todo_name: x\n", "no _target_"),
    "unknown-class": ("t:\n  _target_: open_apps.tasks.tasks.FlyToTheMoonTask\n  goal: g\n",
                      "unknown task class 'open_apps.tasks.tasks.FlyToTheMoonTask'"),
    "wrong-type": ("t:\n  _target_: AddToDoTask\n  goal: g\n  todo_name: x\n  is_done: maybe\n",
                   "is_done must be true or false (or 1, 0, \"1\", \"0\", null), "
                   "not a string 'maybe'"),
    "unknown-field": ("t:\n  _target_: MarkToDoDoneTask\n  goal: g\n  todo_name: x\n  colour: 1\n",
                      "MarkToDoDoneTask has no field 'colour'"),
    "missing-field": ("t:\n  _target_: MarkToDoDoneTask\n  goal: g\n",
                      "MarkToDoDoneTask needs 'todo_name'"),
    "bad-coordinate": ("t:\n  _target_: SavePlaceTask\n  goal: g\n  name: x\n  latitude: 95\n"
                       "  longitude: 2\n", "latitude must be within -90..90, not 95"),
    "unsimulated-app": ("t:\n  _target_: NavigateToAppTask\n  goal: g\n  source_app: todo\n"
                        "  target_app: onlineshop\n",
                        "target_app 'onlineshop' is not an app of the simulated desktop"),
    "missing-default": ("defaults:\n  - original_tasks\n  - _self_\n",
                        "defaults names 'original_tasks', but "),
    "alias-bomb": ("a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                   + "".join(f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n"
                             for p, c in zip("abcdefgh", "bcdefghi", strict=True))
                   + "t:\n  _target_: MarkToDoDoneTask\n  goal: g\n  todo_name: *i\n",
                   "expands to more than 50000 YAML nodes"),
    # composing it recursed past Python's limit: an unexpected RecursionError
    "too-deep": ("t: {_target_: MarkToDoDoneTask, goal: g, todo_name: "
                 + "[" * 2000 + "]" * 2000 + "}\n", "is nested deeper than 64 levels"),
    "deep": ("t: {_target_: MarkToDoDoneTask, goal: g, todo_name: "
             + "[" * 100 + "]" * 100 + "}\n", "is nested deeper than 64 levels"),
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_bad_configs_are_refused_in_one_line_with_nothing_created(
    kind: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    text, said = BAD[kind]
    config = tmp_path / f"{kind}.yaml"
    config.write_text(text, encoding="utf-8")
    results = tmp_path / "results"
    listed = run_cli("openadapt-evals", "tasks", f"openapps:{config}", home=home)
    line = listed.assert_one_line_error()
    assert said in line and str(config) in line, line
    ran = evals("sweep", "--cloud", "local", "--workers", "1", "--tasks", f"openapps:{config}",
                "--agent", "noop", home=home, results=results)
    assert said in ran.assert_one_line_error()
    assert not results.exists() or not any(results.iterdir())
    assert not (home / "pools").exists() or not any((home / "pools").iterdir())
