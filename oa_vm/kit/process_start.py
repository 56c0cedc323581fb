"""Telling a process by its PID and its start time, as far as the system clock allows.

A PID is reused, so a process is named by its PID and the wall-clock time it started. On Linux
that time is the process's start in clock ticks since boot (fixed) plus the boot time, which
``/proc/stat`` gives in whole seconds and works out from the current clock. When the clock is
stepped (set by hand, or by NTP at start) across a second's boundary, every process's wall-clock
start moves by a whole second at once: a process that read the boot time before and one that
reads it after disagree by a second about the same process. A comparison tighter than that would
take live processes for gone (a local pool's workers marked lost while they serve, a run's lease
taken from its live holder).
"""

from __future__ import annotations

START_TOLERANCE_S = 2.0
"""Two starts this close are one process's: the boot time's whole second and its rollover, with
room for the clock's jitter. A PID reused within two seconds by a process of the same command
line (every caller checks it too) is not a case to guard against."""


def same_start(recorded: float, current: float) -> bool:
    """Whether a start time recorded earlier and one read now name the same process's start."""
    return abs(current - recorded) < START_TOLERANCE_S
