"""The reference tool's ``openadapt_evals.evaluation`` names: value-matching metrics."""

from __future__ import annotations

from evals.evaluation.metrics import boolean, contains, exact_match, fuzzy_match, get_metric

__all__ = ["boolean", "contains", "exact_match", "fuzzy_match", "get_metric"]
