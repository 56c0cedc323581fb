"""SIGTERM inside ``sigterm_as_interrupt`` is a Ctrl-C; outside it, the old handler is back.
Inside ``signals_deferred`` a Ctrl-C waits for the block's end."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from oa_vm.kit.signals import signals_deferred, sigterm_as_interrupt


def test_sigterm_raises_keyboard_interrupt_then_the_old_handler_is_back() -> None:
    seen: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        with pytest.raises(KeyboardInterrupt, match="signal 15"), sigterm_as_interrupt():
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):  # the handler runs between bytecodes of the main thread
                pass
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):
            pass
        assert seen == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_outside_the_main_thread_nothing_is_changed() -> None:
    errors: list[BaseException] = []

    def body() -> None:
        try:
            with sigterm_as_interrupt():
                pass
        except BaseException as exc:  # signal.signal would raise ValueError here
            errors.append(exc)

    before = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=body)
    thread.start()
    thread.join(timeout=60)
    assert not errors and signal.getsignal(signal.SIGTERM) is before


def test_a_cleanup_shielded_from_sigterm_and_ctrl_c_inside_a_sigterm_block_finishes() -> None:
    """A sweep's cleanup runs inside ``sigterm_as_interrupt``: a second SIGTERM or Ctrl-C while
    it removes the pool must not stop it half-way, and the handlers come back after it."""
    from oa_vm.kit.signals import signals_ignored

    finished = False
    with pytest.raises(KeyboardInterrupt), sigterm_as_interrupt():
        with signals_ignored():
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):  # a handler would run between these bytecodes
                pass
            finished = True
        os.kill(os.getpid(), signal.SIGTERM)  # outside the shield: a Ctrl-C again
        for _ in range(1000):
            pass
    assert finished


def test_a_ctrl_c_inside_signals_deferred_arrives_once_the_block_has_ended() -> None:
    finished = []
    before = signal.getsignal(signal.SIGINT)
    if before is not signal.default_int_handler:
        pytest.skip("Ctrl-C is not Python's KeyboardInterrupt in this process")
    with pytest.raises(KeyboardInterrupt):
        with signals_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)  # twice: delivered once
            for _ in range(1000):  # the handler runs between bytecodes of the main thread
                pass
            finished.append("the step")  # not cut in two
        finished.append("after")  # never reached: the Ctrl-C arrives as the block ends
    assert finished == ["the step"]
    assert signal.getsignal(signal.SIGINT) is before
