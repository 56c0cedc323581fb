"""Do the run statistics mean what they say? Coverage of the 95% intervals, and how often
``compare`` calls a difference between two runs of the same agent.

An agent that succeeds with a known probability (the ``random`` agent: the task's reference
solution with probability ``p``, else ``DONE`` at once) has a known true success rate, so one can
count how often a run's 95% interval holds it (it should, about 95% of the time) and how often a
paired comparison of two runs of it calls them different (about 5% of the time, at most).

Two parts, reported apart:

- **real runs**: ``--runs`` runs of the whole local suite (24 tasks) on a local pool of
  ``--workers`` real simulated workers, through :func:`evals.run.runner.run_evaluation`; the figures
  are read from each run's ``summary.json`` and from :func:`evals.report.compare.compare_runs` on
  consecutive pairs of runs. Few runs (each takes seconds), so these figures are coarse: they
  check that the pipeline end to end gives what the simulation predicts.
- **simulated outcomes**: ``--replications`` draws per scenario (rates of 5%, 10% and 30%; 24
  and 154 tasks; 1, 3 and 5 trials and 1 against 5; every task at ``p`` or tasks of differing
  difficulty, each task's probability drawn from a Beta of mean ``p``, new tasks every
  replication), fed to the functions of :mod:`evals.results.stats` the summary and ``compare`` print
  from (:func:`evals.results.stats.success_rate_interval`,
  :func:`evals.results.stats.paired_difference`,
  :func:`evals.results.stats.detectable_difference`). Vectorized draws with numpy; each replication
  checks the run's rate interval, the printed difference interval, the test, and (on the first
  ``--power-replications``) the detectable difference's power.

Two studies beside the table, for what a different interval or test would reach:
``--exact`` sums the one-trial scenarios (every task at ``p``) over every outcome, no Monte
Carlo error, for the project's interval and test and the Jeffreys and mid-p intervals and the
exact and mid-p McNemar tests; ``--candidates`` draws same-agent pairs and counts the calls of
the project's test (vectorized over replications, checked against ``paired_difference`` one
at a time) and of the exact and mid-p sign-flip permutation tests.

Usage (from the repository root)::

    .venv/bin/python bench/stats_coverage.py [--replications 2000] [--power-replications 300]
        [--only 0,3] [--runs 0] [--p 0.3] [--json]
    .venv/bin/python bench/stats_coverage.py --exact --only 0,4,8,12
    .venv/bin/python bench/stats_coverage.py --candidates --replications 2000 --only 1,2
    .venv/bin/python bench/stats_coverage.py --quick     # the smoke test (about a minute)

The figures in docs/results.md used ``--replications 2000 --power-replications 200`` (in parts
with ``--only``: 60-180 s a scenario on 2 shared cores).
"""

from __future__ import annotations

import json
import math
import sys
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import (
    BenchInputError,
    create_local_pool,
    emit,
    isolated_home,
    machine_info,
    parser,
    progress,
    run_cli,
)

PROG = "bench/stats_coverage.py"
HETEROGENEITY = 2.0
"""Beta(a, b) with a + b = 2 for the differing-difficulty scenarios: at a 5% rate, most tasks
are nearly impossible and a few are easy (the shape of WAA's results)."""
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Scenario:
    """One simulated setting.

    Attributes:
        tasks: Tasks per run (24: the local suite and a WAA domain; 154: WAA).
        trials_a, trials_b: Trials per task in run A and run B (1 and 5: unequal trials).
        differing: Task probabilities drawn from a Beta of mean ``p`` (else every task at p).
        gain: B's true advantage in points of rate (0: the same agent twice).
    """

    name: str
    p: float
    tasks: int
    trials_a: int
    trials_b: int
    differing: bool
    gain: float = 0.0


def _scenarios(quick: bool) -> list[Scenario]:
    rows = []
    for p in (0.05, 0.10):
        for tasks in (24, 154):
            rows += [
                Scenario(f"p={p:.2f}, {tasks} tasks, 1 trial", p, tasks, 1, 1, False),
                Scenario(f"p={p:.2f}, {tasks} tasks, 3 trials, tasks differ", p, tasks, 3, 3,
                         True),
                Scenario(f"p={p:.2f}, {tasks} tasks, 5 trials, tasks differ", p, tasks, 5, 5,
                         True),
                Scenario(f"p={p:.2f}, {tasks} tasks, 1 vs 5 trials, tasks differ", p, tasks,
                         1, 5, True),
            ]
    rows += [
        Scenario("p=0.30, 24 tasks, 5 trials, tasks differ", 0.3, 24, 5, 5, True),
        Scenario("p=0.10, 154 tasks, 1 trial, B +10 points", 0.1, 154, 1, 1, False, 0.10),
        Scenario("p=0.10, 24 tasks, 5 trials, differ, B +10 points", 0.1, 24, 5, 5, True, 0.10),
        Scenario("p=0.30, 154 tasks, 1 vs 5 trials, differ, B +10", 0.3, 154, 1, 5, True, 0.10),
    ]
    if quick:
        return [rows[0], rows[3], rows[-1]]
    return rows


def _select(rows: list[Scenario], only: str | None) -> list[Scenario]:
    """``--only 0,3,5``: those scenarios (by their place in the table), to split a long run."""
    if not only:
        return rows
    picked = [int(i) for i in only.split(",") if i.strip().isdigit()]
    if not picked or any(i >= len(rows) for i in picked):
        raise BenchInputError(f"--only {only}: give indexes 0 to {len(rows) - 1}, comma-separated")
    return [rows[i] for i in picked]


def _binomial_se(rate: float, n: int) -> float:
    return math.sqrt(rate * (1 - rate) / n) if n else 0.0


def _covers(interval: dict[str, Any] | None, truth: float) -> bool:
    return interval is not None and interval["low"] <= truth <= interval["high"]


# --- simulated outcomes --------------------------------------------------------------------------


def _probabilities(rng: Any, scenario: Scenario) -> Any:
    """Each task's success probability: new tasks every replication (the truth is then the
    mean over the population of tasks, the estimand of a run's interval)."""
    import numpy as np

    if scenario.differing:
        a = scenario.p * HETEROGENEITY
        return rng.beta(a, HETEROGENEITY - a, size=scenario.tasks)
    return np.full(scenario.tasks, scenario.p)


def simulate(scenario: Scenario, replications: int, power_replications: int) -> dict[str, Any]:
    """Coverage, false alarms and the detectable difference's power in one scenario.

    Each replication draws run A and run B of the scenario and computes exactly what a run's
    summary and ``compare`` print (the same functions of :mod:`evals.results.stats` they call): the
    success-rate interval of each run (does it hold the true rate?), the paired difference's
    interval (does it hold the true difference?) and test (does it call a difference?), and,
    on the first ``power_replications``, the detectable difference, checked by drawing a
    fresh pair whose true gain is that difference and counting how often the test finds it
    (the promise is 80%).
    """
    import numpy as np

    from evals.results import stats

    rng = np.random.default_rng(zlib.crc32(scenario.name.encode()))
    rate_hits = diff_hits = alarms = disagreements = 0
    mdd_found = mdd_total = 0
    mdd_values: list[float] = []
    widths = []
    for rep in range(replications):
        probs = _probabilities(rng, scenario)
        room = 1 - float(probs.mean())
        gain_probs = probs + scenario.gain * (1 - probs) / room
        wins_a = rng.binomial(scenario.trials_a, probs)
        wins_b = rng.binomial(scenario.trials_b, gain_probs)
        truth_b = scenario.p + scenario.gain
        for wins, trials, truth in ((wins_a, scenario.trials_a, scenario.p),
                                    (wins_b, scenario.trials_b, truth_b)):
            ci = stats.success_rate_interval(wins.tolist(), [trials] * scenario.tasks)
            assert ci is not None
            rate_hits += ci.low <= truth <= ci.high
            widths.append(ci.high - ci.low)
        runs_a, runs_b = _trial_lists(rng, wins_a, scenario.trials_a), _trial_lists(
            rng, wins_b, scenario.trials_b)
        paired = stats.paired_difference(runs_a, runs_b)
        assert paired is not None
        ci = paired.interval
        diff_hits += ci.low <= scenario.gain <= ci.high
        alarms += paired.test.p_value <= 1 - CONFIDENCE
        disagreements += not paired.agree
        if rep < power_replications:
            equal = [stats.equal_trials(a, b) for a, b in zip(runs_a, runs_b, strict=True)]
            mdd = stats.detectable_difference(
                [int(sum(a)) for a, _ in equal], [int(sum(b)) for _, b in equal],
                [len(a) for a, _ in equal], seed=rep)
            mdd_total += 1
            if mdd is None:
                continue
            mdd_values.append(mdd)
            fresh = _probabilities(rng, scenario)
            shifted = fresh + mdd * (1 - fresh) / (1 - float(fresh.mean()))
            new_a = _trial_lists(rng, rng.binomial(scenario.trials_a, fresh), scenario.trials_a)
            new_b = _trial_lists(rng, rng.binomial(scenario.trials_b, np.minimum(shifted, 1.0)),
                                 scenario.trials_b)
            found = stats.paired_difference(new_a, new_b)
            assert found is not None
            mdd_found += found.test.p_value <= 1 - CONFIDENCE
    runs = 2 * replications
    return {
        "scenario": scenario.name,
        "p": scenario.p,
        "tasks": scenario.tasks,
        "trials": [scenario.trials_a, scenario.trials_b],
        "differing": scenario.differing,
        "gain": scenario.gain,
        "replications": replications,
        "rate_ci_coverage": rate_hits / runs,
        "rate_ci_mean_width_points": round(100 * sum(widths) / len(widths), 1),
        "difference_ci_coverage": diff_hits / replications,
        "test_calls_a_difference": alarms / replications,
        "test_interval_disagree": disagreements / replications,
        "detectable_difference_points": (round(100 * float(np.mean(mdd_values)), 1)
                                         if mdd_values else None),
        "detectable_difference_none": mdd_total - len(mdd_values),
        "power_at_detectable_difference": (mdd_found / len(mdd_values)) if mdd_values else None,
        "power_replications": len(mdd_values),
        "standard_error": round(_binomial_se(0.95, replications), 4),
    }


def _trial_lists(rng: Any, wins: Any, trials: int) -> list[list[float]]:
    """Per task, its trials as 0/1 in a random order (which trials succeeded is random: the
    paired test cuts the longer side to its first trials)."""
    lists = []
    for w in wins.tolist():
        row = [1.0] * w + [0.0] * (trials - w)
        rng.shuffle(row)
        lists.append(row)
    return lists


# --- exact figures and the candidates ------------------------------------------------------------
#
# Where a run is one trial per task and every task is at p, a run's interval depends only on its
# number of successes and the paired test only on the counts of tasks each side won, so the
# coverage and the false-alarm rate can be summed exactly over every outcome (no Monte Carlo
# error). That also says what ANY interval or test could reach there: the binomial's steps.
# The candidates measured beside the project's own choices are the ones a reviewer would name:
# the Jeffreys and mid-p intervals for a proportion (Brown, Cai and DasGupta, 2001, "Interval
# estimation for a binomial proportion", Statistical Science 16(2)) and Lancaster's mid-p for
# the paired test (Lancaster, 1961; Agresti and Gottard, 2007, "Nonconservative exact
# small-sample inference for discrete data", Computational Statistics & Data Analysis 51(12);
# for McNemar's test: Fagerland, Lydersen and Laake, 2013, BMC Medical Research Methodology 13:91).


def _jeffreys(x: Any, n: int) -> tuple[Any, Any]:
    """Jeffreys' equal-tailed interval (Beta(x + 1/2, n - x + 1/2) quantiles; 0 at x = 0 and 1
    at x = n, Brown, Cai and DasGupta's modification), scipy's beta quantiles."""
    import numpy as np
    from scipy import stats as sps

    low = np.where(x == 0, 0.0, sps.beta.ppf(0.025, x + 0.5, n - x + 0.5))
    high = np.where(x == n, 1.0, sps.beta.ppf(0.975, x + 0.5, n - x + 0.5))
    return low, high


def _mid_p_covers(x: Any, n: int, p: float) -> Any:
    """Whether the mid-p (Clopper-Pearson with half the observed point's mass) interval holds
    ``p``: it does exactly when neither one-sided mid-p at ``p`` is below 2.5% (the interval is
    the set of ``p`` the mid-p test keeps), so no root finding is needed."""
    from scipy import stats as sps

    half = 0.5 * sps.binom.pmf(x, n, p)
    upper_tail = sps.binom.sf(x, n, p) + half  # P(X > x) + P(X = x) / 2
    lower_tail = sps.binom.cdf(x - 1, n, p) + half  # P(X < x) + P(X = x) / 2
    return (upper_tail > 0.025) & (lower_tail > 0.025)


def _sign_test_p(b: Any, n: Any, mid: bool) -> Any:
    """Two-sided sign test (McNemar's exact test on ``n`` discordant tasks, ``b`` won by B),
    exact or Lancaster's mid-p: twice the smaller tail, the observed point counted half."""
    import numpy as np
    from scipy import stats as sps

    point = sps.binom.pmf(b, n, 0.5)
    weight = 0.5 if mid else 1.0
    low = sps.binom.cdf(b - 1, n, 0.5) + weight * point
    high = sps.binom.sf(b, n, 0.5) + weight * point
    return np.where(n == 0, 1.0, np.minimum(1.0, 2 * np.minimum(low, high)))


def exact_one_trial(scenario: Scenario) -> dict[str, Any]:
    """Exact coverage and false-alarm rates where one trial per task and every task at ``p``:
    the project's interval and test (:func:`evals.results.stats.success_rate_interval`,
    :func:`evals.results.stats.paired_difference`, called on every outcome that has a chance above
    1e-12) against the candidates (Jeffreys, mid-p interval; exact and mid-p McNemar)."""
    import numpy as np
    from scipy import stats as sps

    from evals.results import stats

    m, p = scenario.tasks, scenario.p
    x = np.arange(m + 1)
    pmf = sps.binom.pmf(x, m, p)
    ours = np.array([_covers(stats.success_rate_interval([1] * k + [0] * (m - k), [1] * m)
                             .to_json(), p) for k in x.tolist()])
    j_low, j_high = _jeffreys(x, m)
    figures: dict[str, Any] = {
        "scenario": scenario.name,
        "rate_ci_coverage": float(pmf[ours].sum()),
        "jeffreys_coverage": float(pmf[(j_low <= p) & (p <= j_high)].sum()),
        "mid_p_interval_coverage": float(pmf[_mid_p_covers(x, m, p)].sum()),
    }
    # the paired test: B wins b tasks, A wins c, the rest tie; each task independently
    one_way = p * (1 - p)
    alarms = exact = mid = diff_hits = 0.0
    for discordant in range(m + 1):
        chance_n = float(sps.binom.pmf(discordant, m, 2 * one_way))
        if chance_n < 1e-12:
            continue
        for b in range(discordant + 1):
            chance = chance_n * float(sps.binom.pmf(b, discordant, 0.5))
            if chance < 1e-12:
                continue
            a_runs = [[1.0]] * (discordant - b) + [[0.0]] * (m - discordant + b)
            b_runs = [[0.0]] * (discordant - b) + [[1.0]] * b + [[0.0]] * (m - discordant)
            paired = stats.paired_difference(a_runs, b_runs)
            assert paired is not None
            alarms += chance * (paired.test.p_value <= 1 - CONFIDENCE)
            diff_hits += chance * (paired.interval.low <= 0 <= paired.interval.high)
            exact += chance * float(_sign_test_p(np.array(b), np.array(discordant), False)
                                    <= 1 - CONFIDENCE)
            mid += chance * float(_sign_test_p(np.array(b), np.array(discordant), True)
                                  <= 1 - CONFIDENCE)
    figures.update({"difference_ci_coverage": diff_hits, "test_calls_a_difference": alarms,
                    "mcnemar_exact_calls": exact, "mcnemar_mid_p_calls": mid})
    return figures


def _signflip_p(diffs: Any, trials: int, mid: bool) -> float:
    """The sign-flip permutation test of "B and A are the same agent" on per-task differences
    of rates over ``trials`` trials, exact (every one of the 2^m sign patterns, by convolving
    each size's binomial count of flips rather than listing them), two-sided on the sum;
    with ``mid`` Lancaster's mid-p (the observed sum's mass counted half)."""
    import numpy as np
    from scipy import stats as sps

    steps = np.rint(np.abs(np.asarray(diffs)) * trials).astype(int)
    observed = abs(int(np.rint(np.asarray(diffs).sum() * trials)))
    dist = np.array([1.0])  # the sum's distribution over offsets -total..total
    total = 0
    for size in range(1, trials + 1):
        count = int(np.sum(steps == size))
        if not count:
            continue
        flips = sps.binom.pmf(np.arange(count + 1), count, 0.5)
        spread = np.zeros(2 * size * count + 1)
        spread[::2 * size] = flips  # sum of count values +-size: -size*count .. +size*count
        dist = np.convolve(dist, spread)
        total += size * count
    if total == 0:
        return 1.0
    sums = np.abs(np.arange(-total, total + 1))
    beyond = float(dist[sums > observed].sum())
    at = float(dist[sums == observed].sum())
    return min(1.0, beyond + (0.5 if mid else 1.0) * at)


def candidate_tests(scenario: Scenario, replications: int) -> dict[str, Any]:
    """Same-agent false alarms of the project's test (vectorized over replications:
    :func:`evals.results.stats.score_pvalues`) and of the exact and mid-p sign-flip permutation
    tests, on the same draws (each task's first ``min(trials)`` trials on both sides, what
    :func:`evals.results.stats.equal_trials` keeps). Its own seed: the main table's draws are
    untouched.
    """
    import numpy as np

    from evals.results import stats

    rng = np.random.default_rng(zlib.crc32(("candidates " + scenario.name).encode()))
    trials = min(scenario.trials_a, scenario.trials_b)
    probs = np.stack([_probabilities(rng, scenario) for _ in range(replications)])
    rate_a = rng.binomial(trials, probs) / trials
    rate_b = rng.binomial(trials, probs) / trials
    diffs = rate_b - rate_a
    started = time.perf_counter()
    ours = stats.score_pvalues(diffs, trials)
    vectorized = time.perf_counter() - started
    # the same p-values one replication at a time through paired_difference (what compare
    # calls): they must be the vectorized ones, and the ratio is the speed-up
    looped = min(replications, 200)
    started = time.perf_counter()
    one_by_one = []
    for row_a, row_b in zip(rate_a[:looped].tolist(), rate_b[:looped].tolist(), strict=True):
        paired = stats.paired_difference([[r] for r in row_a], [[r] for r in row_b])
        assert paired is not None
        one_by_one.append(paired.test.p_value)
    loop_seconds = (time.perf_counter() - started) * replications / max(looped, 1)
    assert np.allclose(one_by_one, ours[:looped], atol=1e-9), "vectorized test differs"
    exact = np.array([_signflip_p(d, trials, False) for d in diffs])
    mid = np.array([_signflip_p(d, trials, True) for d in diffs])
    alpha = 1 - CONFIDENCE
    return {
        "scenario": scenario.name,
        "replications": replications,
        "score_test_calls": float(np.mean(ours <= alpha)),
        "signflip_exact_calls": float(np.mean(exact <= alpha)),
        "signflip_mid_p_calls": float(np.mean(mid <= alpha)),
        "score_test_seconds_vectorized": round(vectorized, 4),
        "score_test_seconds_one_by_one": round(loop_seconds, 2),
    }


# --- real runs -----------------------------------------------------------------------------------


def real_runs(p: float, runs: int, workers: int, trials: int) -> dict[str, Any]:
    """``runs`` runs of the local suite with the random agent; coverage and compare calls."""
    from evals.agents import AgentOptions
    from evals.report.compare import compare_runs
    from evals.run.metrics import compute_summary
    from evals.run.runner import RunConfig, run_evaluation

    rate_hits = score_hits = 0
    summaries = []
    with isolated_home() as scratch:
        create_local_pool("coverage", workers)
        results = scratch / "results"
        names = []
        started = time.perf_counter()
        for seed in range(runs):
            name = f"cov-{seed}"
            config = RunConfig(
                pool="coverage", selection="all", agent="random",
                agent_options=AgentOptions(args=(f"p={p}", f"seed={seed}")),
                run_name=name, results_dir=results, trials=trials,
            )
            run_evaluation(config)
            summary = compute_summary(results / name)
            summaries.append(summary)
            rate_hits += _covers(summary["success_rate_ci"], p)
            score_hits += _covers(summary["mean_score_ci"], p)
            names.append(name)
            progress(f"run {seed + 1}/{runs}: success rate {summary['success_rate']:.3f}, "
                     f"95% CI [{summary['success_rate_ci']['low']:.3f}, "
                     f"{summary['success_rate_ci']['high']:.3f}]")
        elapsed = time.perf_counter() - started
        pairs = [(names[i], names[i + 1]) for i in range(0, len(names) - 1, 2)]
        calls = 0
        warned = 0
        for a, b in pairs:
            comparison = compare_runs(results / a, results / b)
            calls += comparison.paired().significant
            warned += bool(comparison.warnings)
    return {
        "runs": runs,
        "workers": workers,
        "trials": trials,
        "tasks_per_run": summaries[0]["outcomes"] // max(trials, 1) if summaries else 0,
        "errors": sum(int(s["errors"]) for s in summaries),
        "success_rate_ci_coverage": rate_hits / runs if runs else None,
        "mean_score_ci_coverage": score_hits / runs if runs else None,
        "compare_pairs": len(pairs),
        "compare_differences_called": calls,
        "compare_manifest_warnings": warned,
        "mean_success_rate": (sum(float(s["success_rate"]) for s in summaries) / runs
                              if runs else None),
        "seconds": round(elapsed, 1),
    }


# --- the command ---------------------------------------------------------------------------------


def _text(figures: dict[str, Any]) -> str:
    p = figures["p"]
    lines = [f"True success rate p = {p}; target: 95% coverage, at most 5% differences called", ""]
    real = figures.get("real")
    if real:
        lines += [
            f"Real runs ({real['runs']} runs of {real['tasks_per_run']} tasks x "
            f"{real['trials']} trial(s) on {real['workers']} local workers, "
            f"{real['seconds']} s, {real['errors']} error(s)):",
            f"  success-rate interval held p in {real['success_rate_ci_coverage']:.0%} of runs",
            f"  mean-score interval held p in {real['mean_score_ci_coverage']:.0%} of runs",
            f"  compare called a difference in {real['compare_differences_called']} of "
            f"{real['compare_pairs']} pairs (manifest warnings: "
            f"{real['compare_manifest_warnings']})",
            f"  mean success rate over the runs: {real['mean_success_rate']:.3f}",
            "",
        ]
    for row in figures.get("exact", []):
        lines.append(
            f"Exact, {row['scenario']}: rate CI {row['rate_ci_coverage']:.2%} (Jeffreys "
            f"{row['jeffreys_coverage']:.2%}, mid-p {row['mid_p_interval_coverage']:.2%}); "
            f"difference CI {row['difference_ci_coverage']:.2%}; same-agent calls: ours "
            f"{row['test_calls_a_difference']:.2%}, McNemar exact "
            f"{row['mcnemar_exact_calls']:.2%}, mid-p {row['mcnemar_mid_p_calls']:.2%}")
    for row in figures.get("candidates", []):
        lines.append(
            f"Candidates, {row['scenario']} ({row['replications']} replications): same-agent "
            f"calls: ours {row['score_test_calls']:.1%}, sign-flip exact "
            f"{row['signflip_exact_calls']:.1%}, sign-flip mid-p "
            f"{row['signflip_mid_p_calls']:.1%} (our test vectorized "
            f"{row['score_test_seconds_vectorized']} s, one by one "
            f"{row['score_test_seconds_one_by_one']} s)")
    if not figures["simulated"]:
        return "\n".join(lines)
    lines.append(f"Simulated through evals.results.stats ({figures['replications']} replications "
                 f"each; "
                 f"standard error of a 95% coverage figure: "
                 f"{figures['simulated'][0]['standard_error']}; target: every interval 93-97%, "
                 "every false-alarm rate 3-7% where a 5% test can reach it, 80% power at the "
                 "detectable difference):")
    lines.append(f"  {'scenario':<50} {'rate CI':>7} {'width':>6} {'diff CI':>7} "
                 f"{'alarms':>6} {'disagr':>6} {'MDD':>6} {'power':>6}")
    for row in figures["simulated"]:
        mdd = row["detectable_difference_points"]
        power = row["power_at_detectable_difference"]
        alarm = "-" if row["gain"] else f"{row['test_calls_a_difference']:.1%}"
        lines.append(
            f"  {row['scenario']:<50} {row['rate_ci_coverage']:>7.1%} "
            f"{row['rate_ci_mean_width_points']:>5}p {row['difference_ci_coverage']:>7.1%} "
            f"{alarm:>6} {row['test_interval_disagree']:>6.1%} "
            f"{'n/a' if mdd is None else f'{mdd}p':>6} "
            f"{'n/a' if power is None else f'{power:.0%}':>6}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; returns the exit status."""
    cli = parser(PROG, __doc__.splitlines()[0] if __doc__ else PROG)
    cli.add_argument("--p", type=float, default=0.3,
                     help="the random agent's success probability in the real runs")
    cli.add_argument("--runs", type=int, default=0, help="real runs of the local suite")
    cli.add_argument("--workers", type=int, default=3, help="local workers for the real runs")
    cli.add_argument("--trials", type=int, default=1, help="trials per task in the real runs")
    cli.add_argument("--replications", type=int, default=2000,
                     help="simulated replications per scenario (docs/results.md: 2000)")
    cli.add_argument("--power-replications", type=int, default=300,
                     help="of those, how many also check the detectable difference's power")
    cli.add_argument("--quick", action="store_true",
                     help="a smoke test: 3 scenarios, 40 replications, no real run")
    cli.add_argument("--only", help="scenarios to run, by index (0,3,5): to split a long run")
    cli.add_argument("--exact", action="store_true",
                     help="exact figures (no Monte Carlo) of the one-trial same-agent scenarios, "
                          "with the Jeffreys and mid-p intervals and the mid-p McNemar test")
    cli.add_argument("--candidates", action="store_true",
                     help="same-agent false alarms of the exact and mid-p sign-flip tests beside "
                          "the project's, in the same-agent scenarios (of --only)")
    cli.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = cli.parse_args(argv)
    if not 0 < args.p < 1:
        raise BenchInputError(f"--p {args.p}: give a probability strictly between 0 and 1")
    for name in ("runs", "replications", "power_replications"):
        if getattr(args, name) < 0:
            raise BenchInputError(f"--{name.replace('_', '-')} {getattr(args, name)}: "
                                  "give 0 or more")
    if not 1 <= args.workers <= 16 or not 1 <= args.trials <= 20:
        raise BenchInputError("--workers must be 1 to 16 and --trials 1 to 20")
    if args.quick:
        args.replications, args.power_replications, args.runs = 40, 10, 0
    figures: dict[str, Any] = {"p": args.p, "replications": args.replications,
                               "machine": machine_info()}
    if args.runs:
        progress(f"real runs: {args.runs} on {args.workers} local workers")
        figures["real"] = real_runs(args.p, args.runs, args.workers, args.trials)
    figures["simulated"] = []
    picked = _select(_scenarios(args.quick), args.only)
    if args.exact:
        figures["exact"] = []
        for scenario in picked:
            if (scenario.trials_a, scenario.trials_b) == (1, 1) and not scenario.differing \
                    and not scenario.gain:
                progress(f"exact: {scenario.name}")
                figures["exact"].append(exact_one_trial(scenario))
    if args.candidates:
        figures["candidates"] = []
        for scenario in picked:
            if not scenario.gain:
                progress(f"candidate tests: {scenario.name}")
                figures["candidates"].append(candidate_tests(scenario, args.replications))
    # --exact and --candidates are studies of their own: the main table is not redrawn
    main_table = args.replications and not (args.exact or args.candidates)
    for scenario in picked if main_table else ():
        progress(f"simulating: {scenario.name} ({args.replications} replications)")
        started = time.perf_counter()
        row = simulate(scenario, args.replications, args.power_replications)
        row["seconds"] = round(time.perf_counter() - started, 1)
        figures["simulated"].append(row)
        progress(json.dumps(row))
    emit(figures, args.json, _text(figures))
    return 0


if __name__ == "__main__":
    run_cli(main, PROG)
