"""The number knobs read from the environment: one reader, and one check the console scripts run
before any command.

A knob (``OA_EVALS_TASK_LEASE_S=90``) changes a timing for drills, shared folders and slow links.
Its reader cannot refuse a bad value where it is read (deep in a run, a heartbeat thread), so
it falls back to the default there; :func:`knob_problem` finds the same bad value up front, and
:func:`oa_vm.kit.clikit.run_main` refuses it in one line before the command starts, rather than
run with a setting the user did not ask for. An unset or empty knob is the default.
"""

from __future__ import annotations

import math
import os

from oa_vm.kit.durations import LONGEST_S

# name: whether 0 is a usable value (a zero status-check interval checks on every pass)
KNOBS: dict[str, bool] = {
    "OA_EVALS_TASK_LEASE_S": False,  # how long a task lease outlives a silent controller
    "OA_VM_LEASE_STALE_S": False,  # heartbeat silence after which a pool's lease is taken over
    "OA_VM_DRAIN_CHECK_S": True,  # seconds between two status reads of a worker in a run
    "OA_EVALS_SSH_PATIENCE_S": False,  # how long a run waits for an SSH server that went down
}


def _read(name: str) -> tuple[float | None, str | None]:
    """``(value, problem)``: the knob's number, or ``None`` when unset, empty or unusable
    (then ``problem`` says why)."""
    text = os.environ.get(name, "")
    if text == "":
        return None, None
    zero_ok = KNOBS.get(name, False)
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if math.isfinite(value) and (value > 0 or zero_ok and value == 0) and value <= LONGEST_S:
        return value, None
    least = "0 or more" if zero_ok else "above 0"
    return None, (f"{name}={text!r} is not a number of seconds {least} (at most "
                  f"{LONGEST_S:.0f}); set it to one, e.g. {name}=60, or unset it")


def seconds(name: str, default: float) -> float:
    """The knob ``name`` in seconds, or ``default`` when it is unset, empty or unusable (the
    console scripts refused an unusable one before the command started)."""
    value, _ = _read(name)
    return default if value is None else value


def knob_problem() -> str | None:
    """Why one of :data:`KNOBS` cannot be used (the first found), or ``None``."""
    for name in KNOBS:
        _, problem = _read(name)
        if problem is not None:
            return problem
    return None


__all__ = ["KNOBS", "knob_problem", "seconds"]
