"""The Cua-Bench session's browser operations: the list the pool checks use is exactly the
session's methods that reach the worker's browser, and on a worker without one (a WAA worker:
no ``/browser/...``) an operation says so rather than passing on a bare 404; a module's call to a
hung worker ends by the attempt's deadline."""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from evals.agents.noop import NoopAgent
from evals.tasks.cua_bench.loader import BROWSER_OPERATIONS
from evals.tasks.cua_bench.session import SessionError, WorkerSession
from tests.support.http_servers import Reply, ScriptedServer
from waa_client.errors import RequestRejectedError, WaaError
from waa_client.waa import WaaClient

BROWSER_CALLS = {"_browser", "_call_browser"}


def test_the_browser_operations_are_the_session_methods_that_reach_the_browser() -> None:
    tree = ast.parse(textwrap.dedent(inspect.getsource(WorkerSession)))
    (cls,) = tree.body
    assert isinstance(cls, ast.ClassDef)
    calls: dict[str, set[str]] = {}  # method -> the self.<name> it reads (nested functions too)
    for method in cls.body:
        if isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
            calls[method.name] = {
                n.attr for n in ast.walk(method) if isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name) and n.value.id == "self"}
    reaching = set(BROWSER_CALLS)
    while True:  # a method reaches the browser when it calls one that does
        more = {name for name, called in calls.items() if called & reaching} - reaching
        if not more:
            break
        reaching |= more
    public = {name for name in reaching if not name.startswith("_")}
    assert public == set(BROWSER_OPERATIONS)
    assert len(BROWSER_OPERATIONS) == len(set(BROWSER_OPERATIONS))


def _launch(url: str) -> str:
    with WaaClient(url, retries=0, read_timeout=30.0) as waa, \
            pytest.raises(SessionError) as caught:
        asyncio.run(WorkerSession(waa, timeout=30.0).launch_window(html="<p>x</p>"))
    return str(caught.value)


def test_on_a_worker_without_a_browser_an_operation_says_so() -> None:
    # a WAA server's answer to a path it does not serve: Flask's HTML 404
    not_found = Reply(404, b"<!doctype html><title>404 Not Found</title>", "text/html")
    with ScriptedServer({"/browser/launch": not_found, "/browser/status": not_found}) as waa:
        said = _launch(waa.url)
    assert said.startswith("launch: the worker has no browser (no /browser/launch: a WAA "
                           "worker has none, a local pool's workers have one)"), said
    assert "--cloud local" in said and "404" not in said


def test_a_404_of_a_worker_with_a_browser_keeps_its_own_words() -> None:
    missing = Reply.json({"status": "error", "message": "no browser window w9"}, 404)
    with ScriptedServer({"/browser/launch": missing,
                         "/browser/status": Reply.json({"available": True})}) as waa:
        said = _launch(waa.url)
    assert "no browser window w9" in said and "has no browser" not in said


def _worker() -> ScriptedServer:
    """A worker whose browser opens window ``w7`` and whose pages answer 42."""
    return ScriptedServer({
        "/browser/launch": Reply.json({"id": "w7"}),
        "/browser/evaluate": Reply.json({"value": 42}),
        "/execute_windows": Reply.json({"status": "success", "returncode": 0}),
    })


def test_windows_are_numbered_per_session_from_one_as_cua_bench_numbers_them() -> None:
    # Cua-Bench's modules name their first window 1 (`click_element(1, ...)`) and pass
    # `pid=` and `javascript=` by name
    async def use(session: WorkerSession) -> tuple[str, Any]:
        pid = await session.launch_window(html="<p>x</p>")
        return pid, await session.execute_javascript(pid=1, javascript="1 + 1")

    with _worker() as waa, WaaClient(waa.url, retries=0, read_timeout=30.0) as client:
        session = WorkerSession(client, timeout=30.0)
        assert asyncio.run(use(session)) == ("1", 42)
        sent = [json.loads(body) for path, body in waa.bodies if path == "/browser/evaluate"]
        assert sent == [{"id": "w7", "script": "1 + 1"}]  # the worker's own id
        with pytest.raises(SessionError, match=r"^no window 2 in this session \(its windows: 1\)"):
            asyncio.run(session.execute_javascript(2, "x"))


def test_cua_benchs_input_shorthands_send_an_agents_actions() -> None:
    async def use(session: WorkerSession) -> None:
        await session.click(10, 20)
        await session.double_click(1, 2)
        await session.type("hi")
        await session.key("Return")
        await session.hotkey(["ctrl", "s"])
        await session.scroll()

    with _worker() as waa, WaaClient(waa.url, retries=0, read_timeout=30.0) as client:
        asyncio.run(use(WorkerSession(client, timeout=30.0)))
        sent = [json.loads(body)["command"] for path, body in waa.bodies
                if path == "/execute_windows"]
    assert [s.removeprefix("import pyautogui; ") for s in sent] == [
        "pyautogui.click(10, 20)", "pyautogui.doubleClick(1, 2)", "pyautogui.typewrite('hi')",
        "pyautogui.press('enter')", "pyautogui.hotkey('ctrl', 's')", "pyautogui.scroll(-3)"]


def test_a_failed_command_raises_unless_check_is_off_as_in_cua_bench() -> None:
    # Cua-Bench's run_command and shell_command raise on a non-zero return code by default: a
    # module relying on that raise was scored as if the command had worked
    failed = Reply.json({"status": "success", "output": "", "error": "boom", "returncode": 2})
    with ScriptedServer({"/execute": failed}) as waa, \
            WaaClient(waa.url, retries=0, read_timeout=30.0) as client:
        session = WorkerSession(client, timeout=30.0)
        for run in (session.run_command, session.shell_command):
            with pytest.raises(RuntimeError, match="return code 2: del x; .*boom"):
                asyncio.run(run("del x"))
            kept = asyncio.run(run("del x", check=False))
            assert (kept.return_code, kept["stderr"]) == (2, "boom")


def test_directory_exists_reads_waas_answer_for_what_is_not_a_folder() -> None:
    # WAA's /list_directory answers 400 "The provided path is not a directory" for a missing
    # path and for a file alike; other refusals are not taken for "no such folder"
    not_a_folder = Reply.json({"error": "The provided path is not a directory"}, 400)
    listed = Reply.json({"directory_tree": {"type": "directory", "name": "D", "children": []}})
    with ScriptedServer({"/list_directory": [listed, not_a_folder,
                                             Reply.json({"error": "denied"}, 403)]}) as waa, \
            WaaClient(waa.url, retries=0, read_timeout=30.0) as client:
        session = WorkerSession(client, timeout=30.0)
        assert asyncio.run(session.directory_exists("C:\\D")) is True
        assert asyncio.run(session.directory_exists("C:\\nope")) is False
        with pytest.raises(RequestRejectedError):
            asyncio.run(session.directory_exists("D:\\x"))


TASK_TIME_S = 3.0
"""The attempt below has this long; its module's call to a hung worker ends by then, where the
old code's took the read timeout (30 s), four times for a retried read, after the attempt."""
MODULE = """
import cua_bench as cb

@cb.tasks_config
def load():
    return [cb.Task(description="Read a file, or run a command.")]

@cb.setup_task
async def setup(task_cfg, session):
    await session.{call}

@cb.evaluate_task
async def evaluate(task_cfg, session):
    return [1.0]
"""


class _TimedWaa(WaaClient):
    """A worker client that notes each request's path, how it ended and when."""

    def __init__(self, url: str) -> None:
        super().__init__(url, read_timeout=30.0, connect_timeout=2.0)
        self.ended: list[tuple[str, float, str]] = []
        self.done = threading.Event()

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        started = time.monotonic()
        outcome = "answered"
        try:
            return super()._request(method, path, **kwargs)
        except WaaError as exc:
            outcome = str(exc)
            raise
        finally:
            self.ended.append((path, time.monotonic() - started, outcome))
            self.done.set()


@pytest.mark.parametrize(("call", "path"), [('read_file("C:/a.txt")', "/file"),
                                            ('run_command("dir")', "/execute")])
def test_a_modules_call_to_a_hung_worker_ends_by_the_attempts_deadline(
    tmp_path: Path, call: str, path: str,
) -> None:
    # The attempt was cut off at its deadline, but the thread running the session's call went
    # on with the whole read timeout (and a read's retries) behind it; now the call, retries
    # included, ends by the deadline as every other call of the attempt.
    from evals.results.records import TaskStatus
    from evals.run.attempt_cua import run_cua_task
    from evals.run.settings import RunConfig

    module = tmp_path / "hung.py"
    module.write_text(MODULE.format(call=call))
    task = {"cua_bench": {"module": str(module), "split": "train", "index": 0}}
    config = RunConfig(pool=None, selection="all", agent="noop", step_pause_s=0.0)
    with ScriptedServer({path: Reply(delay_s=120.0)}) as hung, \
            _TimedWaa(hung.url) as waa:
        started = time.monotonic()
        record = run_cua_task(waa, task, "hung/0", NoopAgent(), config,
                              deadline=started + TASK_TIME_S, stock_reset=False)
        assert waa.done.wait(5 * TASK_TIME_S), "the worker call still runs after the attempt"
        ended_after = time.monotonic() - started
        hits = hung.hits[path]
    assert record.status is TaskStatus.ERROR and "setup_task" in (record.error_message or "")
    ((sent, took, outcome),) = waa.ended
    assert sent == path and hits == 1  # one try, given the time left: no retry after it
    assert "no answer within" in outcome, outcome
    assert took < 5 * TASK_TIME_S and ended_after < 5 * TASK_TIME_S
