"""Coverage at the lowest rates, where tasks have unequal trials, and where values are scores.

First, summed exactly (no simulation): the lowest coverage of the success-rate interval with
one trial per task, over every true rate and over rates from 2% to 98%, of the plain Wilson
interval (:func:`~evals.results.stats.wilson_interval`, before) and of the interval a run
reports (:func:`~evals.results.stats.success_rate_interval`, with Brown, Cai and DasGupta's
Poisson ends). Then three checks by simulation of :mod:`evals.results.stats`, each called as the
summary and ``compare`` call it (``evals/run/metrics.py``, ``evals/report/compare.py``), with
tasks of differing difficulty (each task's mean drawn from a Beta of mean ``p`` and ``a + b`` as
given: the smaller, the more tasks differ), new tasks every replication:

- **rates, unequal trials**: :func:`~evals.results.stats.success_rate_interval` when half the
  tasks kept one counted trial and half ten (or five);
- **scores**: :func:`~evals.results.stats.mean_score_interval` of scores drawn from a Beta of the
  task's mean (skewed near 0), beside the 0/1 outcomes of the same tasks;
- **paired scores**: :func:`~evals.results.stats.paired_difference` of two runs' scores: how
  often it calls a difference between two runs of one agent (at most 5% wanted), how often its
  interval holds the true difference, and whether its test and interval ever disagree.

Usage (from the repository root)::

    .venv/bin/python bench/stats_scores.py [--replications 2000] [--seed 11]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evals.results import stats


def _means(rng: np.random.Generator, p: float, tasks: int, spread: float) -> np.ndarray:
    """Each task's mean: Beta of mean ``p`` and ``a + b = spread``."""
    return rng.beta(p * spread, (1 - p) * spread, tasks).clip(1e-9, 1 - 1e-9)


def _trials(tasks: int, shape: str) -> list[int]:
    if "or" in shape:  # "1or10": half the tasks one trial, half ten
        few, many = (int(x) for x in shape.split("or"))
        return [few] * (tasks // 2) + [many] * (tasks - tasks // 2)
    return [int(shape)] * tasks


def _lowest(lows: np.ndarray, highs: np.ndarray, start: float, end: float) -> tuple[float, float]:
    """The lowest coverage for true rates in ``[start, end]`` and where it is (the limit).

    Coverage is a sum of binomial terms over the counts whose interval holds the rate; on a
    stretch where that set does not change it is a probability of a range of counts, which
    has no dip inside, so its lowest values are at the stretch's ends: just outside an
    interval's end (or at ``start`` and ``end``), each taken 1e-9 away.
    """
    n = len(lows) - 1
    counts = np.arange(n + 1)
    ends = np.concatenate([lows - 1e-9, highs + 1e-9, [start, end]])
    worst, where = 1.0, start
    for p in ends[(ends >= start) & (ends <= end)].tolist():
        cover = float(sps.binom.pmf(counts, n, p)[(lows <= p) & (p <= highs)].sum())
        if cover < worst - 1e-12:  # a tie (the two ends are mirror images): the lower rate
            worst, where = cover, p
    return worst, where


def low_rates() -> None:
    """The lowest coverage with one trial per task, every task at the true rate (exact)."""
    for tasks in (10, 24, 50, 100, 154):
        plain = np.array([stats.wilson_interval(k, tasks) for k in range(tasks + 1)])
        ours = []
        for k in range(tasks + 1):
            ci = stats.success_rate_interval([1] * k + [0] * (tasks - k), [1] * tasks)
            assert ci is not None
            ours.append((ci.low, ci.high))
        found = []
        for name, ends in (("Wilson", plain), ("reported", np.array(ours))):
            (low, at), (mid, mid_at) = (_lowest(ends[:, 0], ends[:, 1], a, b)
                                        for a, b in ((1e-9, 1 - 1e-9), (0.02, 0.98)))
            found.append(f"{name} {low:.2%} (rate {at:.3%}), {mid:.2%} (rate {mid_at:.2%})")
        print(f"lowest  {tasks:>3} tasks, 1 trial, over all rates (over 2-98%): "
              + "; ".join(found), flush=True)


def rates(rng: np.random.Generator, reps: int) -> None:
    """Rate intervals with unequal counted trials."""
    for tasks, shape, spread, p in ((24, "1or10", 0.2, 0.3), (154, "1or10", 0.2, 0.3),
                                    (24, "1or5", 0.2, 0.5), (154, "1or5", 0.5, 0.3)):
        n = _trials(tasks, shape)
        hits = 0
        for _ in range(reps):
            mu = _means(rng, p, tasks, spread)
            wins = [int((rng.random(k) < m).sum()) for m, k in zip(mu, n, strict=True)]
            ci = stats.success_rate_interval(wins, n)
            hits += ci is not None and ci.low <= p <= ci.high
        print(f"rates   {tasks:>3} tasks, trials {shape:>5}, a+b {spread}, p {p}: "
              f"cover {hits / reps:.3f}", flush=True)


def scores(rng: np.random.Generator, reps: int) -> None:
    """Score intervals of skewed scores, beside 0/1 outcomes of the same tasks."""
    for tasks, shape, spread, p in ((24, "5", 0.5, 0.1), (24, "3", 0.5, 0.1), (10, "5", 0.5, 0.1),
                                    (24, "1or5", 0.5, 0.1), (154, "5", 0.5, 0.1)):
        n = _trials(tasks, shape)
        hit_scores = hit_outcomes = 0
        for _ in range(reps):
            mu = _means(rng, p, tasks, spread)
            drawn = [rng.beta(4 * m, 4 * (1 - m), k).tolist() for m, k in zip(mu, n, strict=True)]
            zero_one = [(rng.random(k) < m).astype(float).tolist()
                        for m, k in zip(mu, n, strict=True)]
            for groups, counter in ((drawn, "s"), (zero_one, "o")):
                ci = stats.mean_score_interval(groups)
                hit = ci is not None and ci.low <= p <= ci.high
                if counter == "s":
                    hit_scores += hit
                else:
                    hit_outcomes += hit
        print(f"scores  {tasks:>3} tasks, trials {shape:>5}, a+b {spread}, mean {p}: cover "
              f"{hit_scores / reps:.3f} (0/1 outcomes of the same tasks {hit_outcomes / reps:.3f})",
              flush=True)


def _scores(rng: np.random.Generator, mu: np.ndarray, trials: int) -> list[list[float]]:
    """Per task, ``trials`` scores spread evenly about its mean (never outside [0, 1])."""
    return [(m + rng.uniform(-1, 1, trials) * min(m, 1 - m)).tolist() for m in mu]


def paired(rng: np.random.Generator, reps: int) -> None:
    """Paired score differences: size, coverage, agreement."""
    for tasks, trials, p, gain in ((10, 1, 0.1, 0.0), (24, 1, 0.1, 0.0), (24, 3, 0.4, 0.0),
                                   (154, 1, 0.1, 0.0), (10, 1, 0.1, 0.1), (24, 3, 0.1, 0.1)):
        calls = hits = disagree = 0
        for _ in range(reps):
            mu_a = _means(rng, p, tasks, 2.0)
            mu_b = np.minimum(mu_a + gain * (1 - mu_a) / (1 - mu_a.mean()), 1.0)

            found = stats.paired_difference(_scores(rng, mu_a, trials),
                                            _scores(rng, mu_b, trials))
            assert found is not None
            truth = float(np.mean(mu_b - mu_a))
            calls += found.test.p_value <= 0.05
            hits += found.interval.low <= truth <= found.interval.high
            disagree += not found.agree
        print(f"paired  {tasks:>3} tasks, {trials} trial(s), mean {p}, gain {gain}: "
              f"called {calls / reps:.3f}, cover {hits / reps:.3f}, disagree {disagree}",
              flush=True)


def main() -> None:
    """Run the exact figures, then the three checks."""
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--replications", type=int, default=2000)
    cli.add_argument("--seed", type=int, default=11)
    args = cli.parse_args()
    started = time.monotonic()
    low_rates()
    for check in (rates, scores, paired):
        check(np.random.default_rng(args.seed), args.replications)
    print(f"({args.replications} replications a line, seed {args.seed}, "
          f"{time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
