"""The commands the documentation names, read out of README.md and docs/*.md, and checked
against what the programs really accept.

A reader copies ``oa-vm pool-extend --by 2h`` from a page and expects it to run, so every command
line the pages show (fenced blocks and inline code spans alike) is parsed into the command it
names and the options it passes. Three kinds of mention are read:

- a line or span holding one of the three programs (``oa-vm``, ``openadapt-evals``,
  ``openadapt-eval-flow``, also as ``.venv/bin/oa-vm``), or a project script run as
  ``bench/NAME.py``, ``python -m bench.NAME`` or ``python -m infra.local``;
- a span that starts with a subcommand and passes an option (``pool-cleanup --expired``,
  ``run --repair``), read as that subcommand of whichever program has it;
- a span that is only options (``--resume``): each must be an option of one of the project's
  commands, or of another tool the pages name (:data:`FOREIGN_OPTIONS`).

Each option is looked up in the ``--help`` of the command it was given to, the one place that
says what the command accepts (``docs/cli.md`` is generated from the same texts).

The files a page names (``evals/run/queue.py``) and the pages and headings it links to are
checked too (:func:`missing_targets`).
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support import clidoc

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = clidoc.PROGRAMS
GLOBAL_OPTIONS = frozenset({"--help", "-h", "--debug"})
"""Options every command takes (``--debug`` is read before the command line is parsed)."""

FOREIGN_OPTIONS: dict[str, frozenset[str]] = {
    "pytest and its plugins": frozenset({"--dist", "--durations"}),
    "the aws CLI": frozenset({"--owner-ids", "--filters", "--ids"}),
    "the az CLI": frozenset({"--namespace", "--tag"}),
    "docker": frozenset({"--device", "--cap-add", "--restart", "--stop-timeout", "--from"}),
    "unshare": frozenset({"--fork", "--pid", "--mount-proc"}),
    "WAA's own run scripts": frozenset({"--prepare-image", "--start-client", "--emulator_ip",
                                        "--sleep_after_execution", "--max_steps"}),
    "infra/worker/reset.sh": frozenset({"--slot"}),
    "py-spy and valgrind": frozenset({"--gil", "--trace-children"}),
    "mutmut": frozenset({"--max-children"}),
    "the reference tool (docs/compat.md lists what it has and this project has not)": frozenset({
        "--server-url", "--max-run-usd", "--max-total-usd", "--max-task-tokens",
        "--billing-abort-after", "--run-root", "--task",
    }),
}
"""Options of other tools that the pages name in a span of their own, by tool."""

REFERENCE_ONLY = frozenset({("compat.md", "run --task notepad_1")})
"""Spans that show the reference tool's command line beside ours (docs/compat.md's tables)."""

_OPTION = re.compile(r"--[a-z][a-z0-9_-]*|-[a-zA-Z]")
_ENDS = frozenset({"|", "||", "&&", ";", "&", ">", ">>", "2>&1", "<"})
_MODULE = re.compile(r"^(?:bench/([a-z_]+)\.py|bench\.([a-z_]+)|infra\.local)$")


@dataclass(frozen=True)
class Mention:
    """One command line found in a page."""

    doc: str
    line: int
    text: str
    command: str
    """``oa-vm pool-create``, ``bench.scale``, or ``""`` for a span of options alone."""
    words: tuple[str, ...]
    """What follows the command's name."""

    def where(self) -> str:
        """``cli.md:12: <text>`` for a failure message."""
        return f"{self.doc}:{self.line}: {self.text.strip()}"


SHELL_BLOCKS = frozenset({"", "bash", "sh", "shell", "console"})
"""Fenced blocks read as command lines; the others (``text``: a command's output or its
``--help``, ``python``, ``json``) are not."""


def pages() -> list[Path]:
    """README.md and every page under docs/ (the reference's help blocks are ``text``)."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _snippets(path: Path) -> Iterator[tuple[int, str, bool]]:
    """``(line, text, in_block)``: each fenced block's logical lines (continuations joined) and
    each inline code span outside the blocks."""
    inside, shell, pending, start = False, False, "", 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            inside = not inside
            shell = line.strip()[3:].strip() in SHELL_BLOCKS
            continue
        if inside:
            if not shell:
                continue
            if not pending:
                start = number
            if line.rstrip().endswith("\\") and not line.rstrip().endswith("\\|"):
                pending += line.rstrip()[:-1] + " "
                continue
            yield start, pending + line, True
            pending = ""
        else:
            for span in re.findall(r"`([^`]+)`", line):
                yield number, span, False


def _tokens(text: str) -> list[str]:
    """Whitespace-separated words, up to a comment; shell operators kept as words."""
    out: list[str] = []
    for word in text.split():
        if word.startswith("#"):
            break
        out.append(word)
    return out


def _program(word: str) -> str | None:
    """The program a word runs (``.venv/bin/oa-vm`` runs ``oa-vm``), or None."""
    name = word.rsplit("/", 1)[-1]
    return name if name in PROGRAMS else None


def _module(words: list[str], index: int) -> str | None:
    """The project script a word runs (``bench/scale.py``, ``-m bench.scale``), or None."""
    match = _MODULE.match(words[index])
    if match is None:
        return None
    if words[index].startswith(("bench.", "infra.")) and (index == 0 or words[index - 1] != "-m"):
        return None
    name = match.group(1) or match.group(2)
    return f"bench.{name}" if name else "infra.local"


def _command_words(words: list[str], start: int) -> tuple[str, ...]:
    """The words of one command, from ``start`` to a shell operator or another program."""
    taken: list[str] = []
    for word in words[start:]:
        if word in _ENDS or _program(word) or not word.isascii():
            break
        taken.append(word)
    return tuple(taken)


def mentions() -> list[Mention]:
    """Every command line of the pages, in page order."""
    found: list[Mention] = []
    first_level = {name.split()[1] for name, _ in clidoc.commands() if len(name.split()) == 2}
    for path in pages():
        for line, text, in_block in _snippets(path):
            words = _tokens(text)
            named = False
            for index, word in enumerate(words):
                program, module = _program(word), _module(words, index)
                if program or module:
                    named = True
                    found.append(Mention(path.name, line, text, program or module or "",
                                         _command_words(words, index + 1)))
            if named or in_block or not words:
                continue
            if words[0] in first_level and any(_OPTION.fullmatch(w) for w in words[1:]):
                found.append(Mention(path.name, line, text, words[0], tuple(words[1:])))
            elif _OPTION.fullmatch(words[0].split("=")[0]) and words[0].startswith("--"):
                found.append(Mention(path.name, line, text, "", tuple(words)))
    return found


@functools.cache
def module_help(module: str) -> str:
    """What ``python -m module --help`` prints (a project script's argparse text)."""
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("OA_VM_HOME", None)
    done = subprocess.run(  # fixed argv, no shell
        [sys.executable, "-m", module, "--help"], capture_output=True, text=True, env=env,
        timeout=120, check=True, stdin=subprocess.DEVNULL, cwd=ROOT,
    )
    return done.stdout


def _help_options(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"(?<![\w-])(--[a-z][a-z0-9_-]*|-[a-zA-Z])\b", text))


@functools.cache
def _helps() -> dict[str, str]:
    return dict(clidoc.commands())


def declared_options() -> frozenset[str]:
    """Every option the three programs declare, the hidden older spellings included (which
    ``--help`` leaves out but the pages may name as still accepted)."""
    import typer.main

    from evals.cli.app import app as evals_app
    from evals.compat.flow.cli import app as flow_app
    from oa_vm.cli.app import app as oa_vm_app

    found: set[str] = set()

    def walk(command: Any) -> None:
        for param in command.params:
            if param.param_type_name == "option":
                found.update(param.opts + param.secondary_opts)
        for sub in getattr(command, "commands", {}).values():
            walk(sub)

    for app in (oa_vm_app, evals_app, flow_app):
        walk(typer.main.get_command(app))
    return frozenset(found)


def _all_project_options() -> frozenset[str]:
    modules = {m.command for m in mentions() if "." in m.command}
    texts = [*_helps().values(), *(module_help(m) for m in sorted(modules))]
    return declared_options().union(*(_help_options(t) for t in texts))


def _option_of(word: str) -> str | None:
    """The option a word passes (``[--pool`` -> ``--pool``, ``--x=1`` -> ``--x``), or None."""
    word = word.strip("[]()\\,.:;'\"").split("=")[0]
    return word if _OPTION.fullmatch(word) else None


def problems() -> list[str]:
    """Every command a page names that does not exist, and every option a page passes to a
    command whose ``--help`` does not list it; empty when the pages and the programs agree."""
    helps = _helps()
    found: list[str] = []
    known_anywhere: frozenset[str] | None = None
    foreign = frozenset().union(*FOREIGN_OPTIONS.values())
    for mention in mentions():
        if (mention.doc, mention.text.strip()) in REFERENCE_ONLY:
            continue
        if not mention.command:
            if known_anywhere is None:
                known_anywhere = _all_project_options()
            for word in mention.words:
                option = _option_of(word)
                if option and option not in known_anywhere | foreign | GLOBAL_OPTIONS:
                    found.append(f"{mention.where()}: {option} is no option of any command")
            continue
        if "." in mention.command:
            candidates = [(mention.command, module_help(mention.command))]
            rest = list(mention.words)
        elif mention.command in PROGRAMS:
            name, rest = mention.command, list(mention.words)
            while rest and f"{name} {rest[0]}" in helps:
                name = f"{name} {rest.pop(0)}"
            if "\nCommands:" in helps[name] and rest and re.fullmatch(r"[a-z][a-z0-9-]*", rest[0]):
                found.append(f"{mention.where()}: '{name}' has no command '{rest[0]}'")
                continue
            candidates = [(name, helps[name])]
        else:
            candidates = [(n, t) for n, t in helps.items() if n.split()[1:] == [mention.command]]
            rest = list(mention.words)
        for word in rest:
            option = _option_of(word)
            if option is None or option in GLOBAL_OPTIONS:
                continue
            if not any(option in _help_options(text) for _, text in candidates):
                names = " or ".join(f"'{n}'" for n, _ in candidates)
                found.append(f"{mention.where()}: {names} has no option {option}")
    return found


# --- the files and anchors the pages point at ---------------------------------------------------

TOP_FOLDERS = ("oa_vm/", "evals/", "infra/", "waa_client/", "tests/", "bench/", "docs/", ".ci/")
"""A code span starting with one of these names a file or folder of this repository."""
FORMER_PATHS = frozenset({
    ("reliability.md", "waa_client/tunnel.py"),  # its name when measured ("now ...")
    ("performance.md", "docs/design/vm_pool_optimization.md"),  # the reference tool's file
})
"""Paths a page names on purpose though this checkout has no such file, each said so in the text."""


def _anchors(page: Path) -> set[str]:
    """The anchors of a page's headings, as GitHub makes them."""
    found: set[str] = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"^#+\s+(.*)", line)
        if heading:
            text = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower())
            found.add(text.replace(" ", "-"))
    return found


def missing_targets() -> list[str]:
    """Every repository path a page names in a code span that does not exist, and every link to
    a page or a heading that does not exist; empty when all are there."""
    found: list[str] = []
    for path in pages():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for span in re.findall(r"`([^`]+)`", line):
                for word in span.split():
                    word = word.strip("(),;:'\"").split("::")[0]
                    if (not word.startswith(TOP_FOLDERS) or any(c in word for c in "*<>{}$")
                            or (path.name, word) in FORMER_PATHS):
                        continue
                    if not (ROOT / word).exists():
                        found.append(f"{path.name}:{number}: no such file: {word}")
            for target, anchor in re.findall(r"\]\(([^)#\s:]*)(?:#([^)\s]+))?\)", line):
                page = (path.parent / target) if target else path
                if not page.exists():
                    found.append(f"{path.name}:{number}: no such page: {target}")
                elif anchor and anchor not in _anchors(page):
                    found.append(f"{path.name}:{number}: {target or path.name} has no heading "
                                 f"#{anchor}")
    return found
