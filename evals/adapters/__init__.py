"""The reference tool's ``openadapt_evals.adapters`` names, for code importing them from there.

See docs/compat.md for what differs.
"""

from __future__ import annotations

from evals.adapters.base import UIElement
from evals.agents.base import BenchmarkAction, BenchmarkObservation, BenchmarkTask
from evals.compat.benchmark_api import (
    WAA_DOMAINS,
    BenchmarkAdapter,
    BenchmarkResult,
    WAALiveAdapter,
    WAALiveConfig,
    WAASimulatedAdapter,
)
from evals.compat.synthetic_mock import WAAMockAdapter
from waa_client.catalog import is_synthetic as is_synthetic_task_id
from waa_client.errors import SyntheticTaskError

__all__ = [
    "BenchmarkAction",
    "BenchmarkAdapter",
    "BenchmarkObservation",
    "BenchmarkResult",
    "BenchmarkTask",
    "SyntheticTaskError",
    "UIElement",
    "WAA_DOMAINS",
    "WAALiveAdapter",
    "WAALiveConfig",
    "WAAMockAdapter",
    "WAASimulatedAdapter",
    "is_synthetic_task_id",
]
