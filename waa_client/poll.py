"""The project's one poll: a check asked again at a fixed interval until it answers or a
deadline passes.

A poll is not a retry (:mod:`waa_client.retry`): the check does not fail, it answers "not yet"
(a falsy value) and may report progress on every pass, so the waits are fixed, not backed off.
Every wait for a condition (a pool's workers ready, a lease or a file lock free, a process's
ready file, an SSH master's control socket) goes through :func:`poll_until`; no module writes
a deadline loop of its own.

A plain loop, not tenacity (which :mod:`waa_client.retry` uses for backoff): fixed waits need
none of its policies, and on it the poll needed a replayed first pass and an import deferred to
the first wait to keep the CLI's start-up cheap. The stop and the wait read the caller's
``clock``, so a test's fake clock drives the whole poll.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def poll_until(
    check: Callable[[], T | None],
    *,
    timeout_s: float,
    interval_s: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] | None = None,
) -> T | None:
    """Call ``check`` until it answers (a truthy value, returned), at most ``timeout_s`` seconds.

    The contract:

    - ``check`` runs at once, then again ``interval_s`` seconds after each pass ends.
    - The deadline is ``clock() + timeout_s``, read when the poll starts. A pass that ends at
      or after it without an answer ends the poll: ``None`` is returned (the caller raises its
      own error, naming what it waited for). ``timeout_s <= 0``: exactly one pass.
    - The poll never sleeps past the deadline: the last wait is cut to the time left, so the
      last pass runs at the deadline.
    - An error raised by ``check`` ends the poll at once and is raised as it is: that is how a
      check says waiting cannot help (a process that exited, a refused key).

    Args:
        check: One pass; a falsy answer means "not yet".
        timeout_s: How long to keep asking, in seconds.
        interval_s: The wait between passes, in seconds.
        clock: Monotonic seconds (a test's fake clock); ``time.monotonic`` by default.
        sleep: The sleep function (a test's fake clock); ``time.sleep`` by default, looked up
            at each wait.
    """
    deadline = clock() + max(0.0, timeout_s)
    while not (answer := check()) and clock() < deadline:
        (sleep or time.sleep)(max(0.0, min(interval_s, deadline - clock())))
    return answer or None
