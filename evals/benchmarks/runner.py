"""The reference tool's ``openadapt_evals.benchmarks.runner`` names: the evaluation loop, its
settings and the metrics over its results. See docs/compat.md for what differs."""

from __future__ import annotations

from dataclasses import replace

from evals.agents.base import BenchmarkAgent, BenchmarkTask
from evals.compat.benchmark_api import (
    BenchmarkAdapter,
    BenchmarkResult,
    EvaluationConfig,
    compute_domain_metrics,
    evaluate_agent_on_benchmark,
)
from evals.run.metrics import compute_metrics


def _run_single_task(
    agent: BenchmarkAgent,
    adapter: BenchmarkAdapter,
    task: BenchmarkTask,
    config: EvaluationConfig,
) -> BenchmarkResult:
    """One task through :func:`evaluate_agent_on_benchmark` (the reference's helper, which code
    and tests written against it call directly). Its ``time_limit_steps``, when set, is the
    step limit, as the reference reads it."""
    if task.time_limit_steps:
        config = replace(config, max_steps=task.time_limit_steps)
    return evaluate_agent_on_benchmark(agent, adapter, [task.task_id], config=config)[0]

__all__ = [
    "EvaluationConfig",
    "compute_domain_metrics",
    "compute_metrics",
    "evaluate_agent_on_benchmark",
]
