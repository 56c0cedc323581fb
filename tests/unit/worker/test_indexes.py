"""The scoring server serves every index file of its task folder by name."""

from __future__ import annotations

import json
from pathlib import Path

import requests

from infra.local import start_worker, tasks_dir
from infra.local.worker import RunningWorker

TIMEOUT = 5


def test_indexes_and_named_index(in_process_worker: RunningWorker) -> None:
    scoring = in_process_worker.scoring_url
    names = requests.get(f"{scoring}/indexes", timeout=TIMEOUT).json()["indexes"]
    assert names == ["local_all", "local_small"]
    small = requests.get(f"{scoring}/tasks", params={"index": "local_small"},
                         timeout=TIMEOUT).json()
    on_disk = json.loads((tasks_dir() / "local_small.json").read_text())
    assert small == on_disk
    main = requests.get(f"{scoring}/tasks", timeout=TIMEOUT).json()
    assert main == json.loads((tasks_dir() / "local_all.json").read_text())
    for bad in ("nope", "../local_all"):
        answer = requests.get(f"{scoring}/tasks", params={"index": bad},
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
