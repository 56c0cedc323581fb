"""Sweeps of Windows Agent Arena tasks: queue, runner, agents, results, metrics, cost, viewer.

The public Python API is re-exported here and loaded on first use, so ``import evals`` stays
cheap (no HTTP client, no image library) until a name is used::

    from evals import BenchmarkAgent, BenchmarkAction, WAAMockAdapter
    from evals import evaluate_agent_on_benchmark, compute_metrics
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evals.agents.base import (
        BenchmarkAction,
        BenchmarkAgent,
        BenchmarkObservation,
        BenchmarkTask,
    )
    from evals.benchmark_api import (
        BenchmarkAdapter,
        BenchmarkResult,
        WAALiveAdapter,
        WAALiveConfig,
        WAAMockAdapter,
        evaluate_agent_on_benchmark,
    )
    from evals.metrics import compute_metrics

_EXPORTS = {
    "BenchmarkAction": "evals.agents.base",
    "BenchmarkAgent": "evals.agents.base",
    "BenchmarkObservation": "evals.agents.base",
    "BenchmarkTask": "evals.agents.base",
    "BenchmarkAdapter": "evals.benchmark_api",
    "BenchmarkResult": "evals.benchmark_api",
    "WAALiveAdapter": "evals.benchmark_api",
    "WAALiveConfig": "evals.benchmark_api",
    "WAAMockAdapter": "evals.benchmark_api",
    "evaluate_agent_on_benchmark": "evals.benchmark_api",
    "compute_metrics": "evals.metrics",
}

__all__ = [
    "BenchmarkAction",
    "BenchmarkAdapter",
    "BenchmarkAgent",
    "BenchmarkObservation",
    "BenchmarkResult",
    "BenchmarkTask",
    "WAALiveAdapter",
    "WAALiveConfig",
    "WAAMockAdapter",
    "compute_metrics",
    "evaluate_agent_on_benchmark",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evals' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
