"""A raising agent's failure is told as the agent's: the bounded traceback, the one-line account,
the run's warning (never the pool's), and ``compute_metrics`` with no outcome at all."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from evals import BenchmarkAction, BenchmarkAgent, BenchmarkObservation, BenchmarkTask
from evals.results.agent_failures import (
    ACTION_TIMED_OUT,
    NO_ACTION,
    Blame,
    agent_failures,
    blame_action,
    describe,
    exception_name,
)
from evals.results.records import TaskExecution
from evals.run.agent_loop import agent_traceback
from evals.run.metrics import compute_metrics
from evals.run.runner import blames_agent, health_warning
from waa_client.errors import (
    RequestRejectedError,
    ServerError,
    WaaError,
    WorkerTimeoutError,
    WorkerUnreachableError,
)


def _raise(message: str) -> None:
    raise ValueError(message)


def _caught(message: str) -> BaseException:
    try:
        _raise(message)
    except ValueError as exc:
        return exc
    raise AssertionError("did not raise")


def test_the_traceback_starts_at_the_agents_frame() -> None:
    text = agent_traceback(_caught("bad plan"))

    assert text.startswith("Traceback (most recent call last):")
    assert "in _raise" in text and "in _caught" not in text  # the caller's frame is left out
    assert text.rstrip().endswith("ValueError: bad plan")


def test_a_huge_traceback_is_cut_in_the_middle() -> None:
    text = agent_traceback(_caught("x" * 200_000 + " the end"), limit=4_000)

    assert len(text) < 4_100
    assert text.startswith("Traceback (most recent call last):")
    assert "characters left out" in text
    assert text.rstrip().endswith(" the end")  # the raising line's end is what is kept


def test_credentials_in_the_traceback_are_masked() -> None:
    text = agent_traceback(_caught("GET https://bob:hunter2-secret@api.example/v1 failed"))

    assert "hunter2-secret" not in text


def test_records_are_grouped_by_what_the_agent_raised() -> None:
    def record(task_id: str, trace: str | None, error_type: str = "agent") -> TaskExecution:
        return TaskExecution.from_json({"task_id": task_id, "status": "error",
                                        "error_type": error_type, "agent_traceback": trace})

    records = [
        record("a", "Traceback ...\nRuntimeError: no"),
        record("b", "Traceback ...\nmymod.PlanError: none\n"),
        record("c", "Traceback ...\nRuntimeError: again"),
        record("d", None),  # act returned something else than an action
        record("e", None, error_type="infrastructure"),
        TaskExecution.from_json({"task_id": "f", "status": "success"}),
    ]
    groups = agent_failures(records)

    assert groups == {"RuntimeError": ["a", "c"], "mymod.PlanError": ["b"], NO_ACTION: ["d"]}
    assert describe("mod:A", groups) == (
        "4 task(s): the agent (mod:A) raised RuntimeError (2), mymod.PlanError (1) "
        f"or returned {NO_ACTION} (1)")
    assert describe("mod:A", {"KeyError": ["a"]}) == "1 task(s): the agent (mod:A) raised KeyError"
    assert exception_name("") == "an exception"


@pytest.mark.parametrize(("counts", "agent_errors", "lost_all", "blamed"), [
    ({"error": 6}, 6, False, True),  # the agent raised everywhere
    ({"error": 4, "success": 2}, 3, False, True),  # 1 other error of 6: the agent's doing
    ({"error": 5, "success": 1}, 1, False, False),  # 4 other errors of 6: the pool's
    ({"error": 6}, 6, True, False),  # every worker lost: the pool's, whatever else
])
def test_the_warning_blames_the_agent_only_when_it_is_the_agents(
    counts: dict[str, int], agent_errors: int, lost_all: bool, blamed: bool
) -> None:
    line = f"{agent_errors} task(s): the agent (mod:A) raised RuntimeError"
    warning = health_warning(counts, lost_all=lost_all, agent_errors=agent_errors,
                             agent_failed=line)

    assert warning is not None
    assert blames_agent(counts, lost_all=lost_all, agent_errors=agent_errors) is blamed
    assert (line in warning) is blamed


def test_success_rate_is_none_when_every_task_errored() -> None:
    errored = [{"task_id": t, "status": "error", "error_type": "infrastructure",
                "success": False, "score": 0.0} for t in ("a", "b")]

    assert compute_metrics(errored)["success_rate"] is None  # the CLI's n/a
    # an agent's own errors are its failures (docs/results.md): they count against it
    crashed = [{**e, "error_type": "agent"} for e in errored]
    assert compute_metrics(crashed)["success_rate"] == 0.0
    assert compute_metrics([])["success_rate"] == 0.0  # the reference's empty result
    mixed = [*errored, {"task_id": "c", "status": "failure", "success": False, "score": 0.0}]
    assert compute_metrics(mixed)["success_rate"] == 0.0


class _Raising(BenchmarkAgent):
    def act(self, observation: BenchmarkObservation, task: BenchmarkTask,
            history: Sequence[BenchmarkAction] | None = None) -> BenchmarkAction:
        return self._think()

    def _think(self) -> BenchmarkAction:
        raise RuntimeError("no idea")


def test_the_python_api_result_carries_the_traceback() -> None:
    from evals import WAAMockAdapter, evaluate_agent_on_benchmark

    (result,) = evaluate_agent_on_benchmark(_Raising(), WAAMockAdapter(num_tasks=1))

    assert (result.status, result.error_type) == ("error", "agent")
    assert result.error == "RuntimeError: no idea"
    trace = result.agent_traceback or ""
    assert "in _think" in trace and trace.rstrip().endswith("RuntimeError: no idea")


def test_a_result_from_a_record_carries_its_traceback() -> None:
    from evals.compat.benchmark_api import BenchmarkResult
    from evals.results.records import ErrorType, TaskStatus

    execution = TaskExecution(task_id="t", domain="d", instruction="i", infeasible=False,
                              status=TaskStatus.ERROR, error_type=ErrorType.AGENT,
                              error_message="agent failed at step 0: RuntimeError: x",
                              agent_traceback="Traceback ...\nRuntimeError: x\n")
    assert BenchmarkResult.from_execution(execution).agent_traceback == execution.agent_traceback
    assert TaskExecution.from_json(execution.to_json()).agent_traceback == (
        execution.agent_traceback)


@pytest.mark.parametrize(("warning", "fail_on_errors", "agent_errors", "expected"), [
    ("6 of 6 task(s) ended in error; 6 task(s): the agent (m:A) raised E", False, 6,
     "AgentFailed"),
    (None, True, 1, "AgentFailed"),  # --fail-on-errors, and the one error is the agent's
    (None, True, 0, "RunUnhealthy"),  # --fail-on-errors, and the error is the pool's
])
def test_the_closing_error_names_the_agent_when_it_is_the_agents(
    warning: str | None, fail_on_errors: bool, agent_errors: int,
    expected: str,
) -> None:
    from pathlib import Path

    from evals.cli.commands.run import finish_run
    from evals.errors import AgentFailed, RunUnhealthy
    from evals.results.records import RunStatus
    from evals.run.runner import RunResult

    errors = 6 if warning else 1
    result = RunResult(
        run_dir=Path("results/r"), status=RunStatus.FINISHED,
        counts={"error": errors, "success": 6 - errors}, not_run=[], quarantined=[],
        spent_usd=0.0, cap_usd=None, warning=warning, fail_on_errors=fail_on_errors,
        agent_failed=f"{agent_errors} task(s): the agent (m:A) raised E" if agent_errors else None,
        agent_errors=agent_errors, blames_agent=warning is not None and agent_errors > 0,
    )
    with pytest.raises((AgentFailed, RunUnhealthy)) as raised:
        finish_run(result)
    assert type(raised.value).__name__ == expected
    assert raised.value.exit_code == 4
    message = str(raised.value)
    if expected == "AgentFailed":
        assert "the agent (m:A) raised E" in message and "fix the agent" in message
        assert "unhealthy" not in message and "workers' logs" not in message
    else:
        assert "workers' logs" in message


@pytest.mark.parametrize(("exc", "command", "answers", "blame"), [
    # still running at the read timeout: the agent's when the worker answers its probe
    (WorkerTimeoutError("no answer", sent=True), False, True, Blame.AGENT_TIMED_OUT),
    (WorkerTimeoutError("no answer", sent=True), True, True, Blame.AGENT_TIMED_OUT),
    (WorkerTimeoutError("no answer", sent=True), False, False, Blame.WORKER),
    # no connection in time, refused: the worker's whatever the probe says
    (WorkerTimeoutError("no connection", sent=False), False, True, Blame.WORKER),
    (WorkerUnreachableError("refused"), False, True, Blame.WORKER),
    # the 500 rule
    (ServerError("500", status=500, endpoint_answered=True), False, False, Blame.AGENT_STEP),
    (ServerError("500", status=500, endpoint_answered=True), True, True, Blame.AGENT_STEP),
    (ServerError("500", status=500, endpoint_answered=True), True, False, Blame.WORKER),
    (ServerError("500", status=500, endpoint_answered=False), False, True, Blame.WORKER),
    (ServerError("503", status=503, endpoint_answered=True), False, True, Blame.WORKER),
    # refused, nothing ran
    (RequestRejectedError("400", status=400), False, False, Blame.AGENT_STEP),
])
def test_an_actions_failure_is_blamed_by_what_happened(
    exc: WaaError, command: bool, answers: bool, blame: Blame
) -> None:
    assert blame_action(exc, command=command, worker_answers=lambda: answers) is blame


def test_timed_out_actions_are_grouped_and_told_as_the_agents() -> None:
    record = TaskExecution.from_json({"task_id": "a", "status": "error", "error_type": "agent",
                                      "error_message": ACTION_TIMED_OUT + ": step 0 ..."})
    groups = agent_failures([record])
    assert groups == {ACTION_TIMED_OUT: ["a"]}
    assert describe("m:A", groups) == "1 task(s): the agent (m:A) sent " + ACTION_TIMED_OUT
