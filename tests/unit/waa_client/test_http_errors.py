"""Error mapping and retry policy of the clients, against real loopback sockets."""

from __future__ import annotations

import json
import re
import time

import pytest

from tests.support.http_servers import PNG_1PX, RefusingPort, Reply, ScriptedServer, SilentServer
from waa_client import (
    InvalidWorkerUrlError,
    MalformedResponseError,
    NotFoundError,
    RequestRejectedError,
    ScoringClient,
    ServerError,
    WaaClient,
    WorkerTimeoutError,
    WorkerUnreachableError,
)
from waa_client.http import backoff_s

SHORT = 0.5


def test_connection_refused_is_infrastructure(refusing: RefusingPort) -> None:
    client = WaaClient(refusing.url, retries=0)
    with client, pytest.raises(WorkerUnreachableError) as info:
        client.probe()
    assert info.value.is_infrastructure
    assert info.value.url == f"{refusing.url}/probe"
    assert "refused" in info.value.message.lower()
    assert isinstance(info.value.__cause__, Exception)  # raised "from" the requests error


def test_server_that_never_answers_times_out(silent: SilentServer) -> None:
    client = WaaClient(silent.url, connect_timeout=SHORT, read_timeout=SHORT, retries=0)
    with client, pytest.raises(WorkerTimeoutError) as info:
        client.probe()
    assert info.value.is_infrastructure
    assert isinstance(info.value, WorkerUnreachableError)
    assert silent.accepted == 1


def test_per_call_timeout_overrides_read_timeout(silent: SilentServer) -> None:
    client = WaaClient(silent.url, read_timeout=600, retries=0)
    with client, pytest.raises(WorkerTimeoutError) as info:
        client.execute("echo hi", timeout=SHORT)
    assert "0.5s" in info.value.message


def test_500_carries_the_server_message(server: ScriptedServer) -> None:
    server.set("/probe", Reply.json({"status": "error", "message": "pyautogui exploded"}, 500))
    with WaaClient(server.url) as client, pytest.raises(ServerError) as info:
        client.probe()
    assert info.value.status == 500
    assert "pyautogui exploded" in info.value.message
    assert not info.value.is_infrastructure
    assert server.hits["/probe"] == 1, "a plain 500 is the server's answer: not retried"


def test_500_without_json_uses_the_body(server: ScriptedServer) -> None:
    server.set("/probe", Reply(500, b"Internal Server Error: boom", "text/plain"))
    with WaaClient(server.url) as client, pytest.raises(ServerError, match="boom"):
        client.probe()


@pytest.mark.parametrize("body", [b"not json", b"<html>proxy page</html>", b""])
def test_body_that_is_not_json(server: ScriptedServer, body: bytes) -> None:
    server.set("/probe", Reply(200, body, "text/html"))
    with WaaClient(server.url) as client, pytest.raises(MalformedResponseError) as info:
        client.probe()
    assert info.value.status == 200
    assert not info.value.is_infrastructure


def test_json_that_is_not_an_object(server: ScriptedServer) -> None:
    server.set("/probe", Reply.json(["a", "list"]))
    with WaaClient(server.url) as client, pytest.raises(MalformedResponseError, match="object"):
        client.probe()


def test_probe_is_retried_on_infrastructure_errors(server: ScriptedServer) -> None:
    server.set("/probe", [Reply.json({"message": "starting"}, 503), Reply(502, b"bad gateway"),
                          Reply.json({"status": "Probe successful"})])
    with WaaClient(server.url, retries=3) as client:
        assert client.probe() == {"status": "Probe successful"}
    assert server.hits["/probe"] == 3


def test_retries_are_bounded(server: ScriptedServer) -> None:
    server.set("/probe", Reply.json({"message": "still starting"}, 503))
    with WaaClient(server.url, retries=2) as client, pytest.raises(ServerError) as info:
        client.probe()
    assert info.value.is_infrastructure
    assert server.hits["/probe"] == 3  # one attempt + two retries


HUNG_READ_S = 6.0
"""The read timeout of the hung-worker tests: the old code gave each of 3 tries all of it."""
DEADLINE_S = 2.0
"""The time those calls have left: the whole call, retries included, ends by it now."""


def _timeout_given(error: WorkerTimeoutError) -> float:
    """The read timeout the try that timed out was given, as its message says it."""
    found = re.search(r"no answer within ([0-9.e-]+)s", error.message)
    assert found, error.message
    return float(found.group(1))


def test_a_retried_read_from_a_hung_worker_ends_by_its_deadline(silent: SilentServer) -> None:
    # A worker that accepts and never answers: one try, given the time left (not the read
    # timeout), and no retry after it (the old code made 3 tries of the read timeout each).
    started = time.monotonic()
    with WaaClient(silent.url, read_timeout=HUNG_READ_S, retries=2) as client, \
            pytest.raises(WorkerTimeoutError) as info:
        client.observe(deadline=started + DEADLINE_S)
    elapsed = time.monotonic() - started
    assert silent.accepted == 1
    assert _timeout_given(info.value) <= DEADLINE_S
    assert elapsed < 3 * HUNG_READ_S / 2, f"took {elapsed:.1f}s"  # the old code took 18 s


def test_a_retry_gets_only_the_time_left_and_none_follows_the_deadline(
    server: ScriptedServer,
) -> None:
    # 503 at once, then answers held past any timeout: the retry is made, cut to the time left,
    # and the third try is not (the old code gave the second and third 6 s each).
    server.set("/accessibility", [Reply.json({"message": "starting"}, 503),
                                  Reply(body=b'{"AT": "<root/>"}', delay_s=60.0)])
    started = time.monotonic()
    with WaaClient(server.url, read_timeout=HUNG_READ_S, retries=2) as client, \
            pytest.raises(WorkerTimeoutError) as info:
        client.accessibility(deadline=started + DEADLINE_S)
    elapsed = time.monotonic() - started
    assert server.hits["/accessibility"] == 2
    assert 0 < _timeout_given(info.value) <= DEADLINE_S
    assert elapsed < 2 * HUNG_READ_S, f"took {elapsed:.1f}s"  # the old code took 12 s


def test_a_call_whose_deadline_passed_sends_nothing(server: ScriptedServer) -> None:
    server.set("/probe", Reply.json({"status": "Probe successful"}))
    with WaaClient(server.url) as client, pytest.raises(WorkerTimeoutError) as info:
        client.probe(deadline=time.monotonic() - 1.0)
    assert "deadline has passed" in info.value.message
    assert server.hits["/probe"] == 0


def test_retry_waits_double_from_half_a_second_up_to_the_cap() -> None:
    assert [backoff_s(n, 3.0) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert backoff_s(1, 0.0) == 0.0


def test_execute_is_never_retried(server: ScriptedServer) -> None:
    server.set("/execute", Reply.json({"message": "gateway"}, 503))
    with WaaClient(server.url, retries=5) as client, pytest.raises(ServerError):
        client.execute(["python", "-c", "print(1)"])
    assert server.hits["/execute"] == 1


@pytest.mark.parametrize(
    ("path", "call"),
    [
        ("/execute_windows", lambda c: c.execute_windows("print(1)")),
        ("/setup/close_all", lambda c: c.close_all()),
        ("/setup/clear_task_files", lambda c: c.clear_task_files()),
    ],
)
def test_actions_are_never_retried(server: ScriptedServer, path: str, call: object) -> None:
    server.set(path, Reply(504, b"timeout upstream"))
    with WaaClient(server.url, retries=5) as client, pytest.raises(ServerError):
        call(client)  # type: ignore[operator]
    assert server.hits[path] == 1


def test_4xx_is_not_retried(server: ScriptedServer) -> None:
    server.set("/list_directory", Reply.json({"error": "bad path"}, 400))
    with WaaClient(server.url, retries=5) as client, pytest.raises(RequestRejectedError) as info:
        client.list_directory("C:/nope")
    assert server.hits["/list_directory"] == 1
    assert info.value.status == 400 and "bad path" in info.value.message


def test_file_not_found(server: ScriptedServer) -> None:
    server.set("/file", Reply.json({"error": "File not found"}, 404))
    with WaaClient(server.url) as client, pytest.raises(NotFoundError, match="File not found"):
        client.file("C:/missing.txt")
    assert server.bodies[-1] == ("/file", b"file_path=C%3A%2Fmissing.txt")


def test_screenshot_checks_the_png_signature(server: ScriptedServer) -> None:
    server.set("/screenshot", [Reply(200, PNG_1PX, "image/png"),
                               Reply.json({"status": "error"})])
    with WaaClient(server.url) as client:
        assert client.screenshot() == PNG_1PX
        with pytest.raises(MalformedResponseError, match="PNG"):
            client.screenshot()


def test_accessibility_returns_the_tree(server: ScriptedServer) -> None:
    server.set("/accessibility", [Reply.json({"AT": "<Desktop/>"}), Reply.json({"tree": 1})])
    with WaaClient(server.url) as client:
        assert client.accessibility() == "<Desktop/>"
        with pytest.raises(MalformedResponseError, match="AT"):
            client.accessibility("win32")


def test_execute_sends_the_protocol_body(server: ScriptedServer) -> None:
    answer = {"status": "success", "output": "1\n", "error": "", "returncode": 0}
    server.set("/execute", Reply.json(answer))
    with WaaClient(server.url) as client:
        assert client.execute("echo 1", shell=True) == answer
    assert json.loads(server.bodies[-1][1]) == {"command": "echo 1", "shell": True}


@pytest.mark.parametrize("url", ["127.0.0.1:5000", "ftp://host", "http://", ""])
def test_invalid_base_url(url: str) -> None:
    with pytest.raises(InvalidWorkerUrlError) as info:
        WaaClient(url)
    assert info.value.exit_code == 2


# --- scoring client ------------------------------------------------------------------------------


def test_scoring_tasks_and_task(server: ScriptedServer) -> None:
    server.set("/tasks", Reply.json({"notepad": ["a-WOS", "b-WOS"]}))
    server.set("/task/a-WOS", Reply.json({"id": "a-WOS", "instruction": "do"}))
    with ScoringClient(server.url) as client:
        assert client.tasks() == {"notepad": ["a-WOS", "b-WOS"]}
        assert client.task("a-WOS")["instruction"] == "do"
        with pytest.raises(NotFoundError):
            client.task("c-WOS")


def test_scoring_tasks_validates_the_index(server: ScriptedServer) -> None:
    server.set("/tasks", Reply.json({"notepad": "a-WOS"}))
    client = ScoringClient(server.url)
    with client, pytest.raises(MalformedResponseError, match="notepad"):
        client.tasks()


def test_setup_422_carries_the_step_results(server: ScriptedServer) -> None:
    results = [{"type": "launch", "status": "ok"},
               {"type": "download", "status": "error", "error": "HTTP 404 for file.xlsx"}]
    server.set("/setup", Reply.json({"status": "error", "results": results}, 422))
    with ScoringClient(server.url, retries=5) as client:
        from waa_client import SetupFailedError

        with pytest.raises(SetupFailedError) as info:
            client.setup([{"type": "launch", "parameters": {}}])
    assert info.value.results == results
    assert "download: HTTP 404 for file.xlsx" in info.value.message
    assert server.hits["/setup"] == 1


def test_setup_and_evaluate_are_never_retried(server: ScriptedServer) -> None:
    server.set("/setup", Reply(503, b"busy"))
    server.set("/evaluate", Reply(502, b"bad gateway"))
    with ScoringClient(server.url, retries=5) as client:
        with pytest.raises(ServerError):
            client.setup([])
        with pytest.raises(ServerError):
            client.evaluate({"id": "x"}, "DONE")
    assert (server.hits["/setup"], server.hits["/evaluate"]) == (1, 1)


def test_evaluate_returns_a_validated_score(server: ScriptedServer) -> None:
    server.set("/evaluate", Reply.json({"score": 1, "success": True, "reason": "matched"}))
    with ScoringClient(server.url) as client:
        score = client.evaluate({"id": "x"}, "DONE")
    assert score == {"score": 1.0, "success": True, "reason": "matched"}
    assert isinstance(score["score"], float)
    assert json.loads(server.bodies[-1][1]) == {"task": {"id": "x"}, "last_action": "DONE"}


@pytest.mark.parametrize(
    "answer",
    [
        {"success": True, "reason": ""},
        {"score": "1", "success": True, "reason": ""},
        {"score": True, "success": True, "reason": ""},
        {"score": 1.0, "success": "yes", "reason": ""},
        {"score": 1.0, "success": True, "reason": 3},
    ],
)
def test_evaluate_rejects_a_malformed_score(
    server: ScriptedServer, answer: dict[str, object]
) -> None:
    server.set("/evaluate", Reply.json(answer))
    with ScoringClient(server.url) as client, pytest.raises(MalformedResponseError, match="score"):
        client.evaluate({"id": "x"}, "DONE")
