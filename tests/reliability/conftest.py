"""Shared helpers of the reliability suites (their home, pools and workers are the fixtures of
``tests/conftest.py``: a home whose pools and processes are gone after each test)."""

from __future__ import annotations

import time

from tests.support.controller import WAIT_LIMIT_S


def wait_until(condition: object, what: str, limit: float = WAIT_LIMIT_S) -> None:
    """Poll ``condition()`` until true; fail naming ``what`` after ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
