"""Run summaries: counting rules, summary.json, the printed form, the public API's metrics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evals.errors import InvalidRunInputError
from evals.results.records import RunFolder as RecordFolder
from evals.results.run_reader import find_run, read_records
from evals.run.metrics import compute_metrics, compute_summary, format_summary
from tests.support.run_folder import RunFolder


def _mixed_run(root: Path) -> Path:
    run = RunFolder(root, "mixed", price_per_hour=0.36,
                    extra_metadata={"quarantined_workers": ["w2"]})
    run.add_task("notepad-1", domain="notepad", status="success", steps=3, worker="w0",
                 vm_usd=0.01, worker_seconds=100.0)
    run.add_task("notepad-2", domain="notepad", status="failure", steps=5, worker="w1",
                 vm_usd=0.02, worker_seconds=200.0, model_usd=0.5, tokens_in=1000, tokens_out=10)
    run.add_task("calc-1", domain="calc", status="success", score=0.5, steps=2, worker="w1")
    run.add_task("calc-2", domain="calc", status="error", error_type="infrastructure",
                 error_message="worker w2 unreachable", steps=1, worker="w2")
    run.add_task("calc-3", domain="calc", status="error", error_type="timeout", steps=4,
                 worker="w0")
    run.add_task("calc-4", domain="calc", status="not_run", error_type="budget")
    return run.finish()


def test_counts_outcomes_errors_and_not_run_separately(tmp_path: Path) -> None:
    summary = compute_summary(_mixed_run(tmp_path))

    assert summary["run"] == "mixed"
    assert (summary["attempts"], summary["outcomes"], summary["errors"], summary["not_run"]) == (
        5, 3, 2, 1)
    assert (summary["successes"], summary["failures"]) == (2, 1)
    # The timeout is the agent's own: a failure scoring 0 (2 of 4); the infrastructure
    # error says nothing about the agent and is left out. Outcomes only: 2 of 3.
    assert summary["success_rate"] == pytest.approx(2 / 4)
    assert summary["success_rate_outcomes_only"] == pytest.approx(2 / 3)
    assert summary["success_rate_all_errors_as_failures"] == pytest.approx(2 / 5)
    assert summary["avg_score"] == pytest.approx((1.0 + 0.0 + 0.5 + 0.0) / 4)
    assert summary["avg_score_outcomes_only"] == pytest.approx((1.0 + 0.0 + 0.5) / 3)
    # Steps average over every attempt, errors included, never over tasks that did not run.
    assert summary["avg_steps"] == pytest.approx((3 + 5 + 2 + 1 + 4) / 5)
    assert summary["by_error_type"] == {"budget": 1, "infrastructure": 1, "timeout": 1}
    assert summary["task_ids_not_run"] == ["calc-4"]
    assert summary["task_ids_pending"] == []


def test_by_domain_and_workers(tmp_path: Path) -> None:
    summary = compute_summary(_mixed_run(tmp_path))

    calc = summary["by_domain"]["calc"]
    assert (calc["attempts"], calc["successes"], calc["failures"], calc["errors"]) == (3, 1, 0, 2)
    assert calc["success_rate"] == 0.5  # the timeout counts as a failure
    assert calc["avg_score"] == 0.25
    assert summary["by_domain_ci"]["calc"]["estimate"] == 0.5
    notepad = summary["by_domain"]["notepad"]
    assert notepad["success_rate"] == 0.5
    assert list(summary["by_domain"]) == ["calc", "notepad"]
    assert summary["workers"] == {
        "w0": {"tasks": 2, "errors": 1, "quarantined": False},
        "w1": {"tasks": 2, "errors": 0, "quarantined": False},
        "w2": {"tasks": 1, "errors": 1, "quarantined": True},
    }
    assert summary["quarantined_workers"] == ["w2"]


def test_cost_is_summed_over_tasks(tmp_path: Path) -> None:
    cost = compute_summary(_mixed_run(tmp_path))["cost"]

    assert cost["vm_usd"] == pytest.approx(0.03)
    assert cost["model_usd"] == pytest.approx(0.5)
    assert cost["total_usd"] == pytest.approx(0.53)
    assert cost["worker_seconds"] == pytest.approx(300.0)
    assert (cost["tokens_in"], cost["tokens_out"]) == (1000, 10)


def test_no_outcomes_gives_null_rates_not_zero(tmp_path: Path) -> None:
    run = RunFolder(tmp_path, "all-errors")
    run.add_task("a", status="error", error_type="setup", steps=0)
    summary = compute_summary(run.finish())

    assert summary["success_rate"] is None
    assert summary["avg_score"] is None
    assert summary["avg_steps"] == 0.0
    text = format_summary(summary)
    assert "Success rate: n/a (outcomes only;" in text
    assert "Mean score: n/a (WAA's headline" in text


def test_empty_run_has_pending_tasks(tmp_path: Path) -> None:
    run = RunFolder(tmp_path, "fresh", status="running")
    run.task_ids = ["x", "y"]
    summary = compute_summary(run.finish())

    assert summary["attempts"] == 0
    assert summary["avg_steps"] is None
    assert summary["task_ids_pending"] == ["x", "y"]
    assert summary["status"] == "running"


def test_records_follow_the_run_order_then_strays(tmp_path: Path) -> None:
    run = RunFolder(tmp_path)
    for task_id in ("zeta", "alpha", "mid"):
        run.add_task(task_id)
    path = run.finish()
    stray = path / "tasks" / "aaa-stray"
    stray.mkdir()
    (stray / "execution.json").write_text(
        json.dumps({"task_id": "aaa-stray", "status": "failure", "score": 0.0}), encoding="utf-8")

    assert [r.task_id for r in read_records(path)] == ["zeta", "alpha", "mid", "aaa-stray"]


def test_write_summary_writes_what_it_is_given(tmp_path: Path) -> None:
    path = _mixed_run(tmp_path)
    returned = compute_summary(path)
    RecordFolder(path).write_summary(returned)

    on_disk = json.loads((path / "summary.json").read_text(encoding="utf-8"))
    assert on_disk == json.loads(json.dumps(returned))
    assert not list(path.glob(".summary.json.*"))  # no temp file left behind


def test_format_summary_reference_lines_then_tables_then_cost(tmp_path: Path) -> None:
    text = format_summary(compute_summary(_mixed_run(tmp_path)))
    lines = text.splitlines()

    assert lines[:7] == [
        "Attempts: 5",
        "Outcomes: 3  (success 2, failure 1)",
        "Errors: 2",
        "Not run: 1",
        "Success rate: 50.0% (1 agent/timeout error(s) counted as failures; 66.7% over "
        "outcomes only; 1 infrastructure/setup/evaluation error(s) left out; 40.0% if every "
        "error were a failure)",
        "Mean score: 0.375 (WAA's headline: the mean score over scored tasks; 0.500 over "
        "outcomes only)",
        "Avg steps: 3.0",
    ]
    domain_header = next(i for i, line in enumerate(lines) if line.startswith("domain"))
    error_header = next(i for i, line in enumerate(lines) if line.startswith("error type"))
    cost_line = next(i for i, line in enumerate(lines) if line.startswith("Cost:"))
    assert domain_header < error_header < cost_line
    assert lines[domain_header + 1].split() == ["calc", "3", "1", "0", "2", "50.0%", "[2.6%,",
                                                "97.4%]", "0.250"]
    assert "timeout" in lines[error_header + 3]
    assert lines[cost_line] == "Cost: $0.5300 total"
    assert "Quarantined workers: w2" in text


def test_format_summary_has_no_cost_lines_when_unpriced(tmp_path: Path) -> None:
    run = RunFolder(tmp_path)
    run.add_task("a")
    assert "Cost" not in format_summary(compute_summary(run.finish()))


def test_reference_example_is_reproduced() -> None:
    summary: dict[str, Any] = {
        "attempts": 22, "outcomes": 20, "successes": 20, "failures": 0, "errors": 2,
        "not_run": 0, "success_rate": 1.0, "avg_score": 1.0, "avg_steps": 3.4,
    }
    assert format_summary(summary) == (
        "Attempts: 22\n"
        "Outcomes: 20  (success 20, failure 0)\n"
        "Errors: 2\n"
        "Success rate: 100.0% (outcomes only)\n"
        "Mean score: 1.000 (WAA's headline: the mean score over scored tasks)\n"
        "Avg steps: 3.4"
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "does not hold a JSON object"),
        ('{"task_id": "a", "status": "exploded"}', "unknown status 'exploded'"),
    ],
)
def test_unreadable_record_names_the_file(tmp_path: Path, content: str, expected: str) -> None:
    run = RunFolder(tmp_path)
    folder = run.add_task("a")
    (folder / "execution.json").write_text(content, encoding="utf-8")

    with pytest.raises(InvalidRunInputError, match=expected) as info:
        compute_summary(run.finish())
    assert "tasks/a/execution.json" in str(info.value)


def test_not_a_run_folder(tmp_path: Path) -> None:
    with pytest.raises(InvalidRunInputError, match="does not exist"):
        compute_summary(tmp_path / "nope")
    with pytest.raises(InvalidRunInputError, match="metadata.json is missing"):
        compute_summary(tmp_path)


def test_find_run_lists_known_runs(tmp_path: Path) -> None:
    RunFolder(tmp_path, "first").finish()
    RunFolder(tmp_path, "second").finish()

    assert find_run("first", tmp_path) == tmp_path / "first"
    with pytest.raises(InvalidRunInputError, match="known runs: first, second"):
        find_run("third", tmp_path)
    with pytest.raises(InvalidRunInputError, match="without slashes"):
        find_run("../first", tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidRunInputError, match="holds no runs"):
        find_run("x", tmp_path / "empty")
    with pytest.raises(InvalidRunInputError, match="^--results-dir .*/missing does not exist"):
        find_run("x", tmp_path / "missing")


def test_find_run_uses_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    RunFolder(tmp_path, "r").finish()
    monkeypatch.setenv("OA_EVALS_RESULTS", str(tmp_path))
    assert find_run("r") == tmp_path / "r"


class _Result:
    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)


def test_compute_metrics_counts_outcomes_only() -> None:
    results = [
        _Result(task_id="a", domain="d1", success=True, score=1.0, steps=3, error=None,
                error_type=None, total_time_seconds=2.0),
        _Result(task_id="b", domain="d1", success=False, score=0.0, steps=5, error=None,
                error_type=None, total_time_seconds=4.0),
        _Result(task_id="c", domain="d2", success=False, score=0.0, steps=1,
                error="worker gone", error_type="infrastructure", total_time_seconds=0.0),
    ]
    metrics = compute_metrics(results)

    assert metrics["num_tasks"] == 3
    assert (metrics["success_count"], metrics["fail_count"], metrics["error_count"]) == (1, 1, 1)
    assert metrics["success_rate"] == 0.5
    assert metrics["avg_score"] == 0.5
    assert metrics["avg_steps"] == pytest.approx(3.0)
    assert metrics["avg_time_seconds"] == pytest.approx(2.0)
    assert metrics["num_infrastructure_failures"] == 1
    assert metrics["success_rate_excluding_infra"] == 0.5
    assert metrics["by_error_type"] == {"infrastructure": 1}
    assert metrics["by_domain"]["d2"]["errors"] == 1


def test_compute_metrics_accepts_mappings_and_empty_input() -> None:
    assert compute_metrics([])["success_rate"] == 0.0
    metrics = compute_metrics([{"task_id": "a", "success": False, "score": 0.0, "steps": 1}])
    assert metrics["success_rate"] == 0.0
    assert metrics["fail_count"] == 1
    assert metrics["by_domain"] == {"unknown": {
        "attempts": 1, "successes": 0, "failures": 1, "errors": 0, "not_run": 0,
        "success_rate": 0.0, "avg_score": 0.0}}


def test_fractional_scores_count_as_they_are_in_the_mean_score(tmp_path: Path) -> None:
    run = RunFolder(tmp_path, "fractions")
    run.add_task("a", status="failure", score=0.25)
    run.add_task("b", status="failure", score=0.5)
    run.add_task("c", status="success", score=1.0)
    run.add_task("d", status="error", error_type="evaluation", steps=1)
    summary = compute_summary(run.finish())

    assert summary["success_rate"] == pytest.approx(1 / 3)
    assert summary["avg_score"] == pytest.approx(0.5833333)
    text = format_summary(summary)
    assert ("Success rate: 33.3% (outcomes only; 1 infrastructure/setup/evaluation error(s) "
            "left out; 25.0% if every error were a failure)") in text
    assert "Mean score: 0.583 (WAA's headline: the mean score over scored tasks)" in text
    assert "saw the answers" not in text


def test_an_opted_in_agent_is_named_in_the_summary(tmp_path: Path) -> None:
    run = RunFolder(tmp_path, "oracle-run")
    run.add_task("a")
    path = run.finish()
    metadata = json.loads((path / "metadata.json").read_text(encoding="utf-8"))
    metadata["answer_visible_agents"] = ["oracle"]
    (path / "metadata.json").write_text(json.dumps(metadata), encoding="utf-8")
    text = format_summary(compute_summary(path))
    assert "Agent saw the answers: oracle" in text


def test_summary_carries_the_statistics(tmp_path: Path) -> None:
    summary = compute_summary(_mixed_run(tmp_path))

    assert summary["trials"] == 1
    # 2 successes of 4 counted (the timeout a failure): Wilson with Poisson ends (1 or 2
    # successes or failures, Brown, Cai and DasGupta) 2/4 = [0.355 / 4, 1 - 0.355 / 4] =
    # [0.0888, 0.9112]; outcomes only, 2/3 = [0.355 / 3, 1 - 0.0513 / 3] = [0.1185, 0.9829].
    rate = summary["success_rate_ci"]
    assert (round(rate["low"], 4), round(rate["high"], 4)) == (0.0888, 0.9112)
    assert rate["method"] == "wilson" and rate["estimate"] == pytest.approx(2 / 4)
    only = summary["success_rate_ci_outcomes_only"]
    assert (round(only["low"], 4), round(only["high"], 4)) == (0.1185, 0.9829)
    score = summary["mean_score_ci"]
    assert score["low"] <= summary["avg_score"] <= score["high"]
    assert summary["pass_at_k"]["value"] == pytest.approx(2 / 4)
    assert summary["pass_at_k"]["tasks"] == 4  # the tasks with a counted trial
    assert summary["flaky_tasks"] == []
    text = format_summary(summary)
    assert "95% CI of the success rate: [8.9%, 91.1%] (wilson)" in text
    assert "Trials per task: 1; pass@1 50.0%, pass^1 50.0% (over 4 task(s)" in text


def test_statistics_group_trials_by_task_and_list_flaky_tasks() -> None:
    from evals.run.metrics import TaskOutcome, statistics

    def trial(tid: str, status: str) -> TaskOutcome:
        score = {"success": 1.0, "failure": 0.0}.get(status)
        return TaskOutcome(tid, "d", status, score, 1,
                           error_type="infrastructure" if status == "error" else None)

    items = [trial("a", s) for s in ("success", "success", "failure")]
    items += [trial("b", "success")] * 3 + [trial("c", "failure")] * 3
    items += [trial("d", "success"), trial("d", "error"), trial("d", "success")]
    stats = statistics(items, trials=3)

    assert stats["trials"] == 3
    assert [f["task_id"] for f in stats["flaky_tasks"]] == ["a"]
    assert stats["flaky_tasks"][0]["successes"] == 2
    # d lost a trial to an error: it counts at k <= 2 only.
    assert stats["pass_at_k"]["tasks"] == 3 and stats["pass_at_k"]["by_task"]["d"] is None
    assert stats["pass_at_k"]["value"] == pytest.approx((1 + 1 + 0) / 3)
    assert stats["pass_all_k"]["value"] == pytest.approx((0 + 1 + 0) / 3)
    assert stats["success_rate_ci"]["estimate"] == pytest.approx(7 / 11)
