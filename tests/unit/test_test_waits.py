"""The tests' one wait (``tests.support.waiting``): what it returns, how it fails, and that a
condition's own error ends it at once. Short limits here are the point (the wait's own end is
what is tested), never a timing a busy machine could break."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.support.waiting import alive, throughout, wait_gone, wait_until


def test_the_condition_s_answer_is_returned_once_it_comes() -> None:
    answers = iter([None, 0, "", "ready"])
    assert wait_until(lambda: next(answers), "the answer", interval=0.001) == "ready"


def test_a_condition_that_never_comes_fails_naming_what_was_awaited() -> None:
    log = ["nothing yet"]
    with pytest.raises(AssertionError, match=r"timed out after 0.1 s waiting for the pool: "
                                             r"nothing yet"):
        wait_until(lambda: False, lambda: f"the pool: {log[-1]}", 0.1, interval=0.01)


def test_an_error_in_the_condition_ends_the_wait_at_once() -> None:
    def exited() -> bool:
        raise AssertionError("the controller ended early")

    started = time.monotonic()
    with pytest.raises(AssertionError, match="ended early"):
        wait_until(exited, "a record")
    assert time.monotonic() - started < 60  # not the 240 s limit: the first pass raised


def test_an_ended_process_is_not_alive_even_unreaped() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        wait_gone(proc.pid)  # a zombie until the wait below: already gone for the tests
        assert not alive(proc.pid)
    finally:
        proc.wait()
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    try:
        assert alive(running.pid)
    finally:
        running.kill()
        running.wait()


def test_a_window_fails_at_the_first_look_that_sees_what_must_not_happen() -> None:
    looks: list[int] = []

    def nothing_taken() -> None:
        looks.append(1)
        assert len(looks) < 3, "taken"

    with pytest.raises(AssertionError, match="taken"):
        throughout(60.0, nothing_taken, interval=0.001)
    assert len(looks) == 3
