"""``openadapt-evals run --repair``: a worker killed mid-run is replaced from the pool (same name,
new process) and goes back to work; every task ends with one final record."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from urllib.parse import urlsplit

import psutil
import pytest

from oa_vm import api
from oa_vm.model import state
from tests.integration.test_drill_faults import LOCAL_TASKS
from tests.support.controller import RunController, wait_for_records, worker_pid
from tests.support.pools import READY_S
from tests.support.run_records import assert_summary_matches, read_records
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration


@pytest.mark.long
def test_a_killed_worker_is_replaced_and_the_run_finishes_every_task(
    home: Path, tmp_path: Path, controllers: list[RunController]
) -> None:
    """A run with ``--repair`` replaces a killed worker and finishes every task; a second run
    waiting for the pool meanwhile (it read the pool's tasks before it waited, so that a
    refusal writes nothing) connects to the replacement, not to the dead worker it first
    read from."""
    api.create_pool(name="heal", cloud="local", workers=3)
    api.wait_pool("heal", timeout_s=READY_S)
    results = tmp_path / "results"
    # Timing: a task takes about 6 s (3 steps x 2 s pause), so the two survivors need about a
    # minute for the rest of the suite, while the dead worker is quarantined (two failed
    # attempts, each with its retries) and replaced within seconds: the replacement still finds
    # tasks on a busy machine (at a 1 s pause the survivors once emptied the queue first).
    run = RunController(home, results, "--pool", "heal", "--agent", "oracle", "--tasks", "all",
                        "--run-name", "repaired", "--step-pause", "2.0", "--read-timeout", "5",
                        "--repair")
    controllers.append(run)
    run_dir = results / "repaired"
    wait_for_records(run_dir, 2, run)
    waiting = RunController(home, results, "--pool", "heal", "--agent", "oracle", "--tasks",
                            "local_small", "--run-name", "waiting", "--wait-for-pool", "10m")
    controllers.append(waiting)
    # the catalog is read from the first worker, on a connection kept alive
    port = urlsplit(state.load("heal").workers[0].scoring_url or "").port
    wait_until(lambda: any(c.raddr and c.raddr.port == port for c in
                           psutil.Process(waiting.proc.pid).net_connections("tcp")),
               lambda: f"the waiting run's catalog read:\n{waiting.output()}")
    killed = worker_pid("heal", "worker-1")
    os.kill(killed, signal.SIGKILL)
    assert run.wait() == 0, run.output()

    records = read_records(run_dir)
    assert len(records) == LOCAL_TASKS
    assert {r["status"] for r in records.values()} == {"success"}, run.output()
    output = run.output()
    assert "worker worker-1 quarantined" in output, output
    assert "worker worker-1 replaced from the pool: back at work" in output, output
    # the pool holds a new worker-1 process, ready, and the run used it after the repair
    after = state.load("heal")
    replacement = next(w for w in after.workers if w.name == "worker-1")
    assert replacement.pid not in (None, killed) and psutil.pid_exists(replacement.pid)
    assert replacement.state.value == "ready"
    metadata = json.loads((run_dir / "metadata.json").read_text())
    assert metadata["quarantined_workers"] == []
    killed_attempts = [a for r in records.values() for a in r["previous_attempts"]
                       if a["worker"] == "worker-1"]
    assert killed_attempts, "the kill cost no attempt: the drill did not bite"
    finished_on_1 = [r for r in records.values() if r["worker"] == "worker-1"]
    assert finished_on_1, "the replaced worker-1 finished no task"
    assert_summary_matches(run_dir, records)

    assert waiting.wait() == 0, waiting.output()
    metadata = json.loads((results / "waiting" / "metadata.json").read_text())
    assert metadata["quarantined_workers"] == [], waiting.output()
    records = read_records(results / "waiting")
    assert {r["status"] for r in records.values()} == {"success"}, waiting.output()
    assert any(r["worker"] == "worker-1" for r in records.values()), records
