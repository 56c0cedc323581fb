"""A short outage of the SSH server in front of a pool is ridden out; a long one ends the run in
one line naming the endpoint, its tasks left for ``--resume``, unless workers behind another SSH
server are left: those take the tasks, the lost path's workers quarantined as one.

The pool is a 2-worker local pool reached through a real OpenSSH server on loopback
(``--ssh-via``), the path every cloud pool's workers are reached by. The drill stops that sshd
(its process, and every connection it serves) while both workers hold a task, and starts it again
on the same port with the same host key: no worker is blamed, the attempts the outage cut are
given back uncounted, and every task is scored once. A worker that dies behind a live SSH server
is still blamed, as before.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evals.run.paths import PATIENCE_ENV
from tests.support.cli import run_cli
from tests.support.controller import RunController, wait_for_records, worker_pid
from tests.support.pools import READY_TIMEOUT
from tests.support.run_records import assert_summary_matches, read_records
from tests.support.sshd import SshServer, sshd  # noqa: F401 - pytest fixture
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.sshd]

TASKS = 6
POOL = "viassh"
BACKENDS = pytest.mark.parametrize("backend", ["openssh", "paramiko"])
"""The drills that ride an outage out run on both tunnel backends (``OA_VM_SSH_BACKEND``): they
notice a dead or silent server differently."""


@pytest.fixture
def ssh_pool(sshd: SshServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:  # noqa: F811
    """A ready 2-worker local pool whose workers are reached through ``sshd``; removed after."""
    home = tmp_path / "home"
    monkeypatch.setenv("OA_VM_HOME", str(home))
    created = run_cli(
        "oa-vm", "pool-create", "--cloud", "local", "--workers", "2", "--name", POOL,
        "--ssh-via", f"{sshd.user}@{sshd.host}:{sshd.port}", "--ssh-key", str(sshd.client_key),
        "-y", home=home,
    )
    assert created.returncode == 0, created.stderr
    waited = run_cli("oa-vm", "pool-wait", "--name", POOL, "--timeout", READY_TIMEOUT, home=home)
    assert waited.returncode == 0, waited.stderr
    yield home
    run_cli("oa-vm", "pool-cleanup", "--name", POOL, "-y", home=home)


def _start_run(home: Path, results: Path, name: str) -> RunController:
    # a task takes a few seconds (3 steps x 0.5 s and its reset): when the first is recorded, both
    # workers hold one
    return RunController(home, results, "--pool", POOL, "--agent", "oracle", "--tasks", str(TASKS),
                         "--run-name", name, "--step-pause", "0.5", "--read-timeout", "5")


def _queue_rows(run_dir: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(run_dir / "queue.sqlite") as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT task_id, status, attempts, history "
                                              "FROM tasks")]


def _outage(sshd: SshServer) -> str:  # noqa: F811
    return f"SSH endpoint {sshd.user}@{sshd.host}:{sshd.port}"


OUTAGES = pytest.mark.parametrize("outage", ["stopped", "frozen"])
"""How the SSH server goes away: ``stopped`` (the listener and every connection it serves: the
tunnels die under the tasks; started again on the same port with the same host key), or
``frozen`` (connections still accepted, nothing answered: a path that drops packets, which the
tunnels do not notice before their keepalives give up)."""


@BACKENDS
@OUTAGES
@pytest.mark.long
def test_a_short_outage_of_the_ssh_server_is_ridden_out(
    ssh_pool: Path, sshd: SshServer, tmp_path: Path,  # noqa: F811
    controllers: list[RunController], monkeypatch: pytest.MonkeyPatch, backend: str,
    outage: str,
) -> None:
    monkeypatch.setenv("OA_VM_SSH_BACKEND", backend)
    cut_path, mend_path = ((sshd.stop, sshd.start) if outage == "stopped"
                           else (sshd.freeze, sshd.thaw))
    results = tmp_path / "results"
    run = _start_run(ssh_pool, results, outage)
    controllers.append(run)
    run_dir = results / outage
    wait_for_records(run_dir, 1, run)
    cut_path()
    wait_until(lambda: f"{_outage(sshd)} is down" in run.output() or run.proc.poll() is not None,
               lambda: f"the run to see the outage:\n{run.output()}")
    mend_path()
    assert run.wait() == 0, run.output()

    output = run.output()
    assert f"{_outage(sshd)} is down" in output, output
    assert f"{_outage(sshd)} is back" in output, output
    assert "quarantined" not in output, output
    records = read_records(run_dir)
    assert len(records) == TASKS
    assert {r["status"] for r in records.values()} == {"success"}, output
    assert_summary_matches(run_dir, records)
    metadata = json.loads((run_dir / "metadata.json").read_text())
    assert metadata["quarantined_workers"] == [] and metadata["quarantined_hosts"] == []
    # every task ran to its end once: an attempt the outage cut was given back, uncounted
    rows = _queue_rows(run_dir)
    assert [r["status"] for r in rows] == ["done"] * TASKS
    assert all(r["attempts"] == 1 for r in rows), rows
    cut = [a for r in rows for a in json.loads(r["history"])]
    assert all(a["reason"] == "interrupted" for a in cut), cut
    if outage == "stopped":  # the tunnels die under the tasks: some attempt is cut
        assert cut, "the outage cut no attempt: the drill did not bite"
    assert all(r["attempts"] == 1 for r in records.values())


@pytest.mark.long
def test_an_outage_beyond_the_patience_ends_the_run_in_one_line_and_resume_finishes_it(
    ssh_pool: Path, sshd: SshServer, tmp_path: Path,  # noqa: F811
    controllers: list[RunController], monkeypatch: pytest.MonkeyPatch,
) -> None:
    results = tmp_path / "results"
    # a patience that is no duration is refused in one line, before anything is created
    refused = run_cli("openadapt-evals", "run", "--pool", POOL, "--agent", "oracle", "--tasks",
                      "1", "--results-dir", str(results), home=ssh_pool,
                      env={PATIENCE_ENV: "soon"})
    assert PATIENCE_ENV in refused.assert_one_line_error() and refused.returncode == 2
    assert not results.exists()

    monkeypatch.setenv(PATIENCE_ENV, "3")
    run = _start_run(ssh_pool, results, "long-outage")
    controllers.append(run)
    run_dir = results / "long-outage"
    wait_for_records(run_dir, 1, run)
    sshd.stop()
    code = run.wait()
    output = run.output()
    assert code == 4, output
    last = output.strip().splitlines()[-1]
    assert last.startswith("openadapt-evals: error: ") and _outage(sshd) in last, output
    assert "--resume" in last, last
    assert "Traceback" not in output
    records = read_records(run_dir)
    assert len(records) < TASKS, "the outage left no task to resume"
    assert {r["status"] for r in records.values()} == {"success"}, output
    assert not any(r["status"] == "leased" for r in _queue_rows(run_dir))

    sshd.start()
    monkeypatch.delenv(PATIENCE_ENV)
    resumed = run_cli("openadapt-evals", "run", "--resume", "--run-name", "long-outage",
                      "--results-dir", str(results), home=ssh_pool, timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    records = read_records(run_dir)
    assert len(records) == TASKS
    assert {r["status"] for r in records.values()} == {"success"}
    assert all(r["attempts"] == 1 for r in _queue_rows(run_dir))


@pytest.mark.long
def test_a_path_lost_past_the_patience_quarantines_its_workers_and_the_run_goes_on_behind_another(
    sshd: SshServer, tmp_path: Path, controllers: list[RunController],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two pools, each behind its own SSH server (as each host of a cloud pool is): one server
    stopped for good is one lost path, not the end of the run."""
    other = SshServer(tmp_path / "sshd-b")
    other.start()
    try:
        home = tmp_path / "home"
        monkeypatch.setenv("OA_VM_HOME", str(home))
        for name, workers, server in (("pa", "2", sshd), ("pb", "1", other)):
            created = run_cli(
                "oa-vm", "pool-create", "--cloud", "local", "--workers", workers, "--name", name,
                "--ssh-via", f"{server.user}@{server.host}:{server.port}", "--ssh-key",
                str(server.client_key), "-y", home=home)
            assert created.returncode == 0, created.stderr
            waited = run_cli("oa-vm", "pool-wait", "--name", name, "--timeout", READY_TIMEOUT,
                             home=home)
            assert waited.returncode == 0, waited.stderr
        monkeypatch.setenv(PATIENCE_ENV, "3")
        results, tasks = tmp_path / "results", 12
        run = RunController(home, results, "--pool", "pa", "--pool", "pb", "--agent", "oracle",
                            "--tasks", str(tasks), "--run-name", "lost-path", "--step-pause",
                            "0.5", "--read-timeout", "5")
        controllers.append(run)
        run_dir = results / "lost-path"
        wait_for_records(run_dir, 1, run)
        sshd.stop()  # pa's path, for good
        code = run.wait()
        output = run.output()
        assert code == 0, output
        endpoint = f"{sshd.user}@{sshd.host}:{sshd.port}"
        assert f"host {endpoint} quarantined: its SSH server did not answer for" in output, output
        records = read_records(run_dir)
        assert len(records) == tasks
        assert {r["status"] for r in records.values()} == {"success"}, output
        assert_summary_matches(run_dir, records)
        metadata = json.loads((run_dir / "metadata.json").read_text())
        assert metadata["quarantined_workers"] == []
        [lost] = metadata["quarantined_hosts"]
        assert (lost["host"], lost["workers"]) == (endpoint, ["pa/worker-0", "pa/worker-1"])
        assert f"Quarantined host {endpoint} (workers pa/worker-0, pa/worker-1)" in output
        # the attempts the lost path cut were given back uncounted and ran behind the other one
        rows = _queue_rows(run_dir)
        assert [r["status"] for r in rows] == ["done"] * tasks
        assert all(r["attempts"] == 1 for r in rows), rows
    finally:
        run_cli("oa-vm", "pool-cleanup", "--name", "pa", "-y", home=tmp_path / "home")
        run_cli("oa-vm", "pool-cleanup", "--name", "pb", "-y", home=tmp_path / "home")
        other.stop()


def test_a_dead_worker_behind_a_live_ssh_server_is_still_blamed(
    ssh_pool: Path, sshd: SshServer, tmp_path: Path,  # noqa: F811
    controllers: list[RunController],
) -> None:
    results = tmp_path / "results"
    run = _start_run(ssh_pool, results, "dead-worker")
    controllers.append(run)
    run_dir = results / "dead-worker"
    wait_for_records(run_dir, 1, run)
    os.kill(worker_pid(POOL, "worker-0"), signal.SIGKILL)  # the worker, not the path
    assert run.wait() == 0, run.output()

    output = run.output()
    assert "SSH endpoint" not in output, output  # no outage said, nothing given back
    assert "given back" not in output, output
    records = read_records(run_dir)
    assert len(records) == TASKS
    assert {r["status"] for r in records.values()} == {"success"}, output
    # the attempts the dead worker failed were counted against it, as before (its quarantine,
    # after two in a row, depends on whether it leases again before the other worker is done)
    counted = [a for r in _queue_rows(run_dir) for a in json.loads(r["history"])]
    assert counted and all(a["worker"] == "worker-0" and a["reason"] != "interrupted"
                           for a in counted), counted
    metadata = json.loads((run_dir / "metadata.json").read_text())
    assert set(metadata["quarantined_workers"]) <= {"worker-0"}
    assert metadata["quarantined_hosts"] == []
