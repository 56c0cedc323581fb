"""``docs/cli.md`` from the commands' own ``--help``: render it, or check that it is current.

The reference is one section per command (``## `oa-vm pool-create```) holding that command's
``--help`` at 80 columns in a ``text`` block; prose after a block is the author's and is kept.
Commands are found by walking each program's ``Commands:`` list, so a new command gets a section
and a removed one loses it. Regenerate after changing any command or option::

    python -m tests.support.clidoc

``tests/unit/test_cli_reference.py`` fails when the file differs from what this renders.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "cli.md"
BIN = Path(sys.executable).parent
PROGRAMS = ("oa-vm", "openadapt-evals", "openadapt-eval-flow")
HEADER = """# Command reference

Generated from each command's `--help` (run any command with `--help` for the current text;
`python -m tests.support.clidoc` rewrites this file, and a test fails when it is stale).
Every command also accepts `--debug` (show the traceback of an error, which otherwise is one line).
"""
_SECTION = re.compile(r"^## `([^`]+)`\n", re.M)
_BLOCK = re.compile(r"\A\n```text\n.*?\n```\n", re.S)


def help_text(words: list[str]) -> str:
    """What ``words + ['--help']`` prints at 80 columns (the width the docs are written at)."""
    env = {**os.environ, "COLUMNS": "80", "TERM": "dumb", "NO_COLOR": "1"}
    env.pop("OA_VM_HOME", None)
    done = subprocess.run(  # fixed argv, no shell
        [str(BIN / words[0]), *words[1:], "--help"], capture_output=True, text=True,
        env=env, timeout=120, check=True, stdin=subprocess.DEVNULL,
    )
    return done.stdout.rstrip() + "\n"


def _subcommands(text: str) -> list[str]:
    """Names listed under ``Commands:`` in a help text, in order."""
    names: list[str] = []
    inside = False
    for line in text.splitlines():
        if line.strip() == "Commands:":
            inside = True
            continue
        if inside:
            match = re.match(r"^  (\S+)", line)
            if match:
                names.append(match.group(1))
            elif line.strip() and not line.startswith("    "):
                inside = False
    return names


@functools.cache  # about 60 CLI starts: the tests of one process share one walk
def commands() -> tuple[tuple[str, str], ...]:
    """Every command of the three programs, depth first, with its help text."""
    found: list[tuple[str, str]] = []

    def walk(words: list[str]) -> None:
        text = help_text(words)
        found.append((" ".join(words), text))
        for name in _subcommands(text):
            walk([*words, name])

    for program in PROGRAMS:
        walk([program])
    return tuple(found)


def _prose(current: str) -> dict[str, str]:
    """The author's text after each command's help block, by command."""
    kept: dict[str, str] = {}
    parts = _SECTION.split(current)
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        block = _BLOCK.match(body)
        rest = body[block.end():] if block else ""
        if rest.strip():
            kept[name] = rest.strip("\n") + "\n"
    return kept


def render(current: str = "", walked: tuple[tuple[str, str], ...] | None = None) -> str:
    """The whole reference, keeping the prose found in ``current``; ``walked``: the commands
    and their help texts (:func:`commands` when not given)."""
    prose = _prose(current)
    out = [HEADER]
    for name, text in commands() if walked is None else walked:
        out.append(f"\n## `{name}`\n\n```text\n{text}```\n")
        if name in prose:
            out.append("\n" + prose[name])
    return "".join(out)


def main() -> None:
    """Rewrite ``docs/cli.md``."""
    DOC.write_text(render(DOC.read_text(encoding="utf-8")), encoding="utf-8")


if __name__ == "__main__":
    main()
