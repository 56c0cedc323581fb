"""Value-matching metrics by name, as the reference tool's ``openadapt_evals.evaluation.metrics``
offers them: each takes ``(result, expected, **options)`` and returns a score in ``[0, 1]``.

They compare values an agent or a getter produced with expected ones; scoring a WAA task is
still the checker's job (``infra/scoring_rules.py``), which these do not replace.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from oa_vm.kit.lazy import rapidfuzz_fuzz

Metric = Callable[..., float]


def exact_match(result: Any, expected: Any, **options: Any) -> float:
    """1.0 when the values are equal, or equal as text once surrounding spaces are removed."""
    if result == expected or str(result).strip() == str(expected).strip():
        return 1.0
    return 0.0


def fuzzy_match(result: Any, expected: Any, threshold: float = 0.8, **options: Any) -> float:
    """How alike the two texts are, in ``[0, 1]``: rapidfuzz's ``fuzz.ratio`` (the normalized
    Indel similarity, ``1 - edits / total length``), as the reference measures it; 1.0 from
    ``threshold`` up.

    Not ``difflib``'s ratio, which finds matching blocks by a heuristic rather than the
    longest common subsequence: on a 250-character note with a few words changed it gave
    0.565 where the reference gives 1.0 (above its 0.8), and across 3,000 such edits it
    decided pass or fail the other way 1,074 times.
    """
    ratio = float(rapidfuzz_fuzz.ratio(str(result), str(expected))) / 100.0
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
