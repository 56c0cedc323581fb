"""A run started on a pool with a dead worker says so: one line before the run starts naming the
worker and that the run goes on without it, and the summary lists it as quarantined. With every
worker dead the run is refused in one line, before anything is recorded. A worker alive but hung
is found at the start (one probe) and named the same way, in every reset mode, and so is one whose
scoring server does not answer; ``--repair`` replaces the workers left out and puts them to work
(``metadata.json`` lists them among the run's workers); a multi-pool run goes on without a pool
whose workers are all dead, and resumes on its pools as they were given."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from oa_vm.model import state
from tests.support.cli import run_cli
from tests.support.http_servers import RefusingPort
from tests.support.waiting import alive, wait_until

pytestmark = pytest.mark.integration


def _pid(name: str, pool: str) -> int:
    pid = next(w.pid for w in state.load(pool).workers if w.name == name)
    assert pid is not None
    return pid


def _kill(name: str, pool: str = "dead") -> None:
    """Kill the process of worker ``name`` of ``pool`` and wait until it is gone."""
    pid = _pid(name, pool)
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not alive(pid), f"{name}'s process {pid} to end")


@contextmanager
def _hung(name: str, pool: str) -> Iterator[int]:
    """Worker ``name`` of ``pool`` stopped (SIGSTOP: alive, answering nothing) for the block,
    then continued (if a repair has not replaced it meanwhile); yields its pid."""
    pid = _pid(name, pool)
    os.kill(pid, signal.SIGSTOP)
    try:
        yield pid
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGCONT)


@contextmanager
def _scoring_down(name: str, pool: str) -> Iterator[None]:
    """Worker ``name`` of ``pool`` recorded with its scoring server on a port that refuses
    connections, for the block; its WAA server and its process are untouched."""
    with RefusingPort() as closed:
        with state.locked(pool):
            record = state.load(pool)
            worker = next(w for w in record.workers if w.name == name)
            assert worker.scoring_url is not None
            url = urlsplit(worker.scoring_url)
            worker.scoring_url = url._replace(netloc=f"127.0.0.1:{closed.port}").geturl()
            state.save(record)
        yield


def _said(stderr: str, word: str) -> str:
    """The one line of ``stderr`` naming ``word``, checked to come before 'run started'."""
    said = [line for line in stderr.splitlines() if word in line]
    assert len(said) == 1, stderr
    lines = stderr.splitlines()
    assert lines.index(said[0]) < next(i for i, line in enumerate(lines)
                                       if line.startswith("run started")), stderr
    return said[0]


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


@pytest.mark.parametrize("reset", ["clean-or-stock", "stock"])
def test_a_hung_worker_is_named_at_the_start_as_a_dead_one(
    home: Path, tmp_path: Path, local_pool: Callable[..., str], reset: str
) -> None:
    local_pool("hung", workers=3, cli=True)
    results = tmp_path / "results"
    with _hung("worker-2", "hung"):
        done = run_cli("openadapt-evals", "run", "--pool", "hung", "--tasks", "3", "--agent",
                       "oracle", "--reset", reset, "--results-dir", str(results),
                       "--run-name", "one-hung", home=home)
    assert done.returncode == 0, done.stderr
    line = _said(done.stderr, "worker-2")
    assert line == ("1 of 3 worker(s) do not answer and the run goes on without them: worker-2 "
                    "(no answer within 5s); 'oa-vm pool-repair --pool hung --worker worker-2' "
                    "brings them back"), line
    assert "cannot restore a clean snapshot" not in done.stderr, done.stderr
    assert "Quarantined workers: worker-2" in done.stdout, done.stdout
    metadata = json.loads((results / "one-hung" / "metadata.json").read_text())
    assert metadata["quarantined_workers"] == ["worker-2"]
    assert metadata["workers"] == ["worker-0", "worker-1"]
    summary = json.loads((results / "one-hung" / "summary.json").read_text())
    assert summary["workers"]["worker-2"] == {"tasks": 0, "errors": 0, "quarantined": True}


def test_a_worker_whose_scoring_server_is_down_is_named_at_the_start(
    home: Path, tmp_path: Path, local_pool: Callable[..., str]
) -> None:
    local_pool("sd", workers=3, cli=True)
    results = tmp_path / "results"
    with _scoring_down("worker-1", "sd"):
        done = run_cli("openadapt-evals", "run", "--pool", "sd", "--tasks", "3", "--agent",
                       "oracle", "--reset", "stock", "--results-dir", str(results),
                       "--run-name", "no-scoring", home=home)
    assert done.returncode == 0, done.stderr
    line = _said(done.stderr, "worker-1")
    assert line == ("1 of 3 worker(s) do not answer and the run goes on without them: worker-1 "
                    "(scoring server: unreachable); 'oa-vm pool-repair --pool sd --worker "
                    "worker-1' brings them back"), line
    assert "Quarantined workers: worker-1" in done.stdout, done.stdout
    metadata = json.loads((results / "no-scoring" / "metadata.json").read_text())
    assert metadata["quarantined_workers"] == ["worker-1"]
    assert metadata["workers"] == ["worker-0", "worker-2"]
    summary = json.loads((results / "no-scoring" / "summary.json").read_text())
    # no task of it ended in an infrastructure error first: it was never given one
    assert summary["successes"] == 3 and summary["errors"] == 0, summary
    assert summary["workers"]["worker-1"] == {"tasks": 0, "errors": 0, "quarantined": True}


def test_repair_replaces_the_workers_left_out_at_the_start(
    home: Path, tmp_path: Path, local_pool: Callable[..., str]
) -> None:
    local_pool("dead", workers=3, cli=True)
    _kill("worker-1")
    results = tmp_path / "results"
    with _hung("worker-2", "dead") as hung:
        done = run_cli("openadapt-evals", "run", "--pool", "dead", "--tasks", "3", "--agent",
                       "oracle", "--repair", "--results-dir", str(results), "--run-name",
                       "repaired", home=home)
        assert done.returncode == 0, done.stderr
        assert not alive(hung), "the hung worker's process was replaced"
    line = _said(done.stderr, "do not answer")
    assert "worker-1 (lost: process gone" in line and "worker-2 (no answer within 5s)" in line
    metadata = json.loads((results / "repaired" / "metadata.json").read_text())
    assert metadata["quarantined_workers"] == [], metadata["quarantined_workers"]
    # the workers it ran with: those that answered at the start, then those --repair brought back
    assert metadata["workers"] == ["worker-0", "worker-1", "worker-2"], metadata["workers"]
    summary = json.loads((results / "repaired" / "summary.json").read_text())
    assert summary["quarantined_workers"] == []
    assert "Quarantined workers" not in done.stdout, done.stdout
    workers = {w.name: w for w in state.load("dead").workers}
    assert all(w.state.value == "ready" for w in workers.values()), workers
    assert workers["worker-2"].pid != hung


def test_a_multi_pool_run_goes_on_without_a_dead_pool_and_resumes_on_both(
    home: Path, tmp_path: Path, local_pool: Callable[..., str]
) -> None:
    local_pool("a", workers=2, cli=True)
    local_pool("b", workers=2, cli=True)
    _kill("worker-0", "b")
    _kill("worker-1", "b")
    results = tmp_path / "results"
    run = ("openadapt-evals", "run", "--tasks", "3", "--agent", "oracle", "--reset", "stock",
           "--results-dir", str(results))
    done = run_cli(*run, "--pool", "a", "--pool", "b", "--run-name", "no-b", home=home)
    assert done.returncode == 0, done.stderr
    line = _said(done.stderr, "do not answer")
    assert line.startswith("2 of 4 worker(s) do not answer and the run goes on without them, "
                           "and without pool 'b' (none of its workers answers): b/worker-0 "
                           "(lost: process gone"), line
    assert line.endswith("'oa-vm pool-repair --pool b' brings them back"), line
    metadata = json.loads((results / "no-b" / "metadata.json").read_text())
    assert metadata["pool"] == "a+b"
    assert [p["name"] for p in metadata["pools"]] == ["a", "b"]
    assert metadata["workers"] == ["a/worker-0", "a/worker-1"]
    assert metadata["quarantined_workers"] == ["b/worker-0", "b/worker-1"]
    summary = json.loads((results / "no-b" / "summary.json").read_text())
    assert summary["successes"] == 3, summary

    # the run's pools are still a and b: resumed on them, or on its own, it is no change
    for pools in (("--pool", "a", "--pool", "b"), ()):
        again = run_cli(*run, *pools, "--run-name", "no-b", "--resume", home=home)
        assert again.returncode == 0, again.stderr
        assert "pools" not in again.stderr, again.stderr

    for name in ("worker-0", "worker-1"):
        _kill(name, "a")
    refused = run_cli(*run, "--pool", "a", "--pool", "b", "--run-name", "none", home=home)
    line = refused.assert_one_line_error()
    assert refused.returncode == 1, refused
    assert "error: pool 'a' has no worker that answers (worker-0: lost" in line, line
    assert "pool 'b' has no worker that answers (worker-0: lost" in line, line
    assert line.endswith("run 'oa-vm pool-repair --pool a' or 'oa-vm pool-repair --pool b'"), line
    assert sorted(p.name for p in results.iterdir()) == ["no-b"]
