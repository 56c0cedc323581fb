"""The local pool end to end through the real ``oa-vm`` CLI and real worker processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.support.cli import run_cli
from tests.support.pools import READY_TIMEOUT
from tests.support.waiting import alive, wait_until

pytestmark = pytest.mark.integration


def _still_served(url: str) -> bool:
    """Whether a server holding this pool's secret still answers at ``url``.

    A freed port may be taken at once by a worker of another test running beside this one (ports
    are picked by the kernel), so "the port is closed" is not what cleanup promises; "nothing of
    this pool answers there" is: another pool's worker refuses this pool's secret with a 403.
    """
    try:
        answer = requests.get(url + "/probe", timeout=5)
    except requests.RequestException:
        return False
    return answer.status_code == 200


def _create_and_wait(home: Path, name: str, workers: int) -> dict[str, object]:
    created = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", str(workers),
                      "--name", name, "-y", home=home)
    assert created.returncode == 0, created.stderr
    waited = run_cli("oa-vm", "pool-wait", "--name", name, "--timeout", READY_TIMEOUT,
                     home=home)
    assert waited.returncode == 0, waited.stderr
    assert "ready" in waited.stdout
    status = run_cli("oa-vm", "pool-status", "--name", name, "--json", home=home)
    assert status.returncode == 0, status.stderr
    data: dict[str, object] = json.loads(status.stdout)
    return data


def test_lifecycle_create_wait_status_cleanup(home: Path) -> None:
    data = _create_and_wait(home, "p1", 3)
    workers = data["workers"]
    assert isinstance(workers, list) and len(workers) == 3
    for worker in workers:
        assert worker["state"] == "ready"
        probe = requests.get(worker["waa_url"] + "/probe", timeout=5)
        assert probe.json() == {"status": "Probe successful", "message": "Service is operational"}
        scoring = requests.get(worker["scoring_url"] + "/probe", timeout=5)
        assert scoring.json()["status"] == "ok"
    pids = [w["pid"] for w in workers]
    urls = [u for w in workers for u in (w["waa_url"], w["scoring_url"])]

    listing = run_cli("oa-vm", "pool-list", "--json", home=home)
    assert [p["name"] for p in json.loads(listing.stdout)] == ["p1"]

    cleaned = run_cli("oa-vm", "pool-cleanup", "--name", "p1", "-y", home=home)
    assert cleaned.returncode == 0, cleaned.stderr
    assert "stopped process" in cleaned.stdout
    assert not any(alive(pid) for pid in pids)
    assert not any(_still_served(url) for url in urls)
    assert not (home / "pools" / "p1").exists()

    again = run_cli("oa-vm", "pool-cleanup", "--name", "p1", "-y", home=home)
    assert again.returncode == 0, again.stderr
    assert "nothing to remove" in again.stdout


def test_killed_worker_shows_lost_and_cleanup_succeeds(home: Path) -> None:
    data = _create_and_wait(home, "p2", 2)
    workers = data["workers"]
    assert isinstance(workers, list)
    victim = workers[1]["pid"]
    os.kill(victim, signal.SIGKILL)

    def lost() -> dict[str, Any] | None:
        status: dict[str, Any] = json.loads(run_cli("oa-vm", "pool-status", "--name", "p2",
                                                    "--json", home=home).stdout)
        return status if [w["state"] for w in status["workers"]] == ["ready", "lost"] else None

    status = wait_until(lost, "pool-status to show worker-1 lost")
    assert status["state"] == "degraded"
    survivor = workers[0]["pid"]
    cleaned = run_cli("oa-vm", "pool-cleanup", "--name", "p2", "-y", home=home)
    assert cleaned.returncode == 0, cleaned.stderr
    assert "already gone" in cleaned.stdout
    assert not alive(survivor)


def test_a_pool_folder_removed_by_hand_leaves_no_process_running(home: Path) -> None:
    """No command can reach a pool whose folder is gone (``pool-list`` does not show it,
    ``pool-cleanup`` cannot find it): its worker processes notice and exit by themselves."""
    data = _create_and_wait(home, "p9", 2)
    workers = data["workers"]
    assert isinstance(workers, list)
    pids = [w["pid"] for w in workers]
    shutil.rmtree(home / "pools" / "p9")
    wait_until(lambda: not any(alive(pid) for pid in pids),
               f"the worker processes {pids} of the removed pool to exit")
    listing = run_cli("oa-vm", "pool-list", "--json", home=home)
    assert listing.returncode == 0, listing.stderr
    assert json.loads(listing.stdout) == []


def test_cleanup_never_signals_a_process_it_did_not_start(home: Path) -> None:
    _create_and_wait(home, "p3", 1)
    path = home / "pools" / "p3" / "pool.json"
    record = json.loads(path.read_text())
    real_pid = record["workers"][0]["pid"]
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    try:
        os.kill(real_pid, signal.SIGKILL)
        record["workers"][0]["pid"] = stranger.pid  # as if the PID had been reused
        path.write_text(json.dumps(record))
        cleaned = run_cli("oa-vm", "pool-cleanup", "--name", "p3", "-y", home=home)
        assert cleaned.returncode == 0, cleaned.stderr
        assert stranger.poll() is None, "cleanup signalled a process oa-vm did not start"
    finally:
        stranger.kill()
        stranger.wait()


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--workers", "0"], "--workers"),
        (["--workers", "-1"], "--workers"),
        (["--workers", "abc"], "--workers"),
        (["--cloud", "gcp"], "unknown cloud"),
        (["--fault", "latency"], "KEY=VALUE"),
        (["--fault", "nope=1"], "unknown fault"),
        (["--name", "Bad Name"], "invalid pool name"),
    ],
)
def test_create_bad_input(home: Path, args: list[str], fragment: str) -> None:
    result = run_cli("oa-vm", "pool-create", "--cloud", "local", "-y", *args, home=home)
    line = result.assert_one_line_error()
    assert fragment in line
    assert not list((home / "pools").glob("*/pool.json"))


def test_existing_name_and_unknown_pool(home: Path) -> None:
    _create_and_wait(home, "p4", 1)
    dup = run_cli("oa-vm", "pool-create", "--cloud", "local", "--name", "p4", "-y", home=home)
    assert "already exists" in dup.assert_one_line_error()
    # bad input, refused before anything is made: exit 2 (it was 1), in both CLIs
    assert dup.returncode == 2, dup
    sweep = run_cli("openadapt-evals", "sweep", "--cloud", "local", "--pool", "p4", "--agent",
                    "noop", "--tasks", "1", "--results-dir", str(home / "runs"), home=home)
    assert "a pool named 'p4' already exists" in sweep.assert_one_line_error()
    assert sweep.returncode == 2, sweep
    for command in ("pool-status", "pool-cleanup", "pool-wait"):
        result = run_cli("oa-vm", command, "--name", "nope", "-y" if command == "pool-cleanup"
                         else "--json" if command == "pool-status" else "--timeout=5s", home=home)
        line = result.assert_one_line_error()
        assert "no pool named 'nope'" in line and "p4" in line


def test_cleanup_removes_every_pool_named_or_none(home: Path) -> None:
    """``pool-cleanup -n a -n b`` removed only ``b`` (Click kept the last value) and left ``a``
    billing: now each is removed as a one-pool cleanup removes it, and a name that is no pool,
    or one given twice, removes none (checked before the first removal)."""
    pids = {}
    for name in ("pa", "pb"):
        created = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "1",
                          "--name", name, "-y", home=home)
        assert created.returncode == 0, created.stderr
        status = json.loads(run_cli("oa-vm", "pool-status", "--name", name, "--json",
                                    home=home).stdout)
        pids[name] = [w["pid"] for w in status["workers"]]
    for args, said in ((["-n", "nope", "-n", "pa"], "no pool named 'nope'"),
                       (["-n", "pa", "--pool", "nope"], "no pool named 'nope'"),
                       (["--pool", "pb", "--name", "pb"], "--name pb is given twice")):
        line = run_cli("oa-vm", "pool-cleanup", *args, "-y", home=home).assert_one_line_error()
        assert said in line, line
        assert all((home / "pools" / name / "pool.json").exists() for name in pids), args
        assert all(alive(pid) for pid in pids["pa"] + pids["pb"]), args
    asked = run_cli("oa-vm", "pool-cleanup", "-n", "pa", "-n", "pb", home=home)
    assert "Remove pools 'pa' and 'pb' and everything they created" in (
        asked.assert_one_line_error())
    cleaned = run_cli("oa-vm", "pool-cleanup", "-n", "pa", "--pool", "pb", "-y", home=home)
    assert cleaned.returncode == 0, cleaned.stderr
    assert "Pool 'pa' removed." in cleaned.stdout and "Pool 'pb' removed." in cleaned.stdout
    assert not any(alive(pid) for pid in pids["pa"] + pids["pb"])
    assert not (home / "pools" / "pa").exists() and not (home / "pools" / "pb").exists()


def test_corrupt_record_is_reported_and_kept(home: Path) -> None:
    path = home / "pools" / "broken" / "pool.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"version": 1, "name": ')
    for args in (["pool-status", "--name", "broken"], ["pool-cleanup", "--name", "broken", "-y"]):
        line = run_cli("oa-vm", *args, home=home).assert_one_line_error()
        assert str(path) in line
    assert path.read_text() == '{"version": 1, "name": '
    listing = run_cli("oa-vm", "pool-list", home=home)
    assert listing.returncode == 0 and "corrupt" in listing.stdout


def test_name_may_be_left_out_only_when_one_pool_exists(home: Path) -> None:
    _create_and_wait(home, "solo", 1)
    assert run_cli("oa-vm", "pool-status", home=home).returncode == 0
    run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "1", "--name", "duo", "-y",
            home=home)
    line = run_cli("oa-vm", "pool-status", home=home).assert_one_line_error()
    assert "duo" in line and "solo" in line


def test_help_and_local_path_never_import_pulumi(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from oa_vm.cli import app as cli\n"
        "for argv in (['oa-vm', '--help'], ['oa-vm', 'pool-create', '--cloud', 'local',"
        " '--workers', '1', '--name', 'np', '-y'], ['oa-vm', 'pool-status', '--name', 'np'],"
        " ['oa-vm', 'pool-list'], ['oa-vm', 'pool-cleanup', '--name', 'np', '-y']):\n"
        "    sys.argv = argv\n"
        "    try:\n"
        "        cli.main()\n"
        "    except SystemExit as exc:\n"
        "        assert not exc.code, (argv, exc.code)\n"
        "print('PULUMI' if any(m.split('.')[0].startswith('pulumi') for m in sys.modules)"
        " else 'CLEAN')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "OA_VM_HOME": str(tmp_path / "home")},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "CLEAN"


def test_cost_so_far_grows_with_uptime(home: Path) -> None:
    created = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "2", "--name",
                      "priced", "--price-per-hour", "36", "-y", home=home)
    assert created.returncode == 0, created.stderr
    first = json.loads(run_cli("oa-vm", "pool-status", "--name", "priced", "--json",
                               home=home).stdout)
    time.sleep(1.0)  # not a wait for an event: the uptime the cost is charged for
    second = json.loads(run_cli("oa-vm", "pool-status", "--name", "priced", "--json",
                                home=home).stdout)
    assert first["price_per_hour_total"] == 72
    # $72/h is 2 cents a second: a second of uptime more must show.
    assert second["cost_so_far_usd"] - first["cost_so_far_usd"] >= 0.015
    table = run_cli("oa-vm", "pool-list", home=home).stdout
    assert "$72.00" in table
    text = run_cli("oa-vm", "pool-status", "--name", "priced", home=home).stdout
    assert "Price $72.00/hour, cost so far $" in text


def test_an_unreadable_record_is_reported_by_cleanup_expired_and_left_as_it_is(
    home: Path,
) -> None:
    created = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "1",
                      "--name", "old", "--ttl", "1s", "-y", home=home)
    assert created.returncode == 0, created.stderr
    corrupt = home / "pools" / "bad" / "pool.json"
    corrupt.parent.mkdir(parents=True)
    corrupt.write_text('{"name": "bad", "cloud": "aws"', encoding="utf-8")
    wait_until(lambda: "(expired)" in run_cli("oa-vm", "pool-list", home=home).stdout,
               "the 1 s pool to show as expired", interval=0.2)
    cleaned = run_cli("oa-vm", "pool-cleanup", "--expired", "-y", home=home)
    # The expired pool goes; the unreadable record (whose expiry nobody knows) is named, left
    # untouched, and the command fails, so a cron job's owner hears of it.
    assert "Removed 1 expired pool(s)." in cleaned.stdout
    assert "pool 'bad' skipped: its record" in cleaned.stdout
    line = cleaned.assert_one_line_error()
    assert "1 pool record(s) unreadable, so not cleaned up: bad" in line
    assert corrupt.read_text(encoding="utf-8") == '{"name": "bad", "cloud": "aws"'
    assert not (home / "pools" / "old").exists()


def test_expired_pools_are_marked_and_cleaned_up_together(home: Path) -> None:
    for name, ttl in (("short", "0.0003"), ("long", "4")):  # ~1 second, 4 hours
        created = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "1",
                          "--name", name, "--ttl-hours", ttl, "-y", home=home)
        assert created.returncode == 0, created.stderr

    def short_expired() -> str | None:
        listing = run_cli("oa-vm", "pool-list", home=home).stdout
        short = next(line for line in listing.splitlines() if line.startswith("short"))
        return listing if "(expired)" in short else None

    listing = wait_until(short_expired, "the ~1 s pool to show as expired", interval=0.2)
    long_line = next(line for line in listing.splitlines() if line.startswith("long"))
    assert "(expired)" not in long_line
    cleaned = run_cli("oa-vm", "pool-cleanup", "--expired", "-y", home=home)
    assert cleaned.returncode == 0, cleaned.stderr
    assert "Removed 1 expired pool(s)" in cleaned.stdout
    names = [p["name"] for p in json.loads(run_cli("oa-vm", "pool-list", "--json",
                                                    home=home).stdout)]
    assert names == ["long"]
