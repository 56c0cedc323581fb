"""The project's one retry policy: capped exponential backoff, on tenacity.

Every call that is retried (requests to a worker, tunnel reconnects, the checker's 5xx answers,
catalog reads failed over between workers, a model API's rate limits) goes through
:func:`call`; no module writes a backoff loop of its own.

The first attempt runs outside tenacity and only a failure enters it: the worker clients call
this for every request a sweep makes (hundreds per second at hundreds of workers), and setting
up a retry object per call cost more CPU than the request's own bookkeeping. The failed first
attempt is replayed into tenacity, which then owns the waits, the stop and the re-raise.

A loop that serves many keys and must not block on one (the tunnel pool's health loop, one
pass over every worker) keeps a :class:`Backoff` instead: the same waits, asked for per key.
Both take their waits from tenacity's ``wait_exponential``; no module computes one itself.

A call given a ``deadline`` (``time.monotonic()`` by which it must end: an attempt's, whose
worker may hang) ends by it: no retry starts whose wait would reach it (as tenacity's
``stop_before_delay``; the last error is raised), and each try cuts its own timeout to the time
left with :func:`try_timeout`. Without it a hung server held a retried read for every try's
whole timeout, three times the time the attempt had left. A caller that words why the call
ended passes ``on_give_up``: it hears whether the tries were spent, the deadline had passed, or
the next wait would have ended past it (:class:`GaveUp`), for "the time ran out" is only true
of the second.

A caller that cannot pass a deadline down to every call it makes (an agent's model API client,
a Cua-Bench module's session: their interfaces are third parties') sets one for a block with
:func:`deadline_scope`: :func:`call` and :func:`try_timeout` then end by the earlier of their own
deadline and the block's. The agent loop sets it around each attempt, so anything in the
attempt that retries or times a call here ends by the attempt's deadline. It lives here, with
the policy it bounds, because this is the one module both the worker clients and ``evals``
use (``waa_client`` imports nothing of ``evals``).

Tests make every real wait zero with :func:`no_retry_waits` (the number of attempts is
unchanged); a caller that passes its own ``sleep`` (a fake clock) still sees the planned waits.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, TypeVar

import tenacity

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

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


def _exponential(first: float, cap: float) -> tenacity.wait_exponential:
    """``first`` doubling after each failure, capped at ``cap`` (0: no wait)."""
    return tenacity.wait_exponential(multiplier=first, max=cap, exp_base=2, min=0)


# Only a holder for the RetryCallState that backoff_s hands to tenacity's wait strategy.
_STATE_OWNER = tenacity.Retrying()


def backoff_s(attempt: int, backoff_max: float, first: float = BACKOFF_MIN) -> float:
    """The wait after failed attempt ``attempt`` (1-based): ``first`` doubling, capped at
    ``backoff_max`` (0: no wait); tenacity's ``wait_exponential``, as :func:`call` waits."""
    state = tenacity.RetryCallState(_STATE_OWNER, None, (), {})
    state.attempt_number = max(1, attempt)
    return float(_exponential(first, backoff_max)(state))


class Backoff(Generic[K]):
    """Per-key backoff for a loop that serves many keys and must not block on one.

    After the ``n``-th failure in a row of a key, :meth:`due` is False for it until
    ``backoff_s(n, cap, first)`` seconds have passed on ``clock``; a success forgets its
    failures. The tunnel pool's health loop keeps one, keyed by worker name. Not thread-safe:
    one loop owns it.

    Args:
        first: The wait after a key's first failure; it doubles after each further one.
        cap: The longest wait, in seconds.
        clock: Monotonic seconds (a test's fake clock); ``time.monotonic`` by default.
    """

    def __init__(self, *, first: float, cap: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.first = first
        self.cap = cap
        self.clock = clock
        self._failures: dict[K, int] = {}
        self._next_try: dict[K, float] = {}

    def wait(self, failures: int) -> float:
        """Seconds a key waits after ``failures`` failures in a row."""
        return backoff_s(failures, self.cap, self.first)

    def due(self, key: K) -> bool:
        """Whether ``key`` may be tried now (never failed, or its wait is over)."""
        return self.clock() >= self._next_try.get(key, -math.inf)

    def failed(self, key: K) -> float:
        """Count a failure of ``key``; returns the seconds before it is due again."""
        failures = self._failures.get(key, 0) + 1
        self._failures[key] = failures
        delay = self.wait(failures)
        self._next_try[key] = self.clock() + delay
        return delay

    def succeeded(self, key: K) -> None:
        """Forget ``key``'s failures: it is due at once and a next failure waits ``first``."""
        self._failures.pop(key, None)
        self._next_try.pop(key, None)

    def failures(self, key: K) -> int:
        """Failures of ``key`` in a row so far."""
        return self._failures.get(key, 0)


_scope_deadline: ContextVar[float | None] = ContextVar("retry_deadline", default=None)


@contextmanager
def deadline_scope(deadline: float | None) -> Iterator[None]:
    """Within the block, :func:`call` and :func:`try_timeout` end by ``deadline`` too (a
    ``time.monotonic()`` value; None adds none; a scope inside another keeps the earlier).

    A context variable: it holds in this thread and in what runs in a copy of its context (a
    coroutine handed to an event loop, even another thread's, with
    ``asyncio.run_coroutine_threadsafe``; ``asyncio.to_thread``), not in a
    ``threading.Thread`` started inside the block. Enter it in plain code, not inside a
    coroutine that may be left unfinished (its close would run in another context)."""
    token = _scope_deadline.set(deadline_in_force(deadline))
    try:
        yield
    finally:
        _scope_deadline.reset(token)


def deadline_in_force(deadline: float | None = None) -> float | None:
    """The earlier of ``deadline`` and the one :func:`deadline_scope` set (None: neither)."""
    scoped = _scope_deadline.get()
    if deadline is None or scoped is None:
        return scoped if deadline is None else deadline
    return min(deadline, scoped)


def try_timeout(timeout: float, deadline: float | None = None) -> float:
    """A try's timeout: ``timeout`` cut to the time left before ``deadline`` or the scope's
    (:func:`deadline_in_force`; none: no cut); 0 or less when it has passed (the caller sends
    nothing)."""
    deadline = deadline_in_force(deadline)
    return timeout if deadline is None else min(timeout, deadline - time.monotonic())


def tries_text(count: int) -> str:
    """``count`` tries in words: "1 try", "3 tries"."""
    return f"{count} try" if count == 1 else f"{count} tries"


def seconds_text(seconds: float) -> str:
    """Seconds rounded for a message: whole ones from 1 s up ("7 s"), tenths below ("0.4 s")."""
    return f"{round(seconds) if seconds >= 1 else round(max(0.0, seconds), 1):g} s"


class StopReason(StrEnum):
    """Why :func:`call` stopped retrying an error it would otherwise have retried."""

    ATTEMPTS = "attempts"
    """Every try was made."""
    DEADLINE = "deadline"
    """The deadline had passed: the time did run out."""
    WAIT_PAST_DEADLINE = "wait past deadline"
    """Time was left, but the next wait would have ended at or past the deadline."""


@dataclass(frozen=True)
class GaveUp:
    """How a :func:`call` that raised its last retryable error ended (given to ``on_give_up``).

    Attributes:
        tries: Tries made.
        reason: Why no further try was made.
        wait_s: The wait the next try would have needed (``WAIT_PAST_DEADLINE``; else 0).
        left_s: Seconds left before the deadline when it stopped (None: no deadline).
    """

    tries: int
    reason: StopReason
    wait_s: float = 0.0
    left_s: float | None = None

    @property
    def tries_text(self) -> str:
        """The tries in words ("1 try", "3 tries")."""
        return tries_text(self.tries)


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
    deadline: float | None = None,
    on_give_up: Callable[[GaveUp], None] | None = None,
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
        deadline: ``time.monotonic()`` by which the whole call ends (the scope's, when it is
            earlier: :func:`deadline_scope`): a retry whose wait would reach it is not made
            (the last error is raised); ``fn`` cuts each try's own timeout with
            :func:`try_timeout`.
        on_give_up: Called once, before the last error is raised, when a retryable error
            ends the call: with the tries made and why no other was (:class:`GaveUp`).

    Raises:
        BaseException: the last error, once the attempts are spent or the error is final.
    """
    try:
        return fn()
    except BaseException as exc:
        if attempts <= 1 and on_give_up is not None and retryable(exc):
            on_give_up(GaveUp(1, StopReason.ATTEMPTS))
        if attempts <= 1 or not retryable(exc):
            raise
        replay: BaseException | None = exc

    def attempt() -> T:
        nonlocal replay
        if replay is not None:
            failed, replay = replay, None
            raise failed
        return fn()

    exponential = _exponential(first_wait, backoff_max)

    def wait(state: tenacity.RetryCallState) -> float:
        if sleep is None and _waits_disabled.is_set():
            return 0.0
        planned = float(exponential(state))
        error = state.outcome.exception() if state.outcome is not None else None
        if wait_for is not None and error is not None:
            planned = wait_for(error, planned)
        return max(0.0, planned)

    def before_sleep(state: tenacity.RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        if on_retry is not None and error is not None:
            on_retry(state.attempt_number, error)

    deadline = deadline_in_force(deadline)

    def stop(state: tenacity.RetryCallState) -> bool:
        # tenacity's stop_after_attempt and stop_before_delay, told apart for on_give_up
        left = None if deadline is None else deadline - time.monotonic()
        if state.attempt_number >= attempts:
            gave_up = GaveUp(state.attempt_number, StopReason.ATTEMPTS, left_s=left)
        elif left is not None and left <= 0:
            gave_up = GaveUp(state.attempt_number, StopReason.DEADLINE, left_s=left)
        elif left is not None and state.upcoming_sleep >= left:
            gave_up = GaveUp(state.attempt_number, StopReason.WAIT_PAST_DEADLINE,
                             state.upcoming_sleep, left)
        else:
            return False
        if on_give_up is not None:
            on_give_up(gave_up)
        return True

    retrying = tenacity.Retrying(
        stop=stop,
        wait=wait,
        retry=tenacity.retry_if_exception(retryable),
        sleep=sleep or _sleep,
        before_sleep=before_sleep,
        reraise=True,
    )
    return retrying(attempt)
