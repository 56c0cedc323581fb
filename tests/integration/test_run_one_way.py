"""A run's records flow forward once: a real run on a local pool, through the real CLI, counted.

Each ``execution.json`` is read at most once after it is written (the summary is made from the
records the run holds, and printed from that same object), the agent is built once per worker
(the one the checks built is the first worker's), and an ``http`` agent's server is probed once
(the checks before the run hand what they built to it), and a variations file is read by the
checks alone (the run is handed its entries). The counts come from Python's own audit
hook (``open`` events) and from the agent and the server themselves, in the CLI's process.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_cli
from tests.support.http_servers import Reply, ScriptedServer

pytestmark = pytest.mark.pool(workers=1)
SHIPPED = Path(__file__).resolve().parents[2] / "infra/local/tasks/variations/local_all.json"

_WATCH = '''\
"""Logs every open of a run record and every agent built (this test's, not the product's)."""
import json
import os
import sys

_LOG = os.open(os.environ["ONE_WAY_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)


def _hook(event, args):
    if event != "open" or not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    path = os.fsdecode(args[0])
    if path.endswith(("execution.json", "summary.json", "metadata.json", "goals.json")):
        mode, flags = args[1], args[2]
        reads = (("r" in mode and "+" not in mode) if isinstance(mode, str)
                 else (flags or 0) & os.O_ACCMODE == os.O_RDONLY)
        os.write(_LOG, (json.dumps({"open": os.path.realpath(path), "read": reads}) + "\\n")
                 .encode())


sys.addaudithook(_hook)
'''

_AGENT = '''\
import os

from evals.agents import BenchmarkAction, BenchmarkAgent


class Counted(BenchmarkAgent):
    """Says it is done at once; writes a line each time one is built."""

    def __init__(self):
        log = os.open(os.environ["ONE_WAY_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.write(log, b'{"built": true}\\n')
        os.close(log)

    def act(self, observation, task, history=None):
        return BenchmarkAction(type="done")
'''


def _run(home: Path, tmp_path: Path, *args: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``openadapt-evals run --json`` with the watch installed; its printed document and log."""
    code = tmp_path / "code"
    code.mkdir(exist_ok=True)
    (code / "sitecustomize.py").write_text(_WATCH, encoding="utf-8")
    (code / "counted_agent.py").write_text(_AGENT, encoding="utf-8")
    log = tmp_path / "log.jsonl"
    done = run_cli("openadapt-evals", "run", "--pool", "p", "--tasks", "2", "--reset", "stock",
                   "--results-dir", str(tmp_path / "results"), "--run-name", "one", "--json",
                   *args, home=home, env={"PYTHONPATH": str(code), "ONE_WAY_LOG": str(log)})
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return json.loads(done.stdout), lines


def test_each_record_is_read_once_and_the_agent_built_once(pooled: Path, tmp_path: Path) -> None:
    printed, log = _run(pooled, tmp_path, "--agent", "counted_agent:Counted")
    run_dir = tmp_path / "results" / "one"
    records = sorted(run_dir.glob("tasks/*/execution.json"))
    assert len(records) == 2  # the watch saw a real run
    reads = Counter(str(e["open"]) for e in log if e.get("read"))
    twice = {p.name: reads[str(p.resolve())] for p in records if reads[str(p.resolve())] > 1}
    assert not twice, f"records read more than once after they were written: {twice}"
    for written in ("summary.json", "metadata.json"):  # written (metadata updated), never read
        assert reads[str((run_dir / written).resolve())] == 0, written
    assert sum(1 for e in log if e.get("built")) == 1  # one worker: the checked agent is its
    # printed from the object written: the same document, beside what only the command says
    on_disk = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    assert {k: v for k, v in printed.items()
            if k not in ("run_dir", "warning", "agent_failed")} == on_disk
    # a reader reads each record once too: view's page and its note on missing records
    (tmp_path / "log.jsonl").unlink()
    shown = run_cli("openadapt-evals", "view", "one", "--results-dir", str(tmp_path / "results"),
                    home=pooled, env={"PYTHONPATH": str(tmp_path / "code"),
                                      "ONE_WAY_LOG": str(tmp_path / "log.jsonl")})
    assert shown.returncode == 0, shown.stderr
    lines = (tmp_path / "log.jsonl").read_text(encoding="utf-8").splitlines()
    reads = Counter(json.loads(line)["open"] for line in lines if json.loads(line)["read"])
    assert [reads[str(p.resolve())] for p in records] == [1, 1]


def test_an_http_agents_server_is_probed_once(pooled: Path, tmp_path: Path) -> None:
    with ScriptedServer({"/act": Reply.json({"action": "DONE"})}) as server:
        printed, _ = _run(pooled, tmp_path, "--agent", "http", "--agent-url", f"{server.url}/act")
        assert server.heads == {"/act": 1}
        assert server.hits["/act"] == 2  # one step of each task: the agent did run
    assert printed["successes"] == 0 and printed["attempts"] == 2


def test_the_variations_are_read_by_the_checks_alone(pooled: Path, tmp_path: Path) -> None:
    goals = tmp_path / "goals.json"
    goals.write_bytes(SHIPPED.read_bytes())
    printed, log = _run(pooled, tmp_path, "--agent", "oracle", "--variations", str(goals))
    assert printed["attempts"] > 2  # the variations did run after the two tasks
    opens = [e for e in log if str(e.get("open", "")).endswith("goals.json")]
    # the checks read its entries, the manifest hashes it: the run is handed the entries
    assert len(opens) == 2, opens
