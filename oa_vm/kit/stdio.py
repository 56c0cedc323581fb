"""The three standard streams, present even when the process was started without them.

A command started with a standard stream closed (``oa-vm pool-cleanup <&-`` from a script,
``oa-vm pool-list >&-``, a service manager that closes them) finds ``sys.stdin`` or
``sys.stdout`` to be ``None``: the question before a removal then failed with an
``AttributeError`` instead of refusing without a terminal, and any output ended in a traceback.
Each console script calls :func:`ensure_std_streams` first: a closed stream is opened on the
null device, as daemons do, so a command reads end-of-file and writes into nothing, and its
exit code still says how it ended (as with :class:`PipeSafe` for a reader that goes away).

Kept free of imports beyond ``os`` and ``sys``: ``pool-status``'s fast path calls it.
"""

from __future__ import annotations

import os
import sys

# typing is not imported at run time (start-up time); mypy reads this as typing's.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_STREAMS = ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w"))


def ensure_std_streams() -> None:
    """Open each closed standard stream (descriptor 0, 1 or 2) on the null device, and give
    ``sys`` a stream object for any it lacks."""
    for fd, name, mode in _STREAMS:  # in order: os.open returns the lowest free descriptor
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, encoding="utf-8", errors="replace",  # noqa: SIM115
                                    closefd=False))


class PipeSafe:
    """stdout that survives its reader going away (``oa-vm pool-create | head -3``).

    A closed pipe must not kill a command half-way (a pool half made, a worker left running):
    once a write fails with ``BrokenPipeError``, the rest of the output is dropped and the
    command finishes what it was doing.
    """

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._broken = False
        self.written = False
        """Whether the command printed anything (its document, under ``--json``)."""

    def write(self, text: str) -> int:
        self.written = self.written or bool(text)
        if not self._broken:
            try:
                return int(self._stream.write(text))
            except BrokenPipeError:
                self._drop()
        return len(text)

    def flush(self) -> None:
        if not self._broken:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._drop()

    def _drop(self) -> None:
        self._broken = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:  # noqa: SIM105 - contextlib is not imported here (start-up time)
            os.dup2(devnull, self._stream.fileno())  # so the flush at exit does not fail
        except OSError:
            pass
        os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def pipe_safe_stdout() -> None:
    """Make ``sys.stdout`` a :class:`PipeSafe` (once): every console script, and the fast
    path of ``pool-status`` and ``pool-list`` (``oa-vm pool-list | head -1``), calls it."""
    if not isinstance(sys.stdout, PipeSafe):
        sys.stdout = PipeSafe(sys.stdout)


__all__ = ["PipeSafe", "ensure_std_streams", "pipe_safe_stdout"]
