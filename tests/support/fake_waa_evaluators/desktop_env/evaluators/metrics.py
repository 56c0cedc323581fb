"""Stand-in for WAA's metrics: plain functions returning a float (tests only)."""

from __future__ import annotations

from typing import Any


def exact_match(result: Any, rules: Any, **options: Any) -> float:
    """1.0 when the result equals ``rules["expected"]``."""
    return 1.0 if result == rules["expected"] else 0.0


def check_include_exclude(result: Any, rules: Any) -> float:
    """1.0 when every ``include`` string is in the result and no ``exclude`` string is."""
    text = str(result)
    ok = all(s in text for s in rules.get("include", [])) and not any(
        s in text for s in rules.get("exclude", [])
    )
    return 1.0 if ok else 0.0


def is_nonempty(result: Any) -> float:
    """A one-argument metric (no expected value), as several of WAA's are."""
    return 1.0 if result else 0.0
