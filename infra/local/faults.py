"""Fault knobs: make a simulated worker slow, flaky, hung or dead on purpose.

Requests are counted across both servers of one worker (the guest's and the scoring server),
starting at 1. The knobs (``--fault KEY=VALUE``, or the same keys in a dict):

- ``latency=SECONDS``: added to every request.
- ``error-rate=P``: that share of requests answers 500 (a seeded RNG, see ``seed=N``).
- ``hang-after=N``: from request N on, accept the connection and never answer.
- ``dribble-after=N``: from request N on, answer each request one body byte at a time,
  :data:`DRIBBLE_PAUSE_S` apart (slow-loris: never silent long enough for a read timeout).
- ``crash-after=N``: at request N the whole process exits at once (``os._exit``), as a
  guest that dies would; in-process users get their own process killed, by design.
- ``screenshot-min-bytes=N``: pad every screenshot PNG to at least N bytes.
- ``no-snapshots=1``: the worker has no snapshot endpoints (it cannot do ``--reset clean``),
  as a cloud worker whose QEMU has no monitor socket.
"""

from __future__ import annotations

import os
import random
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum

CRASH_EXIT_CODE = 70
"""Exit status of a process killed by ``crash-after`` (EX_SOFTWARE)."""
DRIBBLE_PAUSE_S = 0.2
"""Between two bytes of an answer under ``dribble-after``."""


class FaultError(ValueError):
    """An unknown fault knob or a bad value; the message names the knob and what it takes."""


@dataclass(frozen=True)
class Faults:
    """The fault knobs of one worker; the defaults inject nothing."""

    latency: float = 0.0
    error_rate: float = 0.0
    seed: int = 0
    hang_after: int | None = None
    crash_after: int | None = None
    screenshot_min_bytes: int = 0
    no_snapshots: bool = False
    dribble_after: int | None = None


def _number(key: str, value: object, *, low: float, high: float | None = None) -> float:
    try:
        number = float(str(value))
    except ValueError:
        raise FaultError(f"fault {key}={value!r}: not a number") from None
    if number != number or number < low or (high is not None and number > high):
        bound = f"from {low:g} to {high:g}" if high is not None else f">= {low:g}"
        raise FaultError(f"fault {key}={value}: must be {bound}")
    return number


MOST_REQUESTS = 10**9
"""The largest request count a knob takes (``hang-after``...): a worker serves far fewer."""
MOST_SCREENSHOT_BYTES = 64 * 2**20
"""``screenshot-min-bytes`` at most: each screenshot is padded in memory to that size."""


def _count(key: str, value: object, *, low: int, high: int = MOST_REQUESTS) -> int:
    text = str(value).strip()
    if not text.lstrip("-").isdigit():
        raise FaultError(f"fault {key}={value!r}: not a whole number")
    # the length first: int() refuses over 4,300 digits with a ValueError of its own
    number = int(text) if len(text) <= 20 else high + 1
    if not low <= number <= high:
        raise FaultError(f"fault {key}={text[:24]}: must be from {low} to {high}")
    return number


KNOBS = ("latency", "error-rate", "seed", "hang-after", "crash-after", "screenshot-min-bytes",
         "no-snapshots", "dribble-after")


def parse_faults(knobs: Mapping[str, object] | None) -> Faults:
    """Build :class:`Faults` from ``{"latency": "0.2", "error-rate": 0.1, ...}``.

    Keys may use ``-`` or ``_``. Values may be strings or numbers.

    Raises:
        FaultError: unknown key or bad value.
    """
    values: dict[str, object] = {}
    for raw_key, value in (knobs or {}).items():
        key = str(raw_key).strip().lower().replace("_", "-")
        if key not in KNOBS:
            raise FaultError(f"unknown fault {raw_key!r}; known: {', '.join(KNOBS)}")
        values[key] = value
    return Faults(
        latency=_number("latency", values.get("latency", 0), low=0, high=3600),
        error_rate=_number("error-rate", values.get("error-rate", 0), low=0, high=1),
        seed=_count("seed", values.get("seed", 0), low=0, high=2**63 - 1),
        hang_after=_count("hang-after", values["hang-after"], low=1)
        if "hang-after" in values else None,
        crash_after=_count("crash-after", values["crash-after"], low=1)
        if "crash-after" in values else None,
        dribble_after=_count("dribble-after", values["dribble-after"], low=1)
        if "dribble-after" in values else None,
        screenshot_min_bytes=_count("screenshot-min-bytes",
                                    values.get("screenshot-min-bytes", 0), low=0,
                                    high=MOST_SCREENSHOT_BYTES),
        no_snapshots=_count("no-snapshots", values.get("no-snapshots", 0), low=0, high=1) > 0,
    )


def parse_fault_args(items: Iterable[str]) -> Faults:
    """Parse repeated ``KEY=VALUE`` command-line items.

    Raises:
        FaultError: an item without ``=``, an unknown key, a bad value.
    """
    knobs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise FaultError(f"--fault {item!r}: expected KEY=VALUE, e.g. latency=0.5")
        knobs[key.strip()] = value.strip()
    return parse_faults(knobs)


class Action(Enum):
    """What the gate decided for one request."""

    SERVE = "serve"
    ERROR = "error"
    HANG = "hang"
    DRIBBLE = "dribble"


class FaultGate:
    """Counts a worker's requests and applies its faults; shared by both of its servers."""

    def __init__(self, faults: Faults) -> None:
        self.faults = faults
        self._lock = threading.Lock()
        self._count = 0
        self._rng = random.Random(faults.seed)

    def admit(self) -> Action:
        """Count one request; crash the process, sleep, or say how to answer it."""
        faults = self.faults
        with self._lock:
            self._count += 1
            number = self._count
            failed = faults.error_rate > 0 and self._rng.random() < faults.error_rate
        if faults.crash_after is not None and number >= faults.crash_after:
            print(f"fault crash-after={faults.crash_after}: exiting at request {number}",
                  file=sys.stderr, flush=True)
            os._exit(CRASH_EXIT_CODE)
        if faults.hang_after is not None and number >= faults.hang_after:
            return Action.HANG
        if faults.latency > 0:
            time.sleep(faults.latency)
        if faults.dribble_after is not None and number >= faults.dribble_after:
            return Action.DRIBBLE
        return Action.ERROR if failed else Action.SERVE
