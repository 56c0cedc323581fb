"""Signalling a process group a test started, only while it is still that group.

A test that starts a process group (``setsid``, ``start_new_session``) and signals it later by
the number it wrote down must first make sure the number is still its group's: once every
process of a group has ended, the system hands the number to a new process, and on a busy
machine (PIDs wrap at 32768 within minutes of this suite) that is often another test's process
group leader, such as a local pool's worker, which the stale signal then ends. A group is told
by its leader's start (``/proc/PID/stat``'s start time, clock ticks since boot, which no clock
change moves): while a process of that number runs with another start, the number is not ours.
The bash stand-ins (:mod:`tests.support.host_standins`) and the docker stand-in
(:mod:`tests.support.waa_container`) follow the same rule in their own language.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def started(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot), or None when there is none."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    return stat.rsplit(") ", 1)[1].split()[19]


def start_file(pid_file: Path) -> Path:
    """Where the leader's start is written beside a PID file (``<file>.start``)."""
    return pid_file.with_name(pid_file.name + ".start")


def record_group(pid: int, pid_file: Path) -> None:
    """Write down the group ``pid`` leads: its number, and its leader's start beside it."""
    pid_file.write_text(f"{pid}\n", encoding="ascii")
    start_file(pid_file).write_text(f"{started(pid) or ''}\n", encoding="ascii")


def signal_group(pid_file: Path, sig: int) -> None:
    """Send ``sig`` to the group ``pid_file`` names (:func:`record_group`), unless its number
    runs another process now; nothing when the file or the group is gone."""
    try:
        pid = int(pid_file.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return
    try:
        start = start_file(pid_file).read_text(encoding="ascii").strip()
    except OSError:
        start = ""
    now = started(pid)
    if now is not None and start and now != start:
        return  # the group ended and its number went to another process
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
