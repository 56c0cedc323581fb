"""Every bundled local task, end to end against a real worker process.

Each feasible task: setup, its reference solution (pyautogui source, WAA's real action format)
through ``/execute_windows`` and then as the ``python -c`` command WAA's client sends to
``/execute``, ``/evaluate`` with DONE scores 1.0 each time on the same worker (setup must reset
what the task checks); then setup and nothing else scores 0.0. Each infeasible task: FAIL
scores 1.0 and DONE 0.0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests

from infra.local import tasks_dir
from tests.support.worker_proc import WorkerProcess

pytestmark = pytest.mark.integration
TIMEOUT = 60

INDEX: dict[str, list[str]] = json.loads((tasks_dir() / "local_all.json").read_text("utf-8"))
TASK_IDS = [task_id for ids in INDEX.values() for task_id in ids]


def _task(worker: WorkerProcess, task_id: str) -> dict[str, Any]:
    response = requests.get(f"{worker.scoring_url}/task/{task_id}", timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    task: dict[str, Any] = response.json()
    return task


def _setup(worker: WorkerProcess, task: dict[str, Any]) -> None:
    response = requests.post(
        f"{worker.scoring_url}/setup", json={"config": task["config"]}, timeout=TIMEOUT
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "ok"
    assert len(body["results"]) == len(task["config"])


WAA_PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; {command}"


def _solve(worker: WorkerProcess, task: dict[str, Any], form: str = "execute_windows") -> str:
    *actions, last = task["reference_solution"]
    for action in actions:
        if form == "execute_windows":
            url, body = f"{worker.waa_url}/execute_windows", {"command": action}
        else:  # PythonController.execute_python_command's shape
            command = ["python", "-c", WAA_PREFIX.format(command=action)]
            url, body = f"{worker.waa_url}/execute", {"command": command, "shell": False}
        response = requests.post(url, json=body, timeout=TIMEOUT)
        assert response.status_code == 200, f"{action}: {response.text}"
        assert response.json()["returncode"] == 0, f"{action}: {response.text}"
    return str(last)


def _score(worker: WorkerProcess, task: dict[str, Any], last_action: str) -> float:
    response = requests.post(
        f"{worker.scoring_url}/evaluate",
        json={"task": task, "last_action": last_action},
        timeout=TIMEOUT,
    )
    assert response.status_code == 200, response.text
    verdict = response.json()
    assert set(verdict) == {"score", "success", "reason"}
    assert verdict["success"] == (verdict["score"] == 1.0)
    return float(verdict["score"])


def test_index_lists_every_bundled_file(shared_worker: WorkerProcess) -> None:
    served = requests.get(f"{shared_worker.scoring_url}/tasks", timeout=TIMEOUT).json()
    assert served == INDEX
    on_disk = {p.stem for p in (tasks_dir() / "examples").glob("*/*.json")}
    assert on_disk == set(TASK_IDS)


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_task_scores_like_waa(shared_worker: WorkerProcess, task_id: str) -> None:
    task = _task(shared_worker, task_id)
    if task["evaluator"]["func"] == "infeasible":
        assert task["reference_solution"] == ["FAIL"]
        _setup(shared_worker, task)
        assert _score(shared_worker, task, "FAIL") == 1.0
        assert _score(shared_worker, task, "DONE") == 0.0
        return
    for form in ("execute_windows", "python -c"):
        _setup(shared_worker, task)
        assert _solve(shared_worker, task, form) == "DONE"
        assert _score(shared_worker, task, "DONE") == 1.0
    _setup(shared_worker, task)
    assert _score(shared_worker, task, "DONE") == 0.0
    _setup(shared_worker, task)
    assert _solve(shared_worker, task) == "DONE"
    assert _score(shared_worker, task, "FAIL") == 0.0


def test_bundled_suite_shape() -> None:
    tasks = [
        json.loads(p.read_text("utf-8")) for p in (tasks_dir() / "examples").glob("*/*.json")
    ]
    assert len(tasks) >= 20 and len(INDEX) >= 4
    infeasible = [t for t in tasks if t["evaluator"]["func"] == "infeasible"]
    assert len(infeasible) >= 2 and all(t["id"].startswith("INF-") for t in infeasible)
    assert sum(isinstance(t["evaluator"]["func"], list) for t in tasks) >= 2
    assert any(t["evaluator"].get("conj") == "or" for t in tasks)
    small = json.loads((tasks_dir() / "local_small.json").read_text("utf-8"))
    assert {i for ids in small.values() for i in ids} <= set(TASK_IDS)
    assert not list(tasks_dir().glob("test_*.json"))
    for path in (tasks_dir() / "examples").glob("*/*.json"):
        task = json.loads(path.read_text("utf-8"))
        assert task["id"] == path.stem and path.stem in INDEX[path.parent.name]
        assert task["reference_solution"][-1] in ("DONE", "FAIL")
        assert all(a.startswith("import pyautogui\n") for a in task["reference_solution"][:-1])
    clicking = [t for t in tasks if any(
        "pyautogui.click(" in a or "dragTo(" in a for a in t["reference_solution"])]
    assert len(clicking) * 3 >= len(tasks)


def test_waa_data_is_readable_by_the_task_store(waa_data: Path) -> None:
    from infra.local.taskstore import TaskStore

    store = TaskStore(waa_data)
    some_id = next(iter(store.index.values()))[0]
    task = store.task(some_id)
    assert task is not None and "evaluator" in task
