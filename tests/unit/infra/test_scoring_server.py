"""The scoring server as shipped: loose files in a folder, run by a real Python on loopback.

WAA's evaluator modules are replaced by a stand-in package (``tests/support/fake_waa_evaluators``)
with the same shape; everything else (HTTP, rule combination, setup dispatch) is the real thing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

ROOT = Path(__file__).resolve().parents[3]
STAND_IN = ROOT / "tests" / "support" / "fake_waa_evaluators"
TIMEOUT = 10


@dataclass
class Server:
    url: str
    desktop: Path
    process: subprocess.Popen[str]


def _ship(folder: Path) -> Path:
    """Lay the files out as cloud-init does on a host: side by side, no package."""
    folder.mkdir()
    shutil.copy(ROOT / "infra" / "worker" / "scoring_server.py", folder)
    shutil.copy(ROOT / "infra" / "worker" / "relay.py", folder)
    shutil.copy(ROOT / "infra" / "scoring_rules.py", folder)
    return folder


def _start(ship: Path, desktop: Path, tasks_dir: Path, index: str = "test_all.json") -> Server:
    desktop.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["FAKE_WAA_DESKTOP"] = str(desktop)
    process = subprocess.Popen(
        [sys.executable, str(ship / "scoring_server.py"), "--host", "127.0.0.1", "--port", "0",
         "--waa-client", str(STAND_IN), "--tasks-dir", str(tasks_dir), "--index", index,
         "--cache-dir", str(desktop.parent / "cache")],
        cwd=ship, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("listening on "):
        process.kill()
        raise AssertionError(f"scoring server did not start: {line!r}")
    return Server(url=line.split()[-1], desktop=desktop, process=process)


def _stop(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait(timeout=TIMEOUT)


@pytest.fixture
def tasks_dir(tmp_path: Path) -> Path:
    """A tiny task folder in WAA's layout (index + examples/<domain>/<id>.json)."""
    root = tmp_path / "tasks"
    (root / "examples" / "notepad").mkdir(parents=True)
    task = {"id": "inner-id-differs", "instruction": "write hi", "config": [],
            "evaluator": {"func": "exact_match",
                          "result": {"type": "vm_file", "path": "C:\\a.txt"},
                          "expected": {"type": "rule", "rules": {"expected": "hi"}}}}
    (root / "examples" / "notepad" / "note-1.json").write_text(json.dumps(task))
    (root / "test_all.json").write_text(json.dumps({"notepad": ["note-1"]}))
    return root


@pytest.fixture
def server(tmp_path: Path, tasks_dir: Path) -> Iterator[Server]:
    srv = _start(_ship(tmp_path / "ship"), tmp_path / "desktop", tasks_dir)
    yield srv
    _stop(srv)


def _task(func: Any, result: Any = None, expected: Any = None, **extra: Any) -> dict[str, Any]:
    evaluator: dict[str, Any] = {"func": func, **extra}
    if result is not None:
        evaluator["result"] = result
    if expected is not None:
        evaluator["expected"] = expected
    return {"id": "t", "evaluator": evaluator}


FILE_A = {"type": "vm_file", "path": "C:\\Users\\Docker\\a.txt"}


def _rule(value: str) -> dict[str, Any]:
    return {"type": "rule", "rules": {"expected": value}}


def _evaluate(server: Server, task: dict[str, Any], last: str | None = "DONE") -> requests.Response:
    return requests.post(f"{server.url}/evaluate", json={"task": task, "last_action": last},
                         timeout=TIMEOUT)


def test_probe(server: Server) -> None:
    response = requests.get(f"{server.url}/probe", timeout=TIMEOUT)
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "service": "evaluate"}


def test_setup_then_evaluate_success_and_failure(server: Server) -> None:
    setup = requests.post(
        f"{server.url}/setup",
        json={"config": [{"type": "create_file",
                          "parameters": {"path": FILE_A["path"], "content": "hello"}},
                         {"type": "sleep", "parameters": {"seconds": 1}}]},
        timeout=TIMEOUT,
    )
    assert setup.status_code == 200
    assert setup.json() == {"status": "ok", "results": [{"type": "create_file", "status": "ok"},
                                                        {"type": "sleep", "status": "ok"}]}
    good = _evaluate(server, _task("exact_match", FILE_A, _rule("hello")))
    assert good.status_code == 200
    assert good.json()["score"] == 1.0 and good.json()["success"] is True
    bad = _evaluate(server, _task("exact_match", FILE_A, _rule("bye")))
    assert bad.json()["score"] == 0.0 and bad.json()["success"] is False


def test_failed_setup_step_is_422_and_later_steps_are_skipped(server: Server) -> None:
    response = requests.post(
        f"{server.url}/setup",
        json={"config": [{"type": "launch", "parameters": {"command": "notepad"}},
                         {"type": "create_file", "parameters": {"path": "x.txt"}}]},
        timeout=TIMEOUT,
    )
    assert response.status_code == 422
    body = response.json()
    assert body["status"] == "error"
    assert body["results"][0]["status"] == "error" and "notepad" in body["results"][0]["error"]
    assert body["results"][1] == {"type": "create_file", "status": "skipped"}
    assert not (server.desktop / "x.txt").exists()


def test_unknown_setup_step_type_is_reported(server: Server) -> None:
    response = requests.post(f"{server.url}/setup", json={"config": [{"type": "teleport"}]},
                             timeout=TIMEOUT)
    assert response.status_code == 422
    assert "unknown setup step type 'teleport'" in response.json()["results"][0]["error"]


def test_postconfig_runs_before_checking(server: Server) -> None:
    task = _task("exact_match", FILE_A, _rule("made by postconfig"), postconfig=[
        {"type": "create_file", "parameters": {"path": FILE_A["path"],
                                               "content": "made by postconfig"}}])
    assert _evaluate(server, task).json()["score"] == 1.0


def test_a_failing_postconfig_is_an_error_not_a_score(server: Server) -> None:
    task = _task("exact_match", FILE_A, _rule("x"),
                 postconfig=[{"type": "launch", "parameters": {"command": "calc"}}])
    response = _evaluate(server, task)
    assert response.status_code == 500
    assert "postconfig step 'launch' failed" in response.json()["message"]


@pytest.mark.parametrize(("last", "score"), [("FAIL", 1.0), ("DONE", 0.0), (None, 0.0)])
def test_infeasible_tasks_score_fail_answers(
    server: Server, last: str | None, score: float
) -> None:
    assert _evaluate(server, _task("infeasible"), last).json()["score"] == score


def test_feasible_task_answered_fail_scores_zero_without_checking(server: Server) -> None:
    response = _evaluate(server, _task("exact_match", FILE_A, _rule("x")), "FAIL")
    assert response.json() == {"score": 0.0, "success": False,
                               "reason": "feasible task, agent answered FAIL"}


def test_a_getter_that_raises_scores_zero(server: Server) -> None:
    task = _task("is_nonempty", {"type": "vm_command_line", "command": "dir"})
    body = _evaluate(server, task).json()
    assert body["score"] == 0.0 and "getter failed" in body["reason"]


def test_several_metrics_with_or(server: Server) -> None:
    (server.desktop / "a.txt").write_text("hello world")
    task = _task(["exact_match", "check_include_exclude"],
                 [FILE_A, FILE_A],
                 [_rule("nope"), {"type": "rule", "rules": {"include": ["world"]}}],
                 conj="or")
    assert _evaluate(server, task).json()["score"] == 1.0


def test_unknown_metric_is_422(server: Server) -> None:
    response = _evaluate(server, _task("no_such_metric", FILE_A))
    assert response.status_code == 422
    assert "unknown metric 'no_such_metric'" in response.json()["message"]


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/evaluate", b"{not json", 400),
        ("/evaluate", b"[1, 2]", 400),
        ("/evaluate", b'{"task": "nope"}', 400),
        ("/setup", b'{"config": {}}', 400),
        ("/nowhere", b"{}", 404),
    ],
)
def test_bad_requests_get_one_json_error(
    server: Server, path: str, body: bytes, status: int
) -> None:
    response = requests.post(f"{server.url}{path}", data=body, timeout=TIMEOUT,
                             headers={"Content-Type": "application/json"})
    assert response.status_code == status
    assert response.json()["status"] == "error" and response.json()["message"]


def test_tasks_and_task_by_index_id(server: Server) -> None:
    assert requests.get(f"{server.url}/tasks", timeout=TIMEOUT).json() == {"notepad": ["note-1"]}
    task = requests.get(f"{server.url}/task/note-1", timeout=TIMEOUT)
    assert task.status_code == 200 and task.json()["id"] == "inner-id-differs"
    for unknown in ("nope", "..%2F..%2Fetc%2Fpasswd"):
        missing = requests.get(f"{server.url}/task/{unknown}", timeout=TIMEOUT)
        assert missing.status_code == 404 and missing.json()["status"] == "error"


def test_real_waa_index_is_served(tmp_path: Path, waa_data: Path) -> None:
    srv = _start(_ship(tmp_path / "ship"), tmp_path / "desktop", waa_data)
    try:
        index = requests.get(f"{srv.url}/tasks", timeout=TIMEOUT).json()
        assert len(index) == 12 and sum(len(ids) for ids in index.values()) == 154
        names = requests.get(f"{srv.url}/indexes", timeout=TIMEOUT).json()["indexes"]
        assert names[0] == "test_all" and "test_small" in names
        small = requests.get(f"{srv.url}/tasks", params={"index": "test_small"},
                             timeout=TIMEOUT).json()
        assert sum(len(ids) for ids in small.values()) == 6
        bad = requests.get(f"{srv.url}/tasks", params={"index": "../etc"}, timeout=TIMEOUT)
        assert bad.status_code == 404
        domain, ids = next(iter(index.items()))
        task = requests.get(f"{srv.url}/task/{ids[0]}", timeout=TIMEOUT)
        assert task.status_code == 200 and "evaluator" in task.json()
    finally:
        _stop(srv)


def test_relay_joins_stdin_and_stdout_to_the_server(server: Server, tmp_path: Path) -> None:
    """The far end of the 5050 -> 5051 bridge, as ``docker exec -i`` would run it."""
    port = server.url.rsplit(":", 1)[1]
    request = "GET /probe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    done = subprocess.run(
        [sys.executable, str(ROOT / "infra" / "worker" / "relay.py"), port],
        input=request.encode(), capture_output=True, timeout=TIMEOUT, check=True,
    )
    head, _, body = done.stdout.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert json.loads(body) == {"status": "ok", "service": "evaluate"}


def test_relay_says_when_nothing_listens() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "infra" / "worker" / "relay.py"), "1"],
                          input=b"", capture_output=True, timeout=TIMEOUT, check=False)
    assert done.returncode == 1 and b"cannot reach 127.0.0.1:1" in done.stderr


def test_missing_waa_code_is_one_clear_line(tmp_path: Path, tasks_dir: Path) -> None:
    ship = _ship(tmp_path / "ship")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, str(ship / "scoring_server.py"), "--port", "0",
         "--waa-client", str(tmp_path / "nothing-here"), "--tasks-dir", str(tasks_dir)],
        cwd=ship, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "--waa-client" in done.stderr
