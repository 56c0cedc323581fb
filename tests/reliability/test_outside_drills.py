"""Drills run from outside, as a reviewer runs them, each on a defect it found: a pool's
``pool.json`` removed by hand while a run uses it, a sweep killed while it removes its own pool,
a second sweep of a run still going, an unhealthy run's line naming what to do, a sweep whose
workers never got ready, a cleanup by hand while a sweep waits, a cleanup killed half-way, and
a full disk under the logs a failed sweep keeps. Throughout, ``pool-list`` must show a pool
while its workers run, ``pool-cleanup`` must remove it, a refusal is one line naming what to do,
and every run ends with each task recorded once.

The CLIs run as real subprocesses on real local pools; every wait is a condition with a
generous deadline.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from oa_vm.model import state
from tests.support import cleanup_gate
from tests.support.cli import run_cli
from tests.support.controller import Controller
from tests.support.disks import fill, tmpfs
from tests.support.pools import READY_TIMEOUT, processes_of
from tests.support.run_records import assert_summary_matches, read_records
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

ALL_TASKS = 24
SMALL_TASKS = 6


def _workers_running(home: Path) -> list[int]:
    return [p.pid for p in processes_of(home) if "infra.local" in p.cmdline()]


def test_a_pool_whose_record_is_removed_mid_run_is_listed_and_removed_by_cleanup(
    home: Path, tmp_path: Path, controllers: list[Controller]
) -> None:
    for args in (("pool-create", "--cloud", "local", "--workers", "2", "-y"),
                 ("pool-wait", "--timeout", READY_TIMEOUT)):
        done = run_cli("oa-vm", *args, "--name", "gone", home=home)
        assert done.returncode == 0, done.stderr
    results = tmp_path / "results"
    run = Controller(home, "run", "--pool", "gone", "--agent", "oracle", "--results-dir",
                     str(results), "--tasks", "all", "--run-name", "live", "--step-pause", "0.1",
                     log_dir=tmp_path)
    controllers.append(run)
    wait_until(lambda: len(read_records(results / "live")) >= 2, "the run's first records")
    state.record_path("gone").unlink()  # by hand, mid-run
    assert run.wait() == 0, run.output()
    records = read_records(results / "live")
    assert len(records) == ALL_TASKS
    assert_summary_matches(results / "live", records)
    assert len(_workers_running(home)) == 2, "the workers outlive their record"

    listed = run_cli("oa-vm", "pool-list", home=home)
    assert listed.returncode == 0, listed.stderr
    assert "gone" in listed.stdout and "No pools" not in listed.stdout, listed.stdout
    warning = listed.stderr.strip()
    assert len(warning.splitlines()) == 1 and "Traceback" not in warning, warning
    assert "'oa-vm pool-cleanup --pool gone'" in warning, warning
    as_json = json.loads(run_cli("oa-vm", "pool-list", "--json", home=home).stdout)
    assert [Path(e["path"]).parent.name for e in as_json] == ["gone"]
    status = run_cli("oa-vm", "pool-status", "--name", "gone", home=home)
    assert "'oa-vm pool-cleanup --pool gone'" in status.assert_one_line_error()

    expired = run_cli("oa-vm", "pool-cleanup", "--expired", "-y", home=home)
    assert "pool 'gone' skipped" in expired.stdout + expired.stderr, expired
    assert "'oa-vm pool-cleanup --pool gone'" in expired.stdout + expired.stderr, expired
    removed = run_cli("oa-vm", "pool-cleanup", "--name", "gone", "-y", home=home)
    assert removed.returncode == 0, removed.stderr
    assert _workers_running(home) == []
    assert not state.pool_dir("gone").exists()
    after = run_cli("oa-vm", "pool-list", home=home)
    assert "No pools" in after.stdout and after.stderr == "", after.stderr


def test_a_new_pool_never_takes_the_name_of_one_whose_record_was_removed_but_workers_run(
    home: Path,
) -> None:
    """``pool-create --name gone`` over a folder whose record was removed by hand started a
    second worker-0 in the folder the first still ran from, and recorded only the new one: the
    old worker ran on unseen. The name stays taken until ``pool-cleanup`` removes the folder."""
    created = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "1",
                      "--name", "gone", "-y", home=home)
    assert created.returncode == 0, created.stderr
    first = _workers_running(home)
    assert len(first) == 1
    state.record_path("gone").unlink()  # by hand

    again = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "1",
                    "--name", "gone", "-y", home=home)
    line = again.assert_one_line_error()
    assert "'oa-vm pool-cleanup --pool gone'" in line, line
    assert _workers_running(home) == first, "nothing is started"
    assert not state.record_path("gone").exists()

    removed = run_cli("oa-vm", "pool-cleanup", "--name", "gone", "-y", home=home)
    assert removed.returncode == 0, removed.stderr
    assert _workers_running(home) == []
    anew = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "1",
                   "--name", "gone", "-y", home=home)
    assert anew.returncode == 0, anew.stderr


def test_a_sweep_whose_pool_record_is_removed_mid_run_still_removes_its_pool(
    home: Path, tmp_path: Path, controllers: list[Controller]
) -> None:
    # The sweep's removal found no record and said nothing: it exited 0 with its two workers
    # running, under a folder only pool-list's warning named.
    results = tmp_path / "results"
    sweep = Controller(home, "sweep", "--cloud", "local", "--workers", "2", "--name", "norec",
                       "--agent", "oracle", "--tasks", "all", "--run-name", "s",
                       "--results-dir", str(results), "--step-pause", "0.1", log_dir=tmp_path)
    controllers.append(sweep)
    wait_until(lambda: len(read_records(results / "s")) >= 2, "the sweep's first records")
    state.record_path("norec").unlink()  # by hand, mid-run
    assert sweep.wait() == 0, sweep.output()
    assert "pool norec removed" in sweep.output()
    assert len(read_records(results / "s")) == ALL_TASKS
    wait_until(lambda: not _workers_running(home), "the sweep's workers to be stopped")
    assert not state.pool_dir("norec").exists()


def test_a_sweep_killed_while_it_removes_its_pool_is_resumed_and_the_pool_removed(
    home: Path, tmp_path: Path
) -> None:
    gate, results = tmp_path / "gate", tmp_path / "results"
    sweep_args = ("sweep", "--cloud", "local", "--workers", "2", "--tasks", "local_small",
                  "--agent", "oracle", "--name", "sw", "--run-name", "r", "--results-dir",
                  str(results))
    argv, env = cleanup_gate.command(gate, "openadapt-evals", *sweep_args)
    env["OA_VM_HOME"] = str(home)
    with (tmp_path / "sweep.log").open("wb") as log:
        sweep = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                 stderr=subprocess.STDOUT, env=env)
    try:
        wait_until(Path(f"{gate}.waiting").exists, "the sweep's removal of its pool")
    finally:
        sweep.kill()
        sweep.wait(timeout=60)
    assert len(_workers_running(home)) == 2
    listed = run_cli("oa-vm", "pool-list", home=home)
    assert "sw" in listed.stdout, listed.stdout

    resumed = run_cli("openadapt-evals", *sweep_args, "--resume", home=home, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert "is being removed" not in resumed.stderr, resumed.stderr
    assert "pool sw" in resumed.stderr, resumed.stderr
    assert _workers_running(home) == []
    assert not state.exists("sw") and not state.pool_dir("sw").exists()
    records = read_records(results / "r")
    assert len(records) == SMALL_TASKS
    assert_summary_matches(results / "r", records)
    metadata = json.loads((results / "r" / "metadata.json").read_text())
    assert metadata["status"] == "finished"


def test_a_second_sweep_of_a_running_sweeps_run_is_refused_before_it_touches_the_pool(
    home: Path, tmp_path: Path, controllers: list[Controller]
) -> None:
    results = tmp_path / "results"
    sweep_args = ("sweep", "--cloud", "local", "--workers", "1", "--tasks", "local_small",
                  "--agent", "oracle", "--name", "busy", "--run-name", "r", "--results-dir",
                  str(results), "--step-pause", "0.3")
    first = Controller(home, *sweep_args, log_dir=tmp_path)
    controllers.append(first)
    wait_until(lambda: len(read_records(results / "r")) >= 1, "the first sweep's first record")
    record = state.record_path("busy").read_bytes()
    second = run_cli("openadapt-evals", *sweep_args, "--resume", home=home, timeout=600)
    line = second.assert_one_line_error()
    assert "is in use by another openadapt-evals process" in line, line
    assert first.proc.poll() is None, "the first sweep ended before the second was checked"
    assert state.record_path("busy").read_bytes() == record
    assert first.wait() == 0, first.output()
    records = read_records(results / "r")
    assert len(records) == SMALL_TASKS
    assert_summary_matches(results / "r", records)
    assert not state.exists("busy") and _workers_running(home) == []


def test_an_unhealthy_run_names_the_command_that_reruns_its_errors_and_it_does(
    home: Path, tmp_path: Path
) -> None:
    # every worker dies at its 40th request: the run ends unhealthy (exit 4), most tasks in
    # error; the line must name a command that, on a healthy pool, finishes the run
    for name, faults in (("crashing", ("--fault", "crash-after=40")), ("healthy", ())):
        for args in (("pool-create", "--cloud", "local", "--workers", "2", "-y", *faults),
                     ("pool-wait", "--timeout", READY_TIMEOUT)):
            done = run_cli("oa-vm", *args, "--name", name, home=home)
            assert done.returncode == 0, done.stderr
    results = tmp_path / "results"
    run = run_cli("openadapt-evals", "run", "--pool", "crashing", "--tasks", "all", "--agent",
                  "oracle", "--run-name", "u", "--results-dir", str(results), home=home,
                  timeout=600)
    assert run.returncode == 4, run.stderr
    line = run.stderr.strip().splitlines()[-1]
    assert "is unhealthy" in line and "--resume" not in line, line
    command = shlex.split(line.split(": '", 1)[1].split("'", 1)[0])
    assert command[:2] == ["openadapt-evals", "run"], line
    rerun = run_cli(*command[:1], *command[1:], "--pool", "healthy", home=home, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    records = read_records(results / "u")
    assert len(records) == ALL_TASKS
    assert {r["status"] for r in records.values()} == {"success"}
    assert_summary_matches(results / "u", records)


@pytest.mark.slow  # a sweep that waits its workers out, then a second one (about 12 s)
def test_a_sweep_whose_workers_never_got_ready_can_be_resumed(home: Path, tmp_path: Path) -> None:
    # the workers accept connections and never answer: the sweep's wait for them times out
    # before its run begins, and it keeps their logs in the run folder
    results = tmp_path / "results"
    sweep_args = ("sweep", "--cloud", "local", "--workers", "2", "--tasks", "local_small",
                  "--agent", "oracle", "--name", "stuck", "--run-name", "r", "--results-dir",
                  str(results))
    failed = run_cli("openadapt-evals", *sweep_args, "--fault", "hang-after=1",
                     "--wait-timeout", "5s", home=home, timeout=600)
    assert failed.returncode != 0 and "not ready" in failed.stderr, failed.stderr
    assert (results / "r" / "worker-logs-stuck").is_dir()
    assert not state.exists("stuck") and _workers_running(home) == []
    again = run_cli("openadapt-evals", *sweep_args, home=home)
    assert "continue it with --resume" in again.assert_one_line_error()
    resumed = run_cli("openadapt-evals", *sweep_args, "--resume", home=home, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    records = read_records(results / "r")
    assert len(records) == SMALL_TASKS
    assert {r["status"] for r in records.values()} == {"success"}
    assert_summary_matches(results / "r", records)


def test_a_sweep_whose_pool_a_user_removes_while_it_waits_says_so_in_one_line(
    home: Path, tmp_path: Path
) -> None:
    gate, results = tmp_path / "gate", tmp_path / "results"
    waiting = Controller(home, "sweep", "--cloud", "local", "--workers", "2", "--tasks",
                         "local_small", "--agent", "oracle", "--name", "waited", "--run-name",
                         "r", "--results-dir", str(results), "--fault", "hang-after=1",
                         log_dir=tmp_path)
    wait_until(lambda: "worker-1 listening" in waiting.output(), "the sweep's wait")
    # the user's cleanup, held once it has begun (the pool marked, its lease taken)
    argv, env = cleanup_gate.command(gate, "oa-vm", "pool-cleanup", "--name", "waited", "-y")
    env["OA_VM_HOME"] = str(home)
    cleanup = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, env=env)
    try:
        wait_until(Path(f"{gate}.waiting").exists, "the cleanup's removal")
        assert waiting.wait() != 0
    finally:
        gate.touch()
        out, _ = cleanup.communicate(timeout=300)
    assert cleanup.returncode == 0, out
    said = waiting.output()
    assert "could not remove" not in said and "pool waited removed" not in said, said
    assert "pool waited is being removed by oa-vm pool-cleanup" in said, said
    assert not state.exists("waited") and _workers_running(home) == []


def test_a_pool_whose_cleanup_was_killed_shows_deleting_and_names_the_cleanup_to_finish(
    home: Path, tmp_path: Path
) -> None:
    for args in (("pool-create", "--cloud", "local", "--workers", "2", "-y"),
                 ("pool-wait", "--timeout", READY_TIMEOUT)):
        done = run_cli("oa-vm", *args, "--name", "half", home=home)
        assert done.returncode == 0, done.stderr
    gate = tmp_path / "gate"
    argv, env = cleanup_gate.command(gate, "oa-vm", "pool-cleanup", "--name", "half", "-y")
    env["OA_VM_HOME"] = str(home)
    cleanup = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, env=env)
    try:
        wait_until(Path(f"{gate}.waiting").exists, "the cleanup's removal")
    finally:
        cleanup.kill()
        cleanup.wait(timeout=60)
    assert len(_workers_running(home)) == 2
    listed = run_cli("oa-vm", "pool-list", "--json", home=home)
    assert [e["state"] for e in json.loads(listed.stdout)] == ["deleting"], listed.stdout
    finish = "'oa-vm pool-cleanup --pool half'"
    for script, *args in (("openadapt-evals", "run", "--pool", "half", "--tasks", "2", "--agent",
                           "oracle", "--results-dir", str(tmp_path / "results")),
                          ("oa-vm", "pool-wait", "--name", "half"),
                          ("oa-vm", "pool-repair", "--name", "half")):
        line = run_cli(script, *args, home=home).assert_one_line_error()
        assert "being removed" in line and finish in line, (args, line)
    removed = run_cli("oa-vm", "pool-cleanup", "--name", "half", "-y", home=home)
    assert removed.returncode == 0, removed.stderr
    assert _workers_running(home) == [] and not state.exists("half")


@pytest.mark.slow  # a sweep on a 1 MB disk of its own (about 22 s)
def test_worker_logs_a_full_disk_cannot_keep_are_said_in_one_short_line(
    home: Path, tmp_path: Path
) -> None:
    # the results' disk fills while the sweep waits for workers that never answer: the logs
    # it keeps on failing cannot be written
    with tmpfs(tmp_path / "disk", "1m") as disk:
        results = disk / "results"
        sweep = Controller(home, "sweep", "--cloud", "local", "--workers", "2", "--tasks",
                           "local_small", "--agent", "oracle", "--name", "full", "--run-name",
                           "r", "--results-dir", str(results), "--fault", "hang-after=1",
                           "--wait-timeout", "20s", log_dir=tmp_path)
        wait_until(lambda: "worker-1 listening" in sweep.output(), "the sweep's wait")
        fill(disk)
        assert sweep.wait() != 0
    said = [line for line in sweep.output().splitlines() if "could not be kept" in line]
    assert len(said) == 1, sweep.output()
    assert "No space left on device" in said[0] and "[(" not in said[0], said[0]
    assert len(said[0]) < 400, said[0]
    assert not state.exists("full") and _workers_running(home) == []
