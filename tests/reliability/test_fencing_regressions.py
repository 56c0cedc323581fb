"""Regressions of the fencing review (issue 19): the cap of a resumed run, who is blamed for an
action that makes a worker fail, a zombie lease holder, a run killed in its first moments,
SIGTERM/SIGHUP, and the billing of attempts a crash interrupted. Real local pools, the real CLI
as a subprocess."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from oa_vm import api
from oa_vm.model import lease, state
from tests.support.cli import run_cli
from tests.support.controller import Controller
from tests.support.run_records import read_records, reopen_task
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.pool(name="fence", workers=2, cli=True)]

SMALL = "local_small"
SMALL_TASKS = 6


def _metadata(run_dir: Path) -> dict[str, object]:
    data = json.loads((run_dir / "metadata.json").read_text())
    assert isinstance(data, dict)
    return data


# --- Must show 2: --resume keeps the cap ---------------------------------------------------------


def test_resume_keeps_the_runs_cap_and_a_change_is_said(
    pooled: Path, tmp_path: Path
) -> None:
    home, pool = pooled, "fence"  # it only runs on the pool, to the end
    results = tmp_path / "results"
    args = ("run", "--pool", pool, "--agent", "oracle", "--tasks", SMALL, "--run-name", "capped",
            "--results-dir", str(results))
    first = run_cli("openadapt-evals", *args, "--max-cost-usd", "12", home=home)
    assert first.returncode == 0, first.stderr
    run_dir = results / "capped"
    assert _metadata(run_dir)["max_cost_usd"] == 12
    reopen_task(run_dir)  # a task left to run: the resume runs it, under the run's cap
    kept = run_cli("openadapt-evals", *args, "--resume", home=home)
    assert kept.returncode == 0, kept.stderr
    assert "keeping the run's cap of $12" in kept.stderr
    assert _metadata(run_dir)["max_cost_usd"] == 12
    cost = _metadata(run_dir)["cost"]
    assert isinstance(cost, dict) and cost["cap_usd"] == 12
    # nothing is left to run: the cap given changes nothing, and the run does not say it does
    settled = run_cli("openadapt-evals", *args, "--resume", "--max-cost-usd", "20", home=home)
    assert settled.returncode == 0, settled.stderr
    assert "changing the run's cap" not in settled.stderr, settled.stderr
    assert "so no pool was used and its cap stays as recorded" in settled.stderr, settled.stderr
    assert _metadata(run_dir)["max_cost_usd"] == 12
    reopen_task(run_dir)  # a task left to run: the resume runs it, under the new cap
    changed = run_cli("openadapt-evals", *args, "--resume", "--max-cost-usd", "20", home=home)
    assert changed.returncode == 0, changed.stderr
    assert "changing the run's cap from $12 to $20" in changed.stderr
    assert _metadata(run_dir)["max_cost_usd"] == 20


# --- Must show 3: the agent owns a failure its own action caused ---------------------------------


_LONG_PATH_AGENT = '''
from evals.agents.base import BenchmarkAction, BenchmarkAgent

class LongPath(BenchmarkAgent):
    """Asks for a 300-character path: the worker's file system refuses it (a 500)."""

    def act(self, observation, task, history=None):
        if history:
            return BenchmarkAction(type="done")
        return BenchmarkAction(type="execute",
                               command="exists C:\\\\Users\\\\Docker\\\\" + "d" * 300 + ".txt")
'''


def test_an_action_that_makes_the_worker_fail_is_the_agents_and_quarantines_nothing(
    pooled: Path, tmp_path: Path
) -> None:
    home, pool = pooled, "fence"  # it only runs on the pool, to the end
    module = tmp_path / "agentmod"
    module.mkdir()
    (module / "long_path_agent.py").write_text(_LONG_PATH_AGENT)
    results = tmp_path / "results"
    done = run_cli("openadapt-evals", "run", "--pool", pool, "--agent",
                   "long_path_agent:LongPath", "--tasks", SMALL, "--run-name", "long",
                   "--results-dir", str(results), home=home, timeout=240,
                   env={"PYTHONPATH": str(module)})
    assert done.returncode == 0, done.stdout + done.stderr
    records = read_records(results / "long")
    assert len(records) == SMALL_TASKS
    # each task failed on its merits (the checker's verdict), none is an infrastructure error
    assert {r["status"] for r in records.values()} == {"failure"}, records
    for record in records.values():
        step = record["steps"][0]
        assert step["rejected"] and "failed on this action" in step["error"], step
        assert record["attempts"] == 1 and not record.get("previous_attempts")
    assert _metadata(results / "long")["quarantined_workers"] == []
    assert all(w.state.value == "ready" for w in api.pool_status(pool).workers)


# --- defect 9: a zombie holds no lease ------------------------------------------------------------


def test_a_dead_unreaped_holder_holds_no_lease(home: Path, pool: str) -> None:
    # the holder takes the lease and dies; this process, its parent, does not reap it
    holder = subprocess.Popen(  # fixed argv, no shell
        [sys.executable, "-c",
         "import os, sys\nfrom oa_vm.model.lease import try_acquire\n"
         "try_acquire(sys.argv[1], 'zombie-run', 'tok')\nos._exit(0)\n", pool],
        env={**os.environ, "OA_VM_HOME": str(home)},
    )
    import psutil

    wait_until(lambda: psutil.Process(holder.pid).status() == psutil.STATUS_ZOMBIE,
               "the holder to be a zombie")
    try:
        held = lease.read_lease(pool)
        assert held is not None and held["pid"] == holder.pid
        assert not lease.holder_alive(held)
        assert lease.try_acquire(pool, "next-run", "tok-2") is None  # taken over
    finally:
        holder.wait(timeout=30)


# --- defect 10: a run killed in its first moments can be resumed or reused -----------------------


@pytest.mark.parametrize("leftover", [
    None,
    # SQLite's rollback journal while the new queue turns to WAL, and a write of metadata.json
    # killed before its rename: each made the folder neither a run to resume nor a new one
    "queue.sqlite-journal", ".metadata.json.k2j4h5g6.tmp",
])
@pytest.mark.parametrize("then", ["resume", "reuse"])
def test_a_run_killed_in_its_first_moment_can_be_resumed_or_reused(
    pooled: Path, tmp_path: Path, then: str, leftover: str | None
) -> None:
    home, pool = pooled, "fence"  # it only runs on the pool, to the end
    results = tmp_path / "results"
    run_dir = results / "early"
    # the state a SIGKILL 0.5 s in leaves: the folder, its lock, a queue, no metadata yet
    run_dir.mkdir(parents=True)
    (run_dir / ".lock").write_text("somehost pid 1\n")
    conn = sqlite3.connect(run_dir / "queue.sqlite")
    conn.execute("CREATE TABLE tasks (task_id TEXT PRIMARY KEY)")
    conn.commit()
    conn.close()
    if leftover is not None:
        (run_dir / leftover).write_bytes(b"\0" * 512)
    args = ["run", "--pool", pool, "--agent", "oracle", "--tasks", SMALL, "--run-name", "early",
            "--results-dir", str(results)]
    if then == "resume":
        args.append("--resume")
    done = run_cli("openadapt-evals", *args, home=home)
    assert done.returncode == 0, done.stderr
    assert len(read_records(run_dir)) == SMALL_TASKS
    assert _metadata(run_dir)["status"] == "finished"
    assert leftover is None or not (run_dir / leftover).exists()


def test_a_run_sigkilled_half_a_second_in_can_be_resumed(
    home: Path, pool: str, tmp_path: Path, controllers: list[Controller]
) -> None:
    results = tmp_path / "results"
    run = Controller(home, "run", "--pool", pool, "--agent", "oracle", "--tasks", SMALL,
                     "--run-name", "half", "--results-dir", str(results), log_dir=tmp_path)
    controllers.append(run)
    time.sleep(0.5)  # the defect's timing: wherever the start has got to by then
    run.kill()
    resumed = run_cli("openadapt-evals", "run", "--pool", pool, "--agent", "oracle", "--tasks",
                      SMALL, "--run-name", "half", "--results-dir", str(results), "--resume",
                      home=home)
    if not (results / "half").exists():
        # killed before it made its folder (or the results folder): nothing to resume, and
        # the name is free
        line = resumed.assert_one_line_error()
        assert "no run named 'half'" in line or f"--results-dir {results} does not exist" in line
        return
    assert resumed.returncode == 0, resumed.stderr
    assert len(read_records(results / "half")) == SMALL_TASKS


# --- SIGTERM and SIGHUP end a run as Ctrl-C does -------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_leave_the_run_interrupted_not_running(
    home: Path, pool: str, tmp_path: Path, controllers: list[Controller], sig: signal.Signals
) -> None:
    results = tmp_path / "results"
    run = Controller(home, "run", "--pool", pool, "--agent", "oracle", "--tasks", "all",
                     "--run-name", "ended", "--step-pause", "0.2", "--results-dir", str(results),
                     log_dir=tmp_path)
    controllers.append(run)
    wait_until(lambda: len(read_records(results / "ended")) >= 1, "a first record")
    run.proc.send_signal(sig)
    code = run.wait()
    assert code != 0
    assert "Traceback" not in run.output(), run.output()
    metadata = _metadata(results / "ended")
    assert metadata["status"] == "interrupted" and metadata["ended_at"], metadata
    assert not (state.pool_dir(pool) / "lease.json").exists()  # the lease was given back


# --- the worker time of attempts a crash interrupted is billed ----------------------------------


@pytest.mark.long
def test_attempts_interrupted_by_a_crash_are_billed_on_resume(
    home: Path, pool: str, tmp_path: Path, controllers: list[Controller]
) -> None:
    results = tmp_path / "results"
    args = ("--pool", pool, "--agent", "oracle", "--tasks", SMALL, "--run-name", "billed",
            "--step-pause", "2.0", "--results-dir", str(results))
    run = Controller(home, "run", *args, log_dir=tmp_path)
    controllers.append(run)
    run_dir = results / "billed"

    def in_flight() -> list[tuple[str, float]]:
        try:
            conn = sqlite3.connect(f"{(run_dir / 'queue.sqlite').resolve().as_uri()}?mode=ro",
                                   uri=True)
            try:
                rows = conn.execute("SELECT task_id, lease_started_at FROM tasks"
                                    " WHERE status='leased'").fetchall()
            finally:
                conn.close()
        except sqlite3.Error:
            return []
        return [(str(t), float(s)) for t, s in rows if s is not None]

    # an attempt that has run past a heartbeat (every 5 s at most)
    wait_until(lambda: any(time.time() - s > 7.0 for _, s in in_flight()),
               "an attempt running for a while")
    cut = {tid for tid, s in in_flight() if time.time() - s > 7.0}
    run.kill()
    resumed = run_cli("openadapt-evals", "run", *args, "--resume", home=home, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    records = read_records(run_dir)
    assert len(records) == SMALL_TASKS
    for task_id in cut:
        record = records[task_id]
        interrupted = [a for a in record["previous_attempts"]
                       if "interrupted" in str(a["error_message"])]
        assert len(interrupted) == 1, record["previous_attempts"]
        billed = _seconds(interrupted[0]["started_at"], interrupted[0]["ended_at"])
        assert billed >= 1.0, interrupted
        final = _seconds(record["started_at"], record["ended_at"])
        # the task is billed for both attempts: the interrupted one and the one that ended it
        assert float(record["cost"]["worker_seconds"]) >= billed + 0.5 * final, record["cost"]
    total = _metadata(run_dir)["cost"]
    assert isinstance(total, dict)
    counted = sum(float(r["cost"]["worker_seconds"]) for r in records.values())
    assert float(total["worker_seconds"]) == pytest.approx(counted, abs=0.01)


def _seconds(start: str, end: str) -> float:
    from datetime import datetime

    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


# --- defect 11: a resumed sweep finds the pool its killed self created ---------------------------


def test_a_killed_sweep_is_resumed_on_the_pool_it_created_not_on_a_second_one(
    home: Path, tmp_path: Path, controllers: list[Controller]
) -> None:
    results = tmp_path / "results"
    args = ("sweep", "--cloud", "local", "--workers", "2", "--agent", "oracle", "--tasks", "all",
            "--run-name", "swept", "--step-pause", "0.2", "--results-dir", str(results))
    sweep = Controller(home, *args, log_dir=tmp_path)
    controllers.append(sweep)
    wait_until(lambda: len(read_records(results / "swept")) >= 1, "the sweep's first record")
    sweep.kill()
    [left] = state.list_names()  # the killed sweep's pool is still there
    recorded = json.loads((results / "swept" / "sweep-pool.json").read_text())
    assert recorded["pool"] == left
    # another --name would leave it billing unnoticed: refused, naming it
    other = run_cli("openadapt-evals", *args, "--resume", "--name", "elsewhere", home=home)
    line = other.assert_one_line_error()
    assert repr(left) in line and "pool-cleanup" in line, line
    assert state.list_names() == [left]
    resumed = Controller(home, *args, "--resume", log_dir=tmp_path)
    controllers.append(resumed)
    seen: set[str] = set()

    def finished() -> bool:
        seen.update(state.list_names())
        return resumed.proc.poll() is not None

    wait_until(finished, "the resumed sweep to end")
    assert resumed.proc.returncode == 0, resumed.output()
    assert f"reusing pool {left}" in resumed.output()
    assert seen <= {left}, f"a second pool was created: {seen}"
    assert len(read_records(results / "swept")) == 24
    assert not state.list_names()  # the resumed sweep removed the pool at its end
