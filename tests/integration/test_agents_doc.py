"""The worked example of docs/agents.md, run as written: the agent module, the sweep command,
the Python API and the step-by-step adapter use (code blocks read from the document)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import BIN

pytestmark = pytest.mark.integration

DOC = Path(__file__).resolve().parents[2] / "docs" / "agents.md"


def _blocks(kind: str) -> list[str]:
    """The document's fenced code blocks of one kind (``""`` for plain fences)."""
    blocks, current, inside = [], [], None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            if inside is None:
                inside, current = line[3:].strip(), []
            else:
                if inside == kind:
                    blocks.append("\n".join(current) + "\n")
                inside = None
        elif inside is not None:
            current.append(line)
    return blocks


def _env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "OA_VM_HOME": str(tmp_path / "home")}
    env.pop("PYTHONPATH", None)
    return env


def test_the_worked_example_runs_as_documented(tmp_path: Path) -> None:
    python = _blocks("python")
    agent = next(b for b in python if "class DarkModeAgent" in b)
    (tmp_path / "my_agent.py").write_text(agent, encoding="utf-8")
    api_example = next(b for b in python if "evaluate_agent_on_benchmark(DarkModeAgent" in b)
    steps_example = next(b for b in python if "adapter.step(" in b)
    script = api_example + "\nfrom evals import BenchmarkAction\n" + steps_example
    (tmp_path / "example.py").write_text(script, encoding="utf-8")
    done = subprocess.run(  # a fixed argv, no shell
        [sys.executable, "example.py"], capture_output=True, text=True, timeout=300,
        env=_env(tmp_path), cwd=tmp_path, stdin=subprocess.DEVNULL, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "1.0\nTrue\n"

    command = next(b for b in _blocks("") if "openadapt-evals sweep" in b)
    argv = shlex.split(command.replace("\\\n", " "))
    assert argv[0] == "openadapt-evals"
    swept = subprocess.run(  # a fixed argv from the document, no shell
        [str(BIN / argv[0]), *argv[1:], "--results-dir", str(tmp_path / "results")],
        capture_output=True, text=True, timeout=300, env=_env(tmp_path), cwd=tmp_path,
        stdin=subprocess.DEVNULL, check=False,
    )
    assert swept.returncode == 0, swept.stderr
    assert "Success rate: 100.0%" in swept.stdout


def test_the_step_by_step_tree_example_prints_what_the_document_says(tmp_path: Path) -> None:
    demo = next(b for b in _blocks("python") if "class SwitchOnAgent" in b)
    (tmp_path / "tree_agent_demo.py").write_text(demo, encoding="utf-8")
    done = subprocess.run(  # a fixed argv, no shell
        [sys.executable, "tree_agent_demo.py"], capture_output=True, text=True, timeout=300,
        env=_env(tmp_path), cwd=tmp_path, stdin=subprocess.DEVNULL, check=False,
    )
    assert done.returncode == 0, done.stderr
    printed = next(b for b in _blocks("text") if b.startswith("0 hotkey"))
    assert done.stdout == printed


def test_the_tree_excerpt_is_the_local_workers_own(tmp_path: Path) -> None:
    """Every element of the excerpt is in the tree the local worker really serves."""
    import xml.etree.ElementTree as ET

    excerpt = next(b for b in _blocks("xml") if "<Desktop" in b).replace("...", "")
    script = (
        "from evals import BenchmarkAction, WAASimulatedAdapter\n"
        "with WAASimulatedAdapter() as adapter:\n"
        "    task = adapter.load_task('e112363f-4a10-536e-89c0-53e0fb3afa05-WOS')\n"
        "    adapter.reset(task)\n"
        "    obs, done, info = adapter.step(BenchmarkAction(type='hotkey', key='win+i'))\n"
        "    print(obs.accessibility_tree)\n"
    )
    done = subprocess.run(  # a fixed argv, no shell
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
        env=_env(tmp_path), cwd=tmp_path, stdin=subprocess.DEVNULL, check=False,
    )
    assert done.returncode == 0, done.stderr
    real = {(e.tag, tuple(sorted(e.attrib.items())))
            for e in ET.fromstring(done.stdout.strip()).iter()}
    for element in ET.fromstring(excerpt).iter():
        if element.tag in ("Desktop", "Pane"):
            continue
        assert (element.tag, tuple(sorted(element.attrib.items()))) in real, element.attrib
