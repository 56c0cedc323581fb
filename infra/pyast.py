"""Python parsed into an AST one thread at a time, for every parse in this package.

CPython 3.11 keeps the AST constructor's recursion depth in the interpreter's state, not the
thread's: two threads building trees at once can fail with a spurious ``SystemError: AST
constructor recursion depth mismatch`` (python/cpython issue 106905, the shape a test of ours
met while an in-process worker parsed an action on its request thread). The simulated worker
parses actions on its request threads and the cloud-init renderer parses the shipped scripts,
so each parse takes one lock: a parse costs microseconds to milliseconds, and no caller parses
on a hot path that contention would slow.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse_module(source: str) -> ast.Module:
    """``ast.parse(source)`` under the package's parse lock (see the module).

    Raises:
        SyntaxError: ``source`` is not Python.
    """
    with _LOCK:
        return ast.parse(source, mode="exec")


def parse_expression(source: str) -> ast.Expression:
    """``ast.parse(source, mode="eval")`` under the package's parse lock.

    Raises:
        SyntaxError: ``source`` is not one Python expression.
    """
    with _LOCK:
        return ast.parse(source, mode="eval")
