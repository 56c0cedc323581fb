"""Runs over several pools, the pure parts: names, routing, the ledger priced per pool, the
record's shape, the per-pool summary rows and the catalog agreement check."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evals.errors import InvalidRunInputError
from evals.results.ledger import Ledger
from evals.results.records import RunMetadata, TaskExecution, TaskStatus
from evals.run import metrics
from evals.run.pools import (
    PoolRouter,
    Selected,
    _same_tasks,
    check_pool_names,
    connect_pools,
    host_namer,
    qualify,
    recorded_pool_names,
    renamed_connection,
    split,
)
from evals.run.runner import RunConfig
from oa_vm import WorkerConnection
from oa_vm.model.state import PoolRecord, PoolState, WorkerRecord, WorkerState, utcnow
from tests.support.leasing import reserved_for
from waa_client import ScoringClient, WaaClient


def test_qualified_names_split_back() -> None:
    assert qualify("east", "worker-0") == "east/worker-0"
    assert split("east/worker-0") == ("east", "worker-0")
    assert split("worker-0") == (None, "worker-0")


def test_a_pool_given_twice_is_refused_in_the_config() -> None:
    check_pool_names(["a", "b"])
    with pytest.raises(InvalidRunInputError, match="--pool a is given twice"):
        check_pool_names(["a", "b", "a"])
    with pytest.raises(InvalidRunInputError, match="given twice"):
        RunConfig(pool=None, pools=["a", "a"], selection="all", agent="noop")


def test_pool_and_pools() -> None:
    assert RunConfig(pool="a", selection="all", agent="noop").pool_names() == ["a"]
    assert RunConfig(pool=None, selection="all", agent="noop").pool_names() == []
    both = RunConfig(pool=None, pools=["a", "b"], selection="all", agent="noop")
    assert both.pool_names() == ["a", "b"]
    with pytest.raises(InvalidRunInputError, match="disagree"):
        RunConfig(pool="c", pools=["a", "b"], selection="all", agent="noop")


def test_the_router_sends_a_worker_to_its_own_pool_under_its_bare_name() -> None:
    asked: list[tuple[str, str]] = []

    def handler(pool: str) -> Any:
        def answer(worker: str) -> str | None:
            asked.append((pool, worker))
            return None if worker == "gone" else f"{pool}:{worker}"
        return answer

    router = PoolRouter({"a": handler("a"), "b": handler("b")},
                        rename=lambda name, value: f"{name}={value}")
    assert router("b/worker-0") == "b/worker-0=b:worker-0"
    assert router("a/gone") is None
    assert router("c/worker-0") is None and router("worker-0") is None
    assert asked == [("b", "worker-0"), ("a", "gone")]


def test_the_ledger_prices_each_worker_at_its_pools_price() -> None:
    ledger = Ledger(36.0, worker_pools={"a/w": "a", "b/w": "b"},
                    pool_prices={"a": 3.6, "b": 36.0})
    cost_a = ledger.charge("t1", 100.0, [], worker="a/w")
    assert cost_a.vm_usd == pytest.approx(0.1)
    assert cost_a.by_pool == {"a": {"worker_seconds": 100.0, "vm_usd": 0.1}}
    ledger.charge("t2", 10.0, [], worker="b/w")
    # a task retried on the other pool: each attempt at its own pool's price
    both = ledger.charge("t1", 10.0, [], worker="b/w")
    assert both.vm_usd == pytest.approx(0.1 + 0.1)
    assert set(both.by_pool) == {"a", "b"}
    assert ledger.spent() == pytest.approx(0.3)
    totals = ledger.totals()["by_pool"]
    assert totals["a"] == {"price_per_hour": 3.6, "worker_seconds": 100.0, "vm_usd": 0.1}
    assert totals["b"]["worker_seconds"] == 20.0 and totals["b"]["vm_usd"] == pytest.approx(0.2)
    # estimates (the cap's reservations) use the given price: the dearest pool's
    assert reserved_for(ledger, 100.0) == pytest.approx(1.0)


def test_a_resumed_ledger_carries_each_pools_share() -> None:
    ledger = Ledger(2.0, worker_pools={"a/w": "a"}, pool_prices={"a": 2.0, "b": 1.0})
    ledger.carry([{"total_usd": 0.5, "worker_seconds": 900.0,
                   "by_pool": {"b": {"worker_seconds": 900.0, "vm_usd": 0.25}}}])
    assert ledger.totals()["by_pool"]["b"] == {"price_per_hour": 1.0, "worker_seconds": 900.0,
                                                "vm_usd": 0.25}


def test_a_single_pool_ledger_and_record_keep_their_shape() -> None:
    ledger = Ledger(3.6)
    cost = ledger.charge("t", 10.0, [], worker="worker-0")
    assert cost.by_pool == {}
    assert "by_pool" not in ledger.totals()
    record = TaskExecution("t", "d", "i", False, TaskStatus.SUCCESS, cost=cost)
    data = record.to_json()
    assert list(data["cost"]) == ["worker_seconds", "vm_usd", "tokens_in", "tokens_out",
                                  "model_usd", "total_usd"]
    assert TaskExecution.from_json(data) == record


def test_a_multi_pool_record_round_trips_its_pool_shares() -> None:
    ledger = Ledger(1.0, worker_pools={"a/w": "a"}, pool_prices={"a": 1.0})
    record = TaskExecution("t", "d", "i", False, TaskStatus.SUCCESS, worker="a/w",
                           cost=ledger.charge("t", 36.0, [], worker="a/w"))
    data = json.loads(json.dumps(record.to_json()))
    assert data["cost"]["by_pool"] == {"a": {"worker_seconds": 36.0, "vm_usd": 0.01}}
    assert TaskExecution.from_json(data) == record


def _write_run(root: Path, metadata: dict[str, Any], records: list[dict[str, Any]]) -> Path:
    run = root / "run"
    (run / "tasks").mkdir(parents=True)
    (run / "metadata.json").write_text(json.dumps(metadata))
    for record in records:
        folder = run / "tasks" / record["task_id"]
        folder.mkdir()
        (folder / "execution.json").write_text(json.dumps(record))
    return run


def _record(task_id: str, status: str, worker: str | None,
            by_pool: dict[str, float]) -> dict[str, Any]:
    vm = sum(by_pool.values())
    return {
        "task_id": task_id, "domain": "d", "status": status, "worker": worker, "steps": [],
        "cost": {"worker_seconds": 1.0, "vm_usd": vm, "model_usd": 0.0, "total_usd": vm,
                 "by_pool": {p: {"worker_seconds": 1.0, "vm_usd": v} for p, v in by_pool.items()}},
    }


def test_the_summary_has_a_row_per_pool(tmp_path: Path) -> None:
    metadata = {
        "run": "r", "pool": "a+b", "price_per_hour": None, "task_ids": ["t1", "t2", "t3", "t4"],
        "pools": [{"name": "a", "cloud": "local", "price_per_hour": 1.0, "workers": ["a/w"]},
                  {"name": "b", "cloud": "aws", "price_per_hour": 2.0,
                   "workers": ["b/w", "b/v"]}],
    }
    run = _write_run(tmp_path, metadata, [
        _record("t1", "success", "a/w", {"a": 0.5}),
        _record("t2", "failure", "b/w", {"b": 0.25}),
        # failed on a, finished on b: a billed its attempt, the task counts for b
        _record("t3", "error", "b/v", {"a": 0.125, "b": 0.25}),
        _record("t4", "not_run", None, {}),
    ])
    summary = metrics.compute_summary(run)
    rows = summary["by_pool"]
    assert rows["a"]["tasks"] == 1 and rows["a"]["successes"] == 1
    assert rows["a"]["vm_usd"] == 0.625 and rows["a"]["workers"] == 1
    assert rows["b"] == {"cloud": "aws", "price_per_hour": 2.0, "workers": 2, "tasks": 2,
                         "successes": 0, "failures": 1, "errors": 1, "worker_seconds": 2.0,
                         "vm_usd": 0.5, "model_usd": 0.0, "total_usd": 0.5}
    text = metrics.format_summary(summary)
    assert "pool  cloud  $/hour  workers  tasks" in text
    assert any(line.split()[:5] == ["b", "aws", "2", "2", "2"] for line in text.splitlines())
    assert "Cost: $1.1250 total" in text


def test_a_single_pool_summary_has_no_pool_rows(tmp_path: Path) -> None:
    run = _write_run(tmp_path, {"run": "r", "pool": "p", "task_ids": ["t1"]},
                     [_record("t1", "success", "worker-0", {})])
    summary = metrics.compute_summary(run)
    assert "by_pool" not in summary
    assert "workers  tasks" not in metrics.format_summary(summary)


def test_recorded_pools() -> None:
    assert recorded_pool_names({"pool": "p"}) is None
    assert recorded_pool_names({"pools": [{"name": "a"}, {"name": "b"}]}) == ["a", "b"]


class _Ref:
    def __init__(self, task_id: str) -> None:
        self.task_id = task_id


def _selected(tasks: dict[str, dict[str, Any]]) -> Selected:
    return Selected([_Ref(t) for t in tasks], tasks)


def test_pools_must_agree_on_the_selected_tasks() -> None:
    same = _selected({"t1": {"x": 1}, "t2": {"x": 2}})
    _same_tasks(("a", same), ("b", _selected({"t1": {"x": 1}, "t2": {"x": 2}})))
    with pytest.raises(InvalidRunInputError, match=r"different tasks \(2 vs 1: 1 only on 'a'"):
        _same_tasks(("a", same), ("b", _selected({"t1": {"x": 1}})))
    with pytest.raises(InvalidRunInputError, match=r"serve 1 of the selected task\(s\) "
                                                   r"differently \(first: t2\)"):
        _same_tasks(("a", same), ("b", _selected({"t1": {"x": 1}, "t2": {"x": 3}})))


def _connection(name: str, host: str | None) -> WorkerConnection:
    url = "http://127.0.0.1:9"  # never asked: naming sends nothing
    return WorkerConnection(name, WaaClient(url), ScoringClient(url), url, url, host=host)


def test_a_workers_host_is_named_alike_when_connected_and_after_a_repair(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # one rule names a worker of a run over several pools: its host is its pool's, and a
    # worker without a host is its own under its bare name, whether the run connects or a
    # repair hands a new connection over (was "pb/pb/worker-0" until a repair renamed it)
    @contextlib.contextmanager
    def connect(name: str, **_: object) -> Iterator[list[WorkerConnection]]:
        yield [_connection("worker-0", None), _connection("worker-1", "host-1")]

    def load_pool(name: str) -> PoolRecord:
        # worker-2 was not ready when the run connected: it is left out, by its run name
        workers = [WorkerRecord(name=f"worker-{i}", state=WorkerState.READY) for i in range(2)]
        lost = WorkerRecord(name="worker-2", state=WorkerState.LOST, phase="process gone")
        return PoolRecord(name, "local", PoolState.DEGRADED, utcnow(), workers=[*workers, lost])

    monkeypatch.setattr("oa_vm.connect", connect)
    monkeypatch.setattr("oa_vm.load_pool", load_pool)
    # the workers connected answer the run's probes at the start (their URLs are never asked)
    monkeypatch.setattr(WaaClient, "probe", lambda self, deadline=None: {})
    monkeypatch.setattr(ScoringClient, "probe", lambda self, deadline=None: {})
    with connect_pools(["pa", "pb"], connect_timeout=1.0, read_timeout=1.0) as pools:
        hosts = {w.name: w.host for pool in pools for w in pool.workers}
    assert hosts == {"pa/worker-0": "pa/worker-0", "pa/worker-1": "pa/host-1",
                     "pb/worker-0": "pb/worker-0", "pb/worker-1": "pb/host-1"}
    assert [pool.left_out for pool in pools] == [{"pa/worker-2": "lost: process gone"},
                                                 {"pb/worker-2": "lost: process gone"}]
    assert renamed_connection("pb/worker-0", _connection("worker-0", None)).host == "pb/worker-0"


def test_a_lost_host_of_the_first_pool_is_named_as_its_workers_once_the_run_ran_elsewhere(
    tmp_path: Path,
) -> None:
    first = {"host": "group-0", "workers": ["worker-0", "worker-1"], "reason": "down"}
    later = {"host": "pb/group-0", "workers": ["pb/worker-0"], "reason": "down"}
    moved: RunMetadata = {"pool": "pb", "sessions": [{"pool": "pa"}, {"pool": "pb"}]}
    named = host_namer(moved)
    assert named(first) == {"host": "pa/group-0", "workers": ["pa/worker-0", "pa/worker-1"],
                            "reason": "down"}
    assert named(later) == later  # named when recorded
    assert first["host"] == "group-0"  # the record itself is not changed here
    # one pool throughout (or several from the start): names as recorded
    throughout: list[RunMetadata] = [{"pool": "pa"},
                                     {"sessions": [{"pool": "pa"}, {"pool": "pa"}]},
                                     {"sessions": [{"pool": "pa+pb"}, {"pool": "pa"}]}]
    for metadata in throughout:
        assert host_namer(metadata)(first) == first
    # the summary shows the entry as the worker table shows its workers
    run = _write_run(tmp_path, {**moved, "run": "r", "task_ids": ["t1"],
                                "quarantined_hosts": [first]},
                     [_record("t1", "success", "pb/worker-0", {})])
    summary = metrics.compute_summary(run)
    assert summary["quarantined_hosts"] == [named(first)]
    assert summary["workers"]["pa/worker-0"]["quarantined"] is True
    assert ("Quarantined host pa/group-0 (workers pa/worker-0, pa/worker-1): down"
            in metrics.format_summary(summary))


def test_a_worker_answers_only_when_both_its_servers_answer_their_probe() -> None:
    # one probe of each server, both asked at once: the run's start and the dispatcher's host
    # check take a worker whose scoring server is down for one that cannot take a task
    from evals.run.pools import unanswered
    from tests.support.http_servers import RefusingPort, Reply, ScriptedServer

    probe = {"/probe": Reply.json({"status": "ok"})}
    with ScriptedServer(probe) as up, RefusingPort() as down:
        def worker(name: str, waa: str, scoring: str) -> WorkerConnection:
            return WorkerConnection(name, WaaClient(waa, retries=0),
                                    ScoringClient(scoring, retries=0), waa, scoring)

        answers = unanswered([worker("both", up.url, up.url),
                              worker("no-scoring", up.url, down.url),
                              worker("none", down.url, down.url)])
        assert answers == [None, "scoring server: unreachable", "unreachable"]
        assert up.hits["/probe"] == 3  # once per server that listens: no retry, no second ask
    assert unanswered([]) == []
