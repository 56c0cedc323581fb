"""The one poll (``waa_client.poll``): passes, waits cut at the deadline, errors, and a scan
that no module polls on its own loop."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest

from waa_client.poll import poll_until


class FakeClock:
    """Monotonic seconds that move only when slept; every pass's time is noted."""

    def __init__(self) -> None:
        self.now = 100.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def _answers_at(clock: FakeClock, at: float, passes: list[float]) -> Callable[[], str | None]:
    def check() -> str | None:
        passes.append(clock.now)
        return "ready" if clock.now >= at else None
    return check


def test_an_answer_on_the_first_pass_never_waits() -> None:
    clock, passes = FakeClock(), []
    check = _answers_at(clock, 0.0, passes)
    assert poll_until(check, timeout_s=10, interval_s=1, clock=clock, sleep=clock.sleep) == "ready"
    assert passes == [100.0] and clock.waits == []


def test_passes_come_every_interval_until_the_answer() -> None:
    clock, passes = FakeClock(), []
    check = _answers_at(clock, 102.5, passes)
    assert poll_until(check, timeout_s=10, interval_s=1, clock=clock, sleep=clock.sleep) == "ready"
    assert passes == [100.0, 101.0, 102.0, 103.0] and clock.waits == [1, 1, 1]


def test_the_last_wait_is_cut_so_the_last_pass_runs_at_the_deadline() -> None:
    clock, passes = FakeClock(), []
    check = _answers_at(clock, float("inf"), passes)
    assert poll_until(check, timeout_s=2.5, interval_s=1, clock=clock, sleep=clock.sleep) is None
    assert passes == [100.0, 101.0, 102.0, 102.5]
    assert clock.waits == [1, 1, 0.5]  # never past the deadline


def test_an_answer_found_on_the_pass_at_the_deadline_is_returned() -> None:
    clock, passes = FakeClock(), []
    check = _answers_at(clock, 102.5, passes)
    assert poll_until(check, timeout_s=2.5, interval_s=1, clock=clock, sleep=clock.sleep) == "ready"
    assert passes[-1] == 102.5


@pytest.mark.parametrize("timeout_s", [0.0, -5.0])
def test_no_time_means_exactly_one_pass(timeout_s: float) -> None:
    clock, passes = FakeClock(), []
    check = _answers_at(clock, float("inf"), passes)
    assert poll_until(check, timeout_s=timeout_s, interval_s=1, clock=clock,
                      sleep=clock.sleep) is None
    assert passes == [100.0] and clock.waits == []


def test_an_error_from_the_check_ends_the_poll_at_once() -> None:
    clock = FakeClock()
    passes: list[float] = []

    def check() -> bool:
        passes.append(clock.now)
        if len(passes) == 3:
            raise ProcessLookupError("the process exited")
        return False

    with pytest.raises(ProcessLookupError, match="exited"):
        poll_until(check, timeout_s=60, interval_s=2, clock=clock, sleep=clock.sleep)
    assert passes == [100.0, 102.0, 104.0] and clock.waits == [2, 2]


def test_a_real_poll_waits_on_the_real_clock() -> None:
    calls: list[int] = []

    def check() -> bool:
        calls.append(1)
        return len(calls) >= 3

    assert poll_until(check, timeout_s=30, interval_s=0.01) is True
    assert len(calls) == 3


# -- no module writes a deadline loop of its own -------------------------------------------------

ROOT = Path(__file__).resolve().parents[3]
# infra is independent of waa_client (import-linter's layers): its worker-side loops (the
# simulated worker's browser) cannot import the poll, and are not scanned.
PACKAGES = ("waa_client", "evals", "oa_vm")


def _hand_written_polls(tree: ast.AST) -> list[int]:
    """Lines of ``while`` loops that sleep and read a deadline (``deadline``, ``monotonic``):
    a poll written by hand."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.While):
            continue
        text = ast.unparse(node)
        sleeps = any(isinstance(n, ast.Call) and ast.unparse(n.func).endswith("sleep")
                     for n in ast.walk(node))
        if sleeps and ("deadline" in text or "monotonic" in text):
            found.append(node.lineno)
    return found


def test_no_poll_loop_is_written_by_hand_outside_the_poll_module() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != ROOT / "waa_client" / "poll.py"
        for line in _hand_written_polls(ast.parse(path.read_text(), str(path)))
    ]
    assert offenders == [], "poll through waa_client.poll.poll_until:\n" + "\n".join(offenders)


def test_no_test_writes_a_wait_of_its_own() -> None:
    """The tests and the benchmarks wait for a condition through the same poll, by way of
    :func:`tests.support.waiting.wait_until` and its generous deadline: a deadline loop written
    by hand is where a short limit or a fixed sleep, flaky on a busy machine, comes back."""
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for folder in ("tests", "bench")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line in _hand_written_polls(ast.parse(path.read_text(), str(path)))
    ]
    assert offenders == [], "wait through tests.support.waiting:\n" + "\n".join(offenders)


def test_the_poll_scan_finds_the_loops_it_forbids() -> None:
    written = ast.parse(
        "def f():\n"
        "    deadline = time.monotonic() + 5\n"
        "    while not ready():\n"
        "        if time.monotonic() > deadline:\n"
        "            raise TimeoutError\n"
        "        time.sleep(0.1)\n"
        "    while time.monotonic() < end:\n"
        "        sleep(1)\n"
        "    while not stop.wait(1):\n"
        "        beat()\n"
    )
    assert _hand_written_polls(written) == [3, 7]
