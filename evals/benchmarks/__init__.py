"""The reference tool's ``openadapt_evals.benchmarks`` names (the evaluation runner and metrics,
and the agents, data classes and adapters it re-exports there), for code importing them from
there. See docs/compat.md for what differs.
"""

from __future__ import annotations

from evals.adapters.base import UIElement
from evals.agents.base import (
    BenchmarkAction,
    BenchmarkAgent,
    BenchmarkObservation,
    BenchmarkTask,
)
from evals.agents.builtin import (
    ApiAgent,
    RandomAgent,
    ScriptedAgent,
    SmartMockAgent,
    action_to_string,
    format_accessibility_tree,
    parse_action_response,
)
from evals.compat.benchmark_api import (
    BenchmarkAdapter,
    BenchmarkResult,
    EvaluationConfig,
    WAALiveAdapter,
    WAALiveConfig,
    WAASimulatedAdapter,
    compute_domain_metrics,
    evaluate_agent_on_benchmark,
)
from evals.compat.synthetic_mock import WAAMockAdapter
from evals.run.metrics import compute_metrics

__all__ = [
    "ApiAgent",
    "BenchmarkAction",
    "BenchmarkAdapter",
    "BenchmarkAgent",
    "BenchmarkObservation",
    "BenchmarkResult",
    "BenchmarkTask",
    "EvaluationConfig",
    "RandomAgent",
    "ScriptedAgent",
    "SmartMockAgent",
    "UIElement",
    "WAALiveAdapter",
    "WAALiveConfig",
    "WAAMockAdapter",
    "WAASimulatedAdapter",
    "action_to_string",
    "compute_domain_metrics",
    "compute_metrics",
    "evaluate_agent_on_benchmark",
    "format_accessibility_tree",
    "parse_action_response",
]
