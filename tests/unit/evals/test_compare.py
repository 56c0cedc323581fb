"""Comparing two runs: pairing, change classification, text, JSON, page, and the command."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import typer
from scipy.stats import t as scipy_t
from typer.testing import CliRunner

from evals.cli.commands.compare import compare
from evals.cli.commands.view import view
from evals.errors import InvalidRunInputError
from evals.report.compare import TaskPair, compare_runs, format_comparison, render_comparison
from evals.run.metrics import TaskOutcome
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
    out.parent.mkdir()
    result = CliRunner().invoke(_app(), ["compare", "base", "new", "--json", "--out", str(out)])

    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["page"] == str(out)
    assert out.is_file()
    assert data["changes"]["regressed"] == 1


def test_compare_writes_its_page_as_view_does(tmp_path: Path) -> None:
    """No folder made for a mistyped --out, no foreign file replaced without --force, no
    symlink followed; its own page is replaced."""
    from oa_vm.kit.safe_fs import ForeignFileError, UnsafePathError

    _runs(tmp_path)
    base = ["compare", "base", "new", "--results-dir", str(tmp_path), "--out"]
    missing = CliRunner().invoke(_app(), [*base, str(tmp_path / "typo" / "cmp.html")])
    assert isinstance(missing.exception, UnsafePathError), missing.output
    assert not (tmp_path / "typo").exists()

    notes = tmp_path / "notes.txt"
    notes.write_text("mine", encoding="utf-8")
    refused = CliRunner().invoke(_app(), [*base, str(notes)])
    assert isinstance(refused.exception, ForeignFileError)
    assert "not a file this tool wrote" in str(refused.exception)
    assert notes.read_text(encoding="utf-8") == "mine"
    forced = CliRunner().invoke(_app(), [*base, str(notes), "--force"])
    assert forced.exit_code == 0, forced.output
    assert "Only in A (1): only-a" in notes.read_text(encoding="utf-8")
    again = CliRunner().invoke(_app(), [*base, str(notes)])  # now a page of ours: replaced
    assert again.exit_code == 0, again.output

    link = tmp_path / "link.html"
    link.symlink_to(notes)
    linked = CliRunner().invoke(_app(), [*base, str(link), "--force"])
    assert isinstance(linked.exception, UnsafePathError), linked.output
    assert link.is_symlink()


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


def _paired_runs(root: Path, b_wins: int, a_wins: int, same: int) -> None:
    """Runs A and B over the same tasks: B alone solves ``b_wins``, A alone ``a_wins``, both
    fail ``same``; one infrastructure error in B is left out of the pairing."""
    a, b = RunFolder(root, "a"), RunFolder(root, "b")
    for i in range(b_wins):
        a.add_task(f"bw{i}", status="failure")
        b.add_task(f"bw{i}", status="success")
    for i in range(a_wins):
        a.add_task(f"aw{i}", status="success")
        b.add_task(f"aw{i}", status="failure")
    for i in range(same):
        a.add_task(f"s{i}", status="failure")
        b.add_task(f"s{i}", status="failure")
    a.add_task("err", status="success")
    b.add_task("err", status="error", error_type="infrastructure")
    a.finish()
    b.finish()


def test_paired_comparison_calls_a_real_difference(tmp_path: Path) -> None:
    _paired_runs(tmp_path, b_wins=12, a_wins=2, same=16)
    paired = compare_runs(tmp_path / "a", tmp_path / "b").paired()

    assert len(paired.tasks) == 30  # "err" was not scored by B
    rate = paired.success_rate
    assert rate is not None
    # the paired score test: at 0 it is McNemar's (b - c) / sqrt(b + c) = 10 / sqrt(14),
    # against t with 29 df
    assert rate.test.name == "paired score test (t)"
    assert rate.test.p_value == pytest.approx(2 * scipy_t.sf(10 / math.sqrt(14), 29))
    assert rate.difference.estimate == pytest.approx(10 / 30)
    assert 0 < rate.difference.low < 10 / 30 < rate.difference.high
    assert paired.significant
    assert paired.verdict().startswith("B is better than A: +33.3 points, 95% CI [+")
    assert paired.verdict().endswith("paired score test (t) p = 0.012")
    assert sorted(paired.better_in_b) == sorted(f"bw{i}" for i in range(12))
    assert sorted(paired.worse_in_b) == ["aw0", "aw1"]


def test_paired_comparison_of_alike_runs_finds_no_difference(tmp_path: Path) -> None:
    _paired_runs(tmp_path, b_wins=3, a_wins=2, same=25)
    paired = compare_runs(tmp_path / "a", tmp_path / "b").paired()

    assert not paired.significant
    assert paired.success_rate is not None
    assert paired.success_rate.test.p_value == pytest.approx(
        2 * scipy_t.sf(1 / math.sqrt(5), 29))
    assert paired.verdict().startswith("no detectable difference (+3.3 points")
    assert "the smallest gain this pair would detect with 80% power is about" in (
        paired.verdict())


def test_compare_json_carries_the_paired_statistics(tmp_path: Path) -> None:
    _paired_runs(tmp_path, b_wins=12, a_wins=2, same=16)
    result = CliRunner().invoke(_app(), ["compare", "a", "b", "--json", "--results-dir",
                                         str(tmp_path)])

    assert result.exit_code == 0, result.output
    paired = json.loads(result.stdout)["paired"]
    assert paired["tasks"] == 30
    assert paired["success_rate"]["test"] == "paired score test (t)"
    assert paired["success_rate"]["p_value"] == pytest.approx(
        2 * scipy_t.sf(10 / math.sqrt(14), 29), abs=1e-6)
    assert paired["success_rate"]["ci"]["low"] > 0
    assert paired["mean_score"]["test"] == "paired score test (t)"
    assert paired["verdict"].startswith("B is better than A")
    text = CliRunner().invoke(_app(), ["compare", "a", "b", "--results-dir", str(tmp_path)])
    assert "Verdict: B is better than A: +33.3 points" in text.output


def test_paired_comparison_over_trials_tests_the_mean_of_task_rates() -> None:
    from evals.report.compare import paired_comparison

    def trials(tid: str, *statuses: str) -> list[TaskOutcome]:
        return [TaskOutcome(tid, "d", s, 1.0 if s == "success" else 0.0, 1) for s in statuses]

    a = {f"t{i}": trials(f"t{i}", "failure", "failure", "success") for i in range(10)}
    b = {f"t{i}": trials(f"t{i}", "success", "success", "failure") for i in range(10)}
    paired = paired_comparison(a, b)

    assert paired.success_rate is not None
    assert paired.success_rate.test.name == "paired score test (t)"
    assert paired.success_rate.test.p_value < 0.05  # 10 of 10 up by 1/3
    assert (paired.success_rate.test.b_better, paired.success_rate.test.a_better) == (10, 0)
    assert paired.success_rate.difference.estimate == pytest.approx(1 / 3)


def test_two_runs_that_solved_everything_are_not_told_to_add_tasks(tmp_path: Path) -> None:
    """Both runs at 100% on 24 tasks: the verdict said 'too few tasks to detect any gain',
    sending the reader to add tasks, when no gain is possible at the ceiling; the real CLI."""
    from tests.support.cli import run_cli

    a, b = RunFolder(tmp_path, "a"), RunFolder(tmp_path, "b")
    for i in range(24):
        a.add_task(f"t{i}", status="success")
        b.add_task(f"t{i}", status="success")
    a.finish()
    b.finish()
    done = run_cli("openadapt-evals", "compare", "a", "b", "--results-dir", str(tmp_path),
                   home=tmp_path / "home")
    assert done.returncode == 0, done.stderr
    (verdict,) = [line for line in done.stdout.splitlines() if line.startswith("Verdict:")]
    assert verdict.startswith("Verdict: no detectable difference (+0.0 points")
    assert verdict.endswith("; both runs succeeded on every trial compared, so no gain can "
                            "show: add tasks they do not both solve")
    # where a gain was possible but the tasks too few, the words stay
    c, d = RunFolder(tmp_path, "c"), RunFolder(tmp_path, "d")
    for name, status in (("u0", "success"), ("u1", "failure")):
        c.add_task(name, status=status)
        d.add_task(name, status=status)
    c.finish()
    d.finish()
    paired = compare_runs(tmp_path / "c", tmp_path / "d").paired()
    assert paired.verdict().endswith("; too few tasks to detect any gain with 80% power")
