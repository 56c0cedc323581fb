"""The three standard streams, present even when the process was started without them.

A command started with a standard stream closed (``oa-vm pool-cleanup <&-`` from a script,
``oa-vm pool-list >&-``, a service manager that closes them) finds ``sys.stdin`` or
``sys.stdout`` to be ``None``: the question before a removal then failed with an
``AttributeError`` instead of refusing without a terminal, and any output ended in a traceback.
Each console script calls :func:`ensure_std_streams` first: a closed stream is opened on the
null device, as daemons do, so a command reads end-of-file and writes into nothing, and its
exit code still says how it ended (as with :class:`oa_vm.kit.clikit._PipeSafe` for a reader
that goes away).

Kept free of imports beyond ``os`` and ``sys``: ``pool-status``'s fast path calls it.
"""

from __future__ import annotations

import os
import sys

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


__all__ = ["ensure_std_streams"]
