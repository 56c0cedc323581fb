"""One regression test per defect of the fault-and-abuse review that the drills and the abuse
suite do not already cover (see ``docs/reliability.md`` for the map from defect to test)."""

from __future__ import annotations

import json
import math
import os
import signal
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from evals.cli.commands.run import finish_run
from evals.errors import RunUnhealthy
from evals.results.records import RunStatus
from evals.run.failover import FailoverScoring
from evals.run.runner import RunResult, health_warning
from oa_vm import api
from oa_vm.errors import InvalidInputError, PoolNotReadyError
from oa_vm.kit.redact import redact_text, redact_url
from oa_vm.model import state
from oa_vm.model.state import PoolRecord, PoolState
from tests.support.cli import BIN, run_cli
from tests.support.controller import Controller
from tests.support.http_servers import RefusingPort, Reply, ScriptedServer
from tests.support.pools import READY_S, processes_of
from tests.support.run_records import read_records
from tests.support.waiting import wait_gone, wait_until
from waa_client import ScoringClient
from waa_client.catalog import Catalog

pytestmark = pytest.mark.pool(name="regress")

TASK = "c499b229-110c-5fc8-9895-f2f879ac1512-WOS"
SMALL = "local_small"


# --- units ---------------------------------------------------------------------------------------


def test_task_loading_falls_over_to_another_worker_on_refusal_and_500() -> None:
    index = Reply.json({"notepad": ["t1"]})
    with RefusingPort() as dead, ScriptedServer({
        "/tasks": [Reply.json({"message": "boom"}, 500)], "/indexes": Reply(404),
        "/task/t1": Reply.json({"message": "boom"}, 500),
    }) as failing, ScriptedServer({
        "/tasks": index, "/indexes": Reply(404), "/task/t1": Reply.json({"id": "t1"}),
    }) as good:
        clients = [ScoringClient(u, retries=0, connect_timeout=2, read_timeout=5)
                   for u in (dead.url, failing.url, good.url)]
        catalog = Catalog.from_scoring(FailoverScoring(clients, sleep=lambda s: None))  # type: ignore[arg-type]
        assert catalog.task_ids() == ["t1"]
        assert catalog.load("t1") == {"id": "t1"}


def test_bulk_task_loading_falls_over_to_another_worker() -> None:
    index = Reply.json({"notepad": ["t1", "t2"]})
    with ScriptedServer({
        "/tasks": index, "/indexes": Reply(404),
        "/tasks/batch": Reply.json({"message": "boom"}, 500),
    }) as failing, ScriptedServer({
        "/tasks": index, "/indexes": Reply(404),
        "/tasks/batch": Reply.json({"tasks": {"t1": {"id": "t1"}, "t2": {"id": "t2"}},
                                    "missing": []}),
    }) as good:
        clients = [ScoringClient(u, retries=0, connect_timeout=2, read_timeout=5)
                   for u in (failing.url, good.url)]
        catalog = Catalog.from_scoring(FailoverScoring(clients, sleep=lambda s: None))  # type: ignore[arg-type]
        catalog.prefetch(["t1", "t2"])
        assert catalog.load("t2") == {"id": "t2"}
        assert good.hits["/tasks/batch"] == 1 and "/task/t2" not in good.hits


def test_task_loading_does_not_retry_an_unknown_task() -> None:
    with ScriptedServer({"/tasks": Reply.json({"d": ["t1"]}), "/indexes": Reply(404)}) as one:
        client = ScoringClient(one.url, retries=0, connect_timeout=2, read_timeout=5)
        failover = FailoverScoring([client, client], sleep=lambda s: None)
        with pytest.raises(Exception, match="404|not found|no route"):
            failover.task("t1")
        assert one.hits["/task/t1"] == 1


def test_nan_never_reaches_a_json_record(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        state.atomic_write_json(tmp_path / "x.json", {"cap": math.nan})
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize(
    ("text", "hidden"),
    [
        ("http://bob:hunter2@127.0.0.1:9/act", "hunter2"),
        ("https://h.example/act?token=sekret&x=1", "sekret"),
        ("failed: url: /act?api_key=sekret (refused)", "sekret"),
        ("see https://u:p4ss@[::1]:8000/x?sig=abc", "p4ss"),
    ],
)
def test_credentials_in_urls_are_redacted(text: str, hidden: str) -> None:
    assert hidden not in redact_text(text)
    assert "***" in redact_text(text)


def test_redaction_keeps_what_a_reader_needs() -> None:
    assert redact_url("https://bob:pw@agent.example:8443/act?x=1") == (
        "https://***@agent.example:8443/act?x=1"
    )
    assert redact_url("http://127.0.0.1:8000/act") == "http://127.0.0.1:8000/act"


@pytest.mark.parametrize(
    ("counts", "lost_all", "unhealthy"),
    [
        ({"success": 9, "error": 15}, False, True),
        ({"success": 20, "error": 4}, False, False),
        ({"success": 20, "error": 4}, True, True),
        ({"success": 0, "failure": 0, "error": 0}, False, False),
    ],
)
def test_health_warning(counts: dict[str, int], lost_all: bool, unhealthy: bool) -> None:
    assert (health_warning(counts, lost_all=lost_all) is not None) is unhealthy


def _result(tmp_path: Path, errors: int, *, fail_on_errors: bool) -> RunResult:
    counts = {"success": 10, "failure": 0, "error": errors, "not_run": 0}
    return RunResult(tmp_path, RunStatus.FINISHED, counts, [], [], 0.0, None,
                     warning=health_warning(counts, lost_all=False),
                     fail_on_errors=fail_on_errors)


def test_fail_on_errors_turns_any_error_into_exit_4(tmp_path: Path) -> None:
    finish_run(_result(tmp_path, 1, fail_on_errors=False))
    with pytest.raises(RunUnhealthy) as caught:
        finish_run(_result(tmp_path, 1, fail_on_errors=True))
    assert caught.value.exit_code == 4


def test_pool_names_never_leave_the_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OA_VM_HOME", str(tmp_path / "home"))
    for bad in ("", "..", "../x", "a/b", "/abs"):
        with pytest.raises(InvalidInputError):
            state.pool_dir(bad)
        with pytest.raises(InvalidInputError):
            api.resolve_name(bad)


# --- the local provider's processes ---------------------------------------------------------------


def test_a_closed_pipe_during_pool_create_leaves_a_whole_pool_and_cleanup_stops_it(
    home: Path,
) -> None:
    # 'oa-vm pool-create ... | head -1': the reader goes away after the first line.
    proc = subprocess.Popen(  # our own console script, fixed arguments
        [str(BIN / "oa-vm"), "pool-create", "--cloud", "local", "--name", "piped",
         "--workers", "2", "-y"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        env={**os.environ, "OA_VM_HOME": str(home)},
    )
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    record = state.load("piped")
    assert len(record.workers) == 2 and record.state is not PoolState.FAILED
    waited = run_cli("oa-vm", "pool-wait", "--name", "piped", home=home)
    assert waited.returncode == 0, waited.stderr
    cleaned = run_cli("oa-vm", "pool-cleanup", "--name", "piped", "-y", home=home)
    assert cleaned.returncode == 0, cleaned.stderr
    wait_until(lambda: not processes_of(home), "the pool's processes to end")


CLOSED_PIPE_COMMANDS = [
    ("oa-vm", "pool-status", "--name", "POOL"),
    ("oa-vm", "pool-status", "--name", "POOL", "--json"),
    ("oa-vm", "pool-list"), ("oa-vm", "pool-list", "--json"), ("oa-vm", "--help"),
    ("openadapt-evals", "tasks", "--tasks", "all"),
]


@pytest.mark.parametrize("fast_path", ["1", "0"])
def test_a_reader_that_is_gone_before_the_first_line_fails_no_command(
    pooled: Path, fast_path: str,
) -> None:
    home, pool = pooled, "regress"  # it only reads the pool or runs on it to the end
    # 'oa-vm pool-status -n p | grep -q ready': grep may exit before the command writes. The
    # reading end is closed before the command starts, so its first write always fails; the
    # fast path of pool-status and pool-list answered "unexpected error: BrokenPipeError".
    for named in CLOSED_PIPE_COMMANDS:
        command = [pool if word == "POOL" else word for word in named]
        read_end, write_end = os.pipe()
        os.close(read_end)
        try:
            done = subprocess.run(  # our own console scripts, fixed arguments
                [str(BIN / command[0]), *command[1:]], stdout=write_end, stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL, text=True, timeout=120, check=False,
                env={**os.environ, "OA_VM_HOME": str(home), "OA_VM_FAST_PATH": fast_path})
        finally:
            os.close(write_end)
        assert done.returncode == 0, (command, done.stderr)
        assert "error" not in done.stderr.lower() and "pipe" not in done.stderr.lower(), command


def test_a_create_that_dies_after_spawning_leaves_no_process(home: Path) -> None:
    calls = []

    def progress(line: str) -> None:
        calls.append(line)
        raise BrokenPipeError("the reader went away")

    with pytest.raises(BrokenPipeError):
        api.create_pool(name="broken", cloud="local", workers=2, progress=progress)
    wait_until(lambda: not processes_of(home), "no worker process left")
    if state.exists("broken"):
        assert api.cleanup_pool("broken").left == []


def test_an_early_interrupt_leaves_no_empty_pool_folder(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oa_vm.clouds.local.provider import LocalProvider

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(LocalProvider, "_launch", interrupted)
    with pytest.raises(KeyboardInterrupt):
        api.create_pool(name="early", cloud="local", workers=1)
    assert not state.pool_dir("early").exists()
    assert not state.exists("early")


def test_cleanup_finds_a_worker_the_record_does_not_name(home: Path) -> None:
    api.create_pool(name="strays", cloud="local", workers=1)
    root = state.pool_dir("strays") / "workers" / "unrecorded"
    root.mkdir(parents=True)
    stray = subprocess.Popen(  # a worker spawned by a command killed before it recorded it
        [sys.executable, "-m", "infra.local", "--name", "unrecorded", "--root", str(root),
         "--ready-file", str(root / "ready.json"), "--host", "127.0.0.1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        wait_until(lambda: (root / "ready.json").exists(), "the stray worker to start")
        report = api.cleanup_pool("strays")
        assert any("stray" in line for line in report.removed), report.removed
        assert stray.wait(timeout=30) is not None
    finally:
        if stray.poll() is None:
            stray.kill()
            stray.wait(timeout=10)


def test_cleanup_of_a_pool_whose_worker_is_an_unreaped_child(home: Path) -> None:
    record = api.create_pool(name="zombie", cloud="local", workers=2)
    api.wait_pool("zombie", timeout_s=READY_S)
    pid = record.workers[0].pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)  # our child: a zombie until someone reaps it
    wait_gone(pid)
    report = api.cleanup_pool("zombie")
    assert report.left == []
    assert not state.exists("zombie")
    wait_until(lambda: not processes_of(home), "no worker process left")


def test_pool_wait_fails_on_a_pool_without_a_live_worker(home: Path) -> None:
    state.save(PoolRecord(name="empty", cloud="local", state=PoolState.FAILED,
                          created_at=state.utcnow()))
    with pytest.raises(PoolNotReadyError, match="no live worker"):
        api.wait_pool("empty", timeout_s=5)
    waited = run_cli("oa-vm", "pool-wait", "--name", "empty", "--timeout", "5s", home=home)
    assert "no live worker" in waited.assert_one_line_error()


def test_with_umask_000_the_pool_folder_is_not_open_to_others(home: Path) -> None:
    proc = subprocess.run(  # our own console script, fixed arguments
        [str(BIN / "oa-vm"), "pool-create", "--cloud", "local", "--name", "masked",
         "--workers", "1", "-y"],
        capture_output=True, text=True, timeout=120, check=False, stdin=subprocess.DEVNULL,
        env={**os.environ, "OA_VM_HOME": str(home)}, preexec_fn=lambda: os.umask(0),
    )
    assert proc.returncode == 0, proc.stderr
    mode = stat.S_IMODE(state.pool_dir("masked").stat().st_mode)
    assert mode & 0o077 == 0, oct(mode)


# --- runs ----------------------------------------------------------------------------------------


def test_resume_restores_a_truncated_execution_json_from_the_queue(
    pooled: Path, tmp_path: Path
) -> None:
    home, pool = pooled, "regress"  # it only reads the pool or runs on it to the end
    results = tmp_path / "results"
    args = ("run", "--pool", pool, "--agent", "oracle", "--tasks", SMALL, "--run-name", "r",
            "--results-dir", str(results))
    assert run_cli("openadapt-evals", *args, home=home).returncode == 0
    path = results / "r" / "tasks" / TASK / "execution.json"
    whole = path.read_text()
    path.write_text(whole[: len(whole) // 3])
    resumed = run_cli("openadapt-evals", *args, "--resume", home=home)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(path.read_text()) == json.loads(whole)


def test_resume_rewrites_a_stale_or_deleted_execution_json_from_the_queue(
    pooled: Path, tmp_path: Path
) -> None:
    home, pool = pooled, "regress"  # it only reads the pool or runs on it to the end
    # execution.json is written without fsync during a run: a power cut may leave the previous
    # copy (stale, but valid JSON) or none; --resume makes it the queue's record again.
    results = tmp_path / "results"
    args = ("run", "--pool", pool, "--agent", "oracle", "--tasks", SMALL, "--run-name", "r",
            "--results-dir", str(results))
    assert run_cli("openadapt-evals", *args, home=home).returncode == 0
    path = results / "r" / "tasks" / TASK / "execution.json"
    whole = json.loads(path.read_text())
    path.write_text(json.dumps({**whole, "status": "error", "error_type": "infrastructure",
                                "error_message": "an earlier attempt's copy"}))
    resumed = run_cli("openadapt-evals", *args, "--resume", home=home)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(path.read_text()) == whole
    path.unlink()
    resumed = run_cli("openadapt-evals", *args, "--resume", home=home)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(path.read_text()) == whole


def test_a_failed_resume_leaves_a_finished_run_marked_finished(
    pooled: Path, tmp_path: Path
) -> None:
    home, pool = pooled, "regress"  # it only reads the pool or runs on it to the end
    results = tmp_path / "results"
    args = ("run", "--pool", pool, "--agent", "oracle", "--tasks", SMALL, "--run-name", "r",
            "--results-dir", str(results))
    assert run_cli("openadapt-evals", *args, home=home).returncode == 0
    (results / "r" / "queue.sqlite").write_bytes(b"garbage" * 200)
    for extra in ("queue.sqlite-wal", "queue.sqlite-shm"):
        (results / "r" / extra).unlink(missing_ok=True)
    failed = run_cli("openadapt-evals", *args, "--resume", home=home)
    assert "queue" in failed.assert_one_line_error()
    metadata = json.loads((results / "r" / "metadata.json").read_text())
    assert metadata["status"] == "finished"


def test_an_agent_that_crashes_on_every_task_does_not_exit_0(
    pooled: Path, tmp_path: Path
) -> None:
    home, pool = pooled, "regress"  # it only reads the pool or runs on it to the end
    module = tmp_path / "agentmod"
    module.mkdir()
    (module / "crashing_agent.py").write_text(
        "from evals.agents.base import BenchmarkAgent\n"
        "class Crashing(BenchmarkAgent):\n"
        "    def act(self, *args, **kwargs):\n"
        "        raise RuntimeError('boom')\n"
    )
    result = run_cli("openadapt-evals", "run", "--pool", pool, "--agent",
                     "crashing_agent:Crashing", "--tasks", SMALL, "--run-name", "c",
                     "--results-dir", str(tmp_path / "results"), home=home,
                     env={"PYTHONPATH": str(module)})
    assert result.returncode == 4, result.stderr
    assert result.stdout.startswith("WARNING:")
    # the agent's failure, named as such: the pool is not to blame (issue 23)
    assert "the agent (crashing_agent:Crashing) raised RuntimeError" in result.stderr
    assert "unhealthy" not in result.stderr


def test_credentials_in_the_agent_url_are_written_nowhere(
    pooled: Path, tmp_path: Path
) -> None:
    home, pool = pooled, "regress"  # it only reads the pool or runs on it to the end
    results = tmp_path / "results"
    # the server answers (the probe before the run passes) but fails every step
    with ScriptedServer({"/act": Reply.json({"error": "down"}, 503)}) as dead:
        url = f"http://alice:hunter2@127.0.0.1:{dead.port}/act?token=sekret"
        result = run_cli("openadapt-evals", "run", "--pool", pool, "--agent", "http",
                         "--agent-url", url, "--tasks", SMALL, "--run-name", "h",
                         "--results-dir", str(results), home=home)
    assert result.returncode == 4, result.stderr
    viewed = run_cli("openadapt-evals", "view", "--run-name", "h", "--results-dir",
                     str(results), home=home)
    assert viewed.returncode == 0, viewed.stderr
    records = read_records(results / "h")
    assert {r["error_type"] for r in records.values()} == {"agent"}
    written = b"".join(p.read_bytes() for p in (results / "h").rglob("*") if p.is_file())
    conn = sqlite3.connect(results / "h" / "queue.sqlite")
    dumped = "\n".join(conn.iterdump())
    conn.close()
    for secret in ("hunter2", "sekret"):
        assert secret.encode() not in written
        assert secret not in dumped
        assert secret not in result.stdout + result.stderr


def test_the_agent_url_may_come_from_the_environment(
    pooled: Path, tmp_path: Path
) -> None:
    home, pool = pooled, "regress"  # it only reads the pool or runs on it to the end
    with ScriptedServer({"/act": Reply.json({"error": "down"}, 503)}) as dead:
        result = run_cli("openadapt-evals", "run", "--pool", pool, "--agent", "http",
                         "--tasks", TASK, "--run-name", "e", "--results-dir",
                         str(tmp_path / "results"), home=home,
                         env={"OA_EVALS_AGENT_URL": f"http://127.0.0.1:{dead.port}/act"})
    records = read_records(tmp_path / "results" / "e")
    assert result.returncode == 4, result.stderr
    assert f"127.0.0.1:{dead.port}" in str(records[TASK]["error_message"])


def test_500s_while_tasks_load_do_not_abort_the_run(
    home: Path, tmp_path: Path, controllers: list[Controller]
) -> None:
    # 30% of requests answer 500 (seeded): loading the catalog takes a dozen requests, so it
    # used to abort the run before anything was recorded.
    api.create_pool(name="flaky", cloud="local", workers=2,
                    faults={"error-rate": "0.3", "seed": "3"})
    api.wait_pool("flaky", timeout_s=READY_S)
    results = tmp_path / "results"
    run = Controller(home, "run", "--pool", "flaky", "--agent", "oracle", "--tasks", SMALL,
                     "--run-name", "l", "--max-attempts", "5", "--results-dir", str(results),
                     log_dir=tmp_path)
    controllers.append(run)
    assert run.wait() in (0, 4), run.output()
    records = read_records(results / "l")
    assert len(records) == 6, run.output()
    assert "failure" not in {r["status"] for r in records.values()}, run.output()


def test_a_pool_create_killed_mid_way_leaves_nothing_cleanup_cannot_stop(home: Path) -> None:
    proc = subprocess.Popen(  # our own console script, fixed arguments
        [str(BIN / "oa-vm"), "pool-create", "--cloud", "local", "--name", "killed",
         "--workers", "3", "-y"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True,
        env={**os.environ, "OA_VM_HOME": str(home)},
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("started worker-0"):
            break
    proc.kill()  # no clean-up of its own: the record must already name what it started
    proc.wait(timeout=30)
    proc.stdout.close()
    assert state.exists("killed")
    cleaned = run_cli("oa-vm", "pool-cleanup", "--name", "killed", "-y", home=home)
    assert cleaned.returncode == 0, cleaned.stderr
    wait_until(lambda: not processes_of(home), "every worker of the killed create to stop")


@pytest.mark.parametrize("command", ["pool-repair", "pool-resume"])
def test_a_fleet_command_stopped_right_after_its_starts_leaves_every_process_named(
    home: Path, command: str,
) -> None:
    # SIGTERM as soon as the command said it started both processes: the record was saved only
    # at the end, so the two ran on under no record (pool-status showed the old PIDs lost) and
    # each retry started two more; only pool-cleanup found them, as strays.
    created = run_cli("oa-vm", "pool-create", "--cloud", "local", "--name", "stop",
                      "--workers", "2", "-y", home=home)
    assert created.returncode == 0, created.stderr
    assert run_cli("oa-vm", "pool-wait", "--name", "stop", home=home).returncode == 0
    if command == "pool-repair":
        for worker in state.load("stop").workers:
            assert worker.pid is not None
            os.kill(worker.pid, signal.SIGKILL)
        wait_until(lambda: not processes_of(home), "the workers to die")
        said = "replaced worker-1"
    else:
        paused = run_cli("oa-vm", "pool-pause", "--name", "stop", home=home)
        assert paused.returncode == 0, paused.stderr
        said = "resumed worker-1"
    proc = subprocess.Popen(  # our own console script, fixed arguments
        [str(BIN / "oa-vm"), command, "--name", "stop"], stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL,
        env={**os.environ, "OA_VM_HOME": str(home)})
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if said in line:
            proc.send_signal(signal.SIGTERM)
            break
    proc.communicate(timeout=120)
    assert any(said in line for line in lines), lines
    named = {w.pid for w in state.load("stop").workers}
    running = {p.pid for p in processes_of(home)}
    assert running and running <= named, (running, named)
