"""The reference tool's ``openadapt_evals.adapters.waa`` names: WAA's adapters and domains.

See docs/compat.md for what differs.
"""

from __future__ import annotations

from evals.adapters.waa.live import WAALiveAdapter, WAALiveConfig
from evals.adapters.waa.mock import WAA_DOMAINS, WAAMockAdapter
from evals.compat.benchmark_api import WAASimulatedAdapter
from waa_client.catalog import is_synthetic as is_synthetic_task_id
from waa_client.errors import SyntheticTaskError

__all__ = [
    "WAA_DOMAINS",
    "SyntheticTaskError",
    "WAALiveAdapter",
    "WAALiveConfig",
    "WAAMockAdapter",
    "WAASimulatedAdapter",
    "is_synthetic_task_id",
]
