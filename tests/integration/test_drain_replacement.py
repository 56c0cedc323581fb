"""A draining worker is replaced before it ends: ``oa-vm pool-repair`` on a local pool (real
worker processes, the real CLI) starts a new worker under a new name while the draining one
keeps running, and retires the draining one once its process has ended.

A local worker is marked draining through its status file (``<worker folder>/host-status``,
the seam :mod:`oa_vm.reach.drain` reads, with the lines a spot watcher writes on a cloud host).
"""

from __future__ import annotations

import json
import os
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.support.cli import run_cli
from tests.support.pools import READY_S, READY_TIMEOUT
from tests.support.waiting import alive, wait_gone, wait_until

pytestmark = pytest.mark.integration

# Due in an hour: a notice whose time has passed means the cloud ended the worker (retired).
WHEN = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
NOTICE = ("state=draining\nstep=spot-interruption\n"
          f"message=AWS spot interruption notice: terminate at {WHEN}; no new task\n"
          f"action=terminate\naction_time={WHEN}\n")


def _status(home: Path) -> dict[str, Any]:
    result = run_cli("oa-vm", "pool-status", "--name", "spot", "--json", home=home)
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _workers(home: Path) -> dict[str, dict[str, Any]]:
    return {w["name"]: w for w in _status(home)["workers"]}


def _answers(url: str) -> bool:
    return requests.get(f"{url}/probe", timeout=10).ok


def _repair(home: Path) -> str:
    done = run_cli("oa-vm", "pool-repair", "--name", "spot", "--timeout", READY_TIMEOUT, home=home)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_pool_repair_replaces_a_draining_worker_while_it_still_runs(home: Path) -> None:
    created = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "3", "--name",
                      "spot", "-y", home=home)
    assert created.returncode == 0, created.stderr
    waited = run_cli("oa-vm", "pool-wait", "--name", "spot", "--timeout", READY_TIMEOUT, home=home)
    assert waited.returncode == 0, waited.stderr
    before = _workers(home)
    draining = before["worker-1"]
    (Path(draining["workdir"]) / "host-status").write_text(NOTICE, encoding="utf-8")

    out = _repair(home)
    assert "started worker-3 to replace draining worker-1" in out, out
    assert "Pool 'spot': replaced" in out and "worker-3" in out
    after = _workers(home)
    assert sorted(after) == ["worker-0", "worker-1", "worker-2", "worker-3"]
    # the replacement is up, and the draining worker still runs: same process, still answering
    assert after["worker-3"]["state"] == "ready" and _answers(after["worker-3"]["waa_url"])
    assert after["worker-1"]["state"] == "draining"
    assert after["worker-1"]["pid"] == draining["pid"] and alive(draining["pid"])
    assert _answers(after["worker-1"]["waa_url"])
    assert after["worker-1"]["detail"].startswith("AWS spot interruption notice")
    # the survivors were left alone
    assert [after[n]["pid"] for n in ("worker-0", "worker-2")] == [
        before[n]["pid"] for n in ("worker-0", "worker-2")]
    text = run_cli("oa-vm", "pool-status", "--name", "spot", home=home).stdout
    assert "draining" in text
    # pool-wait waits for the workers that stay, not for the one that is going
    waited = run_cli("oa-vm", "pool-wait", "--name", "spot", "--timeout", READY_TIMEOUT, home=home)
    assert waited.returncode == 0, waited.stderr

    # Repairing again while it still runs changes nothing: no second replacement.
    again = _repair(home)
    assert "nothing to repair" in again, again
    assert sorted(_workers(home)) == ["worker-0", "worker-1", "worker-2", "worker-3"]

    # Once its process has ended (as the cloud ends an instance), a repair retires it.
    os.kill(draining["pid"], signal.SIGKILL)
    wait_gone(draining["pid"])
    retired = _repair(home)
    assert "retired worker-1 (replaced by worker-3)" in retired, retired
    final = _status(home)
    assert [w["name"] for w in final["workers"]] == ["worker-0", "worker-2", "worker-3"]
    assert final["state"] == "ready"

    # A later notice on the replacement gets a name never used before.
    (Path(final["workers"][2]["workdir"]) / "host-status").write_text(NOTICE, encoding="utf-8")
    assert "started worker-4 to replace draining worker-3" in _repair(home)

    # A pause retires the draining worker rather than keep it paused; resume brings back the rest.
    paused = run_cli("oa-vm", "pool-pause", "--name", "spot", home=home)
    assert paused.returncode == 0, paused.stderr
    assert "retired worker-3 (replaced by worker-4)" in paused.stdout
    resumed = run_cli("oa-vm", "pool-resume", "--name", "spot", "--timeout", READY_TIMEOUT,
                      home=home)
    assert resumed.returncode == 0, resumed.stderr
    final = _status(home)
    assert [w["name"] for w in final["workers"]] == ["worker-0", "worker-2", "worker-4"]
    assert final["state"] == "ready"


def test_a_named_draining_worker_with_a_replacement_is_retired_at_once(home: Path) -> None:
    created = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "2", "--name",
                      "spot", "-y", home=home)
    assert created.returncode == 0, created.stderr
    assert run_cli("oa-vm", "pool-wait", "--name", "spot", "--timeout", READY_TIMEOUT,
                   home=home).returncode == 0
    draining = _workers(home)["worker-0"]
    (Path(draining["workdir"]) / "host-status").write_text(NOTICE, encoding="utf-8")
    assert "started worker-2 to replace draining worker-0" in _repair(home)
    named = run_cli("oa-vm", "pool-repair", "--name", "spot", "--worker", "worker-0",
                    "--timeout", READY_TIMEOUT, home=home)
    assert named.returncode == 0, named.stderr
    assert "retired worker-0 (replaced by worker-2)" in named.stdout
    wait_gone(draining["pid"])  # stopped by the repair
    assert [w["name"] for w in _status(home)["workers"]] == ["worker-1", "worker-2"]


def test_run_repair_starts_the_replacement_before_the_draining_worker_lets_go(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run --repair``'s repairer, given the run's drain check: the replacement starts on the
    notice, while the draining worker is still busy (its dispatch loop has not asked yet); when
    the loop asks, it gets the new worker and the draining one is retired."""
    from evals.run.repair import WorkerRepairer
    from evals.run.settings import RunConfig
    from oa_vm.model import state
    from oa_vm.reach.drain import DrainWatch

    monkeypatch.setenv("OA_VM_HOME", str(home))
    created = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "2", "--name",
                      "spot", "-y", home=home)
    assert created.returncode == 0, created.stderr
    assert run_cli("oa-vm", "pool-wait", "--name", "spot", "--timeout", READY_TIMEOUT,
                   home=home).returncode == 0
    draining = _workers(home)["worker-1"]
    repairer = WorkerRepairer("spot", RunConfig(pool="spot", selection="all", agent="noop"),
                              draining=DrainWatch("spot", interval_s=0),
                              watch_interval_s=0.1, timeout_s=READY_S)
    try:
        (Path(draining["workdir"]) / "host-status").write_text(NOTICE, encoding="utf-8")
        wait_until(lambda: "worker-2" in {w.name for w in state.load("spot").workers},
                   "a replacement to be started")
        assert alive(draining["pid"])  # still there: nobody asked for its replacement yet
        connection = repairer("worker-1")  # its loop asks once its last task is over
        assert connection is not None and connection.name == "worker-2"
        assert _answers(connection.waa_url)
        assert [w.name for w in state.load("spot").workers] == ["worker-0", "worker-2"]
        wait_gone(draining["pid"])
    finally:
        repairer.close()
