"""evals.results.stats against values published or worked out by hand (not against itself)."""

from __future__ import annotations

import math

import pytest
from scipy.stats import binom as scipy_binom
from scipy.stats import binomtest
from scipy.stats import chi2 as scipy_chi2
from scipy.stats import gamma as scipy_gamma
from scipy.stats import t as scipy_t

from evals.results import stats


def test_wilson_interval_of_7_in_10_is_the_textbook_one() -> None:
    # Wilson (1927) / Newcombe (1998) table: 7/10 -> 0.3968 to 0.8922.
    low, high = stats.wilson_interval(7, 10)
    assert (round(low, 4), round(high, 4)) == (0.3968, 0.8922)


@pytest.mark.parametrize(("k", "n"), [(0, 10), (1, 1), (3, 17), (50, 154), (154, 154)])
def test_wilson_interval_agrees_with_scipy_binomtest(k: int, n: int) -> None:
    ci = binomtest(k, n).proportion_ci(method="wilson")
    low, high = stats.wilson_interval(k, n)
    assert low == pytest.approx(ci.low, abs=1e-12) and high == pytest.approx(ci.high, abs=1e-12)


def test_wilson_interval_of_nothing_in_ten() -> None:
    low, high = stats.wilson_interval(0, 10)
    assert low == 0.0 and round(high, 4) == 0.2775


def test_wilson_refuses_counts_that_are_not_a_proportion() -> None:
    with pytest.raises(ValueError):
        stats.wilson_interval(3, 0)
    with pytest.raises(ValueError):
        stats.wilson_interval(4, 3)


def test_success_rate_interval_with_one_trial_per_task_is_plain_wilson() -> None:
    ci = stats.success_rate_interval([1] * 7 + [0] * 3, [1] * 10)
    assert ci is not None and ci.method == "wilson" and ci.estimate == 0.7
    assert (round(ci.low, 4), round(ci.high, 4)) == (0.3968, 0.8922)


def test_trials_that_always_agree_count_as_one_trial_per_task_not_five() -> None:
    # 5 tasks x 5 trials, each task all-or-nothing: 3 solved. Cluster variance of the pooled
    # rate = sum((p_i - 0.6)^2) / (m (m - 1)) = (3*0.16 + 2*0.36) / 20 = 0.06; SRS variance =
    # 0.6*0.4/25 = 0.0096; design effect 6.25, kept at most 5 (a task never counts as less
    # than one trial): effective n 5, at the upper end, so nothing estimated and no t; 2
    # failures of 5, so the upper end is the Poisson one.
    assert stats.design_effect([5, 5, 5, 0, 0], [5] * 5) == pytest.approx(5.0)
    ci = stats.success_rate_interval([5, 5, 5, 0, 0], [5] * 5)
    assert ci is not None
    assert (ci.low, ci.high) == pytest.approx(stats.modified_wilson_interval(3.0, 5.0))
    naive = stats.wilson_interval(15, 25)
    assert ci.high - ci.low > 1.5 * (naive[1] - naive[0])


def test_the_design_effect_is_estimated_between_its_bounds_with_a_t_quantile() -> None:
    # 8 tasks x 4 trials with some spread between tasks: 1 < deff < 4.
    wins, trials = [4, 3, 0, 1, 0, 2, 0, 0], [4] * 8
    deff = stats.design_effect(wins, trials)
    assert 1 < deff < 4
    ci = stats.success_rate_interval(wins, trials)
    assert ci is not None and "t with 7 df" in ci.method
    n_eff = 32 / deff
    t = 2.3646242510102993  # scipy.stats.t.ppf(0.975, 7)
    assert (ci.low, ci.high) == pytest.approx(
        stats.wilson_interval(10 / 32 * n_eff, n_eff, quantile=t))


def test_independent_looking_trials_have_no_design_effect() -> None:
    # Every task 2/4 successes: the tasks do not differ, so trials are as good as independent.
    assert stats.design_effect([2, 2, 2, 2], [4, 4, 4, 4]) == 1.0
    assert stats.success_rate_interval([], []) is None


def test_mean_score_interval_matches_the_normal_interval_for_many_tasks() -> None:
    scores = [[1.0]] * 60 + [[0.0]] * 140  # p = 0.3, n = 200
    ci = stats.mean_score_interval(scores)
    assert ci is not None and ci.estimate == pytest.approx(0.3)
    half = 1.96 * math.sqrt(0.3 * 0.7 / 200)  # 0.0635
    assert ci.low == pytest.approx(0.3 - half, abs=0.01)
    assert ci.high == pytest.approx(0.3 + half, abs=0.01)


def test_mean_score_interval_counts_tasks_not_trials() -> None:
    # Repeating every task's score five times adds no information about other tasks.
    one = [[1.0], [0.0], [0.5], [1.0], [0.0], [0.0], [1.0], [0.25]]
    five = [s * 5 for s in one]
    a, b = stats.mean_score_interval(five), stats.mean_score_interval(one)
    assert a is not None and b is not None
    assert a.high - a.low >= b.high - b.low


def test_mean_score_of_identical_scores_is_not_zero_width() -> None:
    ci = stats.mean_score_interval([[1.0], [1.0], [1.0]])
    assert ci is not None and ci.high == 1.0 and ci.low < 0.5
    assert stats.mean_score_interval([[], []]) is None


def test_pass_at_k_and_pass_all_k_by_hand() -> None:
    # n=5 trials, c=2 successes, k=2: pass@2 = 1 - C(3,2)/C(5,2) = 1 - 3/10; pass^2 = C(2,2)/C(5,2).
    assert stats.pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert stats.pass_all_k(5, 2, 2) == pytest.approx(0.1)
    assert stats.pass_at_k(5, 2, 1) == pytest.approx(0.4) == stats.pass_all_k(5, 2, 1)
    assert stats.pass_at_k(5, 0, 5) == 0.0 and stats.pass_at_k(5, 1, 5) == 1.0
    assert stats.pass_all_k(5, 4, 5) == 0.0 and stats.pass_all_k(5, 5, 5) == 1.0
    with pytest.raises(ValueError):
        stats.pass_at_k(3, 1, 4)


def test_pass_k_table_counts_only_tasks_with_k_scored_trials() -> None:
    at, every = stats.pass_k_table({"a": (2, 5), "b": (5, 5), "c": (0, 5), "d": (1, 2)}, 5)
    assert at["value"] == pytest.approx(2 / 3) and at["tasks"] == 3  # d has 2 trials only
    assert at["tasks_left_out"] == 1
    assert every["value"] == pytest.approx(1 / 3)
    assert at["by_task"] == {"a": 1.0, "b": 1.0, "c": 0.0, "d": None}
    assert at["by_k"]["1"] == pytest.approx((0.4 + 1.0 + 0.0) / 3)  # the same three tasks


def test_flaky_means_scored_trials_disagree() -> None:
    assert stats.flaky([("success", 1.0), ("failure", 0.0)])
    assert stats.flaky([("failure", 0.5), ("failure", 0.0)])
    assert not stats.flaky([("failure", 0.0)] * 3)


def test_paired_difference_test_and_interval_agree() -> None:
    assert stats.paired_difference([], []) is None
    diffs_a = [[0.0]] * 30 + [[0.0]] * 60 + [[1.0]] * 10
    diffs_b = [[1.0]] * 30 + [[0.0]] * 60 + [[0.0]] * 10  # mean difference 0.2
    found = stats.paired_difference(diffs_a, diffs_b)
    assert found is not None and found.interval.estimate == pytest.approx(0.2)
    assert found.agree and found.test.p_value < 0.01 and found.interval.low > 0
    assert (found.test.b_better, found.test.a_better) == (30, 10)
    # McNemar's statistic (b - c) / sqrt(b + c) = 20 / sqrt(40) at delta = 0, t with 99 df
    assert found.test.p_value == pytest.approx(
        2 * scipy_t.sf(20 / math.sqrt(40), 99), rel=1e-9)
    # the interval's ends are where the same statistic reaches the critical value
    crit = scipy_t.ppf(0.975, 99)
    for end in (found.interval.low, found.interval.high):
        second = 0.4
        var = max(second - 2 * end * 0.2 + end * end, abs(end) - end * end)
        assert abs((0.2 - end) / math.sqrt(var / 100)) == pytest.approx(crit, rel=1e-6)


# --- Brown, Cai and DasGupta's modified Wilson interval (2001, section 4.1.1) ----------------


@pytest.mark.parametrize(("x", "n", "lam"), [(1, 24, 0.051), (2, 24, 0.355), (1, 50, 0.051),
                                             (2, 7, 0.355), (3, 60, 0.818), (1, 100, 0.051)])
def test_the_lower_end_at_few_successes_is_their_poisson_bound(x: int, n: int, lam: float) -> None:
    # their table at 95%: lambda = 0.051, 0.355, 0.818 for x = 1, 2, 3 (three decimals)
    low, high = stats.modified_wilson_interval(x, n)
    assert low == pytest.approx(lam / n, abs=0.0005 / n)
    assert low == pytest.approx(scipy_chi2.ppf(0.05, 2 * x) / 2 / n, rel=1e-9)
    assert high == stats.wilson_interval(x, n)[1]
    # and the upper end, symmetrically, at as few failures
    mirror = stats.modified_wilson_interval(n - x, n)
    assert mirror == pytest.approx((1 - high, 1 - low), abs=1e-12)


@pytest.mark.parametrize("n", [101, 154, 1000])
def test_past_100_tasks_one_to_three_successes_take_the_poisson_end(n: int) -> None:
    # their rule stopped at 100 tasks, the largest they studied; at WAA's 154 the dip stayed
    # (83.8% at a rate of 0.115%)
    for x, lam in ((1, 0.0513), (2, 0.3554), (3, 0.8177)):
        low, high = stats.modified_wilson_interval(x, n)
        assert low == pytest.approx(lam / n, rel=1e-3) and high == stats.wilson_interval(x, n)[1]
        assert stats.modified_wilson_interval(n - x, n)[1] == pytest.approx(1 - lam / n)


def test_the_poisson_bound_follows_the_intervals_level() -> None:
    low, _ = stats.modified_wilson_interval(2, 24, 0.90)
    assert low == pytest.approx(scipy_chi2.ppf(0.10, 4) / 2 / 24, rel=1e-9)


@pytest.mark.parametrize(("x", "n"), [(0, 24), (3, 24), (12, 24), (21, 24), (24, 24), (4, 60),
                                      (4, 154), (77, 154), (150, 154), (5, 5)])
def test_wilson_is_unchanged_where_their_rule_does_not_reach(x: int, n: int) -> None:
    assert stats.modified_wilson_interval(x, n) == stats.wilson_interval(x, n)


def test_a_run_of_one_success_in_24_tasks_reports_the_poisson_lower_end() -> None:
    # plain Wilson gave 1/24 -> [0.74%, 20.2%], leaving out rates just below 0.74% that give
    # one success in 24 tasks 14% of the time
    ci = stats.success_rate_interval([1] + [0] * 23, [1] * 24)
    assert ci is not None and ci.low == pytest.approx(0.0513 / 24, abs=1e-6)
    assert ci.high == pytest.approx(stats.wilson_interval(1, 24)[1])
    two = stats.success_rate_interval([1, 1] + [0] * 22, [1] * 24)
    assert two is not None and two.low == pytest.approx(0.35536 / 24, abs=1e-6)


def test_effective_counts_between_whole_numbers_get_a_bound_between_theirs() -> None:
    # 24 tasks x 5 trials, one task 2/5 and the rest never: each task counts once, effective
    # 0.4 successes of 24; the lower end is the Gamma quantile at shape 0.4 (below Wilson's)
    ci = stats.success_rate_interval([2] + [0] * 23, [5] * 24)
    assert ci is not None
    assert ci.low == pytest.approx(scipy_gamma.ppf(0.05, 0.4) / 24, rel=1e-9)
    assert ci.low < stats.wilson_interval(0.4, 24)[0]
    # the lower end never falls as the effective successes rise, through the rule's edge
    lows = [stats.modified_wilson_interval(k / 100, 37.5)[0] for k in range(1, 1001)]
    assert all(b >= a for a, b in zip(lows, lows[1:], strict=False))
    # with a wide t quantile, Wilson's end can be the wider one: it is kept
    wide = stats.modified_wilson_interval(1, 10, quantile=12.7)
    assert wide == stats.wilson_interval(1, 10, quantile=12.7)


def _lowest_coverage(tasks: int, start: float, end: float) -> float:
    """The lowest exact coverage of the reported interval (one trial per task) for true rates
    in [start, end]: just outside each interval's ends, where the coverage drops."""
    counts = range(tasks + 1)
    ends = []
    for k in counts:
        ci = stats.success_rate_interval([1] * k + [0] * (tasks - k), [1] * tasks)
        assert ci is not None
        ends.append((ci.low, ci.high))
    rates = [p for lo, hi in ends for p in (lo - 1e-9, hi + 1e-9) if start <= p <= end]
    return min(float(scipy_binom.pmf([k for k in counts if ends[k][0] <= p <= ends[k][1]],
                                     tasks, p).sum()) for p in [*rates, start, end])


def test_the_coverage_dips_near_0_and_1_are_closed() -> None:
    # summed over every outcome (no simulation): plain Wilson fell to 83.7% at 24 tasks (a rate
    # just below 0.74%) and to 89.4% between 2% and 98%; with the Poisson ends, 91.6% both
    assert _lowest_coverage(24, 1e-9, 1 - 1e-9) == pytest.approx(0.9158, abs=5e-5)
    assert _lowest_coverage(24, 0.02, 0.98) == pytest.approx(0.9158, abs=5e-5)
    assert _lowest_coverage(10, 1e-9, 1 - 1e-9) > 0.915
    assert _lowest_coverage(60, 1e-9, 1 - 1e-9) > 0.915
    assert _lowest_coverage(154, 1e-9, 1 - 1e-9) > 0.925  # WAA's 154 tasks: 83.8% before
