"""Comparing two runs: pairing, change classification, text, JSON, page, and the command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from evals.commands.compare import compare
from evals.commands.view import view
from evals.compare import TaskPair, compare_runs, format_comparison, render_comparison
from evals.errors import InvalidRunInputError
from evals.metrics import TaskOutcome
from tests.support.run_folder import RunFolder


def _runs(root: Path) -> tuple[Path, Path]:
    a = RunFolder(root, "base")
    a.add_task("t1", status="failure", steps=3)
    a.add_task("t2", status="success", steps=2)
    a.add_task("t3", status="error", error_type="infrastructure", steps=1)
    a.add_task("t4", status="success", steps=2)
    a.add_task("only-a", status="success")
    b = RunFolder(root, "new")
    b.add_task("t4", status="success", steps=1)
    b.add_task("t3", status="success", steps=2)
    b.add_task("t2", status="failure", steps=6)
    b.add_task("t1", status="success", steps=2)
    b.add_task("only-b", status="failure")
    return a.finish(), b.finish()


def _outcome(status: str, score: float | None = None, error_type: str | None = None) -> TaskOutcome:
    return TaskOutcome("t", "d", status, score, 1, error_type)


@pytest.mark.parametrize(
    ("a", "b", "change"),
    [
        (_outcome("failure", 0.0), _outcome("success", 1.0), "improved"),
        (_outcome("success", 1.0), _outcome("failure", 0.0), "regressed"),
        (_outcome("failure", 0.2), _outcome("failure", 0.5), "improved"),
        (_outcome("success", 1.0), _outcome("success", 1.0), "same"),
        (_outcome("error", None, "timeout"), _outcome("success", 1.0), "changed"),
        (_outcome("success", 1.0), _outcome("error", None, "setup"), "changed"),
        (_outcome("error", None, "setup"), _outcome("error", None, "setup"), "same"),
        (_outcome("error", None, "setup"), _outcome("error", None, "agent"), "changed"),
    ],
)
def test_change_classification(a: TaskOutcome, b: TaskOutcome, change: str) -> None:
    assert TaskPair(a, b).change == change


def test_pairs_shared_tasks_in_run_a_order(tmp_path: Path) -> None:
    comparison = compare_runs(*_runs(tmp_path))

    assert [p.task_id for p in comparison.pairs] == ["t1", "t2", "t3", "t4"]
    assert [p.change for p in comparison.pairs] == ["improved", "regressed", "changed", "same"]
    assert comparison.only_a == ["only-a"]
    assert comparison.only_b == ["only-b"]
    assert comparison.changes() == {"improved": 1, "regressed": 1, "changed": 1, "same": 1}


def test_summaries_cover_shared_tasks_only(tmp_path: Path) -> None:
    comparison = compare_runs(*_runs(tmp_path))
    a, b = comparison.summary("a"), comparison.summary("b")

    # A: t1 failure, t2 success, t4 success (t3 an error; only-a left out).
    assert (a["outcomes"], a["successes"], a["errors"]) == (3, 2, 1)
    assert a["success_rate"] == pytest.approx(2 / 3)
    assert (b["outcomes"], b["successes"], b["errors"]) == (4, 3, 0)


def test_text_table(tmp_path: Path) -> None:
    text = format_comparison(compare_runs(*_runs(tmp_path)))
    lines = text.splitlines()

    assert lines[0] == "Comparing 4 task(s) both runs recorded"
    assert "Changes: 1 improved, 1 regressed, 1 changed, 1 same" in text
    row = next(line for line in lines if line.startswith("t3 "))
    assert row.split() == ["t3", "notepad", "error", "(infrastructure)", "-", "1", "success",
                           "1.00", "2", "changed"]
    rate = next(line for line in lines if line.startswith("success rate"))
    assert rate.split()[-2:] == ["66.7%", "75.0%"]
    assert "Only in A (1): only-a" in text
    assert "Only in B (1): only-b" in text


def test_json_document(tmp_path: Path) -> None:
    data = compare_runs(*_runs(tmp_path)).to_json()

    assert (data["run_a"], data["run_b"], data["common_tasks"]) == ("base", "new", 4)
    first = data["tasks"][0]
    assert first == {
        "task_id": "t1", "domain": "notepad", "change": "improved",
        "a": {"status": "failure", "score": 0.0, "steps": 3, "error_type": None},
        "b": {"status": "success", "score": 1.0, "steps": 2, "error_type": None},
    }
    json.dumps(data)  # serializable as is


def test_page_is_escaped_and_links_views(tmp_path: Path) -> None:
    a = RunFolder(tmp_path, "a")
    a.add_task("x<i>", status="failure")
    b = RunFolder(tmp_path, "b")
    b.add_task("x<i>", status="success")
    path_a, path_b = a.finish(), b.finish()
    (path_a / "view.html").write_text("<html></html>", encoding="utf-8")

    html = render_comparison(compare_runs(path_a, path_b), tmp_path)
    assert "x<i>" not in html
    assert "x&lt;i&gt;" in html
    assert 'href="a/view.html#task-x%3Ci%3E"' in html
    assert "b/view.html" not in html  # run b has no page to link to


def test_no_shared_task_is_an_error(tmp_path: Path) -> None:
    a = RunFolder(tmp_path, "a")
    a.add_task("x")
    b = RunFolder(tmp_path, "b")
    b.add_task("y")
    with pytest.raises(InvalidRunInputError, match="no recorded task in common"):
        compare_runs(a.finish(), b.finish())


def _app() -> typer.Typer:
    app = typer.Typer(add_completion=False)
    app.command("compare")(compare)
    app.command("view")(view)
    return app


def test_compare_command_prints_table_and_writes_page(tmp_path: Path) -> None:
    _runs(tmp_path)
    result = CliRunner().invoke(_app(), ["compare", "base", "new", "--results-dir",
                                         str(tmp_path)])

    assert result.exit_code == 0, result.output
    assert "Changes: 1 improved" in result.output
    page = tmp_path / "compare-base-vs-new.html"
    assert f"Page: {page}" in result.output
    assert "t1" in page.read_text(encoding="utf-8")


def test_compare_command_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _runs(tmp_path)
    monkeypatch.setenv("OA_EVALS_RESULTS", str(tmp_path))
    out = tmp_path / "pages" / "cmp.html"
    result = CliRunner().invoke(_app(), ["compare", "base", "new", "--json", "--out", str(out)])

    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["page"] == str(out)
    assert out.is_file()
    assert data["changes"]["regressed"] == 1


def test_unknown_run_is_reported(tmp_path: Path) -> None:
    _runs(tmp_path)
    result = CliRunner().invoke(_app(), ["compare", "base", "nope", "--results-dir",
                                         str(tmp_path)])
    assert isinstance(result.exception, InvalidRunInputError)
    assert "known runs: base, new" in str(result.exception)


def test_view_command_writes_the_page(tmp_path: Path) -> None:
    _runs(tmp_path)
    result = CliRunner().invoke(_app(), ["view", "--run-name", "new", "--results-dir",
                                         str(tmp_path)])

    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(tmp_path / "new" / "view.html")
    assert "only-b" in (tmp_path / "new" / "view.html").read_text(encoding="utf-8")
