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

if TYPE_CHECKING:  # "name as name": a name mypy sees as re-exported
    from evals.adapters.base import UIElement as UIElement
    from evals.agents.base import BenchmarkAction as BenchmarkAction
    from evals.agents.base import BenchmarkAgent as BenchmarkAgent
    from evals.agents.base import BenchmarkObservation as BenchmarkObservation
    from evals.agents.base import BenchmarkTask as BenchmarkTask
    from evals.agents.builtin import ApiAgent as ApiAgent
    from evals.agents.builtin import RandomAgent as RandomAgent
    from evals.agents.builtin import ScriptedAgent as ScriptedAgent
    from evals.agents.builtin import SmartMockAgent as SmartMockAgent
    from evals.agents.builtin import action_to_string as action_to_string
    from evals.agents.builtin import format_accessibility_tree as format_accessibility_tree
    from evals.agents.builtin import parse_accessibility_tree as parse_accessibility_tree
    from evals.agents.builtin import parse_action_response as parse_action_response
    from evals.compat.benchmark_api import BenchmarkAdapter as BenchmarkAdapter
    from evals.compat.benchmark_api import BenchmarkResult as BenchmarkResult
    from evals.compat.benchmark_api import EvaluationConfig as EvaluationConfig
    from evals.compat.benchmark_api import WAALiveAdapter as WAALiveAdapter
    from evals.compat.benchmark_api import WAALiveConfig as WAALiveConfig
    from evals.compat.benchmark_api import WAASimulatedAdapter as WAASimulatedAdapter
    from evals.compat.benchmark_api import compute_domain_metrics as compute_domain_metrics
    from evals.compat.benchmark_api import (
        evaluate_agent_on_benchmark as evaluate_agent_on_benchmark,
    )
    from evals.compat.synthetic_mock import WAAMockAdapter as WAAMockAdapter
    from evals.results.records import ErrorType as ErrorType
    from evals.results.records import TaskExecution as TaskExecution
    from evals.results.records import TaskStatus as TaskStatus
    from evals.run.metrics import compute_metrics as compute_metrics
    from evals.run.metrics import compute_summary as compute_summary
    from evals.run.runner import RunConfig as RunConfig
    from evals.run.runner import RunResult as RunResult
    from evals.run.runner import run_evaluation as run_evaluation

#: module -> the public names it holds
_HOMES = {
    # the reference tool's API (its home is evals.compat)
    "evals.agents.base": "BenchmarkAction BenchmarkAgent BenchmarkObservation BenchmarkTask",
    "evals.compat.benchmark_api": "BenchmarkAdapter BenchmarkResult EvaluationConfig"
                                  " WAALiveAdapter WAALiveConfig WAASimulatedAdapter"
                                  " compute_domain_metrics evaluate_agent_on_benchmark",
    "evals.compat.synthetic_mock": "WAAMockAdapter",
    "evals.agents.builtin": "ApiAgent RandomAgent ScriptedAgent SmartMockAgent action_to_string"
                            " format_accessibility_tree parse_accessibility_tree"
                            " parse_action_response",
    "evals.adapters.base": "UIElement",
    # the native API: one run of tasks on pools, its records and its summary
    "evals.run.runner": "run_evaluation RunConfig RunResult",
    "evals.run.metrics": "compute_metrics compute_summary",
    "evals.results.records": "TaskExecution TaskStatus ErrorType",
}
_EXPORTS = {name: module for module, names in _HOMES.items() for name in names.split()}
if not TYPE_CHECKING:  # mypy would take a computed __all__ for an empty one
    __all__ = sorted(_EXPORTS)


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
