"""Sweeps of Windows Agent Arena tasks: queue, runner, agents, results, metrics, cost, viewer.

The public Python API is re-exported here and loaded on first use, so ``import evals`` stays
cheap (no HTTP client, no image library) until a name is used::

    from evals import BenchmarkAgent, BenchmarkAction, WAASimulatedAdapter
    from evals import evaluate_agent_on_benchmark, compute_metrics

Two faces share it: the reference tool's API (the names above, their home is
:mod:`evals.compat`), and the native one: :func:`run_evaluation` runs a :class:`RunConfig` on
pools and returns a :class:`RunResult`; each task's record is a :class:`TaskExecution`;
:func:`compute_summary` is the run's ``summary.json``.

The package's wings: :mod:`evals.run` (the engine), :mod:`evals.results` (records, costs,
statistics), :mod:`evals.report` (pages, comparisons, exports), :mod:`evals.agents`,
:mod:`evals.tasks` (tasks users bring), :mod:`evals.cli`, :mod:`evals.compat`.
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
    from evals.results.records import ErrorType, TaskExecution, TaskStatus
    from evals.run.metrics import compute_metrics, compute_summary
    from evals.run.runner import RunConfig, RunResult, run_evaluation

_EXPORTS = {
    "BenchmarkAction": "evals.agents.base",
    "BenchmarkAgent": "evals.agents.base",
    "BenchmarkObservation": "evals.agents.base",
    "BenchmarkTask": "evals.agents.base",
    "BenchmarkAdapter": "evals.compat.benchmark_api",
    "BenchmarkResult": "evals.compat.benchmark_api",
    "WAALiveAdapter": "evals.compat.benchmark_api",
    "WAALiveConfig": "evals.compat.benchmark_api",
    "WAAMockAdapter": "evals.compat.synthetic_mock",
    "WAASimulatedAdapter": "evals.compat.benchmark_api",
    "evaluate_agent_on_benchmark": "evals.compat.benchmark_api",
    "compute_metrics": "evals.run.metrics",
    "EvaluationConfig": "evals.compat.benchmark_api",
    "compute_domain_metrics": "evals.compat.benchmark_api",
    "ApiAgent": "evals.agents.builtin",
    "RandomAgent": "evals.agents.builtin",
    "ScriptedAgent": "evals.agents.builtin",
    "SmartMockAgent": "evals.agents.builtin",
    "action_to_string": "evals.agents.builtin",
    "format_accessibility_tree": "evals.agents.builtin",
    "parse_accessibility_tree": "evals.agents.builtin",
    "parse_action_response": "evals.agents.builtin",
    "UIElement": "evals.adapters.base",
    # the native API: one run of tasks on pools, its records and its summary
    "run_evaluation": "evals.run.runner",
    "RunConfig": "evals.run.runner",
    "RunResult": "evals.run.runner",
    "compute_summary": "evals.run.metrics",
    "TaskExecution": "evals.results.records",
    "TaskStatus": "evals.results.records",
    "ErrorType": "evals.results.records",
}

__all__ = [
    "ApiAgent",
    "BenchmarkAction",
    "BenchmarkAdapter",
    "BenchmarkAgent",
    "BenchmarkObservation",
    "BenchmarkResult",
    "BenchmarkTask",
    "ErrorType",
    "EvaluationConfig",
    "RandomAgent",
    "RunConfig",
    "RunResult",
    "ScriptedAgent",
    "SmartMockAgent",
    "TaskExecution",
    "TaskStatus",
    "UIElement",
    "WAALiveAdapter",
    "WAALiveConfig",
    "WAAMockAdapter",
    "WAASimulatedAdapter",
    "action_to_string",
    "compute_domain_metrics",
    "compute_metrics",
    "compute_summary",
    "evaluate_agent_on_benchmark",
    "format_accessibility_tree",
    "parse_accessibility_tree",
    "parse_action_response",
    "run_evaluation",
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
    # looked up at every use, never kept here (see oa_vm.__getattr__)
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
