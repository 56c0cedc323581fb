"""The OpenApps-style task classes on a real simulated desktop, in process: each example's
reference solution, played through the desktop's command language, scores 1; doing nothing
scores 0; the cases each class's reward must refuse (an unsaved edit, an unchanged file, an
act on a clarify task, a spurious change beside the right one) score 0; and the loader's
refusals name the entry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evals.agents.base import REPORT_INFEASIBLE, SEND_MSG_TO_USER, parse_action
from evals.agents.builtin import parse_action_response
from evals.errors import InvalidRunInputError
from evals.tasks.openapps import Entry, Episode, load_selection
from evals.tasks.openapps.classes import ACT, CLARIFY, STOP, state_diff
from infra.local.commands import run
from infra.local.desktop import Desktop

EXAMPLES = Path(__file__).resolve().parents[3] / "evals/tasks/openapps/examples/all_tasks.yaml"
SUITE = EXAMPLES.with_name("suite.yaml")
_ENDS = {SEND_MSG_TO_USER: CLARIFY, REPORT_INFEASIBLE: STOP}


def state(desktop: Desktop) -> dict[str, Any]:
    return desktop.app_state()


def play(desktop: Desktop, commands: list[str]) -> str:
    """Send commands as the agent loop does; returns how the episode ended."""
    for text in commands:
        action = parse_action(text)
        if action.type in _ENDS:
            return _ENDS[action.type]
        result = run(desktop, str(action.command))
        assert result.returncode == 0, (text, result.error)
    return ACT


def examples(path: Path = EXAMPLES) -> dict[str, Entry]:
    return {e.name: e for e in load_selection(f"openapps:{path}")}


@pytest.mark.parametrize(("path", "name"), [(path, name) for path in (EXAMPLES, SUITE)
                                            for name in sorted(examples(path))])
def test_each_example_scores_one_with_its_solution_and_zero_doing_nothing(
    desktop: Desktop, path: Path, name: str
) -> None:
    entry = examples(path)[name]
    play(desktop, entry.task.setup())
    initial = state(desktop)
    assert not entry.task.score(Episode(initial, state(desktop), ACT))  # noop
    solution = entry.task_json()["reference_solution"]
    ended = play(desktop, solution)
    assert entry.task.score(Episode(initial, state(desktop), ended)), (name, solution)


def test_the_desktop_starts_with_water_plants_and_script_py(desktop: Desktop) -> None:
    first = state(desktop)
    assert {"title": "Water plants", "done": False, "id": 1} in first["todo"]["todos"]
    assert [f["path"] for f in first["codeeditor"]["files"]] == ["script.py"]
    run(desktop, 'todo done "Water plants"')
    desktop.clear_task_files()  # a fresh profile: the apps' seed again
    assert state(desktop) == first


def test_an_unsaved_or_unchanged_file_earns_nothing(desktop: Desktop) -> None:
    tasks = examples()
    edit, create = (tasks["edit_script_add_header_comment"].task,
                    tasks["create_notes_file_in_code_editor"].task)
    initial = state(desktop)
    run(desktop, 'editor append script.py "\n# Reviewed by Bob\n"')
    run(desktop, 'editor write notes.txt "TODO:   refactor"')
    unsaved = state(desktop)
    assert not edit.score(Episode(initial, unsaved, ACT))
    assert not create.score(Episode(initial, unsaved, ACT))
    run(desktop, "editor save notes.txt")  # whitespace-normalised full match
    assert create.score(Episode(initial, state(desktop), ACT))
    # the fragment already there at the start: no change, no reward
    run(desktop, "editor save script.py")
    done = state(desktop)
    assert edit.score(Episode(initial, done, ACT))
    assert not edit.score(Episode(done, done, ACT))


def test_acting_on_a_clarify_or_stop_task_scores_zero(desktop: Desktop) -> None:
    tasks = examples()
    initial = state(desktop)
    run(desktop, 'todo add "Paper deadline"')
    acted = state(desktop)
    for name, outcome in (("abstention_clarify_paper_deadline", CLARIFY),
                          ("abstention_stop_book_flight", STOP)):
        task = tasks[name].task
        assert not task.score(Episode(initial, acted, ACT)), name
        # asked (or reported) after changing an app: still a wrong act
        assert not task.score(Episode(initial, acted, outcome)), name
        assert task.score(Episode(initial, initial, outcome)), name
    # asking where it should act is wrong too
    act = tasks["abstention_act_mark_groceries"].task
    assert not act.score(Episode(initial, initial, CLARIFY))


def test_a_spurious_change_beside_the_right_one_fails_the_state_comparison(
    desktop: Desktop
) -> None:
    tasks = examples()
    initial = state(desktop)
    run(desktop, 'todo done "Water plants"')
    run(desktop, 'msg send Bob "hello"')
    assert not tasks["mark_water_plants_as_done"].task.score(
        Episode(initial, state(desktop), ACT))
    # the composite needs all three changes: two of them are not enough
    assert not tasks["water_plants_and_log_it"].task.score(
        Episode(initial, state(desktop), ACT))


def test_the_state_difference_names_each_changed_leaf(desktop: Desktop) -> None:
    initial = state(desktop)
    run(desktop, 'todo done "Water plants"')
    run(desktop, 'todo add "New"')
    changes = {c["path"]: (c["before"], c["after"]) for c in state_diff(initial, state(desktop))}
    assert changes == {"/todo/todos/0/done": (False, True),
                       "/todo/todos/14": (None, {"done": False, "id": 15, "title": "New"})}


@pytest.mark.parametrize(("text", "kind", "said"), [
    ('SEND_MSG_TO_USER "Which paper?"', SEND_MSG_TO_USER, "Which paper?"),
    ("send_msg_to_user('Which paper?')", SEND_MSG_TO_USER, "Which paper?"),
    ('REPORT_INFEASIBLE "no travel app"', REPORT_INFEASIBLE, "no travel app"),
])
def test_the_abstention_actions_parse_in_every_action_format(
    text: str, kind: str, said: str
) -> None:
    for action in (parse_action(text), parse_action({"type": kind, "text": said}),
                   parse_action_response(f"Thought: unclear.\nAction: {text}")):
        assert action.type == kind and action.text == said and action.ends_task
        assert parse_action(action.to_string()).text == said


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "tasks.yaml"
    path.write_text(text, encoding="utf-8")
    return f"openapps:{path}"


@pytest.mark.parametrize(("text", "said"), [
    ("t:\n  _target_: EditFileTask\n  goal: g\n  file_path: a.py\n",
     "takes one of required_fragment or expected_content"),
    ("t:\n  _target_: AbstentionTask\n  goal: g\n  expected_outcome: maybe\n",
     "expected_outcome must be one of act, clarify, stop"),
    ("t:\n  _target_: AbstentionTask\n  goal: g\n  expected_outcome: act\n",
     "needs an action_task"),
    ("t:\n  _target_: CompositeTask\n  goal: g\n  subtasks:\n  - todo_name: x\n",
     "task 't'.subtasks[0]: no _target_"),
    ("t:\n  _target_: MarkToDoDoneTask\n  todo_name: x\n", "no goal"),
    ("t:\n  _target_: os.path:join\n  goal: g\n", "is not a task class"),
    ("- a\n- b\n", "not a mapping of task names"),
    ("t: [\n", "not valid YAML"),
])
def test_bad_entries_are_refused_naming_the_entry(tmp_path: Path, text: str, said: str) -> None:
    with pytest.raises(InvalidRunInputError, match="openapps config") as caught:
        load_selection(write(tmp_path, text))
    assert said in str(caught.value)


def test_a_users_own_class_loads_by_module_and_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_tasks.py").write_text(
        "from dataclasses import dataclass\nfrom evals.tasks.openapps import Task\n\n"
        "@dataclass(kw_only=True)\nclass Calm(Task):\n    limit: int = 0\n\n"
        "    def check_if_task_is_complete(self, initial_state, current_state):\n"
        "        return initial_state == current_state\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    (entry,) = load_selection(write(tmp_path, "t:\n  _target_: my_tasks:Calm\n  goal: g\n"
                                              "  limit: 3\n"))
    assert type(entry.task).__name__ == "Calm" and entry.task.score(Episode({}, {}, ACT))
    with pytest.raises(InvalidRunInputError, match="limit must be a number"):
        load_selection(write(tmp_path, "t:\n  _target_: my_tasks:Calm\n  goal: g\n  limit: x\n"))


def test_an_openapps_variations_entry_rewords_the_goal_only() -> None:
    from waa_client.errors import CatalogError
    from waa_client.variations import parse_variations, variation_task

    original = examples()["mark_water_plants_as_done"].task_json()
    entry = {"_target_": "open_apps.tasks.tasks.MarkToDoDoneTask",
             "goal": "can you check off 'Water plants' in my to-do list?",
             "todo_name": "Water plants", "goal_style": "casual"}
    (variation,) = parse_variations({"mark_water_plants_as_done__casual_2": entry},
                                    "v.yaml").values()
    task = variation_task(original, variation)
    assert task["instruction"] == entry["goal"]
    assert task["openapps"] == original["openapps"]  # the same class, the same reward
    bad = parse_variations({"mark_water_plants_as_done__casual_2": {**entry,
                                                                     "todo_name": "Other"}},
                           "v.yaml")
    with pytest.raises(CatalogError, match="field 'todo_name' differs"):
        variation_task(original, next(iter(bad.values())))
