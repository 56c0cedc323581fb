"""The reference tool's ``openadapt_evals.benchmarks`` names (the evaluation runner and metrics),
for code importing them from there. See docs/compat.md for what differs.
"""

from __future__ import annotations

from evals.benchmark_api import (
    EvaluationConfig,
    WAALiveAdapter,
    WAASimulatedAdapter,
    compute_domain_metrics,
    evaluate_agent_on_benchmark,
)
from evals.metrics import compute_metrics
from evals.synthetic_mock import WAAMockAdapter

__all__ = [
    "EvaluationConfig",
    "WAALiveAdapter",
    "WAAMockAdapter",
    "WAASimulatedAdapter",
    "compute_domain_metrics",
    "compute_metrics",
    "evaluate_agent_on_benchmark",
]
