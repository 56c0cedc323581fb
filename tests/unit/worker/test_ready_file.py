"""The ready file written by ``python -m infra.local`` and in-process workers."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest
import requests

from infra.local import RunningWorker, start_worker, tasks_dir
from infra.local.__main__ import write_ready_file
from infra.local.taskstore import TaskStore, TaskStoreError


def test_ready_file_format(tmp_path: Path, in_process_worker: RunningWorker) -> None:
    path = tmp_path / "state" / "ready.json"
    started = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    write_ready_file(path, [in_process_worker], started)
    data = json.loads(path.read_text())
    assert data == {
        "pid": os.getpid(),
        "started_at": "2026-01-02T03:04:05+00:00",
        "workers": [
            {
                "name": "w",
                "host": "127.0.0.1",
                "waa_port": in_process_worker.waa_port,
                "scoring_port": in_process_worker.scoring_port,
                "waa_url": f"http://127.0.0.1:{in_process_worker.waa_port}{in_process_worker.base_path}",
                "scoring_url": f"http://127.0.0.1:{in_process_worker.scoring_port}{in_process_worker.base_path}",
                "root": str((tmp_path / "root").resolve()),
            }
        ],
    }
    assert [p.name for p in path.parent.iterdir()] == ["ready.json"]  # no temp file left
    assert path.stat().st_mode & 0o777 == 0o600  # its URLs carry the secret
    assert in_process_worker.base_path.startswith("/cap-")


def test_in_process_worker_serves_and_stops(in_process_worker: RunningWorker) -> None:
    assert in_process_worker.waa_url == f"http://127.0.0.1:{in_process_worker.waa_port}{in_process_worker.base_path}"
    probe = requests.get(f"{in_process_worker.scoring_url}/probe", timeout=5)
    assert probe.json() == {"status": "ok", "service": "evaluate"}
    in_process_worker.stop()
    in_process_worker.stop()  # idempotent
    with pytest.raises(requests.ConnectionError):
        requests.get(f"{in_process_worker.waa_url}/probe", timeout=5)


def test_bad_fault_dict_is_refused(tmp_path: Path) -> None:
    from infra.local import FaultError

    with pytest.raises(FaultError):
        start_worker("bad", tmp_path / "r", faults={"explode": 1})


def test_task_store(tmp_path: Path) -> None:
    store = TaskStore.load()
    assert store is TaskStore.load(tasks_dir())
    first = next(iter(store.index.values()))[0]
    task = store.task(first)
    assert task is not None and task["id"] == first
    assert store.task("../../etc/passwd") is None
    assert store.task("unknown-WOS") is None
    with pytest.raises(TaskStoreError):
        TaskStore(tmp_path)
    (tmp_path / "local_all.json").write_text('["not", "a", "map"]')
    with pytest.raises(TaskStoreError):
        TaskStore(tmp_path)
