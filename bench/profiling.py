"""CPU profiles of a multi-threaded controller, for the benchmarks' ``--profile`` option.

``cProfile`` only sees the thread that enabled it, and the runner does its work in one thread
per worker. :func:`profile_threads` gives every thread started inside the block (and the
calling thread) its own profiler, timed with the thread's own CPU clock
(``time.thread_time``): a thread waiting for a worker's answer, or for the interpreter lock,
costs nothing in the profile, so the figures add up to the controller's CPU rather than to
hundreds of threads' waiting. At the end the profiles are merged into one ``pstats`` file and
a text summary beside it (``<file>.txt``: the top entries by own time and by cumulative time,
and the profiled CPU per unit of work when the caller gives a count).

The profilers cost CPU themselves (about doubling the controller's), so a profiled run's
CPU figures are not comparable with an unprofiled one's; the shares and the call counts are
what a profile is for.
"""

from __future__ import annotations

import contextlib
import cProfile
import io
import pstats
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TOP = 40


class ThreadProfiler:
    """Profiles the thread that calls :meth:`start` and every thread started until :meth:`stop`
    (one ``cProfile`` profiler each, on the thread's CPU clock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._profiles: list[cProfile.Profile] = []
        self._main: cProfile.Profile | None = None

    def _profile_this_thread(self) -> cProfile.Profile:
        profile = cProfile.Profile(time.thread_time)
        with self._lock:
            self._profiles.append(profile)
        profile.enable()
        return profile

    def start(self) -> None:
        """Profile the calling thread, and every thread started from now on."""

        def first_event(frame: Any, event: str, arg: Any) -> None:
            # Runs once, at the new thread's first call: hand the thread to its own profiler.
            sys.setprofile(None)
            self._profile_this_thread()

        threading.setprofile(first_event)
        self._main = self._profile_this_thread()

    def stop(self) -> pstats.Stats | None:
        """Stop (call from the thread that started) and merge; None when nothing was seen."""
        threading.setprofile(None)
        if self._main is not None:
            self._main.disable()
        with self._lock:
            profiles = list(self._profiles)
        merged: pstats.Stats | None = None
        for profile in profiles:
            profile.create_stats()
            if not getattr(profile, "stats", None):
                continue  # a thread that ended before making one call
            if merged is None:
                merged = pstats.Stats(profile)
            else:
                merged.add(profile)
        return merged


def write_profile(stats: pstats.Stats, path: Path, per: tuple[str, int] | None = None) -> None:
    """Write ``path`` (``pstats``; ``python -m pstats <path>`` reads it) and ``<path>.txt``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    stats.dump_stats(str(path))
    Path(f"{path}.txt").write_text(summary(stats, per), encoding="utf-8")


@contextlib.contextmanager
def profile_threads(path: Path) -> Iterator[ThreadProfiler]:
    """Profile this thread and every thread started in the block; write ``path`` at the end."""
    profiler = ThreadProfiler()
    profiler.start()
    try:
        yield profiler
    finally:
        stats = profiler.stop()
        if stats is not None:
            write_profile(stats, path)


def summary(stats: pstats.Stats, per: tuple[str, int] | None = None, top: int = TOP) -> str:
    """The top entries by own time and by cumulative time, as text.

    Args:
        stats: the merged profile.
        per: ``(unit, count)``, e.g. ``("step", 1800)``: adds the profiled CPU per unit.
        top: entries in each list.
    """
    out = io.StringIO()
    stats.stream = out  # type: ignore[attr-defined]
    total = sum(v[2] for v in stats.stats.values())  # type: ignore[attr-defined]
    out.write(f"profiled CPU: {total:.2f} s (thread CPU time, profiler overhead included)\n")
    if per is not None and per[1] > 0:
        out.write(f"per {per[0]}: {1000 * total / per[1]:.3f} ms over {per[1]} {per[0]}s\n")
    out.write("\n== by own time ==\n")
    stats.sort_stats("tottime").print_stats(top)
    out.write("\n== by cumulative time ==\n")
    stats.sort_stats("cumulative").print_stats(top)
    return out.getvalue()
