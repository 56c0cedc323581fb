"""Goal variations: the file format, adding them to a selection, the per-style comparison, and
the file shipped for the local suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.errors import InvalidRunInputError
from evals.run.pools import Selected
from evals.run.variations import add_variations, compare_styles, format_styles, read_variations
from oa_vm.clouds.local.suite import local_tasks_dir
from waa_client.catalog import Catalog, TaskRef
from waa_client.errors import CatalogError
from waa_client.variations import STYLES, base_of, parse_variations, style_of

TASK = {"id": "t1", "instruction": "Do the thing.", "config": [{"type": "sleep"}],
        "evaluator": {"func": "exact_match", "result": {"type": "rule", "rules": "x"}}}


def _local_variations() -> Path:
    """The goal variations shipped for the local suite (``local_all``)."""
    return local_tasks_dir() / "variations" / "local_all.json"


def _selected() -> Selected:
    refs = [TaskRef("t1", "notepad", False, "Do the thing."),
            TaskRef("t2", "notepad", False, "Other.")]
    return Selected(refs, {"t1": TASK, "t2": {**TASK, "id": "t2", "instruction": "Other."}})


def test_keys_styles_and_instructions_are_checked() -> None:
    good = parse_variations({"t1__casual_1": {"goal_style": "casual", "instruction": "do it"},
                             "t1__formal_2": {"instruction": "Kindly do it."}}, "f")
    assert [v.style for v in good.values()] == ["casual", "formal"]
    assert good["t1__formal_2"].number == 2 and good["t1__formal_2"].base_id == "t1"
    for bad, fragment in (
        ({"t1_casual_1": {"instruction": "x"}}, "is not '<task_id>__<style>_<n>'"),
        ({"t1__shouty_1": {"instruction": "x"}}, "is not '<task_id>__<style>_<n>'"),
        ({"t1__casual_1": {"goal_style": "formal", "instruction": "x"}}, "disagrees"),
        ({"t1__casual_1": {"goal_style": "casual"}}, "no instruction"),
        ({"t1__casual_1": {"instruction": "  "}}, "no instruction"),
        (["t1__casual_1"], "not a mapping"),
    ):
        with pytest.raises(CatalogError, match=fragment):
            parse_variations(bad, "f")
    assert base_of("a-b__unrelated_context_3") == "a-b" and style_of("a-b") is None


def test_variations_follow_their_task_and_keep_its_checker(tmp_path: Path) -> None:
    path = tmp_path / "v.yaml"
    path.write_text("t1__casual_1:\n  goal_style: casual\n  instruction: just do it\n"
                    "t1__formal_1:\n  instruction: Please do the thing.\n"
                    "zz__formal_1:\n  instruction: not selected\n", encoding="utf-8")
    selected = add_variations(_selected(), read_variations(path))
    assert [r.task_id for r in selected.refs] == ["t1", "t1__casual_1", "t1__formal_1", "t2"]
    varied = selected.tasks["t1__casual_1"]
    assert varied["instruction"] == "just do it" and varied["id"] == "t1__casual_1"
    assert varied["evaluator"] == TASK["evaluator"] and varied["config"] == TASK["config"]
    assert varied["goal_style"] == "casual" and varied["variation_of"] == "t1"
    assert selected.refs[1].instruction == "just do it" and selected.refs[1].domain == "notepad"
    assert TASK["instruction"] == "Do the thing."  # the original is not touched


def test_a_variation_may_change_the_instruction_only() -> None:
    changed = parse_variations({"t1__casual_1": {"instruction": "x",
                                                 "evaluator": {"func": "infeasible"}}}, "f")
    with pytest.raises(InvalidRunInputError, match="may change the instruction only"):
        add_variations(_selected(), changed)
    same = parse_variations({"t1__casual_1": {"instruction": "x",
                                              "evaluator": TASK["evaluator"]}}, "f")
    assert len(add_variations(_selected(), same).refs) == 3
    with pytest.raises(InvalidRunInputError, match="no variation of the 2 selected"):
        add_variations(_selected(), parse_variations({"q__casual_1": {"instruction": "x"}}, "f"))


def test_bad_files_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(InvalidRunInputError,
                       match="the variations file .*missing.json does not exist"):
        read_variations(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{not: [json", encoding="utf-8")
    with pytest.raises(InvalidRunInputError, match="is not JSON or YAML") as info:
        read_variations(broken)
    assert "\n" not in str(info.value)


def test_each_style_is_compared_with_the_originals_of_the_same_tasks() -> None:
    rows = compare_styles([
        ("a", "success", 1.0), ("b", "success", 1.0), ("c", "failure", 0.0),
        ("a__casual_1", "failure", 0.0), ("b__casual_1", "success", 1.0),
        ("a__formal_1", "success", 1.0), ("a__formal_2", "error", None),
    ])
    by = {r.style: r for r in rows}
    assert [r.style for r in rows] == ["original", "casual", "formal"]
    assert (by["original"].runs, by["original"].successes) == (3, 2)
    assert by["original"].original_success_rate is None
    assert (by["casual"].runs, by["casual"].successes, by["casual"].tasks) == (2, 1, 2)
    assert by["casual"].original_success_rate == 1.0  # a and b both succeeded as originals
    assert (by["formal"].runs, by["formal"].errors, by["formal"].tasks) == (1, 1, 1)
    assert by["formal"].success_rate == 1.0 and by["formal"].mean_score == 1.0
    text = "\n".join(format_styles(r.to_json() for r in rows))
    assert "casual" in text and "1/2 succeeded (50.0%) 95% CI [2.6%, 97.4%] on 2 task(s)" in text
    assert "originals of these tasks 100.0%" in text
    assert format_styles(r.to_json() for r in compare_styles([("a", "success", 1.0)])) == []


def test_the_shipped_file_varies_every_local_task_in_every_style() -> None:
    variations = read_variations(_local_variations())
    catalog = Catalog.from_folder(local_tasks_dir())
    local = set(catalog.resolve("local_all", live=False))
    assert {v.base_id for v in variations.values()} == local
    for task_id in local:
        styles = {v.style for v in variations.values() if v.base_id == task_id}
        assert styles == set(STYLES), task_id
    raw = json.loads(_local_variations().read_text(encoding="utf-8"))
    originals = {t: catalog.load(t)["instruction"] for t in local}
    for key, entry in raw.items():
        assert entry["instruction"] != originals[base_of(key)], key


def test_variations_take_the_local_suites_file_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # run from anywhere, not only from the source tree
    by_name = read_variations(Path("local_all"))
    assert by_name == read_variations(_local_variations())
    (tmp_path / "local_all").write_text("not json")  # a file of that name here wins
    with pytest.raises(InvalidRunInputError):
        read_variations(Path("local_all"))
