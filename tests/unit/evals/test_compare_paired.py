"""The paired comparison's sides and counts, on outcomes built by hand: which run is better,
by how much, over which tasks, with which test, and the pooled rate behind the smallest
detectable difference."""

from __future__ import annotations

import pytest

from evals.report.compare import TaskPair, paired_comparison
from evals.results import stats
from evals.run.metrics import TaskOutcome


def _o(task: str, status: str, score: float | None = None, error: str | None = None,
       trial: int = 1) -> TaskOutcome:
    if score is None and status in ("success", "failure"):
        score = 1.0 if status == "success" else 0.0
    return TaskOutcome(task, "d", status, score, 3, error_type=error, trial=trial)


def _runs(pairs: dict[str, tuple[str, str]]) -> tuple[dict[str, list[TaskOutcome]],
                                                      dict[str, list[TaskOutcome]]]:
    return ({t: [_o(t, a)] for t, (a, _) in pairs.items()},
            {t: [_o(t, b)] for t, (_, b) in pairs.items()})


def test_the_tasks_b_does_better_on_are_counted_for_b() -> None:
    a, b = _runs({"up": ("failure", "success"), "down": ("success", "failure"),
                  "up2": ("failure", "success"), "same": ("success", "success")})
    paired = paired_comparison(a, b, seed=1)
    assert paired.better_in_b == ["up", "up2"] and paired.worse_in_b == ["down"]
    rate = paired.success_rate
    assert rate is not None
    assert (rate.a, rate.b) == (0.5, 0.75)
    assert rate.difference.estimate == pytest.approx(0.25)
    assert rate.test.name == "paired score test (t)"
    assert (rate.test.b_better, rate.test.a_better) == (2, 1)


def test_a_clear_win_of_b_is_said_as_b_better() -> None:
    a, b = _runs({f"t{i}": ("failure", "success") for i in range(12)})
    paired = paired_comparison(a, b, seed=1)
    assert paired.significant
    assert paired.verdict().startswith("B is better than A")
    a, b = b, a
    assert paired_comparison(a, b, seed=1).verdict().startswith("B is worse than A")


def test_the_pooled_rate_counts_both_runs_outcomes() -> None:
    # no task changed: the spread of the differences says nothing, the pooled rate decides
    pairs = {f"s{i}": ("success", "success") for i in range(6)}
    pairs.update({f"f{i}": ("failure", "failure") for i in range(18)})
    a, b = _runs(pairs)
    paired = paired_comparison(a, b, seed=1)
    ones = [1] * 6 + [0] * 18
    # each task's successes of both runs together, over both runs' trials
    assert paired.minimum_detectable is not None
    assert paired.minimum_detectable == pytest.approx(
        stats.detectable_difference(ones, ones, [1] * 24, seed=1))
    assert paired.minimum_detectable != pytest.approx(
        stats.detectable_difference([2 * x for x in ones], [2 * x for x in ones], [1] * 24,
                                    seed=1))


def test_a_task_one_run_did_not_score_is_not_paired() -> None:
    a = {"t": [_o("t", "success")], "e": [_o("e", "success")]}
    b = {"t": [_o("t", "failure")], "e": [_o("e", "error", error="infrastructure")]}
    paired = paired_comparison(a, b, seed=1)
    assert paired.tasks == ["t"]


def test_how_a_task_changed() -> None:
    assert TaskPair(_o("t", "failure", 0.5), _o("t", "failure", 0.5)).change == "same"
    assert TaskPair(_o("t", "failure", 0.5), _o("t", "failure", 0.7)).change == "improved"
    assert TaskPair(_o("t", "failure", 0.7), _o("t", "failure", 0.5)).change == "regressed"
    timeout = _o("t", "error", error="timeout")
    infra = _o("t", "error", error="infrastructure")
    assert TaskPair(timeout, infra).change == "changed"
    assert TaskPair(timeout, _o("t", "error", error="timeout")).change == "same"
