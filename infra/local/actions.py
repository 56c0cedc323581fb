"""One door for every action a worker receives: WAA's pyautogui source or the command language.

``/execute`` and ``/execute_windows`` take either form: Python source (``import pyautogui;
pyautogui.click(100, 200)``, WAA's ``python -c "<source>"`` command list) is checked by
:mod:`infra.local.pysource` and played by :mod:`infra.local.inputs`; anything whose first word is
a verb of :mod:`infra.local.commands` (or ``DONE``/``FAIL``/``WAIT``) runs as before.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from infra import pyast
from infra.local import commands
from infra.local.apps import AppError
from infra.local.arith import ArithmeticInputError
from infra.local.desktop import Desktop
from infra.local.inputs import play
from infra.local.pysource import (
    ForbiddenSource,
    looks_like_source,
    parse_source,
    python_c_source,
)


def source_of(command: str | Sequence[str]) -> str | None:
    """The Python source an action carries, or ``None`` for the command language."""
    source = python_c_source(command)
    if source is not None:
        return source
    if not isinstance(command, str):
        return None
    # Only the first word decides, so only the first line is split when it can be: splitting
    # a 400,000-character source whole took seconds before anything was played.
    first_line = command.split("\n", 1)[0]
    try:
        words = commands.split_command(first_line if first_line.strip() else command)
    except commands.CommandSyntaxError:
        try:
            words = commands.split_command(command)  # a quote closed on a later line
        except commands.CommandSyntaxError:
            return command  # not splittable as words: only Python can make sense of it
    first = words[0]
    if first.upper() in commands.SPECIAL_ACTIONS or first.lower() in commands.VERBS:
        return None
    if looks_like_source(command):
        return command
    try:
        program = pyast.parse_module(command)
    except SyntaxError:
        return None  # neither Python nor a verb: the command language explains its verbs
    # a bare (dotted) name does nothing as Python: it is a program's name (notepad.exe), sent
    # as a shell command, which the command language answers with the verb that does it
    return None if _bare_name(program) else command


def _bare_name(program: ast.Module) -> bool:
    if len(program.body) != 1 or not isinstance(program.body[0], ast.Expr):
        return False
    node = program.body[0].value
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def run_action(desktop: Desktop, command: str | Sequence[str]) -> commands.CommandResult:
    """Run one action on a desktop.

    Raises:
        ForbiddenSource: Python outside the whitelist (nothing of it ran).
        CommandSyntaxError: a command the language does not accept.
        SandboxError: a path leaving the simulated drive.
    """
    source = source_of(command)
    if source is None:
        return commands.run(desktop, command)
    program = parse_source(source)
    try:
        output = play(desktop, program)
    except (AppError, ArithmeticInputError, FileNotFoundError) as exc:
        return commands.CommandResult(error=str(exc), returncode=1)
    return commands.CommandResult(output=output)


__all__ = ["ForbiddenSource", "run_action", "source_of"]
