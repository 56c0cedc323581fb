"""A host lost mid-run is one failure, not one per worker: the run quarantines the host once,
names it once, and its tasks in flight finish on the other host.

A local pool's simulated host is a process (``--workers-per-host 2``: two workers per
process); killing the process kills every worker on it, as a machine's end does.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from evals.run.metrics import format_summary
from oa_vm import api
from oa_vm.model import state
from tests.integration.test_drill_faults import LOCAL_TASKS
from tests.support.cli import run_cli
from tests.support.controller import RunController, wait_for_records, worker_pid
from tests.support.pools import READY_S
from tests.support.run_records import assert_summary_matches, read_records

pytestmark = pytest.mark.integration


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "home"
    monkeypatch.setenv("OA_VM_HOME", str(home))
    yield home
    for name in state.list_names():
        api.cleanup_pool(name)


@pytest.mark.parametrize(("hosts", "tasks"), [
    (2, 8),  # the quick drill: a few seconds on a quiet machine
    pytest.param(3, LOCAL_TASKS, marks=pytest.mark.slow),  # the whole local suite, 3 hosts
])
def test_a_killed_host_is_quarantined_once_and_its_tasks_run_on_the_other_host(
    home: Path, tmp_path: Path, controllers: list[RunController], hosts: int, tasks: int
) -> None:
    made = run_cli("oa-vm", "pool-create", "--name", "hosts", "--cloud", "local", "--workers",
                   str(2 * hosts), "--workers-per-host", "2", "--price-per-hour", "0.5", "-y",
                   home=home)
    assert made.returncode == 0, made.stderr
    record = state.load("hosts")
    assert [w.host for w in record.workers] == [f"group-{i // 2}" for i in range(2 * hosts)]
    api.wait_pool("hosts", timeout_s=READY_S)
    # pool-status groups the workers by host, each host named once, and prices both
    shown = run_cli("oa-vm", "pool-status", "--pool", "hosts", home=home)
    assert shown.returncode == 0, shown.stderr
    assert (f"{2 * hosts} worker(s) on {hosts} host(s): $0.50/hour per worker, $1.00/hour per "
            "host of 2") in shown.stdout, shown.stdout
    table = shown.stdout.splitlines()
    header = next(i for i, line in enumerate(table) if line.startswith("HOST"))
    firsts = [line.split()[0] for line in table[header + 1:header + 1 + 2 * hosts]]
    assert firsts == [f"group-{i // 2}" if i % 2 == 0 else f"worker-{i}"
                      for i in range(2 * hosts)], shown.stdout
    as_json = json.loads(run_cli("oa-vm", "pool-status", "--pool", "hosts", "--json",
                                 home=home).stdout)
    assert as_json["hosts"] == [
        {"host": f"group-{h}", "workers": [f"worker-{2 * h}", f"worker-{2 * h + 1}"],
         "price_per_hour": 1.0} for h in range(hosts)
    ]
    results = tmp_path / "results"
    # Timing: a task takes about a second (3 steps x 0.3 s), so once the first task is recorded
    # both workers of group-0 still hold a task (at most one of them has finished one).
    run = RunController(home, results, "--pool", "hosts", "--agent", "oracle", "--tasks",
                        "all" if tasks == LOCAL_TASKS else str(tasks), "--run-name", "lost-host",
                        "--step-pause", "0.3", "--read-timeout", "5")
    controllers.append(run)
    run_dir = results / "lost-host"
    wait_for_records(run_dir, 1, run)
    killed = worker_pid("hosts", "worker-0")
    assert killed == worker_pid("hosts", "worker-1"), "worker-0 and worker-1 share one process"
    os.kill(killed, signal.SIGKILL)  # the host goes: both its workers at once
    assert run.wait() == 0, run.output()

    output = run.output()
    records = read_records(run_dir)
    assert len(records) == tasks
    assert {r["status"] for r in records.values()} == {"success"}, output
    # the host is named once, and neither of its workers on its own
    assert output.count("host group-0 quarantined") == 1, output
    assert "worker worker-0 quarantined" not in output
    assert "worker worker-1 quarantined" not in output
    metadata = json.loads((run_dir / "metadata.json").read_text())
    assert metadata["quarantined_workers"] == []
    [lost] = metadata["quarantined_hosts"]
    assert (lost["host"], lost["workers"]) == ("group-0", ["worker-0", "worker-1"])
    summary = json.loads((run_dir / "summary.json").read_text())
    assert [h["host"] for h in summary["quarantined_hosts"]] == ["group-0"]
    assert summary["workers"]["worker-0"]["quarantined"] is True
    lines = [line for line in format_summary(summary).splitlines() if "group-0" in line]
    assert len(lines) == 1 and "worker-0, worker-1" in lines[0], lines
    # the tasks the host had in flight ran again, on the other host
    cut = [r for r in records.values()
           if any(a["worker"] in ("worker-0", "worker-1") for a in r["previous_attempts"])]
    assert cut, "the kill cost no attempt: the drill did not bite"
    assert all(r["worker"] not in ("worker-0", "worker-1") for r in cut)
    assert_summary_matches(run_dir, records)
