"""An action stops when its caller is gone or the worker's own limit has passed.

A client that gives up on an action (its read timeout passed) closes its connection; WAA's
guest would keep running the action, and the simulated worker did too (typing 400,000
characters burned a core for a minute after the run had moved on). The server watches the
connection of the request being served (:func:`watching`), and every loop that plays an action
asks :func:`check` as it goes: it raises :class:`ActionStopped` once the caller has closed its
connection or :data:`ACTION_LIMIT_S` has passed (WAA's own server stops a command after 120 s).
Outside a request (tests, setup steps played directly) :func:`check` does nothing.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from collections.abc import Iterator

ACTION_LIMIT_S = 120.0
"""The longest one request may play an action, as WAA's server limits ``/execute``."""
_PEEK_EVERY_S = 0.05  # a look at the socket costs a system call: at most 20 a second

_local = threading.local()


class ActionStopped(Exception):
    """The action was stopped part way: its caller went away, or the worker's limit passed."""


class _Watch:
    def __init__(self, conn: socket.socket | None, limit_s: float) -> None:
        self.conn = conn
        self.started = time.monotonic()
        self.deadline = self.started + limit_s
        self.limit_s = limit_s
        self.peeked = self.started

    def check(self) -> None:
        now = time.monotonic()
        if now > self.deadline:
            raise ActionStopped(f"the action ran past this worker's limit of "
                                f"{self.limit_s:g}s and was stopped")
        if self.conn is None or now - self.peeked < _PEEK_EVERY_S:
            return
        self.peeked = now
        if _closed(self.conn):
            raise ActionStopped(f"the caller went away after {now - self.started:.1f}s; "
                                "the action was stopped")


def _closed(conn: socket.socket) -> bool:
    """Whether the peer has closed ``conn`` (readable, and a peek reads nothing)."""
    try:
        readable, _, _ = select.select([conn], [], [], 0)
        if not readable:
            return False
        return conn.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


@contextlib.contextmanager
def watching(conn: socket.socket | None, limit_s: float = ACTION_LIMIT_S) -> Iterator[None]:
    """While serving one request on ``conn``: :func:`check` stops its action when the caller
    closes ``conn`` or ``limit_s`` seconds have passed."""
    previous = getattr(_local, "watch", None)
    _local.watch = _Watch(conn, limit_s)
    try:
        yield
    finally:
        _local.watch = previous


def check() -> None:
    """Raise :class:`ActionStopped` if the action being played is to stop (see the module)."""
    watch = getattr(_local, "watch", None)
    if watch is not None:
        watch.check()


def sleep(seconds: float) -> None:
    """``time.sleep`` that an action's stop ends early (:class:`ActionStopped`)."""
    end = time.monotonic() + seconds
    while True:
        check()
        left = end - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, _PEEK_EVERY_S))
