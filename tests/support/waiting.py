"""The tests' one wait for a condition, and how long any wait of theirs may take.

A test never sleeps a fixed time in the hope that something has happened, and never gives a
process it started a deadline of a few seconds: it waits for the condition itself with
:func:`wait_until`, whose deadline is generous. CI runs four test processes on two cores beside
other work, so a slow machine costs a test time, never its verdict; a condition that never comes
still fails the test, naming what it waited for. Built on the project's own poll
(:func:`waa_client.poll.poll_until`): a condition that raises (a controller that exited early, an
assertion) ends the wait at once with that error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import psutil

from waa_client.poll import poll_until

T = TypeVar("T")

WAIT_LIMIT_S = 240.0
"""How long a test waits for anything (a process to start or end, a record, a file, a state):
generous, since a busy 2-core machine may be many times slower than a quiet one."""

_INTERVAL_S = 0.05


def wait_until(condition: Callable[[], T | None], what: str | Callable[[], str],
               limit: float = WAIT_LIMIT_S, *, interval: float = _INTERVAL_S) -> T:
    """Ask ``condition()`` every ``interval`` seconds until it answers (a truthy value, returned);
    after ``limit`` seconds without an answer, fail the test naming ``what`` (a text, or a
    function giving it then: a log read at the moment of failure)."""
    answer = poll_until(condition, timeout_s=limit, interval_s=interval)
    if not answer:
        said = what() if callable(what) else what
        raise AssertionError(f"timed out after {limit:g} s waiting for {said}")
    return answer


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie, dead but not reaped by its parent yet, does
    not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_gone(pid: int, limit: float = WAIT_LIMIT_S) -> None:
    """Wait until process ``pid`` has ended (:func:`alive` says no more)."""
    wait_until(lambda: not alive(pid), f"process {pid} to end", limit)


def throughout(seconds: float, check: Callable[[], object], *,
               interval: float = _INTERVAL_S) -> None:
    """Run ``check`` (its assertions) every ``interval`` seconds for ``seconds`` seconds: a window
    in which something must not happen. Not a wait: the window's length is the point, so a busy
    machine makes it looked at less often, never failed by the clock."""

    def never_done() -> None:
        check()

    poll_until(never_done, timeout_s=seconds, interval_s=interval)
