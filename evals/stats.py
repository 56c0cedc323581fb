"""The statistics of a run and of a pair of runs: intervals, pass@k, pass^k, paired tests.

Pure functions over plain numbers (no run folders here; :mod:`evals.metrics` and
:mod:`evals.compare` read those and call these). Distributions, the bootstrap and the exact
binomial test are scipy's; what is written here is only how the project's data are fed to them.

The unit everything is resampled over is the *task*: the tasks of a benchmark are a sample of
the tasks one could have written, and the trials of one task are not independent of each other
(a hard task stays hard). Every bootstrap is seeded, so the same run gives the same interval.

Scores are WAA checker scores in [0, 1]; an outcome is a success when its score is 1. Errors are
never passed in: callers keep them apart (see :mod:`evals.metrics`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as sps

CONFIDENCE = 0.95
DEFAULT_SEED = 20260
"""The bootstrap's seed when the caller gives none: a fixed one, so a summary is reproducible."""
DEFAULT_RESAMPLES = 9999
_BATCH = 500
ALPHA = 0.05
POWER = 0.80
"""The power the smallest detectable difference of :func:`paired_difference` is quoted at."""


@dataclass(frozen=True)
class Interval:
    """A confidence interval for an estimate.

    Attributes:
        estimate: The point estimate.
        low, high: The interval's ends.
        confidence: Its level (0.95 for a 95% interval).
        method: How it was computed (``wilson``, ``bootstrap-bca``, ...).
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
    successes: float, n: float, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """The Wilson score interval for a binomial proportion ``successes / n``.

    The same interval as ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``, written
    as its formula because :func:`success_rate_interval` feeds it an *effective* sample size,
    which is not an integer (binomtest takes integers only). The unit tests check the two agree.

    Raises:
        ValueError: ``n`` is not positive or ``successes`` is outside ``[0, n]``.
    """
    if n <= 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n and n > 0, got {successes}/{n}")
    z = float(sps.norm.ppf(0.5 + confidence / 2))
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return float(max(0.0, centre - half)), float(min(1.0, centre + half))


def design_effect(successes: Sequence[int], outcomes: Sequence[int]) -> float:
    """How much the clustering of trials in tasks inflates the variance of the success rate.

    The ratio of the cluster (by task) variance of the pooled rate to the variance it would
    have if every trial were independent (Kish's design effect), floored at 1: trials of one
    task are never counted as more information than independent ones. 1 when every task has
    one trial or there are fewer than two tasks.

    Args:
        successes: Successes per task.
        outcomes: Scored trials per task (same order; each at least 1).
    """
    n = np.asarray(outcomes, dtype=float)
    c = np.asarray(successes, dtype=float)
    m = len(n)
    total = n.sum()
    if m < 2 or total <= 0 or np.all(n == 1):
        return 1.0
    p = c.sum() / total
    srs = p * (1 - p) / total
    if srs <= 0:
        return 1.0
    mean_n = total / m
    cluster = float(np.sum((n / mean_n) ** 2 * (c / n - p) ** 2)) / (m * (m - 1))
    return float(max(1.0, cluster / srs))


def success_rate_interval(
    successes: Sequence[int], outcomes: Sequence[int], confidence: float = CONFIDENCE
) -> Interval | None:
    """A 95% interval for the success rate (successes / scored trials) of a run.

    A Wilson interval; with several trials per task, over the effective sample size (the
    trials divided by :func:`design_effect`), so repeated trials of the same tasks narrow the
    interval only as much as they carry new information. ``None`` when nothing was scored.

    Args:
        successes: Successes per task.
        outcomes: Scored trials per task (same order).
    """
    pairs = [(int(c), int(n)) for c, n in zip(successes, outcomes, strict=True) if n > 0]
    total = sum(n for _, n in pairs)
    if total == 0:
        return None
    hits = sum(c for c, _ in pairs)
    deff = design_effect([c for c, _ in pairs], [n for _, n in pairs])
    n_eff = total / deff
    low, high = wilson_interval(hits / total * n_eff, n_eff, confidence)
    method = "wilson" if deff == 1.0 else (
        f"wilson, effective n {n_eff:.1f} (design effect {deff:.2f})"
    )
    return Interval(hits / total, low, high, confidence, method)


def _rng(seed: int | None) -> np.random.Generator:
    return np.random.default_rng(DEFAULT_SEED if seed is None else seed)


def mean_score_interval(
    scores_by_task: Sequence[Sequence[float]],
    confidence: float = CONFIDENCE,
    *,
    seed: int | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
) -> Interval | None:
    """A 95% interval for the mean score over all scored trials, by a bootstrap over tasks.

    Tasks are resampled with all their trials (a cluster bootstrap); the statistic is the
    pooled mean (sum of scores over number of trials), so with one trial per task this is the
    ordinary bootstrap of the mean. ``scipy.stats.bootstrap`` with the BCa method (seeded);
    where BCa is undefined (a single task, or too few distinct resamples) the percentile
    method. All tasks scoring the same give a zero-width interval at that score. ``None`` when
    nothing was scored.

    Args:
        scores_by_task: Each task's scores, one per scored trial (tasks with none are skipped).
        seed: The bootstrap's seed (default :data:`DEFAULT_SEED`).
        n_resamples: Bootstrap resamples.
    """
    groups = [list(map(float, s)) for s in scores_by_task if len(s)]
    if not groups:
        return None
    sums = np.array([sum(g) for g in groups])
    counts = np.array([len(g) for g in groups], dtype=float)
    estimate = float(sums.sum() / counts.sum())
    means = sums / counts
    if len(groups) < 2 or np.ptp(means) == 0:
        return Interval(estimate, estimate, estimate, confidence, "degenerate")

    def pooled(s: Any, c: Any, axis: int = -1) -> Any:
        return np.sum(s, axis=axis) / np.sum(c, axis=axis)

    return _bootstrap((sums, counts), pooled, estimate, confidence, seed, n_resamples)


def _bootstrap(
    data: tuple[Any, ...], statistic: Any, estimate: float, confidence: float,
    seed: int | None, n_resamples: int,
) -> Interval:
    """``scipy.stats.bootstrap`` over paired samples, BCa then percentile if BCa fails."""
    import warnings

    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            # BCa warns (and returns NaN) on data too discrete for its acceleration term;
            # the fallback below handles exactly that case.
            warnings.simplefilter("ignore")
            result = sps.bootstrap(
                data, statistic, paired=True, vectorized=True, confidence_level=confidence,
                n_resamples=n_resamples, method=method, random_state=_rng(seed),
                # resamples in batches: all at once would take n_resamples x tasks x 8 bytes
                # per sample (480 MB for a 3,000-task sweep)
                batch=_BATCH,
            )
        low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
        if math.isfinite(low) and math.isfinite(high):
            return Interval(estimate, min(low, estimate), max(high, estimate), confidence,
                            f"bootstrap-{method.lower()} over tasks")
    return Interval(estimate, estimate, estimate, confidence, "degenerate")


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

    A task counts at a given k only if it has at least k scored trials (errors took the
    rest); the documents say how many tasks each overall figure is the mean of.

    Args:
        counts: ``{task_id: (successes, scored trials)}``.
        k: The trials asked for per task.

    Returns:
        ``(pass_at_k, pass_all_k)``, each ``{"k", "value", "tasks", "by_k": {"1": ...},
        "by_task": {task_id: value or None}}`` (``value``: at ``k``; ``None`` when no task
        has k scored trials).
    """
    results = []
    for estimator in (pass_at_k, pass_all_k):
        by_k: dict[str, float | None] = {}
        tasks_at: dict[str, int] = {}
        for j in range(1, max(k, 1) + 1):
            values = [estimator(n, c, j) for c, n in counts.values() if n >= j]
            by_k[str(j)] = round(sum(values) / len(values), 6) if values else None
            tasks_at[str(j)] = len(values)
        by_task = {
            tid: (round(estimator(n, c, k), 6) if n >= k >= 1 else None)
            for tid, (c, n) in counts.items()
        }
        results.append({
            "k": k,
            "value": by_k.get(str(k)),
            "tasks": tasks_at.get(str(k), 0),
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
        name: The test (``McNemar exact`` or ``sign test``).
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


def sign_test(b_better: int, a_better: int, name: str = "sign test") -> PairedTest:
    """The exact two-sided sign test on the tasks where the runs differ (ties dropped).

    On binary outcomes (one trial per task) it *is* McNemar's exact test: the discordant pairs
    ``b`` and ``c`` tested against ``Binomial(b + c, 1/2)`` (``scipy.stats.binomtest``). No
    discordant task gives p = 1.
    """
    total = b_better + a_better
    p = 1.0 if total == 0 else float(sps.binomtest(b_better, total, 0.5).pvalue)
    return PairedTest(name, b_better, a_better, min(1.0, p))


def mcnemar_exact(b_better: int, a_better: int) -> PairedTest:
    """McNemar's exact test on the discordant pairs of two runs' binary outcomes."""
    return sign_test(b_better, a_better, "McNemar exact")


def mean_difference_interval(
    differences: Sequence[float],
    confidence: float = CONFIDENCE,
    *,
    seed: int | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
) -> Interval | None:
    """A paired bootstrap interval for the mean of per-task differences (B minus A).

    ``None`` with no pairs; a zero-width interval when every difference is the same.
    """
    d = np.asarray(list(differences), dtype=float)
    if d.size == 0:
        return None
    estimate = float(d.mean())
    if d.size < 2 or np.ptp(d) == 0:
        return Interval(estimate, estimate, estimate, confidence, "degenerate")

    def mean(x: Any, axis: int = -1) -> Any:
        return np.mean(x, axis=axis)

    return _bootstrap((d,), mean, estimate, confidence, seed, n_resamples)


def minimum_detectable_difference(
    differences: Sequence[float], pooled_rate: float | None = None,
    alpha: float = ALPHA, power: float = POWER,
) -> float | None:
    """About the smallest mean difference a paired comparison of this size would detect.

    ``(z_{1-alpha/2} + z_{power}) * sd / sqrt(n)``, the normal approximation for a paired
    test at ``power`` (80% by default), with ``sd`` the standard deviation of the per-task
    differences. When the differences are all equal (no discordant task), their spread says
    nothing, so ``sd`` is taken as that of two independent outcomes at ``pooled_rate``
    (``sqrt(2 p (1 - p))``) or, without it or at a rate of 0 or 1, at 1/2. ``None`` with fewer
    than two pairs.
    """
    d = np.asarray(list(differences), dtype=float)
    n = d.size
    if n < 2:
        return None
    sd = float(np.std(d, ddof=1))
    if sd == 0:
        p = pooled_rate if pooled_rate is not None and 0 < pooled_rate < 1 else 0.5
        sd = math.sqrt(2 * p * (1 - p))
    z = float(sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power))
    return z * sd / math.sqrt(n)
