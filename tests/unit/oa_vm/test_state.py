"""Pool records: round trips, atomic writes, corrupt and future records."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from oa_vm.errors import CorruptRecordError, InvalidInputError, PoolNotFoundError
from oa_vm.model import state
from oa_vm.model.state import PoolRecord, PoolState, SshEndpoint, WorkerRecord, WorkerState


def _record(name: str = "p1") -> PoolRecord:
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    return PoolRecord(
        name=name, cloud="local", state=PoolState.READY, created_at=now,
        expires_at=now + timedelta(hours=4), owner="me", price_per_hour=0.5,
        workers=[
            WorkerRecord(name="worker-0", state=WorkerState.READY, pid=123,
                         waa_url="http://127.0.0.1:1", scoring_url="http://127.0.0.1:2"),
            WorkerRecord(name="worker-1", state=WorkerState.LOST,
                         ssh=SshEndpoint("127.0.0.1", 2222, "root", "/k")),
        ],
    )


def test_round_trip(oa_home: Path) -> None:
    record = _record()
    path = state.save(record)
    assert path == oa_home / "pools" / "p1" / "pool.json"
    loaded = state.load("p1")
    assert loaded == record
    assert loaded.created_at.tzinfo is not None
    assert json.loads(path.read_text())["version"] == state.SCHEMA_VERSION


def test_save_leaves_no_temp_files(oa_home: Path) -> None:
    state.save(_record())
    state.save(_record())
    # pool.lock: the record's lock file (state.locked), empty, kept beside it
    names = sorted(p.name for p in (oa_home / "pools" / "p1").iterdir())
    assert names == ["pool.json", "pool.lock"]


def test_unknown_pool_lists_known(oa_home: Path) -> None:
    state.save(_record("alpha"))
    with pytest.raises(PoolNotFoundError, match="alpha"):
        state.load("beta")


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "not a JSON object"),
        ('{"name": "p1"}', "no schema version"),
        ('{"version": 99, "name": "p1"}', "newer oa-vm"),
        ('{"version": 1, "name": "p1", "cloud": "local", "state": "nope", '
         '"created_at": "2026-01-01T00:00:00+00:00"}', "malformed"),
        ('{"version": 1, "name": "p1", "cloud": "local", "state": "ready", '
         '"created_at": "2026-01-01T00:00:00"}', "malformed"),
    ],
)
def test_corrupt_record_names_file_and_is_kept(oa_home: Path, content: str, reason: str) -> None:
    path = oa_home / "pools" / "p1" / "pool.json"
    path.parent.mkdir(parents=True)
    path.write_text(content)
    with pytest.raises(CorruptRecordError, match=reason) as info:
        state.load("p1")
    assert str(path) in str(info.value)
    assert path.read_text() == content


def test_iter_records_yields_corrupt_as_error(oa_home: Path) -> None:
    state.save(_record("good"))
    bad = oa_home / "pools" / "bad" / "pool.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("{")
    items = list(state.iter_records())
    assert isinstance(items[0], CorruptRecordError)
    assert isinstance(items[1], PoolRecord)


@pytest.mark.parametrize("name", ["UPPER", "-dash", "has space", "a" * 41, "x_y", ""])
def test_bad_pool_names(name: str) -> None:
    with pytest.raises(InvalidInputError):
        state.validate_pool_name(name)


@pytest.mark.parametrize("name", ["p", "p1", "waa-eval-2"])
def test_good_pool_names(name: str) -> None:
    assert state.validate_pool_name(name) == name


def test_derive_pool_state() -> None:
    ready = WorkerRecord("a", state=WorkerState.READY)
    lost = WorkerRecord("b", state=WorkerState.LOST)
    booting = WorkerRecord("c", state=WorkerState.BOOTING)
    assert state.derive_pool_state([ready, ready]) == PoolState.READY
    assert state.derive_pool_state([ready, lost]) == PoolState.DEGRADED
    assert state.derive_pool_state([lost]) == PoolState.FAILED
    assert state.derive_pool_state([ready, booting]) == PoolState.PROVISIONING
    draining = WorkerRecord("d", state=WorkerState.DRAINING)  # a spot interruption notice
    assert state.derive_pool_state([ready, draining]) == PoolState.DEGRADED
    assert WorkerRecord.from_json(draining.to_json()).state == WorkerState.DRAINING


def test_home_follows_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OA_VM_HOME", str(tmp_path / "a"))
    assert state.home() == tmp_path / "a"
    monkeypatch.setenv("OA_VM_HOME", str(tmp_path / "b"))
    assert state.pool_dir("x") == tmp_path / "b" / "pools" / "x"
