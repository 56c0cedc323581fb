"""The one retry policy (``waa_client.retry``): attempts, waits, what is final, and hooks."""

from __future__ import annotations

import ast
import math
import time
from pathlib import Path

import pytest

from waa_client import retry


class Flaky:
    """Fails with ``errors`` in turn, then returns ``"ok"``."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def test_success_first_time_never_waits() -> None:
    waits: list[float] = []
    fn = Flaky()
    assert retry.call(fn, attempts=3, retryable=lambda e: True, backoff_max=8,
                      sleep=waits.append) == "ok"
    assert fn.calls == 1 and waits == []


def test_retryable_errors_wait_doubling_to_the_cap() -> None:
    waits: list[float] = []
    fn = Flaky(OSError("a"), OSError("b"), OSError("c"), OSError("d"))
    assert retry.call(fn, attempts=5, retryable=lambda e: isinstance(e, OSError),
                      backoff_max=1.5, sleep=waits.append) == "ok"
    assert fn.calls == 5
    assert waits == [0.5, 1.0, 1.5, 1.5]


def test_attempts_spent_reraises_the_last_error() -> None:
    waits: list[float] = []
    fn = Flaky(OSError("first"), OSError("second"), OSError("third"))
    with pytest.raises(OSError, match="third"):
        retry.call(fn, attempts=3, retryable=lambda e: True, backoff_max=8, sleep=waits.append)
    assert fn.calls == 3 and waits == [0.5, 1.0]


def test_a_final_error_is_raised_at_once() -> None:
    fn = Flaky(OSError("retry me"), ValueError("final"))
    waits: list[float] = []
    with pytest.raises(ValueError, match="final"):
        retry.call(fn, attempts=5, retryable=lambda e: isinstance(e, OSError), backoff_max=8,
                   sleep=waits.append)
    assert fn.calls == 2 and waits == [0.5]
    once = Flaky(ValueError("final"))
    with pytest.raises(ValueError):
        retry.call(once, attempts=5, retryable=lambda e: False, backoff_max=8)
    assert once.calls == 1


def test_one_attempt_means_no_retry() -> None:
    fn = Flaky(OSError("x"))
    with pytest.raises(OSError):
        retry.call(fn, attempts=1, retryable=lambda e: True, backoff_max=8)
    assert fn.calls == 1


def test_wait_for_and_on_retry_hooks() -> None:
    waits: list[float] = []
    seen: list[tuple[int, str]] = []
    fn = Flaky(OSError("slow down"), OSError("again"))
    retry.call(fn, attempts=3, retryable=lambda e: True, backoff_max=8, first_wait=2.0,
               wait_for=lambda exc, planned: 7.0 if "slow" in str(exc) else planned,
               sleep=waits.append, on_retry=lambda n, e: seen.append((n, str(e))))
    assert waits == [7.0, 4.0]  # the server's own wait, then first_wait doubled
    assert seen == [(1, "slow down"), (2, "again")]


def test_no_retry_waits_keeps_the_attempts(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr("waa_client.retry.time.sleep", slept.append)
    fn = Flaky(OSError("a"), OSError("b"))
    with retry.no_retry_waits():
        assert retry.call(fn, attempts=3, retryable=lambda e: True, backoff_max=8) == "ok"
    assert fn.calls == 3 and slept == [0.0, 0.0]
    injected: list[float] = []  # a fake clock still sees the planned waits
    with retry.no_retry_waits():
        retry.call(Flaky(OSError("a")), attempts=2, retryable=lambda e: True, backoff_max=8,
                   sleep=injected.append)
    assert injected == [0.5]


def test_backoff_s_is_the_schedule_call_sleeps() -> None:
    waits: list[float] = []
    retry.call(Flaky(*(OSError(str(n)) for n in range(5))), attempts=6, retryable=lambda e: True,
               backoff_max=10.0, first_wait=1.5, sleep=waits.append)
    assert waits == [1.5, 3.0, 6.0, 10.0, 10.0]
    assert [retry.backoff_s(n, 10.0, 1.5) for n in range(1, 6)] == waits
    assert retry.backoff_s(3, 0.0) == 0.0  # a cap of 0: no wait at all


def test_a_deadline_stops_the_retries_whose_wait_would_reach_it() -> None:
    # No sleep happens here (the waits are recorded), so the time left stays about 30 s: the
    # waits 1, 2, 4, 8 and 16 fit in it, the next one (32) would end past it.
    waits: list[float] = []
    fn = Flaky(*(OSError(str(n)) for n in range(10)))
    with pytest.raises(OSError, match="5"):
        retry.call(fn, attempts=10, retryable=lambda e: True, backoff_max=math.inf,
                   first_wait=1.0, sleep=waits.append, deadline=time.monotonic() + 30.0)
    assert waits == [1.0, 2.0, 4.0, 8.0, 16.0] and fn.calls == 6


def test_a_deadline_that_passed_allows_no_retry() -> None:
    fn = Flaky(OSError("hung"), OSError("again"))
    waits: list[float] = []
    with retry.no_retry_waits(), pytest.raises(OSError, match="hung"):
        retry.call(fn, attempts=3, retryable=lambda e: True, backoff_max=8, sleep=waits.append,
                   deadline=time.monotonic() - 1.0)
    assert fn.calls == 1 and waits == []


def test_the_caller_hears_why_the_retries_stopped() -> None:
    # A caller said "the time ran out" whenever tries were left, though with a long wait ahead
    # (a server's retry-after of 30 s, 7 s left) the time had not run out: the policy stopped
    # because the wait would have passed the deadline. on_give_up now tells the cases apart.
    def gave_up(**kwargs: object) -> list[retry.GaveUp]:
        heard: list[retry.GaveUp] = []
        with pytest.raises(OSError):
            retry.call(Flaky(*(OSError(str(n)) for n in range(5))), retryable=lambda e: True,
                       backoff_max=math.inf, sleep=lambda s: None, on_give_up=heard.append,
                       **kwargs)  # type: ignore[arg-type]
        return heard

    [waiting] = gave_up(attempts=5, first_wait=30.0, deadline=time.monotonic() + 600.0)
    assert waiting.reason is retry.StopReason.ATTEMPTS and waiting.tries == 5
    [past] = gave_up(attempts=5, first_wait=30.0, deadline=time.monotonic() + 7.0)
    assert past.reason is retry.StopReason.WAIT_PAST_DEADLINE and past.tries == 1
    assert past.wait_s == 30.0 and past.left_s is not None and 0 < past.left_s <= 7.0
    [passed] = gave_up(attempts=5, deadline=time.monotonic() - 1.0)
    assert passed.reason is retry.StopReason.DEADLINE and passed.tries == 1
    [single] = gave_up(attempts=1)
    assert single == retry.GaveUp(1, retry.StopReason.ATTEMPTS)
    assert [retry.tries_text(n) for n in (1, 2)] == ["1 try", "2 tries"]
    assert [retry.seconds_text(s) for s in (7.4, 29.6, 0.44, -0.01)] == [
        "7 s", "30 s", "0.4 s", "0 s"]
    # a final error is no give-up: nothing is heard
    heard: list[retry.GaveUp] = []
    with pytest.raises(KeyError):
        retry.call(Flaky(KeyError("final")), attempts=3, retryable=lambda e: False,
                   backoff_max=0, on_give_up=heard.append)
    assert heard == []


def test_a_tries_timeout_is_cut_to_the_time_left() -> None:
    assert retry.try_timeout(5.0, None) == 5.0
    assert retry.try_timeout(5.0, time.monotonic() + 1000.0) == 5.0
    assert 0.0 < retry.try_timeout(1000.0, time.monotonic() + 5.0) <= 5.0
    assert retry.try_timeout(5.0, time.monotonic() - 1.0) <= 0.0


def test_a_deadline_scope_bounds_the_calls_made_inside_it() -> None:
    # What a caller cannot pass a deadline to (an agent's model API client) still ends by the
    # scope's: the attempt's, set by the agent loop. The earlier deadline wins, nested or given.
    soon, later = time.monotonic() + 30.0, time.monotonic() + 1000.0
    assert retry.deadline_in_force() is None and retry.try_timeout(500.0) == 500.0
    with retry.deadline_scope(soon):
        assert retry.deadline_in_force() == soon == retry.deadline_in_force(later)
        assert retry.try_timeout(500.0) <= 30.0
        with retry.deadline_scope(later), retry.deadline_scope(None):
            assert retry.deadline_in_force() == soon
        waits: list[float] = []
        fn = Flaky(*(OSError(str(n)) for n in range(10)))
        with pytest.raises(OSError, match="5"):
            retry.call(fn, attempts=10, retryable=lambda e: True, backoff_max=math.inf,
                       first_wait=1.0, sleep=waits.append)
        assert waits == [1.0, 2.0, 4.0, 8.0, 16.0]  # the next (32) would end past the scope's
    assert retry.deadline_in_force() is None  # the scope ends with its block


class FakeClock:
    """Monotonic seconds that move only when a test says so."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_backoff_puts_a_failing_key_off_doubling_to_the_cap() -> None:
    clock = FakeClock()
    backoff: retry.Backoff[str] = retry.Backoff(first=4.0, cap=30.0, clock=clock)
    assert backoff.due("w1") and backoff.due("w2")
    delays = []
    for _ in range(5):
        delays.append(backoff.failed("w1"))
        assert not backoff.due("w1") and backoff.due("w2")  # one key's failures are its own
        clock.now += delays[-1] - 0.01
        assert not backoff.due("w1")
        clock.now += 0.01
        assert backoff.due("w1")
    assert delays == [4.0, 8.0, 16.0, 30.0, 30.0]
    assert backoff.failures("w1") == 5


def test_backoff_forgets_a_key_that_succeeded() -> None:
    clock = FakeClock()
    backoff: retry.Backoff[str] = retry.Backoff(first=1.0, cap=60.0, clock=clock)
    assert [backoff.failed("w1") for _ in range(3)] == [1.0, 2.0, 4.0]
    backoff.succeeded("w1")
    assert backoff.due("w1") and backoff.failures("w1") == 0
    assert backoff.failed("w1") == 1.0  # a new run of failures starts from the first wait


ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("waa_client", "evals", "oa_vm", "infra")
RETRY_NAMES = ("attempt", "tries", "retry", "retries")


def _hand_written_backoff(tree: ast.AST) -> list[tuple[int, str]]:
    """The marks of a backoff written by hand: a wait doubled (``2 ** n``, ``pow(2, n)``,
    ``x *= 2``) or a loop counting its own tries (``for attempt in range(...)``)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        exponential = (
            isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow)
            and isinstance(node.left, ast.Constant) and not isinstance(node.right, ast.Constant)
        ) or (
            isinstance(node, ast.Call) and ast.unparse(node.func) in ("pow", "math.pow")
        )
        if exponential:
            found.append((getattr(node, "lineno", 0), f"{ast.unparse(node)} (an exponential wait)"))
        elif (isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Mult)
              and isinstance(node.value, ast.Constant) and node.value.value in (2, 2.0)):
            found.append((node.lineno, f"{ast.unparse(node)} (a doubled wait)"))
        elif (isinstance(node, ast.For) and isinstance(node.target, ast.Name)
              and isinstance(node.iter, ast.Call) and ast.unparse(node.iter.func) == "range"
              and any(word in node.target.id.lower() for word in RETRY_NAMES)):
            found.append((node.lineno, f"for {node.target.id} in ... (a retry loop)"))
    return found


def test_no_backoff_loop_is_written_by_hand_outside_the_retry_module() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != ROOT / "waa_client" / "retry.py"
        for line, what in _hand_written_backoff(ast.parse(path.read_text(), str(path)))
    ]
    assert offenders == [], "retry through waa_client.retry:\n" + "\n".join(offenders)


def test_the_backoff_scan_finds_the_loops_it_forbids() -> None:
    written = ast.parse(
        "def f(n):\n"
        "    for attempt in range(3):\n"
        "        delay = 0.5 * 2 ** attempt\n"
        "        wait *= 2\n"
        "    return pow(2, n), 2 ** 20\n"
    )
    assert sorted(line for line, _ in _hand_written_backoff(written)) == [2, 3, 4, 5]
