"""The rules behind replacing a draining worker (:mod:`oa_vm.fleet`): its notice's time, the
next name, who stands for whom, and when a replaced draining worker is retired."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from infra.settings import SettingsError
from oa_vm.model.state import PoolRecord, PoolState, WorkerRecord, WorkerState
from oa_vm.reach import replacements
from oa_vm.reach.drain import notice_time
from tests.support.pool_programs import make_settings

NOW = datetime(2026, 11, 30, 22, 0, 0, tzinfo=UTC)


def _draining(name: str, at: str) -> WorkerRecord:
    return WorkerRecord(name=name, state=WorkerState.DRAINING, phase="draining",
                        detail=f"AWS spot interruption notice: terminate at {at}; no new task")


def _pool(*workers: WorkerRecord, replaced: dict[str, str] | None = None) -> PoolRecord:
    record = PoolRecord(name="p", cloud="aws", state=PoolState.DEGRADED, created_at=NOW,
                        workers=list(workers))
    if replaced:
        record.provider_data[replacements.REPLACED_BY] = replaced
    return record


def test_notice_time_reads_both_clouds_notices() -> None:
    assert notice_time(_draining("w", "2026-11-30T22:02:00Z")) == NOW + timedelta(minutes=2)
    azure = WorkerRecord(name="w", state=WorkerState.DRAINING, detail=(
        "Azure Spot eviction notice: Preempt at Mon, 30 Nov 2026 22:00:30 GMT; no new task"))
    assert notice_time(azure) == NOW + timedelta(seconds=30)
    assert notice_time(_draining("w", "unknown")) is None  # a watcher that got no time
    by_hand = WorkerRecord(name="w", state=WorkerState.DRAINING, detail="draining")
    assert notice_time(by_hand) is None
    ready = _draining("w", "2026-11-30T22:02:00Z")
    ready.state = WorkerState.READY  # only a draining worker has a notice
    assert notice_time(ready) is None


def test_names_are_never_given_twice() -> None:
    record = _pool(WorkerRecord(name="p-w0"), WorkerRecord(name="p-w1"))
    assert replacements.next_worker_name(record) == "p-w2"
    # p-w2 replaced p-w1 and was itself retired after being replaced by p-w3: p-w4 is next
    record = _pool(WorkerRecord(name="p-w0"), WorkerRecord(name="p-w3"),
                   replaced={"p-w1": "p-w2", "p-w2": "p-w3"})
    assert replacements.next_worker_name(record) == "p-w4"
    assert replacements.successor(record, "p-w1") == "p-w3"  # the chain is followed
    assert replacements.successor(record, "p-w0") == "p-w0"


def test_which_replaced_draining_workers_are_retired() -> None:
    due_later = _draining("p-w0", "2026-11-30T22:02:00Z")
    past = _draining("p-w1", "2026-11-30T21:50:00Z")  # more than the grace ago
    just_past = _draining("p-w2", "2026-11-30T21:59:00Z")  # within the grace
    gone = WorkerRecord(name="p-w3", state=WorkerState.LOST)
    unreplaced = _draining("p-w4", "2026-11-30T21:00:00Z")
    record = _pool(due_later, past, just_past, gone, unreplaced, replaced={
        n: f"new-{n}" for n in ("p-w0", "p-w1", "p-w2", "p-w3")})
    assert replacements.to_retire(record, None, now=NOW) == ["p-w1", "p-w3"]
    assert replacements.to_retire(record, ["p-w0"], now=NOW) == ["p-w0", "p-w1", "p-w3"]
    assert replacements.needs_replacement(record) == ["p-w4"]


def test_worker_numbers_in_the_program_settings() -> None:
    assert make_settings("aws", workers=2).worker_names() == ["waa-eval-w0", "waa-eval-w1"]
    kept = make_settings("aws", workers=2, indexes=(0, 2))
    assert kept.worker_names() == ["waa-eval-w0", "waa-eval-w2"]
    for bad in ((), (1, 1), (-1,)):
        with pytest.raises(SettingsError, match="worker numbers"):
            make_settings("aws", workers=1, indexes=bad).validate(allow_placeholders=True)


def test_the_chain_is_a_typed_record_kept_as_records_always_kept_it(oa_home: Path) -> None:
    from oa_vm.model import state

    # a record written before the chain had a type: the same {draining: replacement} object
    old = _pool(WorkerRecord(name="p-w0"), WorkerRecord(name="p-w2"))
    old.provider_data["replaced_by"] = {"p-w1": "p-w2"}
    state.save(old)
    loaded = state.load("p")
    chain = replacements.ReplacementChain.of(loaded)
    assert chain == replacements.ReplacementChain((("p-w1", "p-w2"),))
    grown = chain.with_link("p-w2", "p-w3")
    assert grown.successor("p-w1") == "p-w3" and grown.names() == {"p-w1", "p-w2", "p-w3"}
    assert chain.links == (("p-w1", "p-w2"),)  # frozen: extending makes a new chain
    replacements.add_replacement(loaded, "p-w2", "p-w3")
    state.save(loaded)
    assert state.load("p").provider_data["replaced_by"] == {"p-w1": "p-w2", "p-w2": "p-w3"}
    for junk in (None, [], "p-w1", {"": "x", "p-w9": ""}):
        assert replacements.ReplacementChain.from_json(junk) == replacements.ReplacementChain()
    assert replacements.ReplacementChain.from_json(grown.to_json()) == grown
