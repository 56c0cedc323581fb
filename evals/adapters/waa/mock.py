"""The reference tool's ``openadapt_evals.adapters.waa.mock`` names: its synthetic in-process
mock adapter (for testing agent plumbing) and WAA's task domains. Real tasks on simulated
workers are :class:`evals.WAASimulatedAdapter`."""

from __future__ import annotations

from evals.compat.benchmark_api import WAA_DOMAINS
from evals.compat.synthetic_mock import WAAMockAdapter

__all__ = ["WAA_DOMAINS", "WAAMockAdapter"]
