"""Human durations (``90s``, ``30m``, ``2h``, ``1d``, ``1h30m``, or a bare number in an option's
own unit): the one parser every command uses, and the one short form they are printed in
(:func:`format_duration`, which the parser reads back)."""

from __future__ import annotations

import math
import re

from oa_vm.errors import InvalidInputError

SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
UNIT_NAMES = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
_NUMBER = r"\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
# strings, compiled by re's cache at first use (not at import: pool-status's start-up)
_BARE = rf"^\s*({_NUMBER})\s*$"
# one or more number+unit parts, largest first as format_duration prints them (1h30m, 3m05s)
_PARTS = rf"(?i)^\s*(?:{_NUMBER}\s*[smhd]\s*)+$"
_PART = rf"(?i)({_NUMBER})\s*([smhd])"
EXAMPLES = "90s, 30m, 2h, 1d"
LONGEST_S = 3650 * 86400.0
"""No duration is longer than ten years: past it no wait, pause or expiry means anything, and
past some point the clock's arithmetic overflows (a deadline of ``now + 1e30`` seconds)."""


def is_bare(text: str) -> bool:
    """True for a number without a unit (``"8"``, ``"1.5"``)."""
    return re.match(_BARE, text) is not None


def to_seconds(text: str, bare_unit: str | None, *, zero_ok: bool = False,
               longest_s: float = LONGEST_S) -> float:
    """Seconds for ``text``: ``90s``, ``30m``, ``2h``, ``1d``, ``1h30m``, or a bare number in
    ``bare_unit`` (refused when ``bare_unit`` is ``None``), at most ``longest_s`` seconds (a
    caller with a limit of its own passes ``math.inf`` and words that limit itself).

    Raises:
        ValueError: not a duration, a bare number where none is taken, not more than zero
            (zero allowed with ``zero_ok``), or longer than :data:`LONGEST_S`; the message is
            a sentence about the value only.
    """
    bare = re.match(_BARE, text)
    if bare is not None:
        if bare_unit is None:
            raise ValueError(f"{text!r} has no unit; give one, e.g. {text.strip()}m or "
                             f"{text.strip()}s")
        seconds = float(bare.group(1)) * SECONDS[bare_unit]
    elif re.match(_PARTS, text):
        seconds = sum(float(n) * SECONDS[u.lower()] for n, u in re.findall(_PART, text))
    else:
        unit = f" or a number of {UNIT_NAMES[bare_unit]}" if bare_unit else ""
        raise ValueError(f"{text!r} is not a duration; use e.g. {EXAMPLES}{unit}")
    if seconds < 0 or (seconds == 0 and not zero_ok):
        raise ValueError(f"{text!r} must be {'zero or ' if zero_ok else ''}more than zero")
    # not finite: a number too large for a float (1e308h), which is too long, not too short
    if seconds > longest_s or not math.isfinite(seconds):
        raise ValueError(f"{text.strip()!r} is longer than {format_duration(LONGEST_S)} "
                         "(ten years); give a shorter duration")
    return seconds


def parse_duration(text: str, *, default_unit: str = "m") -> float:
    """Seconds for ``text``; a bare number is in ``default_unit`` (minutes, as users of the
    reference tool expect for ``--timeout``).

    Raises:
        InvalidInputError: not a positive duration.
    """
    try:
        return to_seconds(text, default_unit)
    except ValueError as exc:
        raise InvalidInputError(f"invalid duration: {exc}") from None


def format_duration(seconds: float) -> str:
    """Short human form, parts that are zero left out: ``42s``, ``3m05s``, ``10m``, ``2h10m``,
    ``4h``, ``2d03h``, ``365d`` (what :func:`to_seconds` reads back)."""
    total = int(round(seconds))
    if total < 60:
        return f"{total}s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s" if secs else f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h{minutes:02d}m" if minutes else f"{hours}h"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours:02d}h" if hours else f"{days}d"
