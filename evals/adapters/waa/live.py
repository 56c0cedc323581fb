"""The reference tool's ``openadapt_evals.adapters.waa.live`` names: the adapter for a running
WAA worker (reached over HTTP, usually through a tunnel)."""

from __future__ import annotations

from evals.benchmark_api import WAALiveAdapter, WAALiveConfig
from waa_client.catalog import is_synthetic as is_synthetic_task_id
from waa_client.errors import SyntheticTaskError

__all__ = ["SyntheticTaskError", "WAALiveAdapter", "WAALiveConfig", "is_synthetic_task_id"]
