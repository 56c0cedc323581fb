"""Telling a process by its PID and its start, whatever the system clock does.

A PID is reused, so a process is named by its PID and when it started. On Linux the start is
first of all a count of clock ticks since boot (``/proc/<pid>/stat``), which nothing moves:
:func:`start_mark` names it with the boot's ID, and two marks are equal exactly when they name
one process's start. The wall-clock start (psutil's ``create_time``) is that count plus the boot
time, which ``/proc/stat`` works out from the current clock and psutil reads once per process:
when the clock is stepped (set by hand, by NTP, by a virtual machine's host after a pause), every
start read afterwards moves by the step, and a process that read the boot time before disagrees
with one that reads it after about the same process. Compared by that time (records written
without a mark, other systems), two starts are one process's within :data:`START_TOLERANCE_S`,
which holds for a second's rollover, not for a step of several seconds: that one took every live
worker of the local pools on a machine for lost at once.
"""

from __future__ import annotations

from collections.abc import Callable

START_TOLERANCE_S = 2.0
"""Two starts this close are one process's: the boot time's whole second and its rollover, with
room for the clock's jitter. A PID reused within two seconds by a process of the same command
line (every caller checks it too) is not a case to guard against."""


def same_start(recorded: float, current: float) -> bool:
    """Whether a start time recorded earlier and one read now name the same process's start."""
    return abs(current - recorded) < START_TOLERANCE_S


def boot_id() -> str:
    """This boot's ID (Linux: a new one at every boot); ``""`` where there is none."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def start_mark(pid: int) -> str | None:
    """``<boot ID>/<start in clock ticks since boot>`` of the process ``pid``, which no clock
    step moves; None where ``/proc`` does not give it (another system, the process gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            stat = handle.read()
    except OSError:
        return None
    return mark_of(boot_id(), stat)


def mark_of(boot: str, stat: str) -> str | None:
    """The mark (:func:`start_mark`) from the boot's ID and the text of ``/proc/<pid>/stat``."""
    fields = stat[stat.rfind(")") + 2:].split()  # the command's name may hold spaces
    if len(fields) < 20 or not fields[19].isdigit() or not boot:
        return None
    return f"{boot}/{fields[19]}"


def started_as_recorded(pid: int, recorded_mark: object, recorded_time: object,
                        current_time: Callable[[], float | None]) -> bool:
    """Whether the process ``pid`` runs now is the one whose start was recorded: by the marks
    when one was recorded and ``/proc`` gives the current one, else by the wall-clock starts
    (``current_time`` read only then; a start not recorded, or not readable now, does not
    tell them apart).
    """
    if isinstance(recorded_mark, str):
        mark = start_mark(pid)
        if mark is not None:
            return mark == recorded_mark
    if not isinstance(recorded_time, (int, float)):
        return True
    current = current_time()
    return current is None or same_start(float(recorded_time), current)
