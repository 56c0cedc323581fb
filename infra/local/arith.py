"""The calculator's arithmetic: numbers, + - * / // % ** and parentheses, nothing else.

Parsed with :mod:`ast` and walked by hand, so no expression can run code.
"""

from __future__ import annotations

import ast
import datetime as dt
import operator
import re
from collections.abc import Callable

from infra import pyast

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


class ArithmeticInputError(ValueError):
    """The expression is not plain arithmetic, or cannot be computed."""


def _walk(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        if isinstance(node.value, bool):
            raise ArithmeticInputError("only numbers are allowed")
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _walk(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _walk(node.left), _walk(node.right)
        # A huge power would pin the worker's CPU; the calculator app refuses it too.
        if isinstance(node.op, ast.Pow) and (abs(right) > 64 or abs(left) > 1e6):
            raise ArithmeticInputError("power too large")
        return _BINARY[type(node.op)](left, right)
    raise ArithmeticInputError("only numbers, + - * / // % ** and parentheses are allowed")


def format_number(value: float) -> str:
    """``12.0`` -> ``12``; other values with up to 12 significant digits."""
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.12g}"


def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression (``x`` and ``×``/``÷`` accepted) to its display text.

    Raises:
        ArithmeticInputError: not arithmetic, division by zero, or too large.
    """
    text = expression.replace("×", "*").replace("÷", "/").replace("x", "*").replace("X", "*")
    try:
        tree = pyast.parse_expression(text)
        return format_number(_walk(tree.body))
    except SyntaxError:
        raise ArithmeticInputError(f"{expression!r} is not an arithmetic expression") from None
    except (ZeroDivisionError, OverflowError) as exc:
        raise ArithmeticInputError(f"{expression!r}: {exc}") from None


def history_line(expression: str, result: str) -> str | None:
    """The History pane's entry for a calculation (``1234*5678 = 7006652``), or ``None`` when
    the expression computes nothing (a number alone, as Windows adds no entry for it).

    The expression is shown without blanks and with ``*``/``/`` for the operators, so the same
    calculation reads the same whether it was clicked, typed or sent as a command.
    """
    text = re.sub(r"\s+", "", expression)
    text = text.replace("×", "*").replace("÷", "/").replace("x", "*").replace("X", "*")
    try:
        body = pyast.parse_expression(text).body
    except SyntaxError:
        return None
    while isinstance(body, ast.UnaryOp):
        body = body.operand
    if isinstance(body, ast.Constant):
        return None
    return f"{text} = {result}"


def date_history_line(first: str, second: str, days: int) -> str:
    """The entry for a date difference, earlier date first, dates as ``YYYY-MM-DD``
    (``2024-01-03 to 2024-08-20 = 230 days``).

    Raises:
        ArithmeticInputError: a date is not ``YYYY-MM-DD``.
    """
    try:
        dates = sorted((dt.date.fromisoformat(first), dt.date.fromisoformat(second)))
    except ValueError:
        raise ArithmeticInputError(f"dates must be YYYY-MM-DD, got {first!r} {second!r}") from None
    return f"{dates[0].isoformat()} to {dates[1].isoformat()} = {days} days"


def days_between(first: str, second: str) -> int:
    """Days from one ISO date (``2024-01-03``) to another, as the calculator's date mode.

    Raises:
        ArithmeticInputError: a date is not ``YYYY-MM-DD``.
    """
    try:
        start, end = dt.date.fromisoformat(first), dt.date.fromisoformat(second)
    except ValueError:
        raise ArithmeticInputError(f"dates must be YYYY-MM-DD, got {first!r} {second!r}") from None
    return abs((end - start).days)
