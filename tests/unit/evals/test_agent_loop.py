"""The agent loop's error classification, against scripted HTTP servers on loopback.

The happy path runs against the real simulated worker in tests/integration/test_sweep_*.py;
here each server answers what a misbehaving worker or checker would, to pin down which final
record each failure becomes.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from evals.agents.base import BenchmarkAction, BenchmarkAgent, BenchmarkObservation, BenchmarkTask
from evals.agents.noop import NoopAgent
from evals.agents.oracle import OracleAgent
from evals.results.records import ErrorType, TaskStatus
from evals.run.agent_loop import run_task
from evals.run.settings import RunConfig
from tests.support.http_servers import PNG_1PX, RefusingPort, Reply, ScriptedServer, SilentServer
from waa_client import ScoringClient, WaaClient
from waa_client.http import no_retry_waits

CONFIG = RunConfig(pool=None, selection="all", agent="noop")
"""The run options one attempt is given (the defaults: 15 steps, no pause)."""

TASK = {"id": "t1", "instruction": "Type hi", "config": [{"type": "sleep", "parameters": {}}],
        "evaluator": {"func": "exact_match"},
        "reference_solution": ["notepad type hi", "WAIT", "DONE"]}
OK = Reply.json({"status": "success", "output": "", "error": "", "returncode": 0})
VERDICT = Reply.json({"score": 1.0, "success": True, "reason": "matches"})


def _waa_routes() -> dict[str, Reply | list[Reply]]:
    return {
        "/setup/close_all": Reply(200, b"ok", "text/plain"),
        "/setup/clear_task_files": Reply(200, b"ok", "text/plain"),
        "/obs_winagent": Reply.json(
            {"image": base64.b64encode(PNG_1PX).decode(), "window_title": "Notepad"}
        ),
        "/accessibility": Reply.json({"AT": "<root/>"}),
        "/execute": OK,
    }


@pytest.fixture
def servers() -> Iterator[tuple[ScriptedServer, ScriptedServer]]:
    with ScriptedServer(_waa_routes()) as waa, ScriptedServer(
        {"/setup": Reply.json({"status": "success", "results": []}), "/evaluate": VERDICT}
    ) as scoring, no_retry_waits():
        yield waa, scoring


def _clients(waa_url: str, scoring_url: str, read: float = 5.0) -> tuple[WaaClient, ScoringClient]:
    return (WaaClient(waa_url, read_timeout=read, connect_timeout=2),
            ScoringClient(scoring_url, read_timeout=read, connect_timeout=2))


def _no_sleep(_seconds: float) -> None:
    return None


class RaisingAgent(BenchmarkAgent):
    def act(
        self, observation: BenchmarkObservation, task: BenchmarkTask,
        history: Sequence[BenchmarkAction] | None = None,
    ) -> BenchmarkAction:
        raise RuntimeError("model overloaded")


class CountingAgent(BenchmarkAgent):
    """Sends the same command for ever."""

    def act(
        self, observation: BenchmarkObservation, task: BenchmarkTask,
        history: Sequence[BenchmarkAction] | None = None,
    ) -> BenchmarkAction:
        return BenchmarkAction("execute", command=f"echo {len(history or [])}",
                               usage={"model": "m", "tokens_in": 10, "tokens_out": 2})


def test_a_scored_task_records_steps_screenshots_and_the_checkers_verdict(
    servers: tuple[ScriptedServer, ScriptedServer], tmp_path: Path
) -> None:
    waa_srv, scoring_srv = servers
    waa, scoring = _clients(waa_srv.url, scoring_srv.url)
    result = run_task(waa, scoring, TASK, "t1", OracleAgent(), CONFIG, record_dir=tmp_path,
                      domain="notepad", sleep=_no_sleep)
    assert result.status is TaskStatus.SUCCESS and result.score == 1.0
    assert result.reason == "matches" and result.last_action == "DONE"
    assert [s.action["type"] for s in result.steps] == ["execute", "wait", "done"]
    assert [s.screenshot for s in result.steps] == ["step_000.png", "step_001.png", "step_002.png"]
    assert (tmp_path / "step_000.png").read_bytes() == PNG_1PX
    assert result.steps[0].window_title == "Notepad"
    assert waa_srv.hits["/execute"] == 1  # WAIT and DONE are not sent
    sent = json.loads([b for p, b in scoring_srv.bodies if p == "/evaluate"][0])
    assert sent["last_action"] == "DONE"
    assert json.loads([b for p, b in scoring_srv.bodies if p == "/setup"][0]) == {
        "config": TASK["config"], "task_id": "t1"}  # the checker's cache folder is per task


def test_the_score_is_the_checkers_even_when_the_agent_says_done(
    servers: tuple[ScriptedServer, ScriptedServer],
) -> None:
    waa_srv, scoring_srv = servers
    scoring_srv.set("/evaluate", Reply.json({"score": 0.0, "success": False, "reason": "no"}))
    result = run_task(*_clients(waa_srv.url, scoring_srv.url), TASK, "t1", NoopAgent(), CONFIG)
    assert result.status is TaskStatus.FAILURE and result.score == 0.0


def test_steps_running_out_score_with_the_last_command_and_count_tokens(
    servers: tuple[ScriptedServer, ScriptedServer],
) -> None:
    waa_srv, scoring_srv = servers
    result = run_task(*_clients(waa_srv.url, scoring_srv.url), TASK, "t1", CountingAgent(),
                      replace(CONFIG, max_steps=3))
    assert len(result.steps) == 3 and result.last_action == "echo 2"
    assert result.cost.tokens_in == 30 and result.cost.tokens_out == 6
    sent = json.loads([b for p, b in scoring_srv.bodies if p == "/evaluate"][0])
    assert sent["last_action"] == "echo 2"


def test_a_failed_setup_step_is_a_setup_error(
    servers: tuple[ScriptedServer, ScriptedServer],
) -> None:
    waa_srv, scoring_srv = servers
    scoring_srv.set("/setup", Reply.json(
        {"status": "error", "results": [{"type": "download", "status": "error",
                                         "error": "404"}]}, 422))
    result = run_task(*_clients(waa_srv.url, scoring_srv.url), TASK, "t1", NoopAgent(), CONFIG)
    assert result.status is TaskStatus.ERROR and result.error_type is ErrorType.SETUP
    assert "download" in (result.error_message or "")
    assert scoring_srv.hits["/evaluate"] == 0


def test_an_agent_that_raises_is_an_agent_error(
    servers: tuple[ScriptedServer, ScriptedServer],
) -> None:
    waa_srv, scoring_srv = servers
    result = run_task(*_clients(waa_srv.url, scoring_srv.url), TASK, "t1", RaisingAgent(), CONFIG)
    assert result.error_type is ErrorType.AGENT
    assert "model overloaded" in (result.error_message or "")
    assert scoring_srv.hits["/evaluate"] == 0
    # the agent's traceback is kept, from its own frame on
    trace = result.agent_traceback or ""
    assert trace.startswith("Traceback (most recent call last):")
    assert "in act" in trace and trace.rstrip().endswith("RuntimeError: model overloaded")
    assert 'evals/run/agent_loop.py"' not in trace
    assert result.to_json()["agent_traceback"] == trace


class ResetRaisingAgent(RaisingAgent):
    def reset(self, task: BenchmarkTask | None = None) -> None:
        raise KeyError("no such profile")


def test_an_agent_whose_reset_raises_keeps_its_traceback(
    servers: tuple[ScriptedServer, ScriptedServer],
) -> None:
    waa_srv, scoring_srv = servers
    result = run_task(*_clients(waa_srv.url, scoring_srv.url), TASK, "t1", ResetRaisingAgent(),
                      CONFIG)
    assert result.error_type is ErrorType.AGENT
    assert (result.error_message or "").startswith("agent reset failed: KeyError")
    trace = result.agent_traceback or ""
    assert "in reset" in trace and trace.rstrip().endswith("KeyError: 'no such profile'")


@pytest.mark.parametrize(
    ("backoff_s", "left_s", "ends_as", "tries", "waited"),
    [(0.5, None, ErrorType.EVALUATION, 3, [0.5, 1.0]),
     # the first wait (60 s) would end past the task's deadline: no wait, no second try, and the
     # task ran out of time (the old code slept until the deadline, or on a fake clock tried on
     # as if it had time)
     (60.0, 30.0, ErrorType.TIMEOUT, 1, [])],
    ids=["retried then an evaluation error", "no retry whose wait would pass the deadline"],
)
def test_a_checker_answering_500_is_retried_within_the_tasks_time(
    servers: tuple[ScriptedServer, ScriptedServer], backoff_s: float, left_s: float | None,
    ends_as: ErrorType, tries: int, waited: list[float],
) -> None:
    waa_srv, scoring_srv = servers
    scoring_srv.set("/evaluate", Reply.json({"status": "error", "message": "getter broke"}, 500))
    waits: list[float] = []
    result = run_task(*_clients(waa_srv.url, scoring_srv.url), TASK, "t1", NoopAgent(),
                      replace(CONFIG, evaluate_backoff_s=backoff_s), sleep=waits.append,
                      deadline=None if left_s is None else time.monotonic() + left_s)
    assert result.error_type is ends_as, result.error_message
    assert "getter broke" in (result.error_message or "")
    assert scoring_srv.hits["/evaluate"] == tries and waits == waited


def test_a_checker_backoff_that_would_pass_the_deadline_is_not_reported_as_time_run_out(
    servers: tuple[ScriptedServer, ScriptedServer],
) -> None:
    # With 30 s left and a 60 s backoff ahead the task said it "ran out of time while retrying
    # the checker (1 attempt(s))": the time had not run out, the wait would have passed it.
    waa_srv, scoring_srv = servers
    scoring_srv.set("/evaluate", Reply.json({"status": "error", "message": "getter broke"}, 500))
    result = run_task(*_clients(waa_srv.url, scoring_srv.url), TASK, "t1", NoopAgent(),
                      replace(CONFIG, evaluate_backoff_s=60.0), sleep=lambda s: None,
                      deadline=time.monotonic() + 30.0)
    message = result.error_message or ""
    assert result.error_type is ErrorType.TIMEOUT, message
    assert message.startswith("the checker failed (after 1 try) and the next backoff (60 s) "
                              "would end past the attempt's time ("), message
    left = re.search(r"\((\d+) s left\): ", message)
    assert left is not None and 0 <= int(left.group(1)) <= 30, message
    assert "ran out" not in message and "getter broke" in message


def test_a_checker_that_recovers_gives_an_outcome(
    servers: tuple[ScriptedServer, ScriptedServer],
) -> None:
    waa_srv, scoring_srv = servers
    scoring_srv.set("/evaluate", [Reply.json({"message": "busy"}, 500), VERDICT])
    result = run_task(*_clients(waa_srv.url, scoring_srv.url), TASK, "t1", NoopAgent(), CONFIG,
                      sleep=_no_sleep)
    assert result.status is TaskStatus.SUCCESS


def test_a_500_on_execute_is_the_workers_fault_not_the_agents(
    servers: tuple[ScriptedServer, ScriptedServer],
) -> None:
    # /execute reports a failing command in its body (returncode); a 500 from a worker that does
    # not answer its probe either (no /probe here) is the server failing, so the attempt ends
    # as an infrastructure error (retried elsewhere), never as a score.
    waa_srv, scoring_srv = servers
    waa_srv.set("/execute", Reply.json({"status": "error", "message": "no such app"}, 500))
    result = run_task(*_clients(waa_srv.url, scoring_srv.url), TASK, "t1", OracleAgent(), CONFIG,
                      sleep=_no_sleep)
    assert result.status is TaskStatus.ERROR
    assert result.error_type is ErrorType.INFRASTRUCTURE
    assert "no such app" in (result.error_message or "")
    assert result.score is None


def test_a_500_on_execute_from_a_healthy_worker_is_the_agents_action_failing(
    servers: tuple[ScriptedServer, ScriptedServer],
) -> None:
    # The worker answers its probe: the action itself (a 300-character path) made the endpoint
    # fail, so the step is the agent's (rejected) and the task is scored, never retried.
    waa_srv, scoring_srv = servers
    waa_srv.set("/execute",
                Reply.json({"status": "error", "message": "[Errno 36] File name too long"}, 500))
    waa_srv.set("/probe", Reply.json({"status": "Probe successful"}))
    result = run_task(*_clients(waa_srv.url, scoring_srv.url), TASK, "t1", OracleAgent(), CONFIG,
                      sleep=_no_sleep)
    assert result.error_type is None, result.error_message
    assert result.status in (TaskStatus.SUCCESS, TaskStatus.FAILURE)
    rejected = [step for step in result.steps if step.rejected]
    assert rejected and "failed on this action" in (rejected[0].error or "")


def test_a_plain_500_on_execute_stays_the_workers_even_if_it_answers_its_probe(
    servers: tuple[ScriptedServer, ScriptedServer],
) -> None:
    # no WAA JSON body: the server itself failed (a proxy, an injected fault), not the endpoint
    waa_srv, scoring_srv = servers
    waa_srv.set("/execute", Reply(500, b"Internal Server Error", "text/plain"))
    waa_srv.set("/probe", Reply.json({"status": "Probe successful"}))
    result = run_task(*_clients(waa_srv.url, scoring_srv.url), TASK, "t1", OracleAgent(), CONFIG,
                      sleep=_no_sleep)
    assert result.error_type is ErrorType.INFRASTRUCTURE


class ClickThenDone(BenchmarkAgent):
    """Clicks once (sent as pyautogui source to /execute_windows), then says done."""

    def act(
        self,
        observation: BenchmarkObservation,
        task: BenchmarkTask,
        history: Sequence[BenchmarkAction] | None = None,
    ) -> BenchmarkAction:
        if history:
            return BenchmarkAction(type="done")
        return BenchmarkAction(type="click", x=10, y=20)


def test_waas_own_500_answer_on_execute_windows_is_the_agents_code_failing(
    servers: tuple[ScriptedServer, ScriptedServer],
) -> None:
    # WAA's server answers code that raised with 500 and its JSON error body: the agent's
    # problem, recorded on the step; the task goes on and is scored.
    waa_srv, scoring_srv = servers
    waa_srv.set("/execute_windows",
                Reply.json({"status": "error", "message": "NameError: foo"}, 500))
    result = run_task(*_clients(waa_srv.url, scoring_srv.url), TASK, "t1", ClickThenDone(), CONFIG,
                      sleep=_no_sleep)
    assert result.status is TaskStatus.SUCCESS  # the scripted checker's verdict
    assert result.steps[0].rejected and "NameError" in (result.steps[0].error or "")


def test_any_other_5xx_on_execute_windows_is_the_workers_fault(
    servers: tuple[ScriptedServer, ScriptedServer],
) -> None:
    # No WAA error body: the server failed before its endpoint ran, so the attempt is an
    # infrastructure error (retried elsewhere), never a score.
    waa_srv, scoring_srv = servers
    waa_srv.set("/execute_windows",
                Reply(500, b"Internal Server Error: injected fault", "text/plain"))
    result = run_task(*_clients(waa_srv.url, scoring_srv.url), TASK, "t1", ClickThenDone(), CONFIG,
                      sleep=_no_sleep)
    assert result.status is TaskStatus.ERROR
    assert result.error_type is ErrorType.INFRASTRUCTURE and result.score is None
    assert scoring_srv.hits["/evaluate"] == 0


def test_an_unreachable_worker_is_an_infrastructure_error(
    servers: tuple[ScriptedServer, ScriptedServer],
) -> None:
    _, scoring_srv = servers
    with RefusingPort() as dead:
        result = run_task(*_clients(dead.url, scoring_srv.url), TASK, "t1", NoopAgent(), CONFIG)
    assert result.error_type is ErrorType.INFRASTRUCTURE


def test_a_hung_worker_ends_at_the_deadline_as_a_timeout(
    servers: tuple[ScriptedServer, ScriptedServer],
) -> None:
    waa_srv, _ = servers
    with SilentServer() as hung:
        waa, _unused = _clients(waa_srv.url, hung.url, read=30.0)
        scoring = ScoringClient(hung.url, read_timeout=30.0, connect_timeout=2)
        result = run_task(waa, scoring, TASK, "t1", NoopAgent(), CONFIG,
                          deadline=time.monotonic() + 1.0)
    assert result.error_type is ErrorType.TIMEOUT
    assert "ran out of time" in (result.error_message or "")


def test_a_deadline_already_past_is_a_timeout_before_anything_is_sent(
    servers: tuple[ScriptedServer, ScriptedServer],
) -> None:
    waa_srv, scoring_srv = servers
    result = run_task(*_clients(waa_srv.url, scoring_srv.url), TASK, "t1", NoopAgent(), CONFIG,
                      deadline=time.monotonic() - 1)
    assert result.error_type is ErrorType.TIMEOUT
    assert waa_srv.hits["/setup/close_all"] == 0
