"""``--variations`` on the local suite: each task's rewordings run after it with its checker,
and the summary, ``summary.json`` and the run page set each style beside the originals (the
page with the difference and p-value the summary prints)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run_cli

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "infra" / "local" / "tasks" / "variations" / "local_all.json"
TASKS = "e112363f-4a10-536e-89c0-53e0fb3afa05-WOS,5d0c082b-d2bd-5da5-8f10-d8d4b51e7239-WOS"


def test_a_sweep_with_variations_compares_each_style(oa_home: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    done = run_cli("openadapt-evals", "sweep", "--cloud", "local", "--workers", "2", "--agent",
                   "oracle", "--tasks", TASKS, "--variations", str(SHIPPED), "--run-name", "v",
                   "--results-dir", str(results), home=oa_home, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Goal styles (the same tasks, reworded" in done.stdout
    for style in ("original", "casual", "formal", "unrelated_context"):
        assert any(line.split()[:2] == [style, "2/2"] for line in done.stdout.splitlines()), style
    summary = json.loads((results / "v" / "summary.json").read_text(encoding="utf-8"))
    styles = {r["style"]: r for r in summary["goal_styles"]}
    assert set(styles) == {"original", "casual", "formal", "unrelated_context"}
    assert styles["casual"]["runs"] == 2 and styles["casual"]["original_success_rate"] == 1.0
    assert styles["formal"]["success_rate_ci"]["method"] == "wilson"
    metadata = json.loads((results / "v" / "metadata.json").read_text(encoding="utf-8"))
    assert len(metadata["task_ids"]) == 8 and metadata["variations"] == str(SHIPPED)
    first = next(t for t in metadata["task_ids"] if t.endswith("__casual_1"))
    record = json.loads((results / "v" / "tasks" / first / "execution.json")
                        .read_text(encoding="utf-8"))
    assert record["status"] == "success"
    view = run_cli("openadapt-evals", "view", "v", "--results-dir", str(results), home=oa_home)
    assert view.returncode == 0, view.stderr
    page = Path(view.stdout.strip().splitlines()[-1]).read_text(encoding="utf-8")
    assert "<h2>Goal styles</h2>" in page and "unrelated_context" in page
    # each style's paired difference and p-value, as the summary printed them
    for style in ("casual", "formal", "unrelated_context"):
        [line] = [line for line in done.stdout.splitlines() if line.split()[:1] == [style]]
        difference = line.partition(", difference ")[2]
        assert difference.endswith("(paired by task)"), line
        assert f"<td>{difference}</td>" in page, (style, difference)


def test_a_bad_variations_file_is_one_line_before_any_pool(oa_home: Path,
                                                           tmp_path: Path) -> None:
    bad = tmp_path / "v.json"
    bad.write_text(json.dumps({"x__loud_1": {"instruction": "hey"}}), encoding="utf-8")
    done = run_cli("openadapt-evals", "sweep", "--cloud", "local", "--workers", "1", "--agent",
                   "oracle", "--tasks", TASKS, "--variations", str(bad), home=oa_home)
    assert "is not '<task_id>__<style>_<n>'" in done.assert_one_line_error()
    assert not (oa_home / "pools").exists() or not any((oa_home / "pools").iterdir())


@pytest.mark.parametrize("tasks", [TASKS, "openapps:" + str(
    ROOT / "evals" / "tasks" / "openapps" / "examples" / "planner_tasks.yaml")])
def test_variations_of_no_selected_task_are_refused_before_any_pool(
    oa_home: Path, tmp_path: Path, tasks: str,
) -> None:
    # A well-formed file whose keys name other tasks: refused only once the run read its tasks
    # from the pool's workers, after the pool was made (and a run folder left behind).
    other = tmp_path / "v.json"
    other.write_text(json.dumps({"nope__casual_1": {"instruction": "hey"}}), encoding="utf-8")
    results = tmp_path / "results"
    done = run_cli("openadapt-evals", "sweep", "--cloud", "local", "--workers", "1", "--agent",
                   "noop", "--tasks", tasks, "--variations", str(other), "--results-dir",
                   str(results), home=oa_home)
    assert "--variations: no variation of the" in done.assert_one_line_error()
    assert not results.exists()
    assert not oa_home.exists() or not any(oa_home.rglob("*.json"))
