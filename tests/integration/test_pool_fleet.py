"""Pause, resume, repair and extend on local pools: the real oa-vm CLI, real worker processes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.support.cli import run_cli
from tests.support.pools import READY_TIMEOUT
from tests.support.waiting import wait_gone, wait_until

pytestmark = pytest.mark.integration


def _status(home: Path, name: str) -> dict[str, Any]:
    result = run_cli("oa-vm", "pool-status", "--name", name, "--json", home=home)
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _create(home: Path, name: str, workers: int, *extra: str) -> dict[str, Any]:
    created = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", str(workers),
                      "--name", name, "-y", *extra, home=home)
    assert created.returncode == 0, created.stderr
    waited = run_cli("oa-vm", "pool-wait", "--name", name, "--timeout", READY_TIMEOUT, home=home)
    assert waited.returncode == 0, waited.stderr
    return _status(home, name)


def _answers(url: str) -> bool:
    return requests.get(f"{url}/probe", timeout=10).ok


def test_pause_keeps_folders_stops_processes_and_resume_brings_them_back(home: Path) -> None:
    before = _create(home, "fleet", 2, "--price-per-hour", "3")
    pids = [w["pid"] for w in before["workers"]]
    marker = Path(before["workers"][0]["workdir"]) / "drive_c" / "kept.txt"
    marker.write_text("still here", encoding="utf-8")

    paused = run_cli("oa-vm", "pool-pause", "--name", "fleet", "--keep-days", "3", home=home)
    assert paused.returncode == 0, paused.stderr
    assert "paused" in paused.stdout
    for pid in pids:
        wait_gone(pid)
    status = _status(home, "fleet")
    assert status["state"] == "paused"
    assert {w["state"] for w in status["workers"]} == {"paused"}
    assert status["paused_price_per_day"] == 0.0  # a local pool rents no disk
    assert status["paused_since"] is not None
    expires_in_days = status["expired"] is False and (
        _parse(status["expires_at"]) - time.time()
    ) / 86400
    assert 2.9 < expires_in_days <= 3.0
    text = run_cli("oa-vm", "pool-status", "--name", "fleet", home=home)
    assert "Paused for" in text.stdout and "/day (disks and addresses only)" in text.stdout
    listing = run_cli("oa-vm", "pool-list", home=home)
    assert "paused" in listing.stdout and "$0.00/day" in listing.stdout
    cost_paused = status["cost_so_far_usd"]

    # A second pause is refused in one line; so is a repair of a paused pool.
    again = run_cli("oa-vm", "pool-pause", "--name", "fleet", home=home)
    assert "already paused" in again.assert_one_line_error()
    repair = run_cli("oa-vm", "pool-repair", "--name", "fleet", home=home)
    assert "pool-resume" in repair.assert_one_line_error()

    resumed = run_cli("oa-vm", "pool-resume", "--name", "fleet", "--timeout", READY_TIMEOUT,
                      home=home)
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed" in resumed.stdout
    after = _status(home, "fleet")
    assert after["state"] == "ready"
    assert [w["name"] for w in after["workers"]] == ["worker-0", "worker-1"]
    assert all(w["pid"] not in pids for w in after["workers"])
    assert all(_answers(w["waa_url"]) for w in after["workers"])
    assert marker.read_text(encoding="utf-8") == "still here"  # the desktop's folder was kept
    assert after["paused_since"] is None
    assert after["cost_so_far_usd"] >= cost_paused  # running again at $3/h a worker

    not_paused = run_cli("oa-vm", "pool-resume", "--name", "fleet", home=home)
    assert "not paused" in not_paused.assert_one_line_error()


def _parse(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp).timestamp()


def test_killed_worker_is_replaced_under_its_name_by_pool_repair(home: Path) -> None:
    before = _create(home, "heal", 3)
    victim = before["workers"][1]
    os.kill(victim["pid"], signal.SIGKILL)
    wait_gone(victim["pid"])
    degraded = _status(home, "heal")
    assert degraded["state"] == "degraded"
    assert degraded["workers"][1]["state"] == "lost"
    # a wait names the repair as the next step (it named only pool-cleanup, the whole pool)
    waited = run_cli("oa-vm", "pool-wait", "--name", "heal", "--timeout", READY_TIMEOUT,
                     home=home)
    line = waited.assert_one_line_error()
    assert "worker lost while waiting (worker-1" in line, line
    assert "replace it with 'oa-vm pool-repair --pool heal'" in line, line

    repaired = run_cli("oa-vm", "pool-repair", "--name", "heal", "--timeout", READY_TIMEOUT,
                       home=home)
    assert repaired.returncode == 0, repaired.stderr
    assert "replaced worker-1" in repaired.stdout
    after = _status(home, "heal")
    assert after["state"] == "ready"
    assert after["workers"][1]["name"] == "worker-1"
    assert after["workers"][1]["pid"] != victim["pid"]
    assert _answers(after["workers"][1]["waa_url"])
    # the survivors were left alone
    assert [w["pid"] for i, w in enumerate(after["workers"]) if i != 1] == [
        w["pid"] for i, w in enumerate(before["workers"]) if i != 1
    ]
    nothing = run_cli("oa-vm", "pool-repair", "--name", "heal", home=home)
    assert nothing.returncode == 0 and "nothing to repair" in nothing.stdout
    unknown = run_cli("oa-vm", "pool-repair", "--name", "heal", "--worker", "worker-9", home=home)
    assert "no worker worker-9" in unknown.assert_one_line_error()


def test_a_frozen_worker_is_not_called_ready_and_pool_repair_replaces_it(home: Path) -> None:
    # its process is there (SIGSTOP: a hung guest) but answers nothing: a refresh that only
    # looked for the process called it ready, and the repair found nothing to repair
    before = _create(home, "frozen", 2)
    victim = before["workers"][1]["pid"]
    os.kill(victim, signal.SIGSTOP)
    try:
        refreshed = run_cli("oa-vm", "pool-status", "--name", "frozen", "--refresh", home=home)
        assert refreshed.returncode == 0, refreshed.stderr
        row = next(line for line in refreshed.stdout.splitlines()
                   if line.startswith("worker-1"))
        assert "ready" not in row and "lost" in row and "does not answer" in row, row
        worker = _status(home, "frozen")["workers"][1]
        assert worker["state"] == "lost", worker
        assert "WAA server does not answer within 5s" in worker["detail"], worker
        waited = run_cli("oa-vm", "pool-wait", "--name", "frozen", "--timeout", READY_TIMEOUT,
                         home=home)
        line = waited.assert_one_line_error()
        assert "worker lost while waiting (worker-1" in line and "does not answer" in line, line

        repaired = run_cli("oa-vm", "pool-repair", "--name", "frozen", "--timeout",
                           READY_TIMEOUT, home=home)
        assert repaired.returncode == 0, repaired.stderr
        assert "replaced worker-1" in repaired.stdout, repaired.stdout
        wait_gone(victim)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(victim, signal.SIGCONT)  # so that a failed test's cleanup can stop it
    after = run_cli("oa-vm", "pool-status", "--name", "frozen", "--refresh", "--json",
                    home=home)
    assert after.returncode == 0, after.stderr
    data = json.loads(after.stdout)
    assert data["state"] == "ready", data
    assert [w["state"] for w in data["workers"]] == ["ready", "ready"]
    assert data["workers"][1]["pid"] not in (None, victim)
    assert data["workers"][0]["pid"] == before["workers"][0]["pid"]  # the other left alone
    assert _answers(data["workers"][1]["waa_url"])


def test_a_pool_never_waited_on_is_ready_once_a_refresh_finds_its_workers_answer(
    home: Path,
) -> None:
    # 'pool-status --refresh' said "provisioning / booting" for ever without a pool-wait
    created = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "2", "--name",
                      "unwaited", "-y", home=home)
    assert created.returncode == 0, created.stderr
    wait_until(lambda: all(w["waa_url"] for w in _status(home, "unwaited")["workers"]),
               "every worker listening")
    refreshed = run_cli("oa-vm", "pool-status", "--name", "unwaited", "--refresh", "--json",
                        home=home)
    assert refreshed.returncode == 0, refreshed.stderr
    data = json.loads(refreshed.stdout)
    assert data["state"] == "ready", data
    assert [(w["state"], w["phase"]) for w in data["workers"]] == [("ready", "ready")] * 2
    shown = run_cli("oa-vm", "pool-status", "--name", "unwaited", home=home)  # as recorded
    assert shown.returncode == 0 and "unwaited (local): ready" in shown.stdout, shown.stdout


def test_several_workers_per_process_pause_resume_and_repair(home: Path) -> None:
    before = _create(home, "grouped", 4, "--per-process", "2")
    pids = [w["pid"] for w in before["workers"]]
    assert pids[0] == pids[1] and pids[2] == pids[3] and pids[0] != pids[2]
    assert len({w["waa_url"] for w in before["workers"]}) == 4
    assert all(_answers(w["waa_url"]) for w in before["workers"])

    os.kill(pids[2], signal.SIGKILL)  # takes worker-2 and worker-3 down together
    wait_gone(pids[2])
    repaired = run_cli("oa-vm", "pool-repair", "--name", "grouped", "--timeout", READY_TIMEOUT,
                       home=home)
    assert repaired.returncode == 0, repaired.stderr
    assert "worker-2, worker-3" in repaired.stdout
    after = _status(home, "grouped")
    assert after["state"] == "ready"
    assert after["workers"][0]["pid"] == pids[0]
    assert all(_answers(w["waa_url"]) for w in after["workers"])

    assert run_cli("oa-vm", "pool-pause", "--name", "grouped", home=home).returncode == 0
    assert _status(home, "grouped")["state"] == "paused"
    resumed = run_cli("oa-vm", "pool-resume", "--name", "grouped", "--timeout", READY_TIMEOUT,
                      home=home)
    assert resumed.returncode == 0, resumed.stderr
    final = _status(home, "grouped")
    assert final["state"] == "ready"
    assert all(_answers(w["waa_url"]) for w in final["workers"])


def test_paused_pools_expire_unless_extended(home: Path) -> None:
    _create(home, "short", 1)
    _create(home, "kept", 1)
    # 0.0001 days is under 9 seconds: both expire soon after the pause...
    for name in ("short", "kept"):
        paused = run_cli("oa-vm", "pool-pause", "--name", name, "--keep-days", "0.0001", home=home)
        assert paused.returncode == 0, paused.stderr
    # ...but one is extended by a day
    extended = run_cli("oa-vm", "pool-extend", "--name", "kept", "--by", "1d", home=home)
    assert extended.returncode == 0, extended.stderr
    wait_until(lambda: _status(home, "short")["expired"], "pool short to expire", interval=0.2)
    assert not _status(home, "kept")["expired"]
    cleaned = run_cli("oa-vm", "pool-cleanup", "--expired", "-y", home=home)
    assert cleaned.returncode == 0, cleaned.stderr
    names = [p["name"] for p in json.loads(
        run_cli("oa-vm", "pool-list", "--json", home=home).stdout)]
    assert names == ["kept"]


def test_bad_fleet_input_is_one_line(home: Path) -> None:
    assert "no pool named" in run_cli(
        "oa-vm", "pool-pause", "--name", "ghost", home=home
    ).assert_one_line_error()
    _create(home, "one", 1)
    assert "--by: 'soon' is not a duration" in run_cli(
        "oa-vm", "pool-extend", "--name", "one", "--by", "soon", home=home
    ).assert_one_line_error()
    assert "--keep-days" in run_cli(
        "oa-vm", "pool-pause", "--name", "one", "--keep-days", "0", home=home
    ).assert_one_line_error()
    assert "--per-process" in run_cli(
        "oa-vm", "pool-create", "--cloud", "local", "--name", "two", "--per-process", "0", "-y",
        home=home,
    ).assert_one_line_error()
    # Ten years at a time, again and again, ran the expiry past the year 9999 (OverflowError).
    assert run_cli("oa-vm", "pool-extend", "--name", "one", "--by", "3000d",
                   home=home).returncode == 0
    before = _status(home, "one")["expires_at"]
    assert "would expire more than 3650d (ten years) from now; extend it by at most" in run_cli(
        "oa-vm", "pool-extend", "--name", "one", "--by", "3000d", home=home
    ).assert_one_line_error()
    assert _status(home, "one")["expires_at"] == before
