"""Parsing of human durations given on the command line (``30m``, ``90s``, ``1h``, ``1d``,
``45``)."""

from __future__ import annotations

import re

from oa_vm.errors import InvalidInputError

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$", re.IGNORECASE)


def parse_duration(text: str, *, default_unit: str = "m") -> float:
    """Seconds for ``text``; a bare number is in ``default_unit`` (minutes, as users of the
    reference tool expect for ``--timeout``).

    Raises:
        InvalidInputError: not a positive duration.
    """
    match = _PATTERN.match(text)
    if not match:
        raise InvalidInputError(
            f"invalid duration {text!r}: use e.g. 30m, 90s, 1h or a number of minutes"
        )
    value = float(match.group(1)) * _UNITS[(match.group(2) or default_unit).lower()]
    if value <= 0:
        raise InvalidInputError(f"invalid duration {text!r}: it must be more than zero")
    return value


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
