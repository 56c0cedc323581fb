"""Signals a long command treats as Ctrl-C, signals a cleanup must not be stopped by, and
signals a step that must not be cut in two holds until it ends.

One place for both, used by ``oa-vm smoke`` (``oa_vm/cli/smoke_run.py``) and ``openadapt-evals
sweep`` (``evals/cli/commands/sweep.py``): a SIGTERM (a CI job cancelled, ``kill``) must remove what
the command made, exactly as a Ctrl-C does.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from types import FrameType
from typing import Any


def sigterm_as_interrupt(
    signals: tuple[signal.Signals, ...] = (signal.SIGTERM,),
) -> AbstractContextManager[None]:
    """Within the block, ``signals`` (SIGTERM by default) raise KeyboardInterrupt, so cleanup
    runs as for Ctrl-C; the previous handlers are put back after it.

    Outside the main thread (where Python lets no one set handlers) the block runs unchanged.
    """

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    return _handled(signals, handler)


def signals_ignored(
    signals: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM),
) -> AbstractContextManager[None]:
    """Within the block, ``signals`` (Ctrl-C and SIGTERM by default) are ignored, so a cleanup
    is not stopped half-way by a second Ctrl-C or ``kill``; the previous handlers are put back
    after it. Outside the main thread the block runs unchanged."""
    return _handled(signals, signal.SIG_IGN)


@contextmanager
def signals_deferred(
    signals: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP),
) -> Iterator[None]:
    """Within the block, ``signals`` (Ctrl-C, SIGTERM, SIGHUP by default) wait: one that arrives
    is delivered again as the block ends, to the handler that was there before (so a Ctrl-C
    raises KeyboardInterrupt right after it). For a step that must not be cut in two: a process
    started and the record that names it (:func:`oa_vm.clouds.local.fleet.launch_unit`).
    Outside the main thread the block runs unchanged."""
    arrived: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        arrived.append(signum)

    try:
        with _handled(signals, hold):  # outside the main thread: unchanged, nothing held
            yield
    finally:  # the old handlers are back: each signal held goes to them, once, in order
        for number in dict.fromkeys(arrived):
            signal.raise_signal(number)


@contextmanager
def _handled(signals: tuple[signal.Signals, ...], handler: Any) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, handler) for s in signals}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
