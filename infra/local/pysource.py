"""WAA's real action format, read without running it: pyautogui (and ``computer.*``) source.

Real WAA agents act by sending Python source to the guest: ``pyautogui.click(640, 360)``,
``pyautogui.typewrite('hello')``, WAA's Navi agent ``computer.mouse.move_abs(0.5, 0.5)``... The
simulated worker never executes it. :func:`parse_source` reads it with :mod:`ast` and accepts
only a whitelist: imports of ``pyautogui`` and ``time`` (``platform`` too, for WAA's
``print(platform.system())`` getter), ``pyautogui.FAILSAFE``/``PAUSE`` set to a literal, and calls
of whitelisted functions whose arguments are literals (numbers, strings, ``True``/``False``/
``None``, lists and tuples of them, f-strings without expressions, and pyautogui's tween
functions such as ``pyautogui.easeInQuad``). Anything else (another import,
a name, a longer attribute chain, any other call, a comprehension, an f-string with an expression,
a loop...) raises :class:`ForbiddenSource` naming the construct and its line, and nothing of the
source runs: the whole program is checked before the first call is played.

The result is a list of :class:`Call` (``module.function`` plus literal arguments) that
:mod:`infra.local.inputs` plays on the simulated desktop.

The ``python -c "<source>"`` form that WAA's client sends to ``/execute`` is unwrapped by
:func:`python_c_source`.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from infra import pyast

IMPORTABLE = ("pyautogui", "time", "platform")
"""Modules a program may import (``platform`` only for the getters in :data:`PRINTABLE`)."""

PYAUTOGUI_CALLS = frozenset(
    {
        "click", "doubleClick", "tripleClick", "rightClick", "middleClick", "leftClick",
        "moveTo", "moveRel", "move", "dragTo", "dragRel", "drag", "mouseDown", "mouseUp",
        "scroll", "hscroll", "vscroll", "typewrite", "write", "press", "hotkey", "keyDown",
        "keyUp", "sleep", "position", "size", "screenshot",
    }
)
"""The pyautogui functions the simulated desktop plays."""

TIME_CALLS = frozenset({"sleep"})
COMPUTER_CALLS = frozenset(
    {
        "mouse.move_abs", "mouse.move_rel", "mouse.single_click", "mouse.click",
        "mouse.double_click", "mouse.right_click", "mouse.scroll", "mouse.drag",
        "keyboard.write", "keyboard.press", "keyboard.hotkey", "os.open_program",
        "clipboard.paste", "clipboard.copy_text",
    }
)
"""WAA Navi's ``computer.<group>.<function>`` helpers the simulated desktop plays."""
_CALLS = {"pyautogui": PYAUTOGUI_CALLS, "time": TIME_CALLS, "computer": COMPUTER_CALLS}

PRINTABLE = frozenset({"platform.system", "platform.release", "platform.machine",
                       "pyautogui.size", "pyautogui.position"})
"""Getter calls that may appear inside ``print(...)`` (their value is the output)."""

SETTABLE = frozenset({"FAILSAFE", "PAUSE"})
MAX_CALLS = 500
"""Calls one program may make (a real action is a handful; this bounds a runaway script)."""
TWEENS = frozenset({"linear", "easeInQuad", "easeOutQuad", "easeInOutQuad", "easeInCubic",
                    "easeOutCubic", "easeInOutCubic", "easeInBounce", "easeOutBounce",
                    "easeInElastic", "easeOutElastic", "easeInOutElastic"})
"""pyautogui's tween functions, allowed as an argument (WAA's client passes one to moveTo)."""


class ForbiddenSource(ValueError):
    """Source outside the whitelist (HTTP 400); the message names the construct and line."""


@dataclass(frozen=True)
class Call:
    """One whitelisted call: ``function`` is ``pyautogui.click``, ``computer.mouse.move_abs``,
    ``time.sleep`` or ``print`` (with ``args[0]`` the printed getter's name or a literal)."""

    function: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    line: int = 0


@dataclass
class Program:
    """A checked program: the calls to play, in order."""

    calls: list[Call]


def looks_like_source(text: str) -> bool:
    """True for text that is Python for the guest rather than the command language."""
    stripped = text.lstrip()
    return stripped.startswith(("import ", "from ", "pyautogui.", "computer.", "time.sleep"))


def python_c_source(command: str | Sequence[str]) -> str | None:
    """The source of a ``python -c "<source>"`` command (list or string form), else ``None``."""
    words = command.strip().split(None, 2) if isinstance(command, str) else list(command)
    if len(words) != 3 or words[0].lower() not in _PYTHONS or words[1] != "-c":
        return None
    source = words[2]
    if isinstance(command, str):  # the shell's quotes around the source
        source = source.strip()
        if len(source) >= 2 and source[0] == source[-1] and source[0] in "\"'":
            source = source[1:-1]
    return source


_PYTHONS = {"python", "python3", "python.exe", "py", "pythonw"}


def parse_source(source: str) -> Program:
    """Check a program against the whitelist and list its calls.

    Raises:
        ForbiddenSource: a syntax error or a construct outside the whitelist.
    """
    try:
        tree = pyast.parse_module(source)
    except SyntaxError as exc:
        raise ForbiddenSource(
            f"not valid Python (line {exc.lineno}: {exc.msg}); send pyautogui calls"
        ) from None
    imported: set[str] = set()
    calls: list[Call] = []
    for statement in tree.body:
        calls.extend(_statement(statement, imported))
        if len(calls) > MAX_CALLS:
            raise ForbiddenSource(f"more than {MAX_CALLS} calls in one action; send fewer")
    return Program(calls)


def _statement(node: ast.stmt, imported: set[str]) -> list[Call]:
    line = node.lineno
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name not in IMPORTABLE:
                raise ForbiddenSource(
                    f"line {line}: import {alias.name} is not allowed "
                    f"(only {', '.join(IMPORTABLE)})"
                )
            if alias.asname and alias.asname != alias.name:
                raise ForbiddenSource(f"line {line}: import {alias.name} as {alias.asname}: "
                                      "aliases are not allowed")
            imported.add(alias.name)
        return []
    if isinstance(node, ast.ImportFrom):
        raise ForbiddenSource(f"line {line}: from {node.module} import ... is not allowed; "
                              "use import pyautogui")
    if isinstance(node, ast.Assign):
        if (
            len(node.targets) == 1
            and isinstance(node.targets[0], ast.Attribute)
            and _dotted(node.targets[0]) in {f"pyautogui.{n}" for n in SETTABLE}
        ):
            _literal(node.value, line)
            return []
        raise ForbiddenSource(f"line {line}: assignment is not allowed "
                              "(only pyautogui.FAILSAFE/PAUSE = literal)")
    if isinstance(node, ast.Expr):
        if isinstance(node.value, ast.Constant):
            return []  # a docstring or a bare literal does nothing
        if isinstance(node.value, ast.Call):
            return [_call(node.value, imported, line)]
        raise ForbiddenSource(f"line {line}: {_describe(node.value)} is not allowed; "
                              "only whitelisted calls")
    if isinstance(node, ast.Pass):
        return []
    raise ForbiddenSource(f"line {line}: {_describe(node)} is not allowed; only imports of "
                          "pyautogui/time and whitelisted calls with literal arguments")


def _call(node: ast.Call, imported: set[str], line: int) -> Call:
    name = _dotted(node.func)
    if name is None:
        raise ForbiddenSource(f"line {line}: call {ast.unparse(node.func)}(...) is not allowed")
    if name == "print":
        return _print(node, imported, line)
    module, _, rest = name.partition(".")
    if rest not in _CALLS.get(module, ()):
        raise ForbiddenSource(f"line {line}: call {name}(...) is not allowed "
                              "(whitelisted: pyautogui.*, computer.*, time.sleep)")
    if module in ("pyautogui", "time") and module not in imported:
        raise ForbiddenSource(f"line {line}: {name}(...) before import {module}")
    args = tuple(_literal(arg, line) for arg in node.args)
    kwargs: dict[str, Any] = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            raise ForbiddenSource(f"line {line}: **kwargs is not allowed")
        kwargs[keyword.arg] = _literal(keyword.value, line)
    return Call(name, args, kwargs, line)


def _print(node: ast.Call, imported: set[str], line: int) -> Call:
    if node.keywords or len(node.args) != 1:
        raise ForbiddenSource(f"line {line}: print takes one getter call or literal here")
    arg = node.args[0]
    if isinstance(arg, ast.Call) and not arg.args and not arg.keywords:
        getter = _dotted(arg.func)
        if getter in PRINTABLE:
            if getter.split(".", 1)[0] not in imported:
                raise ForbiddenSource(f"line {line}: {getter}() before its import")
            return Call("print", (getter,), {"call": True}, line)
        raise ForbiddenSource(f"line {line}: print({getter or _describe(arg.func)}(...)) "
                              "is not allowed")
    return Call("print", (_literal(arg, line),), {}, line)


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of names, else ``None``."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _literal(node: ast.expr, line: int) -> Any:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bytes) or node.value is Ellipsis:
            raise ForbiddenSource(f"line {line}: {type(node.value).__name__} literal not allowed")
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _literal(node.operand, line)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.List | ast.Tuple):
        return [_literal(item, line) for item in node.elts]
    if isinstance(node, ast.Attribute) and _dotted(node) in {f"pyautogui.{t}" for t in TWEENS}:
        return _dotted(node)  # a tween only shapes the motion, which is not simulated
    if isinstance(node, ast.JoinedStr):
        if all(isinstance(part, ast.Constant) for part in node.values):
            return "".join(str(part.value) for part in node.values)  # type: ignore[attr-defined]
        raise ForbiddenSource(f"line {line}: f-string with an expression is not allowed; "
                              "send the final text")
    raise ForbiddenSource(f"line {line}: argument {_describe(node)} is not a literal")


_NAMES: dict[type[ast.AST], str] = {
    ast.ListComp: "list comprehension",
    ast.SetComp: "set comprehension",
    ast.DictComp: "dict comprehension",
    ast.GeneratorExp: "generator expression",
    ast.Lambda: "lambda",
    ast.BinOp: "arithmetic expression",
    ast.BoolOp: "boolean expression",
    ast.Compare: "comparison",
    ast.IfExp: "conditional expression",
    ast.Subscript: "subscript",
    ast.Dict: "dict",
    ast.Set: "set",
    ast.Await: "await",
    ast.NamedExpr: "assignment expression",
    ast.Starred: "starred expression",
    ast.For: "for loop",
    ast.While: "while loop",
    ast.If: "if statement",
    ast.With: "with statement",
    ast.Try: "try statement",
    ast.FunctionDef: "function definition",
    ast.AsyncFunctionDef: "function definition",
    ast.ClassDef: "class definition",
    ast.Delete: "del statement",
    ast.Global: "global statement",
    ast.Nonlocal: "nonlocal statement",
    ast.Raise: "raise statement",
    ast.Return: "return statement",
    ast.AugAssign: "assignment",
    ast.AnnAssign: "assignment",
    ast.Assert: "assert statement",
}


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return f"name {node.id}"
    if isinstance(node, ast.Attribute):
        return f"attribute chain {_dotted(node) or ast.unparse(node)}"
    if isinstance(node, ast.Call):
        return f"call {ast.unparse(node.func)}(...)"
    if isinstance(node, ast.JoinedStr):
        return "f-string with an expression"
    return _NAMES.get(type(node), type(node).__name__)


__all__ = [
    "Call",
    "ForbiddenSource",
    "Program",
    "looks_like_source",
    "parse_source",
    "python_c_source",
]
