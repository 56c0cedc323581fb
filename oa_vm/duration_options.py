"""Duration options that take ``90s``, ``30m``, ``2h`` or ``1d`` wherever a duration is asked for.

The three CLIs grew options in three units (``--task-timeout`` in seconds, ``--ttl-hours`` in
hours, ``pool-pause --keep-days`` in days). Each keeps its unit for a bare number, so every
command line written before still means the same, and now also takes a number with a unit.
:func:`duration` makes the ``parser`` of such an option: it returns the value in the option's
own unit, so the code behind the option does not change (the parsing is
:func:`oa_vm.durations.to_unit`).
"""

from __future__ import annotations

from collections.abc import Callable

import typer

from oa_vm.durations import to_unit

METAVAR = "<duration>"


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


__all__ = ["METAVAR", "duration", "to_unit"]
