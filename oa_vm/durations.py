"""Human durations (``90s``, ``30m``, ``2h``, ``1d``, or a bare number in an option's own unit):
the one parser every command uses, and the short form they are printed in."""

from __future__ import annotations

import math
import re

from oa_vm.errors import InvalidInputError

SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
UNIT_NAMES = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*([smhd]?)\s*$", re.IGNORECASE)


def to_unit(text: str, unit: str, *, zero_ok: bool = False) -> float:
    """``text`` (``90s``, ``30m``, ``2h``, ``1d`` or a bare number in ``unit``) in ``unit``.

    Raises:
        ValueError: not a duration, or not more than zero (zero allowed with ``zero_ok``).
    """
    match = _PATTERN.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a duration; use e.g. 90s, 30m, 2h, 1d or a number "
                         f"of {UNIT_NAMES[unit]}")
    seconds = float(match.group(1)) * SECONDS[(match.group(2) or unit).lower()]
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not zero_ok):
        raise ValueError(f"{text!r} must be {'zero or ' if zero_ok else ''}more than zero")
    return seconds / SECONDS[unit]


def parse_duration(text: str, *, default_unit: str = "m") -> float:
    """Seconds for ``text``; a bare number is in ``default_unit`` (minutes, as users of the
    reference tool expect for ``--timeout``).

    Raises:
        InvalidInputError: not a positive duration.
    """
    try:
        return to_unit(text, default_unit) * SECONDS[default_unit]
    except ValueError as exc:
        raise InvalidInputError(f"invalid duration: {exc}") from None


def format_duration(seconds: float) -> str:
    """Short human form: ``42s``, ``3m05s``, ``2h10m``."""
    total = int(round(seconds))
    if total < 60:
        return f"{total}s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h{minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours:02d}h"
