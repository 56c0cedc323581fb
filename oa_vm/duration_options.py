"""Duration options that take ``90s``, ``30m``, ``2h`` or ``1d`` wherever a duration is asked for.

The three CLIs grew options in three units (``--task-timeout`` in seconds, ``--ttl-hours`` in
hours, ``pool-pause --keep-days`` in days). Each keeps its unit for a bare number, so every
command line written before still means the same, and now also takes a number with a unit.
:func:`duration` makes the ``parser`` of such an option: it returns the value in the option's
own unit, so the code behind the option does not change.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import typer

SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*([smhd]?)\s*$", re.IGNORECASE)
METAVAR = "<duration>"


def to_unit(text: str, unit: str, *, zero_ok: bool = False) -> float:
    """``text`` (``90s``, ``30m``, ``2h``, ``1d`` or a bare number in ``unit``) in ``unit``.

    Raises:
        ValueError: not a duration, or not more than zero (zero allowed with ``zero_ok``).
    """
    match = _PATTERN.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a duration; use e.g. 90s, 30m, 2h, 1d or a number "
                         f"of {_UNIT_NAMES[unit]}")
    seconds = float(match.group(1)) * SECONDS[(match.group(2) or unit).lower()]
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not zero_ok):
        raise ValueError(f"{text!r} must be {'zero or ' if zero_ok else ''}more than zero")
    return seconds / SECONDS[unit]


_UNIT_NAMES = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def duration(unit: str, *, zero_ok: bool = False) -> Callable[[object], float]:
    """A Typer ``parser`` for a duration option whose bare numbers are in ``unit``."""

    def parse(value: object) -> float:
        if isinstance(value, int | float):  # the option's default, already in its unit
            return float(value)
        try:
            return to_unit(str(value), unit, zero_ok=zero_ok)
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from None

    return parse
