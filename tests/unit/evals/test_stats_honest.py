"""The statistics where WAA's results live: low rates, few tasks, unequal trials, ties, agent
errors. Each case is one that the earlier statistics got wrong (see docs/results.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.report.compare import paired_comparison
from evals.results import stats
from evals.run.metrics import TaskOutcome, aggregate, statistics
from evals.run.variations import compare_styles


def _trial(tid: str, status: str, score: float | None = None, trial: int = 1,
           error_type: str | None = None) -> TaskOutcome:
    if score is None:
        score = 1.0 if status == "success" else (0.0 if status == "failure" else None)
    return TaskOutcome(tid, "d", status, score, 1, error_type=error_type, trial=trial)


def _run(rows: dict[str, list[tuple[str, float | None]]]) -> dict[str, list[TaskOutcome]]:
    return {tid: [_trial(tid, s, sc, i + 1) for i, (s, sc) in enumerate(trials)]
            for tid, trials in rows.items()}


def test_identical_scores_summed_in_another_order_are_a_tie() -> None:
    # 0.1 + 0.2 + 0.3 and 0.3 + 0.2 + 0.1 differ in floating point (0.6000000000000001 and
    # 0.6): summed naively, every task looked worse in B.
    order_a = [("failure", 0.1), ("failure", 0.2), ("failure", 0.3)]
    order_b = [("failure", 0.3), ("failure", 0.2), ("failure", 0.1)]
    a = _run({f"t{i}": order_a for i in range(10)})
    b = _run({f"t{i}": order_b for i in range(10)})
    paired = paired_comparison(a, b)

    assert paired.better_in_b == [] and paired.worse_in_b == []
    assert paired.mean_score is not None
    assert (paired.mean_score.test.b_better, paired.mean_score.test.a_better) == (0, 0)
    assert paired.mean_score.test.p_value == 1.0 and paired.mean_score.difference.estimate == 0
    assert not paired.significant


def test_pass_k_by_k_is_over_one_task_set_and_goes_the_right_way() -> None:
    # "x" has only 2 counted trials (both successes), "y" 3 failures: averaging each k over
    # the tasks that have k trials gave pass@1..3 = 0.444, 0.556, 0.5 (falling at k = 3).
    at, every = stats.pass_k_table({"x": (2, 2), "y": (0, 3), "z": (1, 3)}, 3)
    values_at = [at["by_k"][str(j)] for j in (1, 2, 3)]
    values_all = [every["by_k"][str(j)] for j in (1, 2, 3)]
    assert values_at == sorted(values_at)  # pass@k never falls as k grows
    assert values_all == sorted(values_all, reverse=True)  # pass^k never rises
    assert at["tasks"] == every["tasks"] == 2 and at["tasks_left_out"] == 1
    assert values_at == pytest.approx([1 / 6, 1 / 3, 1 / 2], abs=1e-6)
    assert at["by_task"]["x"] is None


def test_every_task_at_zero_gives_an_interval_with_width() -> None:
    # 0/24 with one trial: Wilson's [0, 13.8%]; the bootstrap gave [0, 0].
    score = stats.mean_score_interval([[0.0]] * 24)
    assert score is not None and score.low == 0.0 and score.high == pytest.approx(0.1380, abs=1e-4)
    rate = stats.success_rate_interval([0] * 24, [1] * 24)
    assert rate is not None and (rate.low, rate.high) == (score.low, score.high)
    # 24 tasks x 5 trials, nothing solved: the spread between tasks is unknown, so each task
    # counts once (not 120 independent trials: [0, 3.1%])
    five = stats.success_rate_interval([0] * 24, [5] * 24)
    assert five is not None and five.high == pytest.approx(0.1380, abs=1e-4)
    # one task solved on 2 of 5 trials, the rest never: still each task once
    one = stats.success_rate_interval([2] + [0] * 23, [5] * 24)
    assert one is not None and one.high > 0.1
    # and at the ceiling
    top = stats.success_rate_interval([5] * 24, [5] * 24)
    assert top is not None and top.low == pytest.approx(1 - 0.1380, abs=1e-4) and top.high == 1


def test_paired_difference_of_no_change_is_not_zero_width() -> None:
    # two runs of 24 tasks, nothing solved by either: the bootstrap's interval was [0, 0]
    nothing = _run({f"t{i}": [("failure", None)] for i in range(24)})
    compared = paired_comparison(nothing, nothing)
    assert compared.success_rate is not None
    difference = compared.success_rate.difference
    assert difference.low < -0.1 and difference.high > 0.1
    same = stats.paired_difference([[0.0]] * 24, [[0.0]] * 24)
    assert same is not None and same.test.p_value == 1.0
    assert same.interval.low < -0.1 and same.interval.high > 0.1 and same.agree


def test_styles_keep_every_trial_of_the_originals() -> None:
    # The original task "t" succeeded on trial 1 and failed on trial 2: keyed by task, only
    # the last (a failure) was kept and the originals' rate read 0%.
    rows = [("t", "success", 1.0), ("t", "failure", 0.0),
            ("t__formal_1", "success", 1.0), ("t__formal_1", "success", 1.0)]
    styles = {r.style: r for r in compare_styles(rows)}
    assert styles["formal"].original_success_rate == 0.5
    assert styles["formal"].difference is not None


def test_unequal_trials_compare_the_same_number_of_trials() -> None:
    # The same agent: A ran each task once (a failure), B five times (its first trial a
    # failure, then one success in four). On per-task rates every task looked better in B
    # (0.2 > 0), and the sign test said "B is better", p = 2e-6.
    a = _run({f"t{i}": [("failure", None)] for i in range(20)})
    b = _run({f"t{i}": [("failure", None), ("success", None)] + [("failure", None)] * 3
              for i in range(20)})
    paired = paired_comparison(a, b)

    assert not paired.significant and paired.better_in_b == []
    assert paired.verdict().startswith("no detectable difference")
    assert paired.success_rate is not None and paired.success_rate.difference.estimate == 0
    assert paired.trials_cut == 20


def test_with_trials_the_counts_say_which_side_did_better() -> None:
    a = _run({f"t{i}": [("failure", None)] * 3 for i in range(8)})
    b = _run({f"t{i}": [("success", None)] * 2 + [("failure", None)] for i in range(8)})
    b["t0"] = [_trial("t0", "failure", None, i + 1) for i in range(3)]
    paired = paired_comparison(a, b)
    assert paired.success_rate is not None
    assert (paired.success_rate.test.b_better, paired.success_rate.test.a_better) == (7, 0)
    assert sorted(paired.better_in_b) == [f"t{i}" for i in range(1, 8)]
    assert paired.significant and paired.success_rate.difference.low > 0


def test_an_agent_error_counts_as_a_failure_and_infrastructure_does_not() -> None:
    items = [_trial("ok", "success"), _trial("hard", "failure"),
             _trial("crash", "error", error_type="agent"),
             _trial("slow", "error", error_type="timeout"),
             _trial("vm", "error", error_type="infrastructure")]
    counts = aggregate(items)
    assert counts["success_rate"] == pytest.approx(1 / 4)  # 4 counted: 2 outcomes, 2 agent
    assert counts["success_rate_outcomes_only"] == pytest.approx(1 / 2)
    assert counts["success_rate_all_errors_as_failures"] == pytest.approx(1 / 5)
    assert counts["avg_score"] == pytest.approx(1 / 4) and counts["agent_errors"] == 2
    found = statistics(items)
    assert found["success_rate_ci"]["estimate"] == pytest.approx(0.25)
    assert found["success_rate_ci_outcomes_only"]["estimate"] == pytest.approx(0.5)
    assert found["by_domain_ci"]["d"]["estimate"] == pytest.approx(0.25)


def test_a_crashing_agent_is_not_better_than_a_polite_one() -> None:
    polite = _run({f"t{i}": [("failure", None)] for i in range(12)})
    crashing = {f"t{i}": [_trial(f"t{i}", "error", error_type="agent")] for i in range(12)}
    paired = paired_comparison(polite, crashing)
    assert len(paired.tasks) == 12  # the crashes are paired, as failures
    assert paired.success_rate is not None and paired.success_rate.b == 0


def test_the_detectable_difference_is_the_tests_own() -> None:
    # 24 tasks, one trial, a 10% rate: the normal formula promised about 24 points; the
    # test needs more, and the figure must be one at which it finds the gain 80% of the time.
    a = [1] * 2 + [0] * 22
    b = [0, 1, 1] + [0] * 21
    mdd = stats.detectable_difference(a, b, [1] * 24)
    assert mdd is not None and 0.2 < mdd < 0.6
    assert stats.detectable_difference(a, b, [1] * 24) == mdd  # seeded
    assert stats.detectable_difference([0], [0], [1]) is None


def test_domains_carry_intervals_in_the_summary_and_on_the_page(tmp_path: Path) -> None:
    from evals.report.viewer import render_run
    from evals.run.metrics import compute_summary, format_summary
    from tests.support.run_folder import RunFolder

    run = RunFolder(tmp_path, "domains")
    for i in range(6):
        run.add_task(f"n{i}", domain="notepad", status="success" if i < 2 else "failure")
    run.add_task("c0", domain="clock", status="failure")
    path = run.finish()
    summary = compute_summary(path)
    notepad = summary["by_domain_ci"]["notepad"]
    low, high = stats.modified_wilson_interval(2, 6)
    assert (notepad["low"], notepad["high"]) == (round(low, 6), round(high, 6))
    assert summary["by_domain_ci"]["clock"]["high"] > 0.5  # 0 of 1: wide, not [0, 0]
    interval = f"[{100 * low:.1f}%, {100 * high:.1f}%]"
    assert interval in format_summary(summary)
    assert interval in render_run(path)


def test_the_page_says_agent_errors_count_and_gives_the_outcomes_only_rate(
        tmp_path: Path) -> None:
    from evals.report.viewer import render_run
    from tests.support.run_folder import RunFolder

    run = RunFolder(tmp_path, "crashes")
    run.add_task("a", status="success")
    run.add_task("b", status="error", error_type="agent")
    page = render_run(run.finish())
    assert "agent errors as failures; 100.0% over outcomes only" in page


def test_a_variations_headline_counts_an_original_and_its_rewordings_as_one_cluster() -> None:
    from waa_client.variations import base_of

    # 7 originals, each with 3 rewordings that end as the original did: 28 rows, 7 clusters
    items = []
    for i in range(7):
        status = "success" if i < 3 else "failure"
        items.append(_trial(f"t{i}", status))
        items += [_trial(f"t{i}__formal_{j}", status) for j in range(1, 4)]
    clustered = statistics(items, base_task=base_of)["success_rate_ci"]
    naive = statistics(items)["success_rate_ci"]
    assert clustered["estimate"] == naive["estimate"] == pytest.approx(3 / 7)
    assert "design effect" in clustered["method"]
    assert clustered["high"] - clustered["low"] > 1.5 * (naive["high"] - naive["low"])


def test_a_task_of_ten_trials_weighs_as_ten_beside_tasks_of_one() -> None:
    # Four tasks of one trial, four of ten, each all or nothing: the pooled rate varies as if
    # each task were one draw weighted by its trials, sum(n^2) / sum(n) = 404 / 44 times the
    # variance of 44 independent trials. Capped at the mean trials per task (5.5), the rate
    # interval covered 89.7% at 154 tasks of one or ten trials.
    deff = stats.design_effect([1, 0, 1, 0, 10, 0, 10, 0], [1, 1, 1, 1, 10, 10, 10, 10])
    assert deff == pytest.approx(404 / 44)
    ci = stats.success_rate_interval([1, 0, 1, 0, 10, 0, 10, 0], [1, 1, 1, 1, 10, 10, 10, 10])
    assert ci is not None and "design effect 9.18" in ci.method


def test_fractional_scores_are_given_no_less_spread_than_0_1_outcomes_of_their_means() -> None:
    # The same per-task means (0, 0.2 or 0.4 over five trials) as scores and as successes:
    # the scores' interval is the wider one. Counted as they were, a few tasks' skewed scores
    # looked steadier than they are (90-91% coverage at 10 to 24 tasks of five trials).
    means = [0.0] * 16 + [0.2] * 6 + [0.4] * 2
    scores = [[m] * 5 for m in means]
    outcomes = [[1.0] * round(m * 5) + [0.0] * (5 - round(m * 5)) for m in means]
    as_scores, as_outcomes = stats.mean_score_interval(scores), stats.mean_score_interval(outcomes)
    assert as_scores is not None and as_outcomes is not None
    assert as_scores.estimate == pytest.approx(as_outcomes.estimate)
    assert as_scores.high - as_scores.low > as_outcomes.high - as_outcomes.low


def test_a_score_difference_test_and_its_interval_agree() -> None:
    # Ten tasks of one trial a side, B 0.05 better on nine: the paired t statistic is 3.0
    # (p = 0.015). The 0/1 floor of the variance, which grows with the shift, made the
    # statistic rise and fall with it: the interval was [-0.27, +0.40] around that p-value.
    a = [[x] for x in (0.30, 0.40, 0.50, 0.20, 0.60, 0.35, 0.45, 0.55, 0.25, 0.50)]
    b = [[x + 0.05] for (x,) in a]
    b[0] = [0.30]
    found = stats.paired_difference(a, b)
    assert found is not None and found.agree
    assert found.test.p_value == pytest.approx(0.015, abs=0.001)
    assert 0.02 < found.interval.low < found.interval.estimate < found.interval.high < 0.07
    # Two runs with the same scores everywhere: the floor keeps the interval's width.
    same = stats.paired_difference(a, a)
    assert same is not None and same.interval.low < 0 < same.interval.high
