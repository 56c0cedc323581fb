"""Sweeps of Windows Agent Arena tasks: queue, runner, agents, results, metrics, cost, viewer.

The public Python API is re-exported here and loaded on first use, so ``import evals`` stays
cheap (no HTTP client, no image library) until a name is used::

    from evals import BenchmarkAgent, BenchmarkAction, WAASimulatedAdapter
    from evals import evaluate_agent_on_benchmark, compute_metrics
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
        parse_accessibility_tree,
        parse_action_response,
    )
    from evals.benchmark_api import (
        BenchmarkAdapter,
        BenchmarkResult,
        EvaluationConfig,
        WAALiveAdapter,
        WAALiveConfig,
        WAASimulatedAdapter,
        compute_domain_metrics,
        evaluate_agent_on_benchmark,
    )
    from evals.metrics import compute_metrics
    from evals.synthetic_mock import WAAMockAdapter

_EXPORTS = {
    "BenchmarkAction": "evals.agents.base",
    "BenchmarkAgent": "evals.agents.base",
    "BenchmarkObservation": "evals.agents.base",
    "BenchmarkTask": "evals.agents.base",
    "BenchmarkAdapter": "evals.benchmark_api",
    "BenchmarkResult": "evals.benchmark_api",
    "WAALiveAdapter": "evals.benchmark_api",
    "WAALiveConfig": "evals.benchmark_api",
    "WAAMockAdapter": "evals.synthetic_mock",
    "WAASimulatedAdapter": "evals.benchmark_api",
    "evaluate_agent_on_benchmark": "evals.benchmark_api",
    "compute_metrics": "evals.metrics",
    "EvaluationConfig": "evals.benchmark_api",
    "compute_domain_metrics": "evals.benchmark_api",
    "ApiAgent": "evals.agents.builtin",
    "RandomAgent": "evals.agents.builtin",
    "ScriptedAgent": "evals.agents.builtin",
    "SmartMockAgent": "evals.agents.builtin",
    "action_to_string": "evals.agents.builtin",
    "format_accessibility_tree": "evals.agents.builtin",
    "parse_accessibility_tree": "evals.agents.builtin",
    "parse_action_response": "evals.agents.builtin",
    "UIElement": "evals.adapters.base",
}

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
    "parse_accessibility_tree",
    "parse_action_response",
]


def __getattr__(name: str) -> Any:
    if name == "__version__":  # the reference exports it; here it is the oa-vm distribution's
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("oa-vm")
        except PackageNotFoundError:
            return "0.0.0+unknown"
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evals' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
