"""Fault knobs of local pools (``--fault KEY=VALUE``), checked before any process starts.

The simulated worker (``infra/local``) validates them again; checking here too means a typo fails
in one line before a pool record or a process exists.
"""

from __future__ import annotations

import math

from oa_vm.errors import InvalidInputError

FAULT_KEYS = ("latency", "error-rate", "hang-after", "crash-after", "seed", "screenshot-min-bytes",
              "no-snapshots", "dribble-after")


def validate_faults(faults: dict[str, str]) -> dict[str, str]:
    """Check fault knobs early, so a typo fails before any process starts."""
    for key, value in faults.items():
        if key not in FAULT_KEYS:
            raise InvalidInputError(
                f"unknown fault {key!r}: choose from {', '.join(FAULT_KEYS)} (KEY=VALUE)"
            )
        try:
            number = float(value)
        except ValueError:
            raise InvalidInputError(f"fault {key}={value!r}: the value must be a number") from None
        if not math.isfinite(number) or number < 0 or (key == "error-rate" and number > 1):
            raise InvalidInputError(
                f"fault {key}={value!r}: out of range"
                + (" (a share between 0 and 1)" if key == "error-rate" else " (must be >= 0)")
            )
    return faults
