"""The output the pages print is what the commands print: every ``$ command`` transcript in
README.md and docs/*.md, and the offline tables shown under the command that makes them, run as
written with a fresh home and no cloud credentials.

A transcript's lines must each appear in what the command printed (stdout and stderr), in order;
a ``...`` line stands for lines left out. Lines that depend on the reader's account or on runs
of their own are named in :data:`NOT_REPRODUCIBLE` with the reason.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.cli import BIN
from tests.support.doccommands import PROGRAMS, ROOT, pages

pytestmark = pytest.mark.integration

NOT_REPRODUCIBLE: dict[tuple[str, str], str] = {
    ("export.md", "openadapt-evals runs"): "lists the reader's own runs",
    ("cost.md", "  vCPU quota:"): "read from the account's quota, which needs credentials",
}
"""``(page, command)`` transcripts, or ``(page, line prefix)`` lines, that no fresh machine
reproduces."""

TABLES: dict[tuple[str, str], str] = {
    ("results.md", "The verifier passed 4 edited run(s) whose end state is wrong:"):
        "openadapt-evals audit-verifier --benchmark toy",
    ("tasks.md", "wrong write                  screen reward  store reward"):
        "python -m evals.extradup kill-scan",
}
"""Output blocks without a prompt, by their page and first line, and the command the page says
prints them (both offline and deterministic)."""


@dataclass(frozen=True)
class Transcript:
    """A command a page shows and the lines it shows it printing."""

    doc: str
    line: int
    command: str
    shown: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: $ {self.command}"


def _blocks(path: Path) -> list[tuple[int, list[str]]]:
    """Each fenced block of a page: its first line's number and its lines."""
    found: list[tuple[int, list[str]]] = []
    current: list[str] | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            if current is None:
                current, start = [], number + 1
            else:
                found.append((start, current))
                current = None
        elif current is not None:
            current.append(line)
    return found


def transcripts() -> list[Transcript]:
    """Every transcript of the pages, in page order."""
    found: list[Transcript] = []
    for path in pages():
        for start, lines in _blocks(path):
            table = TABLES.get((path.name, lines[0])) if lines else None
            if table is not None:
                found.append(Transcript(path.name, start, table, tuple(lines)))
                continue
            for offset, line in enumerate(lines):
                words = line[2:].split()
                if not line.startswith("$ ") or not words or words[0] not in PROGRAMS:
                    continue
                shown: list[str] = []
                for later in lines[offset + 1:]:
                    if later.startswith("$ "):
                        break
                    shown.append(later)
                found.append(Transcript(path.name, start + offset, line[2:].strip(),
                                        tuple(shown)))
    return found


def _expected(transcript: Transcript) -> list[str]:
    return [line.rstrip() for line in transcript.shown
            if line.strip() and line.strip() != "..."
            and not any(transcript.doc == doc and line.startswith(prefix)
                        for doc, prefix in NOT_REPRODUCIBLE)]


def _run(command: str, tmp_path: Path) -> str:
    argv = shlex.split(command)
    program = argv[0] if argv[0] in PROGRAMS else None
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("AWS_", "ARM_", "AZURE_", "OA_EVALS_"))}
    env.update({"OA_VM_HOME": str(tmp_path / "home"), "HOME": str(tmp_path), "COLUMNS": "200",
                "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}"})
    env.pop("PYTHONPATH", None)
    full = [str(BIN / program), *argv[1:]] if program else [str(BIN / "python"), *argv[1:]]
    done = subprocess.run(  # a fixed argv from the page, no shell
        full, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path,
        stdin=subprocess.DEVNULL, check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout + done.stderr


def _assert_printed(transcript: Transcript, output: str) -> None:
    """Each line the page shows was printed, in the page's order."""
    printed = [line.rstrip() for line in output.splitlines()]
    position = 0
    for line in _expected(transcript):
        assert line in printed[position:], (
            f"{transcript}: the page shows\n{line}\nwhich the command did not print"
            f" (after line {position}):\n" + "\n".join(printed)
        )
        position = printed.index(line, position) + 1


def test_the_pages_hold_transcripts() -> None:
    found = {(t.doc, t.command) for t in transcripts()}
    assert ("cost.md", "openadapt-eval-flow --dry-run --model gpt-5") in found
    assert ("providers.md", "oa-vm pool-create --cloud azure --region 'us east' --plan") in found
    assert {("results.md", TABLES[k]) for k in TABLES if k[0] == "results.md"} <= found
    assert len(found) >= 10


@pytest.mark.parametrize("transcript", [
    t for t in transcripts() if (t.doc, t.command) not in NOT_REPRODUCIBLE
], ids=str)
def test_a_transcript_shows_what_the_command_prints(transcript: Transcript, tmp_path: Path) -> None:
    _assert_printed(transcript, _run(transcript.command, tmp_path))


MIXED_AGENT = '''\
from evals import BenchmarkAction
from evals.agents.oracle import OracleAgent


class Agent(OracleAgent):
    """The oracle, except that it raises on one task and gives up at once on another."""

    def act(self, observation, task, history=None):
        if task.task_id.startswith("190a2655"):
            raise RuntimeError("boom")
        if task.task_id.startswith("344d1278"):
            return BenchmarkAction(type="done")
        return super().act(observation, task, history)
'''
MIXED_TASKS = (
    "c499b229-110c-5fc8-9895-f2f879ac1512-WOS,344d1278-e15c-5d2a-a48e-9193d441d1dd-WOS,"
    "62f753b2-5fda-5130-8ddb-733e3df8bec3-WOS,9df67e70-b315-56d9-a0fb-b467fa4ccc62-WOS,"
    "INF-1bb8ebca-1e3c-5c23-a572-85bc724fe5df-WOS,1ea6a9af-3a80-521e-a6ba-f392a618d1b0-WOS,"
    "190a2655-b68a-5095-a33d-4584cf3fbb32-WOS,12499638-c3db-5533-a99b-3855d677c533-WOS"
)


def _results_md_block(first_line: str, command: str) -> Transcript:
    start, block = next((start, lines) for start, lines in _blocks(ROOT / "docs" / "results.md")
                        if lines and lines[0] == first_line)
    return Transcript("results.md", start, command, tuple(block))


def test_the_summary_and_comparison_of_results_md_are_what_the_commands_print(
    tmp_path: Path,
) -> None:
    """The example summary and comparison of docs/results.md, made again: eight local tasks,
    the oracle (``m1``) against an agent that raises on one task (an agent error, counted as a
    failure) and gives up on another (``demo-mixed``)."""
    (tmp_path / "mixed.py").write_text(MIXED_AGENT, encoding="utf-8")
    sweep = f"openadapt-evals sweep --workers 2 --tasks {MIXED_TASKS} --agent"
    _assert_printed(_results_md_block("Attempts: 8", "openadapt-evals sweep"),
                    _run(f"{sweep} mixed:Agent --run-name demo-mixed", tmp_path))
    _run(f"{sweep} oracle --run-name m1", tmp_path)
    compare = "openadapt-evals compare m1 demo-mixed"
    _assert_printed(_results_md_block("Comparing 8 task(s) both runs recorded", compare),
                    _run(compare, tmp_path))


def python_examples() -> list[tuple[str, int, str]]:
    """``(page, line, source)`` of every whole Python example of the pages (it starts with its
    imports) that prints with a comment saying what (``print(x)  # 0.0: ...``) and imports only
    what is installed here (those importing the reader's own module, and the continuations of
    another block, are run by tests/integration/test_agents_doc.py)."""
    import importlib.util
    import re

    found: list[tuple[str, int, str]] = []
    for path in pages():
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M):
            source = match.group(1)
            if (not re.search(r"^[ \t]*print\(.*\)[ \t]+#", source, re.M)
                    or not source.startswith(("from ", "import "))):  # a continuation
                continue
            imported = re.findall(r"^\s*(?:from|import)\s+([\w.]+)", source, re.M)
            if all(importlib.util.find_spec(name.split(".")[0]) for name in imported):
                found.append((path.name, text[:match.start()].count("\n") + 2, source))
    return found


@pytest.mark.parametrize("example", python_examples(), ids=lambda e: f"{e[0]}:{e[1]}")
def test_a_python_example_prints_what_its_comments_say(
    example: tuple[str, int, str], tmp_path: Path
) -> None:
    import re
    import sys

    page, line, source = example
    said = [m.group(1).split(":")[0].strip()
            for m in re.finditer(r"^[ \t]*print\(.*\)[ \t]+#[ \t]*(.*)$", source, re.M)]
    (tmp_path / "example.py").write_text(source, encoding="utf-8")
    env = {**os.environ, "OA_VM_HOME": str(tmp_path / "home")}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(  # a fixed argv, no shell
        [sys.executable, "example.py"], capture_output=True, text=True, timeout=300, env=env,
        cwd=tmp_path, stdin=subprocess.DEVNULL, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == said, f"{page}:{line}"


def test_the_python_examples_are_found() -> None:
    assert {page for page, _, _ in python_examples()} >= {"README.md", "agents.md", "results.md"}
