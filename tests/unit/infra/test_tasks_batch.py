"""``POST /tasks/batch``: a run's tasks in one round trip, on both scoring servers, and the
catalog using it (falling back to one request a task when a server lacks it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from infra.local.worker import RunningWorker, start_worker
from tests.unit.infra.test_scoring_server import _ship, _start, _stop
from waa_client.catalog import Catalog
from waa_client.scoring import ScoringClient

TIMEOUT = 10


@pytest.fixture
def tasks_dir(tmp_path: Path) -> Path:
    root = tmp_path / "tasks"
    (root / "examples" / "notepad").mkdir(parents=True)
    ids = [f"note-{i}" for i in range(5)]
    for task_id in ids:
        task = {"id": task_id, "instruction": f"do {task_id}", "config": [],
                "evaluator": {"func": "infeasible"}}
        (root / "examples" / "notepad" / f"{task_id}.json").write_text(json.dumps(task))
    (root / "test_all.json").write_text(json.dumps({"notepad": ids}))
    return root


@pytest.fixture
def local_worker(tmp_path: Path, tasks_dir: Path) -> Iterator[RunningWorker]:
    running = start_worker("batch", tmp_path / "w", tasks=tasks_dir)
    yield running
    running.stop()


def _check_batch(url: str) -> None:
    answer = requests.post(f"{url}/tasks/batch", json={"ids": ["note-1", "nope", "note-3"]},
                           timeout=TIMEOUT)
    assert answer.status_code == 200
    body = answer.json()
    assert sorted(body["tasks"]) == ["note-1", "note-3"]
    assert body["tasks"]["note-3"]["instruction"] == "do note-3"
    assert body["missing"] == ["nope"]
    bad = requests.post(f"{url}/tasks/batch", json={"ids": "note-1"}, timeout=TIMEOUT)
    assert bad.status_code == 400 and "'ids'" in bad.json()["message"]
    # The limit is 1000 IDs per request: exactly 1000 pass, 1001 do not (the catalog sends
    # BULK_CHUNK at a time, and a server counting one too few would refuse a full chunk of a
    # client sized to the limit).
    full = requests.post(f"{url}/tasks/batch", json={"ids": ["x"] * 1000}, timeout=TIMEOUT)
    assert full.status_code == 200 and full.json()["missing"] == ["x"] * 1000
    many = requests.post(f"{url}/tasks/batch", json={"ids": ["x"] * 1001}, timeout=TIMEOUT)
    assert many.status_code == 400 and "at most 1000 IDs" in many.json()["message"]


def test_the_simulated_workers_scoring_server(local_worker: RunningWorker) -> None:
    _check_batch(local_worker.scoring_url)


def test_the_shipped_scoring_server(tmp_path: Path, tasks_dir: Path) -> None:
    server = _start(_ship(tmp_path / "ship"), tmp_path / "desktop", tasks_dir)
    try:
        _check_batch(server.url)
    finally:
        _stop(server)


class _Counting(ScoringClient):
    def __init__(self, url: str, *, bulk: bool) -> None:
        super().__init__(url)
        self.bulk = bulk
        self.single = 0
        self.batches = 0

    def task(self, task_id: str) -> dict[str, object]:
        self.single += 1
        return super().task(task_id)

    def tasks_batch(self, task_ids: list[str]) -> dict[str, dict[str, object]] | None:
        self.batches += 1
        return super().tasks_batch(task_ids) if self.bulk else None


@pytest.mark.parametrize("bulk", [True, False])
def test_the_catalog_loads_a_selection_in_one_request(
    local_worker: RunningWorker, bulk: bool
) -> None:
    client = _Counting(local_worker.scoring_url, bulk=bulk)
    try:
        catalog = Catalog.from_scoring(client)
        refs = catalog.select("all", live=False)
        assert [r.instruction for r in refs] == [f"do note-{i}" for i in range(5)]
        assert catalog.load("note-4")["id"] == "note-4"
        # with the endpoint: one bulk request; without: one request a task, same answer
        assert (client.batches, client.single) == ((1, 0) if bulk else (1, 5))
    finally:
        client.close()
