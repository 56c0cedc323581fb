"""The statistics of a run and of a pair of runs: intervals, pass@k, pass^k, paired tests.

Pure functions over plain numbers (no run folders here; :mod:`evals.run.metrics` and
:mod:`evals.report.compare` read those and call these). The quantiles and the t distribution are
:mod:`evals.results.quantiles`' (scipy's figures, without the cost of importing scipy in every
command that summarizes a run); the comparison's power simulation is numpy's and scipy's, loaded
when it runs. What is written here is how the project's data are fed to them, and why (beside
each choice).

Two estimands, named apart (``docs/results.md``):

- *this agent on these tasks*: what the agent would score on average if the same tasks were
  run again and again. The paired test of :func:`paired_difference` is about this one: a
  sign-flip permutation test is exact for "A and B are the same agent" on the tasks at hand.
- *the population of tasks*: what the agent would score on tasks like these, of which the
  benchmark is a sample. The run's intervals (:func:`success_rate_interval`,
  :func:`mean_score_interval`) are about this one: the unit is the task, and the trials of one
  task are not independent of each other (a hard task stays hard).

Scores are checker scores in [0, 1]; a trial is a success when its score is 1. Which trials count
(an agent's own errors count as failures; an infrastructure error is left out) is the caller's
rule (:mod:`evals.run.metrics`). Sums go through :func:`math.fsum`, which rounds once, so the same
scores in another order give the same figures (a tie stays a tie).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from evals.results.quantiles import gamma_quantile, normal_quantile, t_cdf, t_quantile
from oa_vm.kit.lazy import numpy as np
from oa_vm.kit.lazy import scipy_special as special

T = TypeVar("T")
CONFIDENCE = 0.95
DEFAULT_SEED = 20260
"""The seed of every simulation here when the caller gives none: a fixed one, so the same run
gives the same figures."""
ALPHA = 0.05
POWER = 0.80
"""The power the smallest detectable difference of :func:`detectable_difference` is quoted at."""
POWER_DRAWS = 1000
"""Simulated pairs per power evaluation of :func:`detectable_difference` (power error ~1.3%)."""


@dataclass(frozen=True)
class Interval:
    """A confidence interval for an estimate.

    Attributes:
        estimate: The point estimate.
        low, high: The interval's ends.
        confidence: Its level (0.95 for a 95% interval).
        method: How it was computed (``wilson``, ``sign-flip permutation test inverted``, ...).
    """

    estimate: float
    low: float
    high: float
    confidence: float
    method: str

    def to_json(self) -> dict[str, Any]:
        """``{"estimate", "low", "high", "confidence", "method"}``, rounded to 6 places."""
        return {
            "estimate": round(self.estimate, 6),
            "low": round(self.low, 6),
            "high": round(self.high, 6),
            "confidence": self.confidence,
            "method": self.method,
        }


# --- one run ----------------------------------------------------------------------------------


def wilson_interval(
    successes: float, n: float, confidence: float = CONFIDENCE, *, quantile: float | None = None
) -> tuple[float, float]:
    """The Wilson score interval for a binomial proportion ``successes / n``.

    The same interval as ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``, written
    as its formula because :func:`clustered_interval` feeds it an *effective* sample size,
    which is not an integer (binomtest takes integers only), and a t quantile in place of the
    normal one when the variance was estimated from few tasks. The unit tests check the two
    agree. Wilson rather than the Wald interval because it never has zero width at 0 or n
    successes (0/24 gives [0, 13.8%], not [0, 0]) and its coverage averages close to its
    level at small n (Brown, Cai and DasGupta, 2001); as every interval of a binomial but the
    conservative ones, it dips at some rates, most near 0 (at 24 tasks, 83.7% just below a
    rate of 0.74%; :func:`modified_wilson_interval` closes the dips at the ends). Not Jeffreys'
    or the mid-p interval, which that paper also recommends: summed exactly over every outcome
    (``bench/stats_coverage.py --exact``), at 24 tasks and a 5% rate all three cover 97.02%
    (the binomial's step, not the method), and at 10% Jeffreys falls to 89.3% where Wilson
    holds 97.2%.

    Args:
        quantile: The critical value (default: the normal quantile of ``confidence``).

    Raises:
        ValueError: ``n`` is not positive or ``successes`` is outside ``[0, n]``.
    """
    if n <= 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n and n > 0, got {successes}/{n}")
    z = normal_quantile(0.5 + confidence / 2) if quantile is None else quantile
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(max(0.0, p * (1 - p) / n + z * z / (4 * n * n))) / denom
    # At no successes (or no failures) the end is 0 (or 1) exactly; computed, it may round
    # to 1e-17 off it.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return float(low), float(high)


def modified_wilson_interval(
    successes: float, n: float, confidence: float = CONFIDENCE, *, quantile: float | None = None
) -> tuple[float, float]:
    """:func:`wilson_interval` with Brown, Cai and DasGupta's Poisson ends (2001, section 4.1.1).

    Wilson's lower end at 1 or 2 successes sits above rates that give such counts often: at 24
    tasks and a rate just below 0.74%, 1/24 is left out and the interval covers 83.7%. So, at 1
    or 2 successes (n <= 50) or 1 to 3 (n > 50), the lower end is the one-sided Poisson
    bound ``lambda / n``, ``lambda`` the ``1 - confidence`` quantile of a Gamma of shape
    ``successes`` (= chi2.ppf(1 - confidence, 2 x) / 2: 0.051, 0.355 and 0.818 at 95%, their
    table; the one-sided tail is the whole ``1 - confidence``, not half of it, as their table
    has it); the same for the upper end at as few failures. Their rule stops at n = 100, the
    largest n they studied; the same dip recurs at every n (83.8% at WAA's 154 tasks, a rate of
    0.115%), and 1 to 3 successes close it there as at 100 (92.7% at its lowest, summed exactly
    at 154 to 1,000 tasks; ``bench/stats_scores.py``).

    Effective counts are not integers (:func:`clustered_interval`): a count is taken as the
    whole number nearest it (the rule holds below 2.5 or 3.5), and ``lambda`` is the Gamma
    quantile at the count itself, which is their table at whole counts and grows smoothly
    between them, so the lower end never falls as successes rise. An end is only ever moved
    outward: with a t quantile Wilson's end can already be the wider one, and it is kept.

    Args:
        quantile: As :func:`wilson_interval` takes it.
    """
    low, high = wilson_interval(successes, n, confidence, quantile=quantile)
    below = 2.5 if n <= 50 else 3.5
    tail = 1 - confidence
    if 0 < successes < below:
        low = min(low, gamma_quantile(successes, tail) / n)
    if 0 < n - successes < below:
        high = max(high, 1 - gamma_quantile(n - successes, tail) / n)
    return low, high


def design_effect(successes: Sequence[float], outcomes: Sequence[int],
                  noise: Sequence[float] | None = None) -> float:
    """How much the clustering of trials in tasks inflates the variance of the pooled rate.

    The ratio of the cluster (by task) variance of the pooled rate to the variance it would
    have if every trial were independent (Kish's design effect), kept within ``[1,
    sum(n^2) / sum(n)]`` (``n``: each task's trials): trials of one task never count as more
    information than independent ones, nor as less than the task's one draw. The upper end is
    the mean trials per task when every task has as many; with unequal counts it is larger,
    since a task of ten trials then weighs ten times one of one trial (capped at the mean, the
    interval covered 89.7% at 154 tasks of one or ten trials). When it cannot be estimated
    (fewer than two tasks with any success, or with any failure: the spread between tasks is
    then unknown) it is the upper end, which counts each task once: the honest answer at the
    floor and at the ceiling, where the plain estimate would fall to 1 and make five trials of
    the same five tasks look like 25 independent ones. 1 when every task has one trial and no
    ``noise``.

    Args:
        successes: Successes (or summed scores) per task.
        outcomes: Counted trials per task (same order; each at least 1).
        noise: Per task, ``sum(x (1 - x))`` over its scores ``x`` (0 for 0/1 values): the
            spread a 0/1 outcome of each score's mean would add, counted into the tasks'
            spread (see :func:`mean_score_interval`).
    """
    n = [float(x) for x in outcomes]
    c = [float(x) for x in successes]
    extra = [0.0] * len(n) if noise is None else [float(x) for x in noise]
    m = len(n)
    total = math.fsum(n)
    if m == 0 or total <= 0 or (all(x == 1 for x in n) and not any(e > 0 for e in extra)):
        return 1.0
    mean_n = total / m
    most = math.fsum(x * x for x in n) / total
    if m < 2 or sum(1 for s in c if s > 0) < 2 or sum(
            1 for s, x in zip(c, n, strict=True) if s < x) < 2:
        return most
    p = math.fsum(c) / total
    srs = p * (1 - p) / total
    cluster = math.fsum((x / mean_n) ** 2 * ((s / x - p) ** 2 + e / (x * x))
                        for s, x, e in zip(c, n, extra, strict=True)) / (m * (m - 1))
    return min(most, max(1.0, cluster / srs))


def clustered_interval(
    sums: Sequence[float], counts: Sequence[int], confidence: float = CONFIDENCE, *,
    noise: Sequence[float] | None = None,
) -> Interval | None:
    """A 95% interval for a pooled mean of values in [0, 1] (successes or scores) by task.

    A Wilson interval (:func:`modified_wilson_interval`: Poisson ends at 1-3 successes or
    failures) over the effective sample size (the trials divided by :func:`design_effect`).
    With one trial per task and 0/1 values it is that interval of the plain counts. With
    several trials, the variance was estimated from the tasks, so the critical value is
    Student's t with (tasks - 1) degrees of freedom rather than the normal one (the
    small-sample correction; 2.07 against 1.96 at 24 tasks). Unlike a bootstrap, it never
    has zero width: when every task scored 0 it is [0, upper], with the upper end that of one
    trial per task. ``None`` when nothing was counted.

    Args:
        sums: Per task, the sum of its values (successes, or scores).
        counts: Per task, its counted trials (tasks with none are skipped).
        noise: Per task, as :func:`design_effect` takes it (scores only).
    """
    extra = [0.0] * len(counts) if noise is None else list(noise)
    kept = [(float(s), int(n), float(e))
            for s, n, e in zip(sums, counts, extra, strict=True) if n > 0]
    pairs = [(s, n) for s, n, _ in kept]
    total = sum(n for _, n in pairs)
    if total == 0:
        return None
    estimate = math.fsum(s for s, _ in pairs) / total
    deff = design_effect([s for s, _ in pairs], [n for _, n in pairs], [e for *_, e in kept])
    n_eff = total / deff
    several = any(n > 1 for _, n in pairs) and len(pairs) > 1
    # t only where the design effect was estimated from the tasks' spread; at the upper end
    # (not estimable) each task counts once and nothing was estimated
    estimated = several and deff < sum(n * n for _, n in pairs) / total
    quantile = t_quantile(len(pairs) - 1, 0.5 + confidence / 2) if estimated else None
    low, high = modified_wilson_interval(estimate * n_eff, n_eff, confidence, quantile=quantile)
    method = "wilson" if not several else (
        f"wilson, effective n {n_eff:.1f} (design effect {deff:.2f}"
        + (f", t with {len(pairs) - 1} df)" if estimated else ", each task counted once)")
    )
    return Interval(estimate, min(low, estimate), max(high, estimate), confidence, method)


def success_rate_interval(
    successes: Sequence[int], outcomes: Sequence[int], confidence: float = CONFIDENCE
) -> Interval | None:
    """A 95% interval for the success rate (successes / counted trials) of a run:
    :func:`clustered_interval` of the per-task successes. ``None`` when nothing was counted.

    Args:
        successes: Successes per task.
        outcomes: Counted trials per task (same order).
    """
    return clustered_interval([float(c) for c in successes], list(outcomes), confidence)


def mean_score_interval(
    scores_by_task: Sequence[Sequence[float]], confidence: float = CONFIDENCE
) -> Interval | None:
    """A 95% interval for the mean score over all counted trials: :func:`clustered_interval`
    of the per-task scores. ``None`` when nothing was counted.

    Scores between 0 and 1 are counted as the 0/1 outcomes of the same means would be: each
    score ``x`` adds the spread ``x (1 - x)`` of a success drawn with chance ``x`` to its
    task's (``noise``). Why: the spread between a few tasks' mean scores, estimated as it is,
    is too small more often than not when most scores are near 0 (a skewed spread); the
    interval then covered 90-91% at 10 to 24 tasks of five trials (task means of mean 0.1),
    where the 0/1 outcomes of the same tasks covered 94.6%. Counted as 0/1 outcomes, scores
    are never given less spread than a success rate of the same mean, which holds its level
    there; with 0/1 scores nothing is added and it is the success rate's interval.

    Args:
        scores_by_task: Each task's scores, one per counted trial (tasks with none skipped).
    """
    groups = [list(map(float, s)) for s in scores_by_task if len(s)]
    return clustered_interval([math.fsum(g) for g in groups], [len(g) for g in groups],
                              confidence, noise=[math.fsum(x * (1 - x) for x in g)
                                                 for g in groups])


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimator of pass@k: the chance that at least one of ``k`` trials drawn
    without replacement from ``n`` trials (``c`` of them successes) succeeds,
    ``1 - C(n-c, k) / C(n, k)`` (Chen et al., 2021, "Evaluating Large Language Models Trained on
    Code").

    Raises:
        ValueError: not ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    _check_counts(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_all_k(n: int, c: int, k: int) -> float:
    """The unbiased estimator of pass^k: the chance that all ``k`` trials drawn without
    replacement from ``n`` (``c`` successes) succeed, ``C(c, k) / C(n, k)`` (Yao et al., 2024,
    "tau-bench"). With ``n == k`` it is 1 when every trial succeeded, else 0.

    Raises:
        ValueError: not ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    _check_counts(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _check_counts(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


def pass_k_table(
    counts: Mapping[str, tuple[int, int]], k: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """pass@k and pass^k per task and over tasks, for every k from 1 to ``k``.

    Every figure of a table is a mean over ONE set of tasks: those with at least ``k`` counted
    trials (an infrastructure error took the others'). Averaging each k over the tasks that
    happen to have k trials would mix task sets, and the curve could go the wrong way
    (pass@k must not fall as k grows, pass^k must not rise); the tasks left out are counted.

    Args:
        counts: ``{task_id: (successes, counted trials)}``.
        k: The trials asked for per task.

    Returns:
        ``(pass_at_k, pass_all_k)``, each ``{"k", "value", "tasks", "tasks_left_out",
        "by_k": {"1": ...}, "by_task": {task_id: value or None}}`` (``value``: at ``k``;
        ``None`` when no task has k counted trials).
    """
    k = max(k, 1)
    kept = {tid: cn for tid, cn in counts.items() if cn[1] >= k}
    results = []
    for estimator in (pass_at_k, pass_all_k):
        by_k: dict[str, float | None] = {}
        for j in range(1, k + 1):
            values = [estimator(n, c, j) for c, n in kept.values()]
            by_k[str(j)] = round(math.fsum(values) / len(values), 6) if values else None
        by_task = {
            tid: (round(estimator(n, c, k), 6) if n >= k else None)
            for tid, (c, n) in counts.items()
        }
        results.append({
            "k": k,
            "value": by_k[str(k)],
            "tasks": len(kept),
            "tasks_left_out": len(counts) - len(kept),
            "by_k": by_k,
            "by_task": by_task,
        })
    return results[0], results[1]


def flaky(trials: Sequence[tuple[str, float | None]]) -> bool:
    """Whether a task's scored trials disagree: their statuses or scores are not all equal.

    Args:
        trials: ``(status, score)`` of each scored trial (``success``/``failure``).
    """
    return len(set(trials)) > 1


# --- two runs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairedTest:
    """A paired test of run B against run A.

    Attributes:
        name: The test (``McNemar exact``, ``sign-flip permutation``, ``sign test``).
        b_better: Tasks on which B did better.
        a_better: Tasks on which A did better.
        p_value: Two-sided p-value.
    """

    name: str
    b_better: int
    a_better: int
    p_value: float

    def to_json(self) -> dict[str, Any]:
        """``{"test", "b_better", "a_better", "p_value"}``."""
        return {"test": self.name, "b_better": self.b_better, "a_better": self.a_better,
                "p_value": round(self.p_value, 6)}


@dataclass(frozen=True)
class PairedDifference:
    """B minus A over paired tasks: one test, and the interval obtained by inverting it.

    Attributes:
        interval: The mean per-task difference and its interval: every shift the test does
            not reject at ``1 - confidence``.
        test: The test of "no difference" (the shift 0).
        tasks: The paired tasks.
    """

    interval: Interval
    test: PairedTest
    tasks: int

    @property
    def agree(self) -> bool:
        """Whether the test and the interval say the same (rejects iff 0 is outside).

        They agree by construction unless the test's p-value is not monotone in the shift
        (possible for a permutation test), which the verdict then says.
        """
        rejects = self.test.p_value <= 1 - self.interval.confidence
        excludes = self.interval.low > 0 or self.interval.high < 0
        return rejects == excludes


def equal_trials(a: Sequence[T], b: Sequence[T]) -> tuple[list[T], list[T]]:
    """Both sides of one task cut to the same number of trials (the first ones of each).

    Why: a task's rate over 5 trials and over 1 trial have the same mean but not the same
    spread, so their difference is not symmetric about 0 even for the same agent, and a
    paired test on it (sign test or sign flips) calls a difference far more often than 5%
    (18.6% at 1 against 5 trials on 154 tasks). On equal trials, A and B are exchangeable under
    "same agent", which makes the sign-flip test exact.
    """
    n = min(len(a), len(b))
    return list(a[:n]), list(b[:n])


def _score_statistic(mean: float, second: float, delta: float, m: int, trials: int,
                     binary: bool = True) -> float:
    """The paired score statistic of "the mean per-task difference is ``delta``".

    ``(mean - delta) / sqrt(V / m)`` with ``V`` the variance of a task's difference *under the
    hypothesis*: the spread about ``delta`` (``second - 2 delta mean + delta^2``), but never
    less than a difference of mean ``delta`` can have. A task's difference over ``trials``
    0/1 trials is 0 or at least ``1/trials`` in size, so its variance is at least
    ``|delta| / trials - delta^2``. That floor is what keeps the interval honest at the floor
    and the ceiling: with every difference 0 (no task changed) the plain spread is 0 and the
    interval would shrink to [0, 0]; with the floor it is about +-q^2 / (tasks x trials), as
    Wilson's interval is at 0 successes.

    Scores between 0 and 1 (not ``binary``) take the floor only where their differences show
    no spread at all (every task's the same): a difference of scores may be as small as it
    likes, and a floor that grows with ``delta`` where the data have a spread of their own made
    the statistic rise and fall with ``delta`` (10 tasks a trial, nine of them 0.05 better:
    p = 0.015 at 0, yet the interval [-0.27, +0.40]). Without it, the statistic is the paired
    t statistic, which falls steadily as ``delta`` moves from the mean: the test and its
    interval agree.
    """
    spread = max(0.0, second - 2 * delta * mean + delta * delta)
    if binary or second - mean * mean <= 1e-12:
        spread = max(spread, abs(delta) / trials - delta * delta)
    if spread <= 0:
        return 0.0 if mean == delta else math.inf
    return (mean - delta) / math.sqrt(spread / m)


def paired_difference(
    a_by_task: Sequence[Sequence[float]],
    b_by_task: Sequence[Sequence[float]],
    confidence: float = CONFIDENCE,
) -> PairedDifference | None:
    """B minus A: the mean per-task difference, ONE test of it, and the interval inverting it.

    Per task, both sides are cut to the same number of trials (:func:`equal_trials`) and the
    difference of their means taken (``math.fsum``: identical scores in any order tie). The
    test is the paired *score* test of "the mean difference is ``delta``": the statistic of
    :func:`_score_statistic` against Student's t with (tasks - 1) degrees of freedom (the
    small-sample correction). Its p-value is at ``delta = 0``; the interval is every ``delta`` it
    does not reject, so the test rejects "no difference" exactly when the interval leaves out 0
    (an interval and a test that agree by construction, as Wilson's interval and the score
    test of a proportion do; Tango, 1998, for paired proportions). On one 0/1 trial a side, at
    ``delta = 0`` it is McNemar's test, ``(b - c) / sqrt(b + c)``. Why not a bootstrap: its
    interval had zero width when every task scored the same, and at 24 tasks left out 0 in
    10% of same-agent pairs; why not the exact sign test: its hypothesis (the median) is not
    the interval's (the mean), and with trials they contradicted each other. Why not Lancaster's
    mid-p (Agresti and Gottard, 2007, "Nonconservative exact small-sample inference for
    discrete data"), which a 5% test at 24 tasks and a 5-10% rate would need to call a
    same-agent difference more often than 0.2-2.8%: measured (``bench/stats_coverage.py
    --exact --candidates``), at one trial this test calls exactly what the mid-p McNemar test
    calls, and the mid-p sign-flip permutation test calls 0.1-3.5% there (below 3% in 7 of 8
    scenarios) and 4.0-5.1% at 154 tasks, as this one does; with two or three tasks that
    differ, no valid non-randomised test can do more. The bench
    (``bench/stats_coverage.py``) measures the size and coverage at 24 and 154 tasks, 5-30%
    rates, 1 to 5 trials.

    Args:
        a_by_task, b_by_task: Per task (same order), each run's values (0/1 successes or
            scores), one per counted trial, in trial order. Tasks empty on either side are
            skipped.

    Returns:
        ``None`` when no task has a value on both sides.
    """
    pairs = [equal_trials(a, b) for a, b in zip(a_by_task, b_by_task, strict=True)
             if len(a) and len(b)]
    if not pairs:
        return None
    diffs = [math.fsum(b) / len(b) - math.fsum(a) / len(a) for a, b in pairs]
    m = len(diffs)
    binary = all(x in (0.0, 1.0) for a, b in pairs for x in (*a, *b))
    mean = math.fsum(diffs) / m
    second = math.fsum(d * d for d in diffs) / m
    trials = max(len(a) for a, _ in pairs)
    b_better = sum(1 for d in diffs if d > 0)
    a_better = sum(1 for d in diffs if d < 0)
    name = "paired score test (t)"
    if m < 2:
        test = PairedTest(name, b_better, a_better, 1.0)
        return PairedDifference(Interval(mean, -1.0, 1.0, confidence, "too few tasks"), test, m)
    critical = t_quantile(m - 1, 0.5 + confidence / 2)

    def accepts(delta: float) -> bool:
        return abs(_score_statistic(mean, second, delta, m, trials, binary)) < critical

    low, high = _invert(accepts, mean)
    at_zero = abs(_score_statistic(mean, second, 0.0, m, trials, binary))
    p_value = 1.0 if b_better + a_better == 0 else 2 * t_cdf(m - 1, -at_zero)
    interval = Interval(mean, min(low, mean), max(high, mean), confidence,
                        f"{name} inverted, {m - 1} df")
    return PairedDifference(interval, PairedTest(name, b_better, a_better, min(1.0, p_value)), m)


def _invert(accepts: Any, estimate: float, lo: float = -1.0, hi: float = 1.0,
            iterations: int = 40) -> tuple[float, float]:
    """The ends of the shifts ``accepts`` keeps, by bisection from the estimate (always kept)
    outwards to ``lo`` and ``hi`` (a difference of rates lies in [-1, 1])."""
    ends = []
    for limit in (lo, hi):
        if accepts(limit):
            ends.append(limit)
            continue
        inside, outside = estimate, limit
        for _ in range(iterations):
            mid = (inside + outside) / 2
            if accepts(mid):
                inside = mid
            else:
                outside = mid
        ends.append(inside)
    return ends[0], ends[1]


def score_pvalues(diffs: Any, trials: int) -> Any:
    """The p-values of :func:`paired_difference`'s test at 0 for many sets of per-task
    differences of 0/1 values at once (rows of ``diffs``): the same statistic, vectorized, for
    simulation."""
    d = np.asarray(diffs, dtype=float)
    m = d.shape[1]
    mean = d.mean(axis=1)
    second = (d * d).mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = np.where(second > 0, np.abs(mean) / np.sqrt(second / m), 0.0)
    del trials  # the variance floor is 0 at delta = 0
    return np.where(second > 0, 2 * special.stdtr(m - 1, -stat), 1.0)


def _rng(seed: int | None) -> np.random.Generator:
    return np.random.default_rng(DEFAULT_SEED if seed is None else seed)


def _shrunk_rates(successes: Any, trials: Any) -> Any:
    """Per-task rates pulled toward their mean as far as their spread is noise (the
    method-of-moments empirical Bayes estimate of a beta-binomial): a task seen 0 times in 2
    trials is not a task the agent can never solve, and taking it as one would make every
    gain look one-sided and easy to detect."""
    rates = successes / trials
    mean = float(rates.mean())
    noise = mean * (1 - mean) / trials
    between = max(0.0, float(rates.var(ddof=1)) - float(noise.mean())) if len(rates) > 1 else 0.0
    weight = between / (between + noise) if between > 0 else np.zeros_like(rates)
    return mean + weight * (rates - mean)


def detectable_difference(
    a_successes: Sequence[int], b_successes: Sequence[int], trials: Sequence[int],
    *, alpha: float = ALPHA, power: float = POWER, seed: int | None = None,
) -> float | None:
    """The smallest success-rate gain (B over A) the test of :func:`paired_difference` would
    detect with ``power`` (80%), for these tasks and trial counts.

    Computed by simulating the test actually used, not by a normal formula (which promised
    80% where the exact test of the time had 40-45% at 24 tasks): each task keeps its observed
    rate ``q_i`` (both runs pooled, shrunk toward the mean: :func:`_shrunk_rates`) for A, and
    B solves the same share of every task's
    failures, ``q_i + delta (1 - q_i) / (1 - mean q)``, so that B's mean is A's plus ``delta``;
    :data:`POWER_DRAWS` pairs are drawn per ``delta`` (the same random numbers for every
    ``delta``, so power grows with it) and ``delta`` is found by bisection. ``None`` when even
    the largest possible gain is found less often than ``power`` (too few tasks).

    Args:
        a_successes, b_successes: Per task, successes in each run over ``trials`` trials.
        trials: Per task, the trials both runs are compared on (:func:`equal_trials`).
    """
    n = np.asarray(trials, dtype=int)
    if len(n) < 2:
        return None
    q = _shrunk_rates(np.asarray(a_successes, dtype=float) + np.asarray(b_successes,
                                                                         dtype=float), 2 * n)
    room = 1.0 - float(q.mean())
    if room <= 0:
        return None
    rng = _rng(seed)
    top = int(n.max())
    mask = np.arange(top)[None, None, :] < n[None, :, None]
    draws_a = rng.random((POWER_DRAWS, len(n), top))
    draws_b = rng.random((POWER_DRAWS, len(n), top))
    rate_a = ((draws_a < q[None, :, None]) & mask).sum(axis=2) / n[None, :]

    def power_at(delta: float) -> float:
        r = q + delta * (1 - q) / room
        rate_b = ((draws_b < r[None, :, None]) & mask).sum(axis=2) / n[None, :]
        return float(np.mean(score_pvalues(rate_b - rate_a, top) <= alpha))

    if power_at(room) < power:
        return None
    low, high = 0.0, room
    for _ in range(12):
        mid = (low + high) / 2
        if power_at(mid) >= power:
            high = mid
        else:
            low = mid
    return high
