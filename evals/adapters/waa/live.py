"""The reference tool's ``openadapt_evals.adapters.waa.live`` names: the adapter for a running
WAA worker (reached over HTTP, usually through a tunnel)."""

from __future__ import annotations

from evals.agents.builtin import parse_accessibility_tree
from evals.compat.benchmark_api import WAALiveAdapter, WAALiveConfig
from waa_client.catalog import is_synthetic as is_synthetic_task_id
from waa_client.errors import SyntheticTaskError

_parse_xml_a11y_tree = parse_accessibility_tree
"""The reference's (private) name for :func:`evals.agents.builtin.parse_accessibility_tree`,
which code written against it imports from here."""

__all__ = [
    "SyntheticTaskError",
    "WAALiveAdapter",
    "WAALiveConfig",
    "is_synthetic_task_id",
    "parse_accessibility_tree",
]
