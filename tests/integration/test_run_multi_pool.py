"""One run over several pools (``openadapt-evals run --pool a --pool b``): real local pools, the
real CLI as a subprocess, the oracle agent over the local suite.

Shown: one record per task, tasks on both pools, each task's worker time priced at its own
pool's price (the pools' prices differ, so one price for all fails), the per-pool summary rows;
the refusals (another run's lease on one pool, a pool given twice, a resume with other pools,
pools serving different tasks); a worker of one pool killed mid-run (its tasks finish on the
other pool), and with ``--repair`` replaced through its own pool. Across sessions: a run's
errors rerun on another pool (its workers, and a host it lost, not taken for the first pool's of
the same name), a multi-pool run resumed on the pool left once the other is removed
(``--allow-change pools``), that permission said to be needless for a single-pool run, and a
run killed on one pool and resumed on another: its run page and export name the first pool's
workers by their pool, ``metadata.json``'s ``workers`` keeps them, and the attempt the kill cut
short counts as no worker's error. A finished run resumed with nothing left on more pools and
another step pause (``--allow-change``) records no change: nothing ran.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from infra.local import tasks_dir
from oa_vm import api
from oa_vm.model import state
from oa_vm.model.lease import hold_pool, read_lease
from tests.integration.test_sweep_local import LOCAL_TASKS, evals, folder_digest
from tests.integration.test_unknown_task_ids import SHELL_MODULE
from tests.support.controller import RunController, wait_for_records, worker_pid
from tests.support.file_state import unchanged
from tests.support.pools import READY_S, pool_home
from tests.support.run_records import assert_summary_matches, read_records
from tests.support.waiting import throughout, wait_gone, wait_until

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
OPENAPPS_EXAMPLES = ROOT / "evals" / "tasks" / "openapps" / "examples" / "all_tasks.yaml"
CUA_SUBMIT = ROOT / "docs" / "examples" / "cua_bench" / "submit"
PRICES = {"pa": 3.6, "pb": 36.0}  # $/worker-hour: a wrong pool's price is off tenfold


def make_pools(workers: dict[str, int], **extra: Any) -> None:
    """Local pools (``name -> worker count``) at :data:`PRICES`, created and waited on through
    the public API as a user's script would."""
    for name, count in workers.items():
        api.create_pool(name=name, cloud="local", workers=count, price_per_hour=PRICES[name],
                        **extra.get(name, {}))
    for name in workers:
        api.wait_pool(name, timeout_s=READY_S)


@pytest.fixture(scope="module")
def two_pools(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A home with pools pa and pb, one worker each at :data:`PRICES`, that the module's tests
    share when they only run on them to the end or take their leases and give them back; a test
    that kills, faults, drains or repairs a worker, or cuts a run short, makes its own pools
    (:func:`make_pools`). The home is ``OA_VM_HOME`` meanwhile."""
    pools = {name: {"price_per_hour": PRICES[name]} for name in ("pa", "pb")}
    with pool_home(tmp_path_factory.mktemp("two-pools") / "home", pools) as home:
        yield home


def pool_of(worker: str) -> str:
    pool, sep, _ = worker.partition("/")
    assert sep, f"worker {worker!r} is not named <pool>/<worker>"
    return pool


def test_one_run_over_two_pools_prices_each_pool_and_names_where_tasks_ran(
    two_pools: Path, tmp_path: Path
) -> None:
    home = two_pools
    results = tmp_path / "results"
    # half the local suite: enough for both pools' workers to take tasks
    done = evals("run", "--pool", "pa", "--pool", "pb", "--agent", "oracle", "--tasks", "12",
                 "--run-name", "multi", "--step-pause", "0.1", home=home, results=results)
    assert done.returncode == 0, done.stderr
    run_dir = results / "multi"
    records = read_records(run_dir)
    assert len(records) == 12
    assert {r["status"] for r in records.values()} == {"success"}
    assert all(r["attempts"] == 1 for r in records.values())
    per_pool = Counter(pool_of(r["worker"]) for r in records.values())
    assert set(per_pool) == {"pa", "pb"}, per_pool  # the work was spread over both pools

    # each task's worker time is priced at the price of its own worker's pool
    vm_by_pool: dict[str, float] = {"pa": 0.0, "pb": 0.0}
    seconds_by_pool: dict[str, float] = {"pa": 0.0, "pb": 0.0}
    for record in records.values():
        pool, cost = pool_of(record["worker"]), record["cost"]
        assert list(cost["by_pool"]) == [pool]
        seconds = cost["worker_seconds"]
        assert seconds > 0
        expected = seconds * PRICES[pool] / 3600
        # seconds are recorded to the ms, $ to the micro-dollar: allow both roundings
        tolerance = 0.0005 * PRICES[pool] / 3600 + 1e-6
        assert cost["vm_usd"] == pytest.approx(expected, abs=tolerance)
        assert cost["by_pool"][pool]["vm_usd"] == pytest.approx(expected, abs=tolerance)
        vm_by_pool[pool] += cost["vm_usd"]
        seconds_by_pool[pool] += seconds
    expected_total = sum(seconds_by_pool[p] * PRICES[p] / 3600 for p in PRICES)

    summary = assert_summary_matches(run_dir, records)
    assert summary["cost"]["vm_usd"] == pytest.approx(expected_total, abs=1e-4)
    rows = summary["by_pool"]
    assert list(rows) == ["pa", "pb"]
    for pool, row in rows.items():
        assert row["cloud"] == "local" and row["price_per_hour"] == PRICES[pool]
        assert row["workers"] == 1
        assert row["tasks"] == row["successes"] == per_pool[pool]
        assert row["failures"] == row["errors"] == 0
        assert row["worker_seconds"] == pytest.approx(seconds_by_pool[pool], abs=1e-2)
        assert row["vm_usd"] == pytest.approx(vm_by_pool[pool], abs=1e-5)
    assert set(summary["workers"]) == {f"{p}/worker-0" for p in PRICES}

    metadata = json.loads((run_dir / "metadata.json").read_text())
    assert metadata["pool"] == "pa+pb" and metadata["cloud"] == "local"
    assert metadata["price_per_hour"] is None  # the prices differ: see "pools"
    assert metadata["pools"] == [
        {"name": p, "cloud": "local", "price_per_hour": PRICES[p], "egress": "none",
         "workers": [f"{p}/worker-0"]} for p in ("pa", "pb")
    ]
    assert metadata["workers"] == ["pa/worker-0", "pb/worker-0"]
    assert metadata["cost"]["by_pool"]["pb"]["price_per_hour"] == PRICES["pb"]

    # the printed summary has a row per pool, with its own counts and cost
    printed = {line.split()[0]: line.split() for line in done.stdout.splitlines()
               if line.split() and line.split()[0] in PRICES}
    for pool, cells in printed.items():
        assert cells[1] == "local" and cells[4] == str(per_pool[pool])
        assert cells[-1] == f"${rows[pool]['total_usd']:.4f}"
    assert set(printed) == {"pa", "pb"}, done.stdout
    # both leases were given back
    assert read_lease("pa") is None and read_lease("pb") is None
    # the run's page has the same rows
    view = evals("view", "multi", home=home, results=results)
    assert view.returncode == 0, view.stderr
    html = Path(view.stdout.strip()).read_text()
    assert "<h2>Pools</h2>" in html
    for pool in PRICES:
        assert f"<tr><td>{pool}</td><td>local</td><td>{PRICES[pool]:g}</td><td>1</td>" in html


def test_a_lease_held_on_one_pool_refuses_the_run_and_releases_the_others(
    two_pools: Path, tmp_path: Path
) -> None:
    home = two_pools
    results = tmp_path / "results"
    with hold_pool("pb", "someone-else"):
        refused = evals("run", "--pool", "pa", "--pool", "pb", "--agent", "oracle",
                        "--tasks", "local_small", "--run-name", "busy", home=home,
                        results=results)
        line = refused.assert_one_line_error()
        assert refused.returncode == 1
        assert "pool 'pb' is in use by run 'someone-else'" in line
        assert read_lease("pa") is None, "pool pa's lease was not given back"
    assert not (results / "busy").exists()


def test_a_pool_given_twice_is_refused(two_pools: Path, tmp_path: Path) -> None:
    home = two_pools
    results = tmp_path / "results"
    refused = evals("run", "--pool", "pa", "--pool", "pa", "--agent", "oracle",
                    "--tasks", "local_small", "--run-name", "twice", home=home, results=results)
    line = refused.assert_one_line_error()
    assert refused.returncode == 2
    assert "--pool pa is given twice" in line
    assert not (results / "twice").exists() and read_lease("pa") is None


def test_a_resume_must_name_the_same_pools(two_pools: Path, tmp_path: Path) -> None:
    home = two_pools
    results = tmp_path / "results"
    first = evals("run", "--pool", "pa", "--pool", "pb", "--agent", "oracle",
                  "--tasks", "local_small", "--run-name", "r", home=home, results=results)
    assert first.returncode == 0, first.stderr
    before = folder_digest(results / "r")
    for pools in (["--pool", "pa"], ["--pool", "pb", "--pool", "pa", "-n", "pc"]):
        refused = evals("run", *pools, "--agent", "oracle", "--tasks", "local_small",
                        "--run-name", "r", "--resume", home=home, results=results)
        line = refused.assert_one_line_error()
        assert refused.returncode == 2
        assert "was started with the pools 'pa, pb'" in line, line
    assert folder_digest(results / "r") == before  # nothing recorded was touched
    # the same pools in another order, or none at all (the run's own), resume it
    for pools in (["--pool", "pb", "--pool", "pa"], []):
        again = evals("run", *pools, "--agent", "oracle", "--tasks", "local_small",
                      "--run-name", "r", "--resume", home=home, results=results)
        assert again.returncode == 0, again.stderr
    records = read_records(results / "r")
    assert len(records) == 6 and all(r["attempts"] == 1 for r in records.values())


def test_pools_serving_different_tasks_are_refused(home: Path, tmp_path: Path) -> None:
    # pool pc holds the local suite with one task's instruction changed
    changed = tmp_path / "changed-tasks"
    shutil.copytree(tasks_dir(), changed)
    task_file = next((changed / "examples").glob("notepad/c499b229*.json"))
    task = json.loads(task_file.read_text())
    task["instruction"] += " (edited)"
    task_file.write_text(json.dumps(task))
    PRICES["pc"] = 1.0
    try:
        make_pools({"pa": 1, "pc": 1}, pc={"tasks_dir": str(changed)})
    finally:
        del PRICES["pc"]
    results = tmp_path / "results"
    with unchanged(home, results):  # read before any lease: the pools' lease files too
        refused = evals("run", "--pool", "pa", "--pool", "pc", "--agent", "oracle", "--tasks",
                        "all", "--run-name", "mixed", home=home, results=results)
    line = refused.assert_one_line_error()
    assert refused.returncode == 2
    assert "pools 'pa' and 'pc' serve 1 of the selected task(s) differently" in line
    assert "c499b229-110c-5fc8-9895-f2f879ac1512-WOS" in line
    assert not (results / "mixed").exists()
    # a selection of tasks they serve alike runs
    same = evals("run", "--pool", "pa", "--pool", "pc", "--agent", "oracle",
                 "--tasks", "domain:clock", "--run-name", "alike", home=home, results=results)
    assert same.returncode == 0, same.stderr


def test_a_killed_worker_of_one_pool_has_its_tasks_finished_on_the_other(
    home: Path, tmp_path: Path, controllers: list[RunController]
) -> None:
    make_pools({"pa": 2, "pb": 1})
    results = tmp_path / "results"
    run = RunController(home, results, "--pool", "pa", "--pool", "pb", "--agent", "oracle",
                     "--tasks", "all", "--run-name", "killed", "--step-pause", "0.3",
                     "--read-timeout", "5")
    controllers.append(run)
    run_dir = results / "killed"
    wait_for_records(run_dir, 3, run)
    os.kill(worker_pid("pb", "worker-0"), signal.SIGKILL)
    assert run.wait() == 0, run.output()

    records = read_records(run_dir)
    assert len(records) == LOCAL_TASKS
    assert {r["status"] for r in records.values()} == {"success"}, run.output()
    retried = [r for r in records.values()
               if any(a["worker"] == "pb/worker-0" for a in r["previous_attempts"])]
    assert retried, "no task was retried after its worker died"
    for record in retried:
        assert pool_of(record["worker"]) == "pa"
        # the failed attempt was billed by pool pb, the one that finished it by pool pa
        assert set(record["cost"]["by_pool"]) == {"pa", "pb"}
    metadata = json.loads((run_dir / "metadata.json").read_text())
    assert metadata["quarantined_workers"] == ["pb/worker-0"]
    assert "worker pb/worker-0 quarantined" in run.output(), run.output()
    summary = assert_summary_matches(run_dir, records)
    assert summary["workers"]["pb/worker-0"]["quarantined"] is True


def test_with_repair_a_killed_worker_is_replaced_through_its_own_pool(
    home: Path, tmp_path: Path, controllers: list[RunController]
) -> None:
    make_pools({"pa": 2, "pb": 2})
    untouched = {w.name: w.pid for w in state.load("pa").workers}
    results = tmp_path / "results"
    # about 3 s per task (3 steps x 1 s): the survivors still have work when the replacement
    # is ready, however slow the machine
    run = RunController(home, results, "--pool", "pa", "--pool", "pb", "--agent", "oracle",
                     "--tasks", "all", "--run-name", "repaired", "--step-pause", "1.0",
                     "--read-timeout", "5", "--repair")
    controllers.append(run)
    run_dir = results / "repaired"
    wait_for_records(run_dir, 2, run)
    killed = worker_pid("pb", "worker-1")
    os.kill(killed, signal.SIGKILL)
    assert run.wait() == 0, run.output()

    records = read_records(run_dir)
    assert len(records) == LOCAL_TASKS
    assert {r["status"] for r in records.values()} == {"success"}, run.output()
    output = run.output()
    assert "worker pb/worker-1 replaced from the pool: back at work" in output, output
    replacement = next(w for w in state.load("pb").workers if w.name == "worker-1")
    assert replacement.pid not in (None, killed) and psutil.pid_exists(replacement.pid)
    assert {w.name: w.pid for w in state.load("pa").workers} == untouched  # pa left alone
    assert any(r["worker"] == "pb/worker-1" for r in records.values()), (
        "the replaced pb/worker-1 finished no task"
    )
    metadata = json.loads((run_dir / "metadata.json").read_text())
    assert metadata["quarantined_workers"] == []


@pytest.mark.long
def test_a_drain_notice_drains_only_that_pools_worker(
    home: Path, tmp_path: Path, controllers: list[RunController], monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import datetime

    from oa_vm.reach.drain import local_status_path
    from tests.integration.test_run_draining import NOTICE

    monkeypatch.setenv("OA_VM_DRAIN_CHECK_S", "0")  # the controller reads every status each time
    make_pools({"pa": 1, "pb": 2})
    drained = next(w for w in state.load("pb").workers if w.name == "worker-0")
    status_file = local_status_path(drained)
    assert status_file is not None
    results = tmp_path / "results"
    run = RunController(home, results, "--pool", "pa", "--pool", "pb", "--agent", "oracle",
                     "--tasks", "all", "--run-name", "drained", "--step-pause", "1.0",
                     "--read-timeout", "5")
    controllers.append(run)
    run_dir = results / "drained"
    wait_for_records(run_dir, 3, run)
    status_file.write_text(NOTICE, encoding="utf-8")
    noticed = datetime.now().astimezone()
    assert run.wait() == 0, run.output()

    records = read_records(run_dir)
    assert len(records) == LOCAL_TASKS
    assert {r["status"] for r in records.values()} == {"success"}, run.output()
    later = [r for r in records.values()
             if datetime.fromisoformat(r["started_at"]) > noticed]
    assert len(later) >= 3, "the notice came too late to show where the queue went"
    on_drained = [r for r in later if r["worker"] == "pb/worker-0"]
    assert len(on_drained) <= 1  # a lease may race the write; nothing after it
    # pa's worker-0 has the same bare name and no notice: it keeps working
    assert {r["worker"] for r in later} - {"pb/worker-0"} == {"pa/worker-0", "pb/worker-1"}


def test_the_budget_cap_holds_across_both_pools(home: Path, tmp_path: Path) -> None:
    PRICES.update({"pc": 1800.0, "pd": 3600.0})  # $0.5 and $1 per worker-second
    try:
        make_pools({"pc": 1, "pd": 1})
        results = tmp_path / "results"
        cap = 20.0
        done = evals("run", "--pool", "pc", "--pool", "pd", "--agent", "oracle",
                     "--tasks", "all", "--max-cost-usd", str(cap), "--step-pause", "0.5",
                     "--run-name", "capped", home=home, results=results)
        assert done.returncode == 3, done.stderr
        assert "budget cap" in done.stderr.strip().splitlines()[-1]
        records = read_records(results / "capped")
        assert len(records) == LOCAL_TASKS
        ran = [r for r in records.values() if r["status"] != "not_run"]
        assert ran and len(ran) < LOCAL_TASKS
        assert {pool_of(r["worker"]) for r in ran} == {"pc", "pd"}
        for record in ran:
            pool = pool_of(record["worker"])
            expected = record["cost"]["worker_seconds"] * PRICES[pool] / 3600
            assert record["cost"]["vm_usd"] == pytest.approx(expected, abs=0.001)
        spent = sum(r["cost"]["total_usd"] for r in records.values())
        biggest = max(r["cost"]["total_usd"] for r in ran)
        assert spent <= cap + 2 * biggest  # at most what was in flight on the two workers
        metadata = json.loads((results / "capped" / "metadata.json").read_text())
        assert metadata["status"] == "budget_stopped"
        assert metadata["cost"]["total_usd"] == pytest.approx(spent, abs=1e-5)
    finally:
        del PRICES["pc"], PRICES["pd"]


def test_two_multi_pool_runs_naming_the_pools_in_opposite_orders_both_finish(
    two_pools: Path, tmp_path: Path, controllers: list[RunController]
) -> None:
    # Two real controllers at once: one waits for the other and they never share a worker
    # (that the order of the leases is what prevents a deadlock is shown deterministically by
    # test_leases_are_taken_in_name_order_whatever_the_order_given).
    home = two_pools
    results = tmp_path / "results"
    common = ["--agent", "oracle", "--tasks", "local_small", "--step-pause", "0.3",
              "--wait-for-pool", "3m"]
    one = RunController(home, results, "--pool", "pa", "--pool", "pb", "--run-name", "one", *common)
    two = RunController(home, results, "--pool", "pb", "--pool", "pa", "--run-name", "two", *common)
    controllers += [one, two]
    assert one.wait() == 0, one.output()
    assert two.wait() == 0, two.output()
    spans = []
    for run in ("one", "two"):
        records = read_records(results / run)
        assert len(records) == 6 and {r["status"] for r in records.values()} == {"success"}
        spans.append((min(r["started_at"] for r in records.values()),
                      max(r["ended_at"] for r in records.values())))
    first, second = sorted(spans)
    assert first[1] <= second[0], "the two runs shared the pools' workers"


def test_leases_are_taken_in_name_order_whatever_the_order_given(two_pools: Path) -> None:
    import threading

    from evals.run.pools import hold_pools

    entered, leave = threading.Event(), threading.Event()

    def multi_pool_run() -> None:
        with hold_pools(["pb", "pa"], "multi", wait_s=60):
            entered.set()
            leave.wait(60)

    with hold_pool("pa", "someone-else"):
        thread = threading.Thread(target=multi_pool_run, daemon=True)
        thread.start()

        def holds_nothing() -> None:
            # blocked on pa, the first in name order, it holds nothing meanwhile
            assert read_lease("pb") is None
            assert not entered.is_set()

        throughout(5.0, holds_nothing)  # long enough for a wrong order to have taken pb
    assert entered.wait(60), "the multi-pool run never got the leases"
    assert read_lease("pa")["run"] == read_lease("pb")["run"] == "multi"  # type: ignore[index]
    leave.set()
    thread.join(60)
    assert read_lease("pa") is None and read_lease("pb") is None


def test_a_local_pool_and_a_cloud_pool_with_other_tasks_are_refused(
    home: Path, tmp_path: Path, waa_data: Path
) -> None:
    # A cloud cannot be reached here: pool "pz" is a local pool serving WAA's own 154 tasks (what
    # a cloud worker serves) whose record is then marked "aws". Its workers are reached
    # directly, as a cloud pool's are through their tunnels.
    PRICES["pz"] = 1.0
    try:
        make_pools({"pa": 1, "pz": 1}, pz={"tasks_dir": str(waa_data)})
    finally:
        del PRICES["pz"]
    record = state.load("pz")
    record.cloud = "aws"
    state.save(record)
    try:
        results = tmp_path / "results"
        refused = evals("run", "--pool", "pa", "--pool", "pz", "--agent", "oracle",
                        "--tasks", "all", "--run-name", "mixed", home=home, results=results)
        line = refused.assert_one_line_error()
        assert refused.returncode == 2
        assert ("pools 'pa' and 'pz' resolve the selection to different tasks (24 vs 154: "
                "24 only on 'pa', 154 only on 'pz')") in line
        # a WAA task ID: the local pool does not have it, and says so under its name
        waa_id = next(iter(json.loads((waa_data / "test_all.json").read_text())["chrome"]))
        refused = evals("run", "--pool", "pa", "--pool", "pz", "--agent", "oracle",
                        "--tasks", waa_id, "--run-name", "mixed", home=home, results=results)
        line = refused.assert_one_line_error()
        assert line.startswith("openadapt-evals: error: 1 unknown task ID(s) in pool 'pa': "), line
        # with a cloud pool in the run the selection is read as on a cloud pool ("live"):
        # synthetic IDs are refused even by the local pool
        refused = evals("run", "--pool", "pa", "--pool", "pz", "--agent", "oracle",
                        "--tasks", "notepad_1", "--run-name", "mixed", home=home, results=results)
        line = refused.assert_one_line_error()
        assert "pool 'pa': 1 synthetic task ID(s) cannot run on a live pool" in line, line
        # OpenApps-style tasks and modules calling a browser operation need the simulated
        # desktop: a WAA pool is refused, by its name
        for selection, what in ((f"openapps:{OPENAPPS_EXAMPLES}", "OpenApps-style tasks"),
                                (f"cua-bench:{CUA_SUBMIT}",
                                 "Cua-Bench modules that use the worker's browser")):
            for pools in (["--pool", "pz"], ["--pool", "pa", "--pool", "pz"]):
                refused = evals("run", *pools, "--agent", "oracle", "--tasks", selection,
                                "--run-name", "mixed", home=home, results=results)
                line = refused.assert_one_line_error()
                assert refused.returncode == 2, line
                assert f"{what} run on a local pool only, not on pool 'pz' (aws)" in line, line
        assert not (results / "mixed").exists()
        assert read_lease("pa") is None and read_lease("pz") is None
        # a module of commands, files and screenshots runs there (WAA's own endpoints)
        module = tmp_path / "note" / "main.py"
        module.parent.mkdir()
        module.write_text(SHELL_MODULE, encoding="utf-8")
        ran = evals("run", "--pool", "pz", "--agent", "oracle", "--tasks",
                    f"cua-bench:{module.parent}", "--run-name", "note", home=home,
                    results=results)
        assert ran.returncode == 0, ran.stderr
        assert [r["score"] for r in read_records(results / "note").values()] == [1.0]
    finally:
        record.cloud = "local"  # so that the fixture removes it as the local pool it is
        state.save(record)


def test_a_killed_multi_pool_controller_resumes_on_its_pools_and_keeps_each_pools_cost(
    home: Path, tmp_path: Path, controllers: list[RunController]
) -> None:
    make_pools({"pa": 1, "pb": 1})
    results = tmp_path / "results"
    args = ["--agent", "oracle", "--tasks", "all", "--run-name", "cut", "--step-pause", "0.3"]
    first = RunController(home, results, "--pool", "pa", "--pool", "pb", *args)
    controllers.append(first)
    run_dir = results / "cut"
    wait_for_records(run_dir, 4, first)
    first.kill()  # SIGKILL: no clean-up at all
    before = read_records(run_dir)
    assert len(before) < LOCAL_TASKS, "the first controller finished before the kill"

    again = evals("run", *args, "--resume", home=home, results=results)  # its own pools
    assert again.returncode == 0, again.stderr
    records = read_records(run_dir)
    assert len(records) == LOCAL_TASKS
    assert {r["status"] for r in records.values()} == {"success"}
    for task_id, record in before.items():
        assert records[task_id] == record  # nothing finished was redone
    assert {pool_of(r["worker"]) for r in records.values()} == {"pa", "pb"}
    metadata = json.loads((run_dir / "metadata.json").read_text())
    assert len(metadata["resumed_at"]) == 1
    by_pool = metadata["cost"]["by_pool"]
    for pool in ("pa", "pb"):
        billed = sum(r["cost"]["by_pool"].get(pool, {}).get("vm_usd", 0.0)
                     for r in records.values())
        # both sessions' tasks (the first session's carried from their records)
        assert by_pool[pool]["vm_usd"] == pytest.approx(billed, abs=1e-5)
    assert metadata["cost"]["total_usd"] == pytest.approx(
        sum(r["cost"]["total_usd"] for r in records.values()), abs=1e-5)


def test_pools_without_a_ready_worker_are_named_and_nothing_is_held(
    home: Path, tmp_path: Path
) -> None:
    # one such pool is left out and the run goes on with the others (test_run_dead_worker.py);
    # with none left the run is refused, naming each pool
    make_pools({"pa": 1, "pb": 1})
    for pool in ("pa", "pb"):
        dead = worker_pid(pool, "worker-0")
        os.kill(dead, signal.SIGKILL)
        wait_gone(dead)
    results = tmp_path / "results"
    refused = evals("run", "--pool", "pa", "--pool", "pb", "--agent", "oracle",
                    "--tasks", "local_small", "--run-name", "lost", home=home, results=results)
    line = refused.assert_one_line_error()
    assert refused.returncode == 1
    assert "pool 'pa' has no worker that answers (worker-0: lost" in line, line
    assert "pool 'pb' has no worker that answers (worker-0: lost" in line, line
    # their workers are lost: a repair brings them back, a wait (the line's old advice) fails
    assert line.endswith("run 'oa-vm pool-repair --pool pa' or 'oa-vm pool-repair --pool pb'"), \
        line
    assert read_lease("pa") is None and read_lease("pb") is None
    assert not (results / "lost").exists()


def test_errors_rerun_on_another_pool_are_not_taken_for_the_first_pools_workers(
    home: Path, tmp_path: Path
) -> None:
    # pool pa's only worker crashes a few tasks in: its clean resets showed its own snapshot,
    # then it was quarantined; the errors are rerun on pool pb, whose worker has the same name
    make_pools({"pa": 1, "pb": 1}, pa={"faults": {"crash-after": "60"}})
    results = tmp_path / "results"
    first = evals("run", "--pool", "pa", "--agent", "oracle", "--tasks", "local_small",
                  "--run-name", "r", "--reset", "clean", "--max-attempts", "1",
                  home=home, results=results)
    assert "Quarantined workers: worker-0" in first.stdout, first.stdout + first.stderr
    before = read_records(results / "r")
    kept = {t: r for t, r in before.items() if r["status"] == "success"}
    assert kept and all(r["worker"] == "worker-0" and r["reset"] == "clean"
                        for r in kept.values()), before
    assert any(r["status"] == "error" for r in before.values())

    again = evals("run", "--pool", "pb", "--rerun-errors", "r", home=home, results=results)
    assert again.returncode == 0, again.stderr
    # each pool's worker restored its own snapshot: no disagreement between the two worker-0s
    assert "fingerprints disagree" not in again.stdout, again.stdout
    # the quarantine is the first pool's worker's, not the healthy worker-0 of pb
    assert "Quarantined workers: pa/worker-0" in again.stdout, again.stdout
    records = read_records(results / "r")
    assert {r["status"] for r in records.values()} == {"success"}
    for task_id, record in records.items():
        # the first pool's records keep their bare names; the other pool's workers are named
        assert record["worker"] == ("worker-0" if task_id in kept else "pb/worker-0")
    summary = assert_summary_matches(results / "r", records)
    assert summary["resets"]["fingerprints_agree"] is True, summary["resets"]
    assert summary["quarantined_workers"] == ["pa/worker-0"]
    assert summary["workers"]["pa/worker-0"]["quarantined"] is True
    assert summary["workers"]["pb/worker-0"]["quarantined"] is False
    assert "Sessions ran on pools: pa, then pb" in again.stdout
    metadata = json.loads((results / "r" / "metadata.json").read_text())
    assert [s["pool"] for s in metadata["sessions"]] == ["pa", "pb"]


def test_a_run_resumed_on_another_pool_lists_every_session_s_workers(
    home: Path, tmp_path: Path
) -> None:
    # pool pa's two workers crash a few tasks in; the errors are rerun on pool pb: the run ran
    # on all three workers, and its metadata says so (it listed only the last session's)
    make_pools({"pa": 2, "pb": 1}, pa={"faults": {"crash-after": "60"}})
    results = tmp_path / "results"
    first = evals("run", "--pool", "pa", "--agent", "oracle", "--tasks", "local_small",
                  "--run-name", "r", "--max-attempts", "1", home=home, results=results)
    assert any(r["status"] == "error" for r in read_records(results / "r").values()), (
        first.stdout + first.stderr)
    metadata = json.loads((results / "r" / "metadata.json").read_text())
    assert metadata["workers"] == ["worker-0", "worker-1"]

    again = evals("run", "--pool", "pb", "--rerun-errors", "r", home=home, results=results)
    assert again.returncode == 0, again.stderr
    metadata = json.loads((results / "r" / "metadata.json").read_text())
    # the first pool's workers named by their pool once the run ran on another, in session order
    assert metadata["workers"] == ["pa/worker-0", "pa/worker-1", "pb/worker-0"]
    assert_summary_matches(results / "r", read_records(results / "r"))
    # the readers take the run as before
    listed = evals("runs", home=home, results=results)
    assert listed.returncode == 0 and "r" in listed.stdout, listed.stderr
    viewed = evals("view", "r", home=home, results=results)
    assert viewed.returncode == 0, viewed.stderr
    # the page's "What was measured" names both sessions' pools, as the printed summary does
    # (the manifest, written when the run started, lists pa only)
    assert "Sessions ran on pools: pa, then pb" in again.stdout, again.stdout
    page = (results / "r" / "view.html").read_text()
    measured = page.partition("<h2>What was measured</h2>")[2].partition("</table>")[0]
    assert "<td>sessions ran on pools</td><td><code>pa, then pb</code></td>" in measured, measured


def test_a_multi_pool_run_resumes_on_the_pools_left_with_allow_change_pools(
    home: Path, tmp_path: Path
) -> None:
    # pool pb's worker crashes: its tasks end in error, then pb is removed
    make_pools({"pa": 1, "pb": 1}, pb={"faults": {"crash-after": "12"}})
    results = tmp_path / "results"
    first = evals("run", "--pool", "pa", "--pool", "pb", "--agent", "oracle", "--tasks",
                  "local_small", "--run-name", "r", "--max-attempts", "1",
                  home=home, results=results)
    assert "error" in {r["status"] for r in read_records(results / "r").values()}, first.stdout
    api.cleanup_pool("pb")
    before = folder_digest(results / "r")

    refused = evals("run", "--rerun-errors", "r", home=home, results=results)
    line = refused.assert_one_line_error()
    assert refused.returncode == 2
    assert "pool 'pb' is gone; resume it on the others with --pool pa --allow-change pools" in line
    refused = evals("run", "--pool", "pa", "--rerun-errors", "r", home=home, results=results)
    line = refused.assert_one_line_error()
    assert "was started with the pools 'pa, pb', not 'pa'" in line, line
    assert "pass --allow-change pools" in line, line
    assert folder_digest(results / "r") == before  # nothing recorded was touched

    again = evals("run", "--pool", "pa", "--rerun-errors", "r", "--allow-change", "pools",
                  home=home, results=results)
    assert again.returncode == 0, again.stderr
    records = read_records(results / "r")
    assert {r["status"] for r in records.values()} == {"success"}
    assert {pool_of(r["worker"]) for r in records.values()} <= {"pa", "pb"}
    manifest = json.loads((results / "r" / "manifest.json").read_text())
    [change] = manifest["setting_changes"]
    assert (change["setting"], change["from"], change["to"]) == ("pools", ["pa", "pb"], ["pa"])
    assert "pools" not in manifest["settings"]  # the metadata's, which compare does not weigh
    metadata = json.loads((results / "r" / "metadata.json").read_text())
    assert [s["pool"] for s in metadata["sessions"]] == ["pa+pb", "pa"]
    # the pool left behind is still on record: its cloud, price and the workers that ran on it
    left = {p["name"]: p for p in metadata["sessions"][0]["pools"]}
    assert sorted(left) == ["pa", "pb"] and left["pb"]["cloud"] == "local", left
    assert left["pb"]["workers"] == ["pb/worker-0"], left
    assert "pools" not in metadata  # the top-level pool keys are this session's
    # resumed again on its pool left, without naming it: nothing to change, nothing refused
    done = evals("run", "--rerun-errors", "r", home=home, results=results)
    assert done.returncode == 0, done.stderr


def test_allow_change_pools_on_a_single_pool_run_moved_to_another_pool_is_said_not_needed(
    two_pools: Path, tmp_path: Path
) -> None:
    home = two_pools
    results = tmp_path / "results"
    first = evals("run", "--pool", "pa", "--agent", "oracle", "--tasks", "local_small",
                  "--run-name", "r", home=home, results=results)
    assert first.returncode == 0, first.stderr
    before = folder_digest(results / "r")
    for again in (["--resume", "--run-name", "r", "--agent", "oracle", "--tasks", "local_small"],
                  ["--rerun-errors", "r"]):
        refused = evals("run", "--pool", "pb", *again, "--allow-change", "pools",
                        home=home, results=results)
        line = refused.assert_one_line_error()
        assert refused.returncode == 2  # refused as any --allow-change of what does not change
        assert line.endswith(
            "--allow-change pools: not needed: a single-pool run may resume on any one pool "
            "(it ran on pa, now on pb); leave --allow-change out"), line
        assert "unchanged" not in line, line
    assert folder_digest(results / "r") == before  # nothing recorded was touched
    # without it, the same resume on the other pool goes on
    moved = evals("run", "--pool", "pb", "--resume", "--run-name", "r", "--agent", "oracle",
                  "--tasks", "local_small", home=home, results=results)
    assert moved.returncode == 0, moved.stderr


def test_a_host_lost_on_the_first_pool_is_named_by_its_pool_once_errors_rerun_on_another(
    home: Path, tmp_path: Path
) -> None:
    # pool pa is one simulated host of two workers, which crashes a few tasks in: the host is
    # quarantined once; the errors are rerun on pool pb, whose worker-0 has the same name
    make_pools({"pa": 2, "pb": 1},
               pa={"workers_per_host": 2, "faults": {"crash-after": "60"}})
    results = tmp_path / "results"
    first = evals("run", "--pool", "pa", "--agent", "oracle", "--tasks", "local_small",
                  "--run-name", "r", "--max-attempts", "1", home=home, results=results)
    assert "Quarantined host group-0 (workers worker-0, worker-1)" in first.stdout, (
        first.stdout + first.stderr)

    again = evals("run", "--pool", "pb", "--rerun-errors", "r", home=home, results=results)
    assert again.returncode == 0, again.stderr
    assert "Sessions ran on pools: pa, then pb" in again.stdout, again.stdout
    # named as the worker table names the first pool's workers, not as pb's healthy worker-0
    assert "Quarantined host pa/group-0 (workers pa/worker-0, pa/worker-1)" in again.stdout, (
        again.stdout)
    summary = assert_summary_matches(results / "r", read_records(results / "r"))
    [lost] = summary["quarantined_hosts"]
    assert (lost["host"], lost["workers"]) == ("pa/group-0", ["pa/worker-0", "pa/worker-1"])
    assert summary["workers"]["pa/worker-0"]["quarantined"] is True
    assert summary["workers"]["pb/worker-0"]["quarantined"] is False
    metadata = json.loads((results / "r" / "metadata.json").read_text())
    [recorded] = metadata["quarantined_hosts"]  # renamed as quarantined_workers are
    assert (recorded["host"], recorded["workers"]) == (lost["host"], lost["workers"])


@pytest.fixture(scope="module")
def moved_mid_attempt(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Run ``cut`` on pool pa (one worker) killed while an attempt is under way (one task
    finished there), then resumed on pool pb to the end, in pools of its own removed once it
    is done; returns the home and the results folder that the module's tests read."""
    root = tmp_path_factory.mktemp("moved")
    results = root / "results"
    args = ["--agent", "oracle", "--tasks", "local_small", "--run-name", "cut"]
    pools = {name: {"price_per_hour": PRICES[name]} for name in ("pa", "pb")}
    with pool_home(root / "home", pools) as home:
        first = RunController(home, results, "--pool", "pa", *args, "--step-pause", "1s")
        try:
            run_dir = results / "cut"
            wait_for_records(run_dir, 1, first)

            def under_way() -> bool:  # an attempt has its first screenshot and no record yet
                return any(not (t / "execution.json").exists() and (t / "step_000.png").exists()
                           for t in (run_dir / "tasks").iterdir())

            wait_until(under_way, "an attempt under way on pa")
        finally:
            first.kill()  # SIGKILL: its attempt is left interrupted
        again = evals("run", "--pool", "pb", "--resume", *args, "--step-pause", "0s",
                      "--allow-change", "step-pause", home=home, results=results)
    assert again.returncode == 0, again.stderr
    assert "Sessions ran on pools: pa, then pb" in again.stdout, again.stdout
    return home, results


def test_the_run_page_names_the_first_pools_workers_by_their_pool_once_resumed_on_another(
    moved_mid_attempt: tuple[Path, Path], tmp_path: Path
) -> None:
    home, results = moved_mid_attempt
    run_dir = results / "cut"
    records = read_records(run_dir)
    assert {r["worker"] for r in records.values()} == {"worker-0", "pb/worker-0"}, records
    [cut] = [r for r in records.values() if r.get("previous_attempts")]
    [earlier] = cut["previous_attempts"]
    assert earlier["worker"] == "worker-0" and earlier["error_type"] is None, earlier

    shown = evals("view", "cut", home=home, results=results)
    assert shown.returncode == 0, shown.stderr
    page = (run_dir / "view.html").read_text()
    # the task rows and the earlier attempt name pa's worker as the page's worker table does
    assert "<td>pa/worker-0</td>" in page and "<td>pb/worker-0</td>" in page
    assert ">worker-0<" not in page and "on worker-0" not in page, page
    assert ("earlier attempt 1 on pa/worker-0: interrupted: the controller stopped during "
            "this attempt") in page
    assert "None:" not in page
    # and so does the Inspect AI log, each sample's worker
    from inspect_ai.log import read_eval_log

    from evals.report.export.inspect_log import write_inspect_log

    out = tmp_path / "cut.eval"
    write_inspect_log(run_dir, out)  # the CLI's call, in this process (an import costs seconds)
    samples = read_eval_log(str(out)).samples or []
    assert {s.metadata["worker"] for s in samples} == {"pa/worker-0", "pb/worker-0"}


def test_a_run_resumed_on_another_pool_keeps_the_first_pools_workers_among_its_workers(
    moved_mid_attempt: tuple[Path, Path]
) -> None:
    run_dir = moved_mid_attempt[1] / "cut"
    metadata = json.loads((run_dir / "metadata.json").read_text())
    # every worker the run ran on: pa's (named as the summary names them), then pb's
    assert metadata["workers"] == ["pa/worker-0", "pb/worker-0"], metadata["workers"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert sorted(summary["workers"]) == metadata["workers"]


def test_an_attempt_cut_short_by_a_killed_controller_is_not_its_workers_error(
    moved_mid_attempt: tuple[Path, Path]
) -> None:
    home, results = moved_mid_attempt
    run_dir = results / "cut"
    records = read_records(run_dir)
    [cut] = [r for r in records.values() if r.get("previous_attempts")]
    assert [(p["worker"], p["error_type"]) for p in cut["previous_attempts"]] == [
        ("worker-0", None)], cut["previous_attempts"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["errors"] == 0, summary
    # nobody's fault: the worker table counts no error for the attempt the kill cut short
    assert {name: w["errors"] for name, w in summary["workers"].items()} == {
        "pa/worker-0": 0, "pb/worker-0": 0}, summary["workers"]
    shown = evals("view", "cut", home=home, results=results)
    assert shown.returncode == 0, shown.stderr
    page = (run_dir / "view.html").read_text()
    for name, w in summary["workers"].items():
        assert f"<tr><td>{name}</td><td>{w['tasks']}</td><td>0</td>" in page, page


def test_a_resume_with_nothing_left_records_no_pool_or_setting_change(
    two_pools: Path, tmp_path: Path
) -> None:
    home = two_pools
    results = tmp_path / "results"
    first = evals("run", "--pool", "pa", "--agent", "oracle", "--tasks", "local_small",
                  "--run-name", "r", "--step-pause", "0.1", home=home, results=results)
    assert first.returncode == 0, first.stderr
    run_dir = results / "r"
    before = folder_digest(run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())

    again = evals("run", "--pool", "pa", "--pool", "pb", "--resume", "--run-name", "r",
                  "--step-pause", "0s", "--allow-change", "pools", "--allow-change",
                  "step-pause", home=home, results=results)
    assert again.returncode == 0, again.stderr
    after = folder_digest(run_dir)
    for name in ("manifest.json", "metadata.json"):  # nothing ran: nothing to record
        assert after[name] == before[name], (run_dir / name).read_text()
    assert json.loads((run_dir / "summary.json").read_text()) == summary
    assert ("nothing left to run (every task has its final record), so no pool was used and "
            "its pools and step-pause stay as recorded (a change is recorded only by a "
            "resume that runs something)") in again.stderr, again.stderr
    # the run is still on pa alone: resumed there without any permission
    alone = evals("run", "--pool", "pa", "--resume", "--run-name", "r", home=home,
                  results=results)
    assert alone.returncode == 0, alone.stderr
