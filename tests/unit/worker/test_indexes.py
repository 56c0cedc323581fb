"""The scoring server serves every index file of its task folder by name."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from infra.local import start_worker, tasks_dir
from infra.local.worker import RunningWorker

TIMEOUT = 5


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[RunningWorker]:
    running = start_worker("idx", tmp_path / "w")
    yield running
    running.stop()


def test_indexes_and_named_index(worker: RunningWorker) -> None:
    names = requests.get(f"{worker.scoring_url}/indexes", timeout=TIMEOUT).json()["indexes"]
    assert names == ["local_all", "local_small"]
    small = requests.get(f"{worker.scoring_url}/tasks", params={"index": "local_small"},
                         timeout=TIMEOUT).json()
    on_disk = json.loads((tasks_dir() / "local_small.json").read_text())
    assert small == on_disk
    main = requests.get(f"{worker.scoring_url}/tasks", timeout=TIMEOUT).json()
    assert main == json.loads((tasks_dir() / "local_all.json").read_text())
    for bad in ("nope", "../local_all"):
        answer = requests.get(f"{worker.scoring_url}/tasks", params={"index": bad},
                              timeout=TIMEOUT)
        assert answer.status_code == 404 and "known: local_all, local_small" in answer.text


def test_an_index_naming_tasks_the_main_one_lacks_is_not_served(tmp_path: Path) -> None:
    folder = tmp_path / "tasks"
    (folder / "examples" / "d").mkdir(parents=True)
    (folder / "examples" / "d" / "t1.json").write_text(json.dumps({"id": "t1", "config": []}))
    (folder / "local_all.json").write_text(json.dumps({"d": ["t1"]}))
    (folder / "stray.json").write_text(json.dumps({"d": ["t1", "t2"]}))
    running = start_worker("idx2", tmp_path / "w", tasks=folder)
    try:
        names = requests.get(f"{running.scoring_url}/indexes", timeout=TIMEOUT).json()
        assert names == {"indexes": ["local_all"]}
    finally:
        running.stop()
