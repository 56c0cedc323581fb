"""A run started on a pool with a dead worker says so: one line before the run starts naming the
worker and that the run goes on without it, and the summary lists it as quarantined. With every
worker dead the run is refused in one line, before anything is recorded."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from oa_vm.model import state
from tests.support.cli import run_cli
from tests.support.waiting import alive, wait_until

pytestmark = pytest.mark.integration


def _kill(name: str) -> None:
    """Kill the process of worker ``name`` of pool ``dead`` and wait until it is gone."""
    pid = next(w.pid for w in state.load("dead").workers if w.name == name)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not alive(pid), f"{name}'s process {pid} to end")


def test_a_dead_worker_is_named_at_the_start_and_in_the_summary(
    home: Path, tmp_path: Path, local_pool: Callable[..., str]
) -> None:
    local_pool("dead", workers=3, cli=True)
    _kill("worker-1")
    results = tmp_path / "results"
    run = ("openadapt-evals", "run", "--pool", "dead", "--tasks", "3", "--agent", "oracle",
           "--reset", "stock", "--results-dir", str(results))
    done = run_cli(*run, "--run-name", "one-dead", home=home)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "worker-1" in line]
    assert len(said) == 1, done.stderr
    assert said[0].startswith("1 of 3 worker(s) do not answer and the run goes on without them: "
                              "worker-1 (lost: process gone"), said[0]
    assert said[0].endswith("'oa-vm pool-repair --pool dead' brings them back"), said[0]
    lines = done.stderr.splitlines()
    assert lines.index(said[0]) < next(i for i, line in enumerate(lines)
                                       if line.startswith("run started")), done.stderr
    assert "Quarantined workers: worker-1" in done.stdout, done.stdout
    metadata = json.loads((results / "one-dead" / "metadata.json").read_text())
    assert metadata["quarantined_workers"] == ["worker-1"]
    assert metadata["workers"] == ["worker-0", "worker-2"]
    summary = json.loads((results / "one-dead" / "summary.json").read_text())
    assert summary["quarantined_workers"] == ["worker-1"]
    assert summary["workers"]["worker-1"] == {"tasks": 0, "errors": 0, "quarantined": True}

    _kill("worker-0")
    _kill("worker-2")
    refused = run_cli(*run, "--run-name", "all-dead", home=home)
    line = refused.assert_one_line_error()
    assert "pool 'dead' has no ready worker (worker-0: lost, worker-1: lost, worker-2: lost)" \
        in line and "oa-vm pool-repair --pool dead" in line, line
    assert sorted(p.name for p in results.iterdir()) == ["one-dead"]
