"""Sweeps end to end: the real ``openadapt-evals`` CLI, real local worker processes, real SQLite.

Covers the oracle and noop sweeps over the whole local suite, the budget cap, and every bad
input the run command refuses (one line, non-zero exit, run folder untouched).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
from pathlib import Path

import psutil
import pytest

import oa_vm
from oa_vm import api
from oa_vm.model import state
from oa_vm.model.state import PoolRecord, PoolState, WorkerRecord, WorkerState
from tests.support.cli import BIN, Result, run_cli
from tests.support.run_records import assert_summary_matches, read_records
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

LOCAL_TASKS = 24  # infra/local/tasks/local_all.json


def folder_digest(folder: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file (to show a folder was left untouched)."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*")) if p.is_file()
    }


def evals(*args: str, home: Path, results: Path, timeout: float = 240.0) -> Result:
    """``openadapt-evals ARGS --results-dir RESULTS`` as a subprocess."""
    return run_cli("openadapt-evals", *args, "--results-dir", str(results), home=home,
                   timeout=timeout)


# --- whole-suite sweeps ------------------------------------------------------------------------


def test_oracle_sweep_scores_every_local_task_a_success(home: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    done = evals("sweep", "--cloud", "local", "--workers", "2", "--agent", "oracle",
                 "--tasks", "all", "--run-name", "oracle", "--json", home=home, results=results)
    assert done.returncode == 0, done.stderr
    run_dir = results / "oracle"
    records = read_records(run_dir)
    assert len(records) == LOCAL_TASKS
    assert {r["status"] for r in records.values()} == {"success"}
    assert all(r["score"] == 1.0 for r in records.values())
    infeasible = [r for r in records.values() if r["infeasible"]]
    assert infeasible and all(r["last_action"] == "FAIL" for r in infeasible)
    summary = assert_summary_matches(run_dir, records)
    printed = json.loads(done.stdout)
    assert printed["successes"] == LOCAL_TASKS and printed["success_rate"] == 1.0
    assert summary["success_rate"] == 1.0
    for task_id, record in records.items():
        first = record["steps"][0]
        assert first["screenshot"] == "step_000.png"
        assert (run_dir / "tasks" / task_id / "step_000.png").is_file()
        assert (run_dir / "tasks" / task_id / "task.json").is_file()
    assert len({r["worker"] for r in records.values()}) > 1  # the work was spread
    # the oracle acts as real agents do: pyautogui source to /execute_windows, none refused
    sent = [s for r in records.values() for s in r["steps"] if s["action"]["type"] not in
            ("done", "fail")]
    assert sent and all(s["action"]["type"] == "execute_windows" for s in sent)
    assert all(s["action"]["code"].startswith("import pyautogui") for s in sent)
    assert not any(s.get("rejected") for s in sent)
    metadata = json.loads((run_dir / "metadata.json").read_text())
    assert metadata["status"] == "finished" and len(metadata["task_ids"]) == LOCAL_TASKS
    assert state.list_names() == []  # the sweep removed its pool


def test_noop_sweep_fails_every_task_feasible_and_infeasible(home: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    done = evals("sweep", "--workers", "2", "--agent", "noop", "--tasks", "all",
                 "--run-name", "noop", home=home, results=results)
    assert done.returncode == 0, done.stderr
    records = read_records(results / "noop")
    assert len(records) == LOCAL_TASKS
    assert {r["status"] for r in records.values()} == {"failure"}
    assert {r["last_action"] for r in records.values()} == {"DONE"}
    assert {r["infeasible"] for r in records.values()} == {True, False}
    assert_summary_matches(results / "noop", records)
    assert "Success rate: 0.0%" in done.stdout
    assert state.list_names() == []


@pytest.mark.parametrize("signum", [signal.SIGINT,
                                    pytest.param(signal.SIGTERM, marks=pytest.mark.slow)])
def test_an_interrupted_sweep_removes_its_pool_and_can_be_resumed(
    home: Path, tmp_path: Path, signum: int
) -> None:
    results = tmp_path / "results"
    # A slow first session (1 s per action: about 40 s for the suite) so that the signal lands
    # mid-run even when a busy machine delays this test's polling; a signal that arrived after
    # the run ended would rightly exit 0.
    args = ["sweep", "--workers", "2", "--agent", "oracle", "--tasks", "all", "--name", "sw",
            "--run-name", "cut", "--step-pause", "1.0", "--results-dir", str(results)]
    log = tmp_path / "sweep.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(  # our own console script, fixed arguments
            [str(BIN / "openadapt-evals"), *args], stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env={**os.environ, "OA_VM_HOME": str(home)},
        )
    try:

        def two_records() -> bool:
            assert proc.poll() is None, log.read_text()
            return len(read_records(results / "cut")) >= 2

        wait_until(two_records, lambda: f"two records:\n{log.read_text()}")
        pids = [w.pid for w in state.load("sw").workers]
        proc.send_signal(signum)
        assert proc.wait(timeout=60) == 130, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    output = log.read_text()
    assert "pool sw removed" in output and "Traceback" not in output
    assert output.strip().splitlines()[-1].startswith("openadapt-evals: error: interrupted;")
    # the line gives all a resume needs: a sweep's --tasks and --agent are the run's own
    assert output.strip().splitlines()[-1].endswith("continue with --resume --run-name cut")
    assert state.list_names() == []
    assert not any(pid is not None and psutil.pid_exists(pid)
                   and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in pids)
    metadata = json.loads((results / "cut" / "metadata.json").read_text())
    assert metadata["status"] == "interrupted"
    kept = {t: r["started_at"] for t, r in read_records(results / "cut").items()}
    # the table across runs says the run is cut short, and how far it got (its row alone
    # showed the rate of what ran as the run's, beside the 24 tasks it selected)
    listed = evals("runs", home=home, results=results)
    assert f"NOT FINISHED: cut (interrupted, {len(kept)} of {LOCAL_TASKS} attempts)" in (
        listed.stdout), listed.stdout

    # as the line says, without --tasks and --agent (a sweep required both, where a run took
    # the run's own); a faster pause for the rest: a recorded setting, so the change is asked
    # for and recorded
    resumed = evals("sweep", "--workers", "2", "--name", "sw", "--resume", "--run-name", "cut",
                    "--step-pause", "0.1", "--allow-change", "step-pause", home=home,
                    results=results)
    assert resumed.returncode == 0, resumed.stderr
    records = read_records(results / "cut")
    assert len(records) == LOCAL_TASKS
    assert {r["status"] for r in records.values()} == {"success"}
    assert all(records[t]["started_at"] == s for t, s in kept.items())
    assert_summary_matches(results / "cut", records)
    assert "NOT FINISHED" not in evals("runs", home=home, results=results).stdout


# --- the budget cap ----------------------------------------------------------------------------


def test_a_sweep_with_a_cap_stops_at_it_and_lists_what_was_not_run(
    home: Path, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    cap, workers = 10.0, 2
    # $1 per worker-second; the pauses alone add up to far more than $10 over the suite.
    done = evals("sweep", "--workers", str(workers), "--agent", "oracle", "--tasks", "all",
                 "--price-per-hour", "3600", "--max-cost-usd", str(cap), "--step-pause", "0.5",
                 "--run-name", "capped", home=home, results=results)
    assert done.returncode == 3, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "budget cap" in last and "not run" in last and "Traceback" not in done.stderr
    run_dir = results / "capped"
    records = read_records(run_dir)
    assert len(records) == LOCAL_TASKS
    not_run = [t for t, r in records.items() if r["status"] == "not_run"]
    ran = [r for r in records.values() if r["status"] != "not_run"]
    assert not_run and ran
    assert all(records[t]["error_type"] == "budget" for t in not_run)
    assert all(t in last for t in not_run[:5])
    spent = sum(r["cost"]["total_usd"] for r in records.values())
    biggest = max(r["cost"]["total_usd"] for r in ran)
    assert spent <= cap + workers * biggest
    summary = assert_summary_matches(run_dir, records)
    assert summary["not_run"] == len(not_run)
    metadata = json.loads((run_dir / "metadata.json").read_text())
    assert metadata["status"] == "budget_stopped"
    assert state.list_names() == []


# --- bad input ---------------------------------------------------------------------------------


def _one_line(result: Result, code: int) -> str:
    assert result.returncode == code, (result.returncode, result.stderr)
    return result.assert_one_line_error()


def test_unknown_task_ids_are_all_listed_and_nothing_runs(
    pooled: Path, tmp_path: Path
) -> None:
    home, pool = pooled, "p"
    results = tmp_path / "results"
    bad = "0000-nope-WOS,1111-nope-WOS"
    line = _one_line(evals("run", "--pool", pool, "--agent", "noop", "--tasks",
                           f"{bad},5d0c082b-d2bd-5da5-8f10-d8d4b51e7239-WOS", "--run-name", "r",
                           home=home, results=results), 2)
    assert "0000-nope-WOS" in line and "1111-nope-WOS" in line
    assert not (results / "r").exists()


def test_synthetic_ids_are_refused_on_a_live_pool(pooled: Path, tmp_path: Path) -> None:
    home, pool = pooled, "p"
    # A record naming a cloud pool (which cannot be reached from here) whose worker URLs are
    # the local pool's: the catalog then treats the pool as live.
    local = api.pool_status(pool)
    fake_cloud = PoolRecord(
        name="fake-aws", cloud="aws", state=PoolState.READY, created_at=state.utcnow(),
        workers=[WorkerRecord(name="w0", state=WorkerState.READY,
                              waa_url=local.workers[0].waa_url,
                              scoring_url=local.workers[0].scoring_url)],
    )
    state.save(fake_cloud)
    try:
        results = tmp_path / "results"
        line = _one_line(evals("run", "--pool", "fake-aws", "--agent", "noop", "--tasks",
                               "notepad_1,mock_chrome_001", "--run-name", "r",
                               home=home, results=results), 2)
        assert "notepad_1" in line and "mock_chrome_001" in line
        assert not (results / "r").exists()
    finally:
        state.delete("fake-aws")


def test_unknown_agent(pooled: Path, tmp_path: Path) -> None:
    home, pool = pooled, "p"
    results = tmp_path / "results"
    line = _one_line(evals("run", "--pool", pool, "--agent", "genius", "--tasks", "all",
                           "--run-name", "r", home=home, results=results), 2)
    assert "unknown agent 'genius'" in line and "oracle" in line
    line = _one_line(evals("run", "--pool", pool, "--agent", "no_such_module:Agent", "--tasks",
                           "all", "--run-name", "r", home=home, results=results), 2)
    assert "cannot import no_such_module" in line
    assert not (results / "r").exists()


def test_a_pool_that_is_not_ready(home: Path, tmp_path: Path) -> None:
    state.save(PoolRecord(
        name="booting", cloud="aws", state=PoolState.PROVISIONING, created_at=state.utcnow(),
        workers=[WorkerRecord(name="w0", state=WorkerState.BOOTING)],
    ))
    try:
        results = tmp_path / "results"
        line = _one_line(evals("run", "--pool", "booting", "--agent", "noop", "--tasks", "all",
                               "--run-name", "r", home=home, results=results), 1)
        assert "no ready worker" in line and "pool-wait" in line
        assert not (results / "r").exists()
    finally:
        state.delete("booting")


def test_an_existing_run_name_without_resume(pooled: Path, tmp_path: Path) -> None:
    home, pool = pooled, "p"
    results = tmp_path / "results"
    existing = results / "taken"
    existing.mkdir(parents=True)
    (existing / "notes.txt").write_text("keep me")
    before = folder_digest(existing)
    line = _one_line(evals("run", "--pool", pool, "--agent", "noop", "--tasks", "all",
                           "--run-name", "taken", home=home, results=results), 2)
    assert "already exists" in line and "--resume" in line
    assert folder_digest(existing) == before


def test_resume_with_another_selection_or_a_missing_run(
    pooled: Path, tmp_path: Path
) -> None:
    home, pool = pooled, "p"
    results = tmp_path / "results"
    first = evals("run", "--pool", pool, "--agent", "noop", "--tasks", "domain:clock",
                  "--run-name", "r", home=home, results=results)
    assert first.returncode == 0, first.stderr
    before = folder_digest(results / "r")
    line = _one_line(evals("run", "--pool", pool, "--agent", "noop", "--tasks",
                           "domain:settings", "--run-name", "r", "--resume",
                           home=home, results=results), 2)
    assert "domain:clock" in line and "domain:settings" in line
    assert folder_digest(results / "r") == before
    line = _one_line(evals("run", "--pool", pool, "--agent", "noop", "--tasks", "all",
                           "--run-name", "never", "--resume", home=home, results=results), 2)
    assert "no run" in line
    assert not (results / "never").exists()


def test_a_resume_names_what_it_lacks_first(pooled: Path, tmp_path: Path) -> None:
    """``--resume`` needs the run's name and nothing else: without it, or with a name no run
    has, run and sweep say so (naming the runs there are), not "give --tasks and --agent"."""
    home, pool = pooled, "p"
    results = tmp_path / "results"
    first = evals("run", "--pool", pool, "--agent", "noop", "--tasks", "domain:clock",
                  "--run-name", "r", home=home, results=results)
    assert first.returncode == 0, first.stderr
    before = folder_digest(results)
    for command in (("run", "--pool", pool), ("sweep", "--workers", "1")):
        line = _one_line(evals(*command, "--run-name", "rr", "--resume", home=home,
                               results=results), 2)
        assert "no run named 'rr'" in line and "known runs: r)" in line, line
        line = _one_line(evals(*command, "--resume", home=home, results=results), 2)
        assert "--resume needs --run-name" in line, line
        line = _one_line(evals(*command, home=home, results=results), 2)
        assert line.endswith("give --tasks and --agent" + (
            " (or --rerun-errors RUN to rerun a run's errors)" if command[0] == "run" else "")
        ), line
    assert folder_digest(results) == before
    assert state.list_names() == [pool]


def test_a_resume_refused_for_a_setting_says_how_to_resume(
    pooled: Path, tmp_path: Path
) -> None:
    """The way back the refusal names is one to type: "without --variations" for a run
    started without it (it said "resume it with --variations '(none)'"), "the --variations
    file it started with (sha256 ...)" for one started with it."""
    home, pool = pooled, "p"
    results = tmp_path / "results"
    variations = oa_vm.local_tasks_dir() / "variations" / "local_all.json"
    for name, extra in (("plain", ("--agent", "noop")), ("random", ("--agent", "random")),
                        ("varied", ("--agent", "noop", "--variations", str(variations)))):
        first = evals("run", "--pool", pool, "--tasks",
                      "c499b229-110c-5fc8-9895-f2f879ac1512-WOS", "--run-name", name, *extra,
                      home=home, results=results)
        assert first.returncode == 0, first.stderr
    before = folder_digest(results)
    line = _one_line(evals("run", "--pool", pool, "--run-name", "plain", "--resume",
                           "--variations", str(variations), home=home, results=results), 2)
    assert "resume it without --variations or start a new run" in line, line
    line = _one_line(evals("run", "--pool", pool, "--run-name", "varied", "--resume",
                           home=home, results=results), 2)
    assert "resume it with the --variations file it started with (sha256 " in line, line
    line = _one_line(evals("run", "--pool", pool, "--run-name", "random", "--resume",
                           "--agent-arg", "seed=7", home=home, results=results), 2)
    assert "resume it without --agent-arg" in line, line
    assert folder_digest(results) == before


def test_resume_of_a_finished_run_redoes_nothing(pooled: Path, tmp_path: Path) -> None:
    home, pool = pooled, "p"
    results = tmp_path / "results"
    first = evals("run", "--pool", pool, "--agent", "oracle", "--tasks", "domain:clock",
                  "--run-name", "r", home=home, results=results)
    assert first.returncode == 0, first.stderr
    started = {t: r["started_at"] for t, r in read_records(results / "r").items()}
    again = evals("run", "--pool", pool, "--agent", "oracle", "--tasks", "domain:clock",
                  "--run-name", "r", "--resume", home=home, results=results)
    assert again.returncode == 0, again.stderr
    records = read_records(results / "r")
    assert {t: r["started_at"] for t, r in records.items()} == started
    assert_summary_matches(results / "r", records)


def test_bad_option_values_are_one_line_each(pooled: Path, tmp_path: Path) -> None:
    home, pool = pooled, "p"
    results = tmp_path / "results"
    for args, needle in [
        (("--max-steps", "0"), "--max-steps"),
        (("--task-timeout", "-1"), "--task-timeout"),
        (("--run-name", "../up"), "--run-name"),
        (("--agent", "replay"), "--bundles"),
    ]:
        argv = ["run", "--pool", pool, "--tasks", "all", "--agent", "noop", *args]
        line = _one_line(evals(*argv, home=home, results=results), 2)
        assert needle in line
    assert not results.exists() or not any(results.iterdir())
