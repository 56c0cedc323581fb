"""The project's one retry policy: capped exponential backoff, on tenacity.

Every call that is retried (requests to a worker, tunnel reconnects, the checker's 5xx answers,
catalog reads failed over between workers, a model API's rate limits) goes through
:func:`call`; no module writes a backoff loop of its own.

The first attempt runs outside tenacity and only a failure enters it: the worker clients call
this for every request a sweep makes (hundreds per second at hundreds of workers), and setting
up a retry object per call cost more CPU than the request's own bookkeeping. The failed first
attempt is replayed into tenacity, which then owns the waits, the stop and the re-raise.

Tests make every real wait zero with :func:`no_retry_waits` (the number of attempts is
unchanged); a caller that passes its own ``sleep`` (a fake clock) still sees the planned waits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import tenacity

T = TypeVar("T")

BACKOFF_MIN = 0.5

_waits_disabled = threading.Event()


@contextmanager
def no_retry_waits() -> Iterator[None]:
    """Within the block every retry that would really sleep happens at once (for tests);
    attempts are unchanged, and an injected ``sleep`` still gets the planned waits."""
    already = _waits_disabled.is_set()
    _waits_disabled.set()
    try:
        yield
    finally:
        if not already:
            _waits_disabled.clear()


def _sleep(seconds: float) -> None:
    time.sleep(seconds)


def backoff_s(attempt: int, backoff_max: float, first: float = BACKOFF_MIN) -> float:
    """The wait after failed attempt ``attempt`` (1-based): ``first`` doubling, capped at
    ``backoff_max`` (0: no wait)."""
    return float(min(backoff_max, first * 2 ** (attempt - 1)))


def call(
    fn: Callable[[], T],
    *,
    attempts: int,
    retryable: Callable[[BaseException], bool],
    backoff_max: float,
    first_wait: float = BACKOFF_MIN,
    wait_for: Callable[[BaseException, float], float] | None = None,
    sleep: Callable[[float], None] | None = None,
    on_retry: Callable[[int, BaseException], None] | None = None,
) -> T:
    """``fn()``, tried up to ``attempts`` times while it raises an error ``retryable`` accepts.

    Args:
        fn: The call; its result is returned as soon as one attempt succeeds.
        attempts: Tries in all (1: no retry).
        retryable: Whether an error is worth another try; any other error is raised at once.
        backoff_max: Cap of the wait between tries, in seconds (0: none).
        first_wait: The wait after the first failure; it doubles after each one.
        wait_for: Adjusts a wait from the error (a server's ``retry-after``, a deadline).
        sleep: The sleep function (a test's fake clock); ``time.sleep`` by default, looked up
            at each wait.
        on_retry: Called with the failed attempt's number and its error before each wait.

    Raises:
        BaseException: the last error, once the attempts are spent or the error is final.
    """
    try:
        return fn()
    except BaseException as exc:
        if attempts <= 1 or not retryable(exc):
            raise
        replay: BaseException | None = exc

    def attempt() -> T:
        nonlocal replay
        if replay is not None:
            failed, replay = replay, None
            raise failed
        return fn()

    def wait(state: tenacity.RetryCallState) -> float:
        if sleep is None and _waits_disabled.is_set():
            return 0.0
        planned = backoff_s(state.attempt_number, backoff_max, first_wait)
        error = state.outcome.exception() if state.outcome is not None else None
        if wait_for is not None and error is not None:
            planned = wait_for(error, planned)
        return max(0.0, planned)

    def before_sleep(state: tenacity.RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        if on_retry is not None and error is not None:
            on_retry(state.attempt_number, error)

    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(attempts),
        wait=wait,
        retry=tenacity.retry_if_exception(retryable),
        sleep=sleep or _sleep,
        before_sleep=before_sleep,
        reraise=True,
    )
    return retrying(attempt)
