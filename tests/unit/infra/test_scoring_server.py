"""The scoring server as shipped, on WAA's own code, against a simulated guest.

The server runs as cloud-init lays it out (loose files side by side, a real Python process on
loopback) with ``--waa-client`` pointing at WAA's real client code in ``../shared/waa/upstream``:
its getters, metrics, ``PythonController`` and ``SetupController`` are WAA's, unmodified. The
libraries of ``tests/support/waa_stubs.HEAVY_OPTIONAL`` that are not installed are stubbed at
import only (through a ``sitecustomize`` on the child's ``PYTHONPATH``); none of the getters
and metrics used here touch them.

WAA's controllers talk to ``http://<vm_ip>:5000``; the guest is a real simulated worker
(``python -m infra.local``) listening on port 5000 of a random 127.x.y.z address.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.support.waa_upstream import WAA_CLIENT, stub_pythonpath
from tests.support.worker_proc import WorkerProcess, WorkerStartError, start_worker_process

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
TIMEOUT = 30
DOCS = "C:\\Users\\Docker\\Documents"
FILE_A = f"{DOCS}\\a.txt"


@dataclass
class Server:
    url: str
    cache: Path
    process: subprocess.Popen[str]


def _ship(folder: Path) -> Path:
    """Lay the files out as cloud-init does on a host: side by side, no package."""
    folder.mkdir()
    shutil.copy(ROOT / "infra" / "worker" / "scoring_server.py", folder)
    shutil.copy(ROOT / "infra" / "worker" / "relay.py", folder)
    shutil.copy(ROOT / "infra" / "scoring_rules.py", folder)
    return folder


def _start(tmp_path: Path, vm_ip: str, tasks_dir: Path, index: str = "test_all.json") -> Server:
    if not (WAA_CLIENT / "desktop_env").is_dir():
        pytest.skip("WAA's upstream code not found at ../shared/waa/upstream")
    ship = _ship(tmp_path / "ship")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(stub_pythonpath(tmp_path / "stubs"))
    cache = tmp_path / "cache"
    process = subprocess.Popen(
        [sys.executable, str(ship / "scoring_server.py"), "--host", "127.0.0.1", "--port", "0",
         "--waa-client", str(WAA_CLIENT), "--tasks-dir", str(tasks_dir), "--index", index,
         "--vm-ip", vm_ip, "--cache-dir", str(cache)],
        cwd=ship, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    assert process.stdout is not None
    seen = []
    for _ in range(200):  # WAA's modules may print while they are imported
        line = process.stdout.readline()
        seen.append(line)
        if line.startswith("listening on ") or not line:
            break
    if not seen[-1].startswith("listening on "):
        process.kill()
        raise AssertionError(f"scoring server did not start: {seen[-5:]!r}")
    return Server(url=seen[-1].split()[-1], cache=cache, process=process)


def _stop(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait(timeout=TIMEOUT)


def _free_loopback() -> str:
    return f"127.{random.randint(1, 254)}.{random.randint(1, 254)}.{random.randint(2, 254)}"


@contextlib.contextmanager
def _guest(folder: Path) -> Iterator[tuple[str, WorkerProcess]]:
    """A simulated worker whose WAA server listens on <random 127.x.y.z>:5000, its files
    under ``folder``."""
    for _ in range(5):
        ip = _free_loopback()
        try:
            # WAA's controllers call http://<vm_ip>:5000 with no room for a secret prefix,
            # as the guest of a real worker (reached only inside its container) asks for none.
            worker = start_worker_process(folder / f"guest-{ip}", auth=False,
                                          extra_args=["--host", ip, "--waa-port", "5000"])
        except WorkerStartError:
            continue  # port 5000 taken on that address: try another one
        try:
            yield ip, worker
        finally:
            try:
                worker.stop()
            finally:
                worker.kill()
        return
    raise AssertionError("no free 127.x.y.z:5000 for the simulated guest")


def _tasks_dir(folder: Path) -> Path:
    """A tiny task folder in WAA's layout (index + examples/<domain>/<id>.json)."""
    root = folder / "tasks"
    (root / "examples" / "notepad").mkdir(parents=True)
    task = {"id": "inner-id-differs", "instruction": "write hi", "config": [],
            "evaluator": {"func": "exact_match", "result": _read(FILE_A),
                          "expected": _rule("hi")}}
    (root / "examples" / "notepad" / "note-1.json").write_text(json.dumps(task))
    (root / "test_all.json").write_text(json.dumps({"notepad": ["note-1"]}))
    return root


@pytest.fixture
def guest(tmp_path: Path) -> Iterator[tuple[str, WorkerProcess]]:
    """A simulated guest for this test alone (it may write to the guest's files)."""
    with _guest(tmp_path) as found:
        yield found


@pytest.fixture
def tasks_dir(tmp_path: Path) -> Path:
    """The tiny task folder, in the test's own folder."""
    return _tasks_dir(tmp_path)


@pytest.fixture
def server(tmp_path: Path, guest: tuple[str, WorkerProcess], tasks_dir: Path) -> Iterator[Server]:
    """A scoring server over :func:`guest` for this test alone: for a test whose setup or
    getters change the guest's files or the server's cache."""
    srv = _start(tmp_path, guest[0], tasks_dir)
    yield srv
    _stop(srv)


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One scoring server and guest that the module's tests share when they change nothing
    there: they probe, or are refused or scored without writing to the guest or the cache
    (both processes import a lot: one pair per test cost about a second of CPU each)."""
    folder = tmp_path_factory.mktemp("shared-server")
    with _guest(folder) as found:
        srv = _start(folder, found[0], _tasks_dir(folder))
        try:
            yield srv
        finally:
            _stop(srv)


def _task(func: Any, result: Any = None, expected: Any = None, task_id: str = "t",
          **extra: Any) -> dict[str, Any]:
    evaluator: dict[str, Any] = {"func": func, **extra}
    if result is not None:
        evaluator["result"] = result
    if expected is not None:
        evaluator["expected"] = expected
    return {"id": task_id, "evaluator": evaluator}


def _read(path: str) -> dict[str, Any]:
    """WAA's get_vm_command_line, run by the guest (``read`` prints a file)."""
    return {"type": "vm_command_line", "command": f'read "{path}"'}


def _rule(value: Any) -> dict[str, Any]:
    return {"type": "rule", "rules": {"expected": value}}


def _create(path: str, content: str) -> dict[str, Any]:
    return {"type": "create_file", "parameters": {"path": path, "content": content}}


def _setup(server: Server, steps: list[Any], **extra: Any) -> requests.Response:
    return requests.post(f"{server.url}/setup", json={"config": steps, **extra}, timeout=TIMEOUT)


def _evaluate(server: Server, task: dict[str, Any], last: str | None = "DONE") -> requests.Response:
    return requests.post(f"{server.url}/evaluate", json={"task": task, "last_action": last},
                         timeout=TIMEOUT)


def _guest_file(worker: WorkerProcess, path: str) -> bytes | None:
    answer = requests.post(f"{worker.waa_url}/file", data={"file_path": path}, timeout=TIMEOUT)
    return answer.content if answer.status_code == 200 else None


def test_probe(shared_server: Server) -> None:
    response = requests.get(f"{shared_server.url}/probe", timeout=TIMEOUT)
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "service": "evaluate"}


def test_setup_by_waas_controller_then_waas_getter_and_metric(
    server: Server, guest: tuple[str, WorkerProcess]
) -> None:
    setup = _setup(server, [_create(FILE_A, "hello"), {"type": "sleep",
                                                       "parameters": {"seconds": 0}}],
                   task_id="task-1")
    assert setup.status_code == 200, setup.text
    assert setup.json() == {"status": "ok", "results": [{"type": "create_file", "status": "ok"},
                                                        {"type": "sleep", "status": "ok"}]}
    assert _guest_file(guest[1], FILE_A) == b"hello"  # WAA's SetupController reached the guest
    assert (server.cache / "task-1").is_dir()  # a cache folder per task, from setup on
    good = _evaluate(server, _task("exact_match", _read(FILE_A), _rule("hello")))
    assert good.status_code == 200, good.text
    assert good.json()["score"] == 1.0 and good.json()["success"] is True
    bad = _evaluate(server, _task("exact_match", _read(FILE_A), _rule("bye")))
    assert bad.json()["score"] == 0.0 and bad.json()["success"] is False


def _guest_run(worker: WorkerProcess, command: str) -> None:
    answer = requests.post(f"{worker.waa_url}/execute", json={"command": command},
                           timeout=TIMEOUT)
    assert answer.status_code == 200 and answer.json().get("returncode") == 0, answer.text


@pytest.mark.parametrize(("short", "task_id", "computed", "typed"), [
    ("product", "windows_calc/2c82e242-3aa1-5fd4-b0ce-53a678d42149-WOS", "calc 1234*5678",
     'type "7006652"'),
    ("days", "windows_calc/96f46cd3-9572-592e-b6d8-d0b0c4609e33-WOS",
     "calc days 2024-01-03 2024-08-20", 'type "230"'),
])
def test_waas_getter_and_metric_read_the_calculators_history(
    server: Server, guest: tuple[str, WorkerProcess], short: str, task_id: str, computed: str,
    typed: str,
) -> None:
    # The history check of a shipped calculator task, scored by WAA's own get_vm_command_line
    # (the guest's /execute) and check_include_exclude: 1 once computed, 0 when only typed.
    shipped = json.loads((ROOT / "infra" / "local" / "tasks" / "examples" /
                          f"{task_id}.json").read_text(encoding="utf-8"))["evaluator"]
    where = shipped["func"].index("check_include_exclude")
    history = _task("check_include_exclude", shipped["result"][where],
                    shipped["expected"][where])
    assert history["evaluator"]["result"] == {"type": "vm_command_line",
                                              "command": "calc history"}
    for answer, score in ((typed, 0.0), (computed, 1.0)):
        assert _setup(server, [{"type": "close_all", "parameters": {}},
                               {"type": "launch", "parameters": {"command": "calc"}}]).ok
        _guest_run(guest[1], answer)
        verdict = _evaluate(server, history)
        assert verdict.status_code == 200, verdict.text
        assert verdict.json()["score"] == score, (short, answer, verdict.json())


def test_waas_vm_file_getter_fills_the_tasks_own_cache(server: Server) -> None:
    other = f"{DOCS}\\b.txt"
    assert _setup(server, [_create(FILE_A, "same text"), _create(other, "same text")]).ok
    task = _task("compare_text_file", {"type": "vm_file", "path": FILE_A, "dest": "a.txt"},
                 {"type": "vm_file", "path": other, "dest": "b.txt"}, task_id="cmp-task")
    answer = _evaluate(server, task)
    assert answer.status_code == 200, answer.text
    assert answer.json()["score"] == 1.0
    assert (server.cache / "cmp-task" / "a.txt").read_text() == "same text"
    missing = _task("compare_text_file",
                    {"type": "vm_file", "path": f"{DOCS}\\none.txt", "dest": "n.txt"},
                    {"type": "vm_file", "path": other, "dest": "b.txt"}, task_id="cmp-2")
    assert _evaluate(server, missing).json()["score"] == 0.0  # WAA: get_vm_file gives None


@pytest.mark.parametrize("task_id", ["../escaped", "a/../../escaped"])
def test_a_task_id_never_names_a_cache_folder_outside_the_cache(
    server: Server, task_id: str
) -> None:
    """The task's cache folder is named after its ID only when the ID is a plain name: an ID
    from a request must not lead WAA's getters to write outside the cache."""
    other = f"{DOCS}\\b.txt"
    assert _setup(server, [_create(FILE_A, "same text"), _create(other, "same text")]).ok
    task = _task("compare_text_file", {"type": "vm_file", "path": FILE_A, "dest": "a.txt"},
                 {"type": "vm_file", "path": other, "dest": "b.txt"}, task_id=task_id)
    answer = _evaluate(server, task)
    assert answer.status_code == 200, answer.text
    assert (server.cache / "_no_task_id" / "a.txt").read_text() == "same text"
    assert not (server.cache.parent / "escaped").exists()


def test_waas_file_exists_getter(server: Server) -> None:
    assert _setup(server, [_create(FILE_A, "x")]).ok
    exists = {"type": "vm_file_exists_in_vm_folder", "folder_name": DOCS, "file_name": "a.txt"}
    absent = {**exists, "file_name": "zzz.txt"}
    assert _evaluate(server, _task("exact_match", exists, _rule(1.0))).json()["score"] == 1.0
    assert _evaluate(server, _task("exact_match", absent, _rule(1.0))).json()["score"] == 0.0


def test_a_step_waas_setup_controller_swallows_is_still_a_setup_error(
    server: Server, guest: tuple[str, WorkerProcess]
) -> None:
    """WAA's _activate_window_setup logs the guest's 404 and returns; the server notices."""
    later = f"{DOCS}\\later.txt"
    response = _setup(server, [{"type": "activate_window",
                                "parameters": {"window_name": "No Such Window", "strict": True}},
                               _create(later, "x")])
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["status"] == "error"
    assert body["results"][0]["status"] == "error"
    assert "No Such Window" in body["results"][0]["error"]
    assert body["results"][1] == {"type": "create_file", "status": "skipped"}
    assert _guest_file(guest[1], later) is None


def test_an_unreachable_guest_fails_setup_instead_of_passing_silently(
    tmp_path: Path, tasks_dir: Path
) -> None:
    srv = _start(tmp_path, _free_loopback(), tasks_dir)  # nothing listens there
    try:
        response = _setup(srv, [_create(FILE_A, "x")])
        assert response.status_code == 422, response.text
        assert response.json()["results"][0]["status"] == "error"
    finally:
        _stop(srv)


def test_unknown_setup_step_type_is_reported(shared_server: Server) -> None:
    response = _setup(shared_server, [{"type": "teleport"}])
    assert response.status_code == 422
    assert "unknown setup step type 'teleport'" in response.json()["results"][0]["error"]


def test_postconfig_runs_before_checking(server: Server) -> None:
    task = _task("exact_match", _read(FILE_A), _rule("made by postconfig"),
                 postconfig=[_create(FILE_A, "made by postconfig")])
    assert _evaluate(server, task).json()["score"] == 1.0


def test_a_failing_postconfig_is_an_error_not_a_score(shared_server: Server) -> None:
    task = _task("exact_match", _read(FILE_A), _rule("x"),
                 postconfig=[{"type": "activate_window",
                              "parameters": {"window_name": "No Such Window", "strict": True}}])
    response = _evaluate(shared_server, task)
    assert response.status_code == 500
    assert "postconfig step 'activate_window' failed" in response.json()["message"]


@pytest.mark.parametrize(("last", "score"),
                         [("FAIL", 1.0), ("fail", 0.0), ("DONE", 0.0), (None, 0.0)])
def test_infeasible_tasks_score_fail_answers(
    shared_server: Server, last: str | None, score: float
) -> None:
    assert _evaluate(shared_server, _task("infeasible"), last).json()["score"] == score


def test_feasible_task_answered_fail_scores_zero_without_checking(shared_server: Server) -> None:
    response = _evaluate(shared_server, _task("exact_match", _read(FILE_A), _rule("x")), "FAIL")
    assert response.json() == {"score": 0.0, "success": False,
                               "reason": "feasible task, agent answered FAIL"}


def test_a_result_getter_that_raises_scores_zero(shared_server: Server) -> None:
    # WAA's get_vm_file reads config["dest"]: without it the getter raises, and WAA scores 0.
    task = _task("compare_text_file", {"type": "vm_file", "path": FILE_A}, None)
    body = _evaluate(shared_server, task).json()
    assert body["score"] == 0.0 and "result getter failed" in body["reason"]


def test_an_expected_getter_that_raises_is_an_evaluation_error(server: Server) -> None:
    task = _task("compare_text_file", {"type": "vm_file", "path": FILE_A, "dest": "a.txt"},
                 {"type": "vm_file", "path": FILE_A})
    response = _evaluate(server, task)
    assert response.status_code == 422
    assert "WAA's checker cannot score this task" in response.json()["message"]


def test_several_metrics_with_or(server: Server) -> None:
    assert _setup(server, [_create(FILE_A, "hello world")]).ok
    task = _task(["exact_match", "check_include_exclude"], [_read(FILE_A), _read(FILE_A)],
                 [_rule("nope"), {"type": "rule", "rules": {"include": ["world"]}}], conj="or")
    assert _evaluate(server, task).json()["score"] == 1.0


def test_a_metric_list_without_expected_is_an_evaluation_error(shared_server: Server) -> None:
    task = _task(["exact_match", "exact_match"], [_read(FILE_A), _read(FILE_A)])
    assert _evaluate(shared_server, task).status_code == 422


def test_unknown_metric_is_422(shared_server: Server) -> None:
    response = _evaluate(shared_server, _task("no_such_metric", _read(FILE_A)))
    assert response.status_code == 422
    assert "unknown metric 'no_such_metric'" in response.json()["message"]


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/evaluate", b"{not json", 400),
        ("/evaluate", b"[1, 2]", 400),
        ("/evaluate", b'{"task": "nope"}', 400),
        ("/setup", b'{"config": {}}', 400),
        ("/setup", b'{"config": [], "task_id": 3}', 400),
        ("/nowhere", b"{}", 404),
    ],
)
def test_bad_requests_get_one_json_error(
    shared_server: Server, path: str, body: bytes, status: int
) -> None:
    response = requests.post(f"{shared_server.url}{path}", data=body, timeout=TIMEOUT,
                             headers={"Content-Type": "application/json"})
    assert response.status_code == status
    assert response.json()["status"] == "error" and response.json()["message"]


def test_tasks_and_task_by_index_id(shared_server: Server) -> None:
    tasks = requests.get(f"{shared_server.url}/tasks", timeout=TIMEOUT)
    assert tasks.json() == {"notepad": ["note-1"]}
    task = requests.get(f"{shared_server.url}/task/note-1", timeout=TIMEOUT)
    assert task.status_code == 200 and task.json()["id"] == "inner-id-differs"
    for unknown in ("nope", "..%2F..%2Fetc%2Fpasswd"):
        missing = requests.get(f"{shared_server.url}/task/{unknown}", timeout=TIMEOUT)
        assert missing.status_code == 404 and missing.json()["status"] == "error"


def test_real_waa_index_is_served(tmp_path: Path, waa_data: Path) -> None:
    srv = _start(tmp_path, _free_loopback(), waa_data)
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


def test_relay_joins_stdin_and_stdout_to_the_server(shared_server: Server) -> None:
    """The far end of the 5050 -> 5051 bridge, as ``docker exec -i`` would run it."""
    port = shared_server.url.rsplit(":", 1)[1]
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
