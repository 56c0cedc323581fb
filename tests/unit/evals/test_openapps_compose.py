"""The loader's ``defaults:`` composition (Hydra's, as OpenApps' ``all_tasks.yaml`` uses it):
sibling files in order, ``_self_`` where it is listed (last when not), the last entry of a name
winning; a missing file, a cycle or a malformed list refused in one line naming the file; and
dates left as the text they were written as."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.errors import InvalidRunInputError
from evals.tasks.openapps import load_selection


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


ENTRY = "{name}:\n  _target_: MarkToDoDoneTask\n  goal: {goal}\n  todo_name: Water plants\n"


def test_defaults_compose_sibling_files_in_order_the_last_winning(tmp_path: Path) -> None:
    write(tmp_path, "a", ENTRY.format(name="shared", goal="from a")
          + ENTRY.format(name="only_a", goal="a"))
    write(tmp_path, "b", ENTRY.format(name="shared", goal="from b"))
    # _self_ first: the listed files come after and win
    top = write(tmp_path, "top", "defaults:\n  - a\n  - _self_\n  - b\n"
                + ENTRY.format(name="shared", goal="from top"))
    goals = {e.name: e.task.goal for e in load_selection(f"openapps:{top}")}
    assert goals == {"shared": "from b", "only_a": "a"}
    by_name = {e.name: e.file for e in load_selection(f"openapps:{top}")}
    assert by_name == {"shared": (tmp_path / "b.yaml").resolve(),
                       "only_a": (tmp_path / "a.yaml").resolve()}
    # no _self_: the file's own entries come last, as Hydra puts them
    top = write(tmp_path, "top", "defaults:\n  - a\n  - b\n"
                + ENTRY.format(name="shared", goal="from top"))
    assert {e.name: e.task.goal for e in load_selection(f"openapps:{top}")}["shared"] == \
        "from top"
    assert [e.name for e in load_selection(f"openapps:{top}#only_a")] == ["only_a"]


@pytest.mark.parametrize(("files", "said"), [
    ({"top": "defaults:\n  - nowhere\n"}, "defaults names 'nowhere', but "),
    ({"top": "defaults:\n  - a\n", "a": "defaults:\n  - top\n"},
     "defaults makes a cycle (top.yaml -> a.yaml -> top.yaml)"),
    ({"top": "defaults:\n  - _self_\n  - top\n"}, "makes a cycle (top.yaml -> top.yaml)"),
    ({"top": "defaults: a\n"}, "defaults must be a list of sibling file names"),
    ({"top": "defaults:\n  - {tasks: a}\n"}, "defaults must be a list of sibling file names"),
    ({"top": "defaults:\n  - a\n", "a": "t:\n  _target_: MarkToDoDoneTask\n  goal: g\n"},
     "a.yaml, task 't': MarkToDoDoneTask needs 'todo_name'"),
])
def test_bad_defaults_are_refused_naming_the_file(
    tmp_path: Path, files: dict[str, str], said: str
) -> None:
    for name, text in files.items():
        write(tmp_path, name, text)
    with pytest.raises(InvalidRunInputError, match="openapps config") as caught:
        load_selection(f"openapps:{tmp_path / 'top.yaml'}")
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_an_unquoted_date_stays_text(tmp_path: Path) -> None:
    top = write(tmp_path, "top", "t:\n  _target_: AppStateComparison\n  goal: g\n"
                "  expected: {calendar: {day: 2026-04-01}}\n")
    (entry,) = load_selection(f"openapps:{top}")
    assert entry.raw["expected"] == {"calendar": {"day": "2026-04-01"}}
    assert entry.task_json()["openapps"]["entry"]["expected"]["calendar"]["day"] == "2026-04-01"
