"""The reference tool's ``openadapt_evals.benchmarks`` names (the evaluation runner and metrics),
for code importing them from there. See docs/compat.md for what differs.
"""

from __future__ import annotations

from evals.compat.benchmark_api import (
    EvaluationConfig,
    WAALiveAdapter,
    WAASimulatedAdapter,
    compute_domain_metrics,
    evaluate_agent_on_benchmark,
)
from evals.compat.synthetic_mock import WAAMockAdapter
from evals.run.metrics import compute_metrics

__all__ = [
    "EvaluationConfig",
    "WAALiveAdapter",
    "WAAMockAdapter",
    "WAASimulatedAdapter",
    "compute_domain_metrics",
    "compute_metrics",
    "evaluate_agent_on_benchmark",
]
