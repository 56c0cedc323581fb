"""Do the run statistics mean what they say? Coverage of the 95% intervals, and how often
``compare`` calls a difference between two runs of the same agent.

An agent that succeeds with a known probability (the ``random`` agent: the task's reference
solution with probability ``p``, else ``DONE`` at once) has a known true success rate, so one can
count how often a run's 95% interval holds it (it should, about 95% of the time) and how often a
paired comparison of two runs of it calls them different (about 5% of the time, at most).

Two parts, reported apart:

- **real runs**: ``--runs`` runs of the whole local suite (24 tasks) on a local pool of
  ``--workers`` real simulated workers, through :func:`evals.runner.run_evaluation`; the figures
  are read from each run's ``summary.json`` and from :func:`evals.compare.compare_runs` on
  consecutive pairs of runs. Few runs (each takes seconds), so these figures are coarse: they
  check that the pipeline end to end gives what the simulation predicts.
- **simulated outcomes**: ``--seeds`` draws of outcomes per scenario, fed to the same functions
  the summary and ``compare`` use (:func:`evals.metrics.statistics`,
  :func:`evals.compare.paired_comparison`). Scenarios: the local suite's 24 tasks and WAA's 154,
  one trial and five, every task at ``p`` and tasks of differing difficulty (each task's
  probability drawn from a Beta distribution of mean ``p``, new tasks every seed: the true value
  is then the mean over the task population, which is what a benchmark's rate estimates).

Usage (from the repository root)::

    .venv/bin/python bench/stats_coverage.py [--runs 20] [--seeds 300] [--p 0.3] [--json]

With the defaults about 5 minutes on 2 idle cores (the real runs about 1 minute; each simulated
draw bootstraps three intervals with 9,999 resamples, as the summary does). The figures in
docs/results.md used ``--runs 60 --seeds 1000``.
"""

from __future__ import annotations

import math
import random
import sys
import time
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
"""Beta(a, b) with a + b = 2 for the differing-difficulty scenarios: many tasks near 0 or 1."""


@dataclass(frozen=True)
class Scenario:
    """One simulated setting: tasks, trials per task, and whether tasks differ in difficulty."""

    name: str
    tasks: int
    trials: int
    differing: bool


SCENARIOS = (
    Scenario("24 tasks, 1 trial, every task at p", 24, 1, False),
    Scenario("154 tasks, 1 trial, every task at p", 154, 1, False),
    Scenario("24 tasks, 5 trials, every task at p", 24, 5, False),
    Scenario("24 tasks, 5 trials, tasks differ (Beta)", 24, 5, True),
    Scenario("154 tasks, 1 trial, tasks differ (Beta)", 154, 1, True),
    Scenario("154 tasks, 5 trials, tasks differ (Beta)", 154, 5, True),
)


def _binomial_se(rate: float, n: int) -> float:
    return math.sqrt(rate * (1 - rate) / n) if n else 0.0


def _covers(interval: dict[str, Any] | None, truth: float) -> bool:
    return interval is not None and interval["low"] <= truth <= interval["high"]


# --- simulated outcomes --------------------------------------------------------------------------


def _draw_run(rng: random.Random, probs: Sequence[float], trials: int) -> list[Any]:
    from evals.metrics import TaskOutcome

    items = []
    for i, p in enumerate(probs):
        for _ in range(trials):
            ok = rng.random() < p
            items.append(TaskOutcome(f"t{i}", "d", "success" if ok else "failure",
                                     1.0 if ok else 0.0, 1))
    return items


def _grouped(items: list[Any]) -> dict[str, list[Any]]:
    grouped: dict[str, list[Any]] = {}
    for item in items:
        grouped.setdefault(item.task_id, []).append(item)
    return grouped


def simulate(scenario: Scenario, p: float, seeds: int) -> dict[str, Any]:
    """Coverage and false-positive rate of one scenario over ``seeds`` draws."""
    from evals.compare import paired_comparison
    from evals.metrics import statistics

    rate_hits = score_hits = calls = 0
    widths = []
    for seed in range(seeds):
        rng = random.Random(f"{scenario.name}:{seed}")
        if scenario.differing:
            a = p * HETEROGENEITY
            probs = [rng.betavariate(a, HETEROGENEITY - a) for _ in range(scenario.tasks)]
        else:
            probs = [p] * scenario.tasks
        run_a = _draw_run(rng, probs, scenario.trials)
        run_b = _draw_run(rng, probs, scenario.trials)
        found = statistics(run_a, scenario.trials)
        rate_hits += _covers(found["success_rate_ci"], p)
        score_hits += _covers(found["mean_score_ci"], p)
        if found["success_rate_ci"]:
            widths.append(found["success_rate_ci"]["high"] - found["success_rate_ci"]["low"])
        calls += paired_comparison(_grouped(run_a), _grouped(run_b), seed=seed).significant
    return {
        "scenario": scenario.name,
        "tasks": scenario.tasks,
        "trials": scenario.trials,
        "differing": scenario.differing,
        "seeds": seeds,
        "success_rate_ci_coverage": rate_hits / seeds,
        "mean_score_ci_coverage": score_hits / seeds,
        "mean_ci_width_points": round(100 * sum(widths) / len(widths), 1) if widths else None,
        "compare_false_positive_rate": calls / seeds,
        "standard_error": round(_binomial_se(0.95, seeds), 4),
    }


# --- real runs -----------------------------------------------------------------------------------


def real_runs(p: float, runs: int, workers: int, trials: int) -> dict[str, Any]:
    """``runs`` runs of the local suite with the random agent; coverage and compare calls."""
    from evals.agents import AgentOptions
    from evals.compare import compare_runs
    from evals.metrics import compute_summary
    from evals.runner import RunConfig, run_evaluation

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
    if not figures["simulated"]:
        return "\n".join(lines)
    lines.append(f"Simulated outcomes through evals.metrics.statistics and "
                 f"evals.compare.paired_comparison ({figures['seeds']} seeds each; standard "
                 f"error of a 95% coverage figure: {figures['simulated'][0]['standard_error']}):")
    header = f"  {'scenario':<42} {'rate CI':>8} {'score CI':>9} {'width':>7} {'compare':>8}"
    lines.append(header)
    for row in figures["simulated"]:
        lines.append(
            f"  {row['scenario']:<42} {row['success_rate_ci_coverage']:>8.1%} "
            f"{row['mean_score_ci_coverage']:>9.1%} {row['mean_ci_width_points']:>6}p "
            f"{row['compare_false_positive_rate']:>8.1%}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; returns the exit status."""
    cli = parser(PROG, __doc__.splitlines()[0] if __doc__ else PROG)
    cli.add_argument("--p", type=float, default=0.3, help="the agent's success probability")
    cli.add_argument("--runs", type=int, default=20, help="real runs of the local suite")
    cli.add_argument("--workers", type=int, default=3, help="local workers for the real runs")
    cli.add_argument("--trials", type=int, default=1, help="trials per task in the real runs")
    cli.add_argument("--seeds", type=int, default=300,
                     help="simulated draws per scenario (docs/results.md: 1000)")
    cli.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = cli.parse_args(argv)
    if not 0 < args.p < 1:
        raise BenchInputError(f"--p {args.p}: give a probability strictly between 0 and 1")
    for name in ("runs", "seeds"):
        if getattr(args, name) < 0:
            raise BenchInputError(f"--{name} {getattr(args, name)}: give 0 or more")
    if not 1 <= args.workers <= 16 or not 1 <= args.trials <= 20:
        raise BenchInputError("--workers must be 1 to 16 and --trials 1 to 20")
    figures: dict[str, Any] = {"p": args.p, "seeds": args.seeds, "machine": machine_info()}
    if args.runs:
        progress(f"real runs: {args.runs} on {args.workers} local workers")
        figures["real"] = real_runs(args.p, args.runs, args.workers, args.trials)
    figures["simulated"] = []
    for scenario in SCENARIOS if args.seeds else ():
        progress(f"simulating: {scenario.name} ({args.seeds} seeds)")
        figures["simulated"].append(simulate(scenario, args.p, args.seeds))
    emit(figures, args.json, _text(figures))
    return 0


if __name__ == "__main__":
    run_cli(main, PROG)
