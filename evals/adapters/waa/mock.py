"""The reference tool's ``openadapt_evals.adapters.waa.mock`` names: the adapter that runs
tasks on a local pool of simulated workers, and WAA's task domains."""

from __future__ import annotations

from evals.benchmark_api import WAA_DOMAINS, WAAMockAdapter

__all__ = ["WAA_DOMAINS", "WAAMockAdapter"]
