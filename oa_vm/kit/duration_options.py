"""Duration options that take ``90s``, ``30m``, ``2h`` or ``1d`` wherever a duration is asked for.

The three CLIs grew options in three units (``--task-timeout`` in seconds, ``--ttl-hours`` in
hours, ``pool-pause --keep-days`` in days). :func:`duration_option` declares such an option once:
its names (the new one first, as ``--help`` lists them), the unit its value is returned in (so
the code behind it does not change), which of its names take a bare number (``--ttl-hours 8`` is
hours by its name, as every command line written before meant; ``--ttl 8`` is refused, since
``8`` alone could be hours or minutes), and its largest value. Errors name the option as it was
typed and the value in the user's units (``--ttl must be at most 365d, not 9999d``); defaults are
shown as :func:`oa_vm.kit.durations.format_duration` prints them (``10m``, not ``600.0``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import typer

from oa_vm.kit.clikit import typed_name
from oa_vm.kit.durations import (
    LONGEST_S,
    SECONDS,
    UNIT_NAMES,
    format_duration,
    is_bare,
    to_seconds,
)

METAVAR = "<duration>"
ALL = ("*",)
"""``bare=ALL``: every name of the option takes a bare number (in the option's unit)."""

class Duration(float):
    """A duration option's default, in the option's unit, that ``--help`` prints as ``10m``."""

    unit: str

    def __new__(cls, value: float, unit: str) -> Duration:
        """``Duration(600, "s")``: 600 seconds, shown as ``10m``."""
        made = super().__new__(cls, value)
        made.unit = unit
        return made

    def __str__(self) -> str:
        return format_duration(float(self) * SECONDS[self.unit])

    __repr__ = __str__


def duration(
    unit: str,
    *,
    zero_ok: bool = False,
    names: Sequence[str] = (),
    bare: Sequence[str] = ALL,
    most: float | None = None,
) -> Callable[[object], float]:
    """A Typer ``parser`` for a duration option, returning the value in ``unit``.

    ``bare``: the names that take a bare number as ``unit`` (the rest refuse one); ``most``:
    the largest value, in ``unit``.
    """

    def parse(value: object) -> float:
        if isinstance(value, int | float):  # the option's default, already in its unit
            return float(value)
        text = str(value)
        typed = typed_name(names)
        takes_bare = bare == ALL or typed is None and bool(bare) or typed in bare
        number = text.strip()
        if is_bare(text) and not takes_bare:
            try:  # a unit would not mend a zero: that is said, not "e.g. 0h"
                to_seconds(text, unit, zero_ok=zero_ok, longest_s=math.inf)
            except ValueError as exc:
                raise typer.BadParameter(str(exc)) from None
            raise typer.BadParameter(
                f"needs a unit, e.g. {number}{unit}"
                + (f"; {bare[0]} {number} means {number} {UNIT_NAMES[unit]}" if bare
                   else " (or 90s, 30m, 2h, 1d)")
            )
        try:
            seconds = to_seconds(text, unit if takes_bare else None, zero_ok=zero_ok,
                                 longest_s=math.inf)
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from None
        # the option's own limit, else the one every duration has
        longest = most if most is not None else LONGEST_S / SECONDS[unit]
        if seconds > longest * SECONDS[unit]:
            limit = format_duration(longest * SECONDS[unit])
            if is_bare(text):  # said in the option's unit: the limit in it too
                amount = f"{longest:g}" if longest < 1e6 else f"{longest:.0f}"
                limit = f"{amount} {UNIT_NAMES[unit]} ({limit})"
            raise typer.BadParameter(f"must be at most {limit}, not {number}")
        return seconds / SECONDS[unit]

    return parse


def duration_option(
    *names: str,
    unit: str,
    help: str,
    zero_ok: bool = False,
    bare: Sequence[str] = ALL,
    most: float | None = None,
) -> Any:
    """``typer.Option(*names, ...)`` for a duration in ``unit`` (see :func:`duration`); ``help``
    gets the bare-number rule appended, so every duration option documents it."""
    if bare == ALL:
        rule = f"a bare number is {UNIT_NAMES[unit]}"
    elif bare:
        rule = f"{', '.join(bare)} N: N {UNIT_NAMES[unit]}"
    else:
        rule = "give a unit"
    return typer.Option(
        *names, parser=duration(unit, zero_ok=zero_ok, names=names, bare=bare, most=most),
        metavar=METAVAR, help=f"{help} ({rule}).",
    )


def duration_text_option(
    *names: str, unit: str, help: str, keywords: Sequence[str] = ()
) -> Any:
    """``typer.Option(*names, ...)`` for a duration kept as the text typed (or one of
    ``keywords``, such as ``auto``), checked as it is parsed so that a bad one is refused naming
    the option; the command reads it with ``parse_duration(text, default_unit=unit)``."""

    def check(value: object) -> str:
        text = str(value).strip()
        if text.lower() in keywords:
            return text.lower()
        try:
            to_seconds(text, unit)
        except ValueError as exc:
            also = f", or {' or '.join(keywords)}" if keywords else ""
            raise typer.BadParameter(f"{exc}{also}") from None
        return text

    return typer.Option(*names, parser=check, metavar=METAVAR,
                        help=f"{help} (a bare number is {UNIT_NAMES[unit]}).")


__all__ = ["ALL", "METAVAR", "Duration", "duration", "duration_option",
           "duration_text_option"]
