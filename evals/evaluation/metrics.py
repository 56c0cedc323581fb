"""Value-matching metrics by name, as the reference tool's ``openadapt_evals.evaluation.metrics``
offers them: each takes ``(result, expected, **options)`` and returns a score in ``[0, 1]``.

They compare values an agent or a getter produced with expected ones; scoring a WAA task is
still the checker's job (``infra/scoring_rules.py``), which these do not replace.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path
from typing import Any

Metric = Callable[..., float]


def exact_match(result: Any, expected: Any, **options: Any) -> float:
    """1.0 when the values are equal, or equal as text once surrounding spaces are removed."""
    if result == expected or str(result).strip() == str(expected).strip():
        return 1.0
    return 0.0


def fuzzy_match(result: Any, expected: Any, threshold: float = 0.8, **options: Any) -> float:
    """How alike the two texts are (``difflib``'s ratio, in ``[0, 1]``); 1.0 from
    ``threshold`` up.

    The reference uses rapidfuzz's ratio (the same ``2 * matches / total length`` measure)
    when installed; this needs no extra package.
    """
    ratio = difflib.SequenceMatcher(None, str(result), str(expected)).ratio()
    return 1.0 if ratio >= threshold else ratio


def contains(result: Any, expected: Any, **options: Any) -> float:
    """1.0 when ``expected`` occurs in ``result``, ignoring case."""
    return 1.0 if str(expected).lower() in str(result).lower() else 0.0


def boolean(result: Any, expected: Any, **options: Any) -> float:
    """1.0 when both values are truthy or both falsy."""
    return 1.0 if bool(result) == bool(expected) else 0.0


def file_exists(result: Any, expected: Any, **options: Any) -> float:
    """1.0 when the path (``result``, else ``expected``) exists on this machine."""
    path = result or expected
    return 1.0 if path and Path(str(path)).exists() else 0.0


_METRICS: dict[str, Metric] = {
    "exact_match": exact_match,
    "fuzzy_match": fuzzy_match,
    "contains": contains,
    "boolean": boolean,
    "file_exists": file_exists,
}


def get_metric(name: str) -> Metric | None:
    """The metric called ``name``, or None when there is none."""
    return _METRICS.get(name)


__all__ = ["boolean", "contains", "exact_match", "file_exists", "fuzzy_match", "get_metric"]
