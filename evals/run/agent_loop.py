"""The agent loop: reset the worker, set the task up, let the agent act, have the checker score it.

One call of :func:`run_task` runs one task once on one worker and always returns a record, never
raises for what happens inside the task: an unreachable worker becomes ``error/infrastructure``
(the runner retries it elsewhere), a failed setup ``error/setup``, an agent that raises
``error/agent``, a checker that keeps failing ``error/evaluation``, a task past its deadline
``error/timeout``. Only a scored task is an outcome (``success``/``failure``), and its score is
the checker's, whatever the agent said.

The deadline is enforced between calls and by bounding each call's own timeouts with the time
left, and a retried read's retries and waits with the deadline itself (``waa_client.retry``), so
a hung worker costs at most the task's budget. The attempt runs inside
:func:`waa_client.retry.deadline_scope`, so what the loop cannot pass a deadline to (the agent's
model API calls and their backoff, a Cua-Bench module's session) ends by it as well; an agent
that gives up for that reason (:class:`evals.errors.AgentOutOfTime`) ends the task as
``error/timeout``, not ``error/agent``.
"""

from __future__ import annotations

import binascii
import contextlib
import math
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.agents.base import (
    EXECUTE,
    EXECUTE_WINDOWS,
    GUI_ACTION_TYPES,
    WAIT,
    BenchmarkAction,
    BenchmarkAgent,
    BenchmarkObservation,
    BenchmarkTask,
    task_for_agent,
)
from evals.agents.builtin import call_reset
from evals.errors import AgentOutOfTime
from evals.results.agent_failures import ACTION_TIMED_OUT, Blame, blame_action
from evals.results.records import (
    CostRecord,
    ErrorType,
    StepRecord,
    TaskExecution,
    TaskStatus,
    now_iso,
    save_screenshot,
    save_tree,
)
from oa_vm.kit.redact import redact_json, redact_text
from waa_client import retry
from waa_client.b64 import b64decode_strict
from waa_client.catalog import is_infeasible
from waa_client.errors import RequestRejectedError, ServerError, WaaError
from waa_client.scoring import ScoringClient
from waa_client.waa import WaaClient

if TYPE_CHECKING:
    from evals.run.settings import RunConfig

DEFAULT_WAIT_S = 1.0
DEFAULT_EVALUATE_ATTEMPTS = 3
SETUP_TIMEOUT_S = 600.0
EVALUATE_TIMEOUT_S = 300.0
TRACEBACK_LIMIT = 20_000
"""Characters of an agent's traceback kept in its record: a recursion error's or a chained
exception's can run to megabytes, and the record goes into the queue and the run page."""


class _TaskEnded(Exception):
    """Ends the loop early with an error record."""

    def __init__(
        self, error_type: ErrorType, message: str, agent_traceback: str | None = None
    ) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message
        self.agent_traceback = agent_traceback


def agent_traceback(exc: BaseException, limit: int = TRACEBACK_LIMIT) -> str:
    """The traceback of an exception the agent raised, as Python prints it, from the agent's
    own frame on (the loop's call site is left out), credentials masked, and bounded to
    ``limit`` characters: the start and the end (where the raising line is) are kept."""
    tb = exc.__traceback__
    shown = tb.tb_next if tb is not None and tb.tb_next is not None else tb
    text = redact_text("".join(traceback.format_exception(type(exc), exc, shown)))
    if len(text) <= limit:
        return text
    head, tail = limit // 4, limit - limit // 4
    cut = len(text) - head - tail
    return f"{text[:head]}\n... ({cut} characters left out) ...\n{text[-tail:]}"


class _Clock:
    """The task's deadline (``time.monotonic()`` based) and the timeouts it allows."""

    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def check(self, what: str) -> None:
        left = self.remaining()
        if left is not None and left <= 0:
            raise _TaskEnded(ErrorType.TIMEOUT, f"the task ran out of time before {what}")

    def bound(self, default: float | None, what: str) -> float | None:
        """``default`` cut down to the time left (a call never outlives the task)."""
        self.check(what)
        left = self.remaining()
        if left is None:
            return default
        return left if default is None else min(default, left)

    def classify(self, exc: WaaError, what: str) -> _TaskEnded:
        """An infrastructure error, or a timeout if the task's time is what ran out."""
        left = self.remaining()
        if left is not None and left <= 0:
            return _TaskEnded(ErrorType.TIMEOUT, f"the task ran out of time during {what}: {exc}")
        return _TaskEnded(ErrorType.INFRASTRUCTURE, f"{what}: {exc}")


def run_task(
    waa: WaaClient,
    scoring: ScoringClient,
    task: dict[str, Any],
    task_id: str,
    agent: BenchmarkAgent,
    config: RunConfig,
    *,
    deadline: float | None = None,
    record_dir: Path | None = None,
    domain: str | None = None,
    sleep: Callable[[float], None] = time.sleep,
    stock_reset: bool = True,
    trial: int = 1,
) -> TaskExecution:
    """Run one task once and return its record (never raises for what happens in the task).

    Args:
        waa: The worker's WAA server client.
        scoring: The worker's scoring server client.
        task: The task JSON (``config`` for setup, ``evaluator`` for the checker).
        task_id: The task's index ID.
        agent: The agent; ``reset(task)`` then one ``act`` per step.
        config: The run's options: ``max_steps`` (when they run out the task is scored with
            the last command), ``step_pause_s`` (after each action sent),
            ``evaluate_backoff_s`` (the first wait before retrying a checker that answered
            5xx, doubled each time) and ``record_tree`` (each step's accessibility tree kept
            in ``record_dir``, ``step_NNN.tree.xml.gz``, size-capped).
        deadline: ``time.monotonic()`` value past which the task ends as ``error/timeout``.
        record_dir: Where to save ``step_NNN.png`` (the observation before each step).
        domain: The task's domain (from the catalog); the task JSON's ``domain`` otherwise.
        sleep: The sleep function (tests pass a fake to skip waits).
        stock_reset: Close windows and clear files before the setup (WAA's stock reset);
            False when the caller reset the worker already (:mod:`evals.run.reset`).
        trial: Which trial of the task this attempt runs (the agent is told, so that its seeded
            draws belong to the trial, whichever worker runs it).

    Returns:
        The record, with ``worker``, ``attempts`` and prices left for the runner to fill.
    """
    infeasible = is_infeasible(task_id, task)
    bench_task, execution = _new_record(
        agent, task_id, domain or str(task.get("domain", "")), task, infeasible, trial
    )
    clock = _Clock(deadline)
    with _recording(execution, deadline):
        _reset_and_setup(waa, scoring, task, clock, stock_reset=stock_reset)
        _reset_agent(agent, bench_task, _describe)
        last_action = _steps(waa, agent, bench_task, execution, clock, config,
                             record_dir=record_dir, sleep=sleep)
        execution.last_action = last_action
        verdict = _evaluate(
            scoring, task, last_action, clock,
            attempts=DEFAULT_EVALUATE_ATTEMPTS, backoff_s=config.evaluate_backoff_s, sleep=sleep,
        )
        execution.score = float(verdict["score"])
        execution.reason = str(verdict.get("reason", ""))
        execution.status = TaskStatus.SUCCESS if verdict["success"] else TaskStatus.FAILURE
    return execution


def _new_record(
    agent: BenchmarkAgent, task_id: str, domain: str, task: dict[str, Any], infeasible: bool,
    trial: int = 1,
) -> tuple[BenchmarkTask, TaskExecution]:
    """The task as the agent sees it, and the attempt's record (an error until it is scored).

    The agent sees the public task view (no evaluator, expected values, infeasible flag or
    reference solution) unless its class opted in (BenchmarkAgent.sees_answers).
    """
    bench_task = task_for_agent(agent, task_id, domain, task, infeasible, trial)
    return bench_task, TaskExecution(
        task_id=task_id, domain=bench_task.domain, instruction=bench_task.instruction,
        infeasible=infeasible, status=TaskStatus.ERROR, attempts=1, started_at=now_iso(),
    )


@contextlib.contextmanager
def _recording(execution: TaskExecution, deadline: float | None) -> Iterator[None]:
    """Around one attempt: every call retried or timed by :mod:`waa_client.retry` inside ends by
    ``deadline`` (the agent's too: :func:`waa_client.retry.deadline_scope`); a
    :class:`_TaskEnded` raised inside becomes the record's error (a task's own traceback kept
    apart from an agent's), then its end, duration and tokens."""
    started = time.monotonic()
    try:
        with retry.deadline_scope(deadline):
            yield
    except _TaskEnded as ended:
        execution.status = TaskStatus.ERROR
        execution.error_type = ended.error_type
        execution.error_message = redact_text(ended.message)  # a worker's error may quote its URL
        if ended.error_type is ErrorType.TASK:
            execution.task_traceback = ended.agent_traceback
        else:
            execution.agent_traceback = ended.agent_traceback
    execution.ended_at = now_iso()
    execution.duration_s = round(time.monotonic() - started, 3)
    execution.cost = CostRecord(
        tokens_in=sum(int((s.usage or {}).get("tokens_in", 0) or 0) for s in execution.steps),
        tokens_out=sum(int((s.usage or {}).get("tokens_out", 0) or 0) for s in execution.steps),
    )


def _reset_agent(
    agent: BenchmarkAgent, task: BenchmarkTask, detail: Callable[[BaseException], str] = str
) -> None:
    """The agent's ``reset``; an agent is third-party code: any failure is its own."""
    try:
        call_reset(agent, task)
    except Exception as exc:
        raise _TaskEnded(ErrorType.AGENT, f"agent reset failed: {detail(exc)}",
                         agent_traceback(exc)) from exc


def _stock_reset(waa: WaaClient, clock: _Clock, enabled: bool) -> None:
    """WAA's stock reset (close windows, clear files) unless the caller reset the worker;
    any failure of it is the worker's."""
    clock.check("the reset")
    if enabled:
        try:
            waa.close_all(timeout=clock.bound(waa.read_timeout, "the reset"))
            waa.clear_task_files(timeout=clock.bound(waa.read_timeout, "the reset"))
        except WaaError as exc:
            raise clock.classify(exc, "resetting the worker") from exc


def _reset_and_setup(
    waa: WaaClient, scoring: ScoringClient, task: dict[str, Any], clock: _Clock,
    *, stock_reset: bool = True,
) -> None:
    """Close windows, clear the last task's files, run the task's setup (WAA's stock reset)."""
    clock.check("the reset")
    try:
        if stock_reset:  # each call cut to the task's time left, as every call of an attempt
            waa.close_all(timeout=clock.bound(waa.read_timeout, "the reset"))
            waa.clear_task_files(timeout=clock.bound(waa.read_timeout, "the reset"))
    except WaaError as exc:
        if exc.is_infrastructure or isinstance(exc, ServerError):
            # a 5xx while resetting is the worker failing, not the task: try another worker
            raise clock.classify(exc, "resetting the worker") from exc
        raise _TaskEnded(ErrorType.SETUP, f"resetting the worker failed: {exc}") from exc
    config = task.get("config") or []
    if not isinstance(config, list):
        raise _TaskEnded(ErrorType.SETUP, "the task's 'config' is not a list of setup steps")
    try:
        task_id = task.get("id")
        scoring.setup(config, timeout=clock.bound(SETUP_TIMEOUT_S, "setup"),
                      task_id=task_id if isinstance(task_id, str) else None)
    except WaaError as exc:
        if exc.is_infrastructure or isinstance(exc, ServerError):
            raise clock.classify(exc, "setup") from exc
        raise _TaskEnded(ErrorType.SETUP, f"setup failed: {exc}") from exc


def _observe(
    waa: WaaClient, index: int, clock: _Clock, record_dir: Path | None, record_tree: bool
) -> tuple[BenchmarkObservation, StepRecord]:
    step = StepRecord(index=index, action={}, started_at=now_iso())
    clock.check(f"step {index}")
    screenshot: bytes | None = None
    title: str | None = None
    tree: str | None = None
    problems: list[str] = []
    try:
        obs = waa.observe(deadline=clock.deadline)  # retries too end by the task's deadline
        image = obs.get("image")
        if isinstance(image, str) and image:
            screenshot = b64decode_strict(image)  # pybase64 when installed: 40x faster
        raw_title = obs.get("window_title")
        title = raw_title if isinstance(raw_title, str) else None
    except WaaError as exc:
        if exc.is_infrastructure:
            raise clock.classify(exc, f"observing step {index}") from exc
        problems.append(f"observation: {exc}")
    except (binascii.Error, ValueError) as exc:
        problems.append(f"observation: the screenshot is not valid base64 ({exc})")
    try:
        clock.check(f"reading the tree at step {index}")
        tree = waa.accessibility(deadline=clock.deadline)
    except WaaError as exc:
        if exc.is_infrastructure:
            raise clock.classify(exc, f"reading the accessibility tree at step {index}") from exc
        problems.append(f"accessibility tree: {exc}")
    if screenshot is not None and record_dir is not None:
        step.screenshot = save_screenshot(record_dir, index, screenshot)
    if tree and record_tree and record_dir is not None:
        step.tree, step.tree_truncated = save_tree(record_dir, index, tree)
    step.window_title = title
    if problems:
        step.error = redact_text("; ".join(problems))
    return BenchmarkObservation(screenshot=screenshot, accessibility_tree=tree, window_title=title,
                                step=index), step


def _steps(
    waa: WaaClient,
    agent: BenchmarkAgent,
    task: BenchmarkTask,
    execution: TaskExecution,
    clock: _Clock,
    config: RunConfig,
    *,
    record_dir: Path | None,
    sleep: Callable[[float], None] = time.sleep,
    ends_episode: Callable[[], bool] | None = None,
) -> str:
    """Observe, act, send, until the agent ends the task, ``config.max_steps`` run out, or
    ``ends_episode`` (asked after each action sent) says the episode is over.

    Returns:
        The last action for the checker: ``DONE``/``FAIL`` if the agent said so, else the last
        command sent, else ``""``.
    """
    history: list[BenchmarkAction] = []
    last_command = ""
    last_result: dict[str, Any] | None = None
    last_error: str | None = None
    for index in range(config.max_steps):
        observation, step = _observe(waa, index, clock, record_dir, config.record_tree)
        observation.last_result, observation.last_error = last_result, last_error
        execution.steps.append(step)
        begun = time.monotonic()
        try:
            action = agent.act(observation, task, list(history))
        except AgentOutOfTime as exc:  # its calls gave up at the attempt's deadline
            # the agent's line says whether the time ran out or a wait would have passed it
            step.duration_s = round(time.monotonic() - begun, 3)
            raise _TaskEnded(ErrorType.TIMEOUT, f"the agent could not choose step {index} "
                             f"within the attempt's time: {exc}") from exc
        except Exception as exc:  # third-party code: every failure is the agent's
            step.duration_s = round(time.monotonic() - begun, 3)
            raise _TaskEnded(
                ErrorType.AGENT, f"agent failed at step {index}: {_describe(exc)}",
                agent_traceback(exc),
            ) from exc
        if not isinstance(action, BenchmarkAction):
            raise _TaskEnded(
                ErrorType.AGENT,
                f"agent returned {type(action).__name__} at step {index}, not a BenchmarkAction",
            )
        step.action = action.to_json()
        step.usage = action.usage
        history.append(action)
        try:
            if action.ends_task:
                return action.to_string()
            if action.type == WAIT:
                last_result = last_error = None
                # a WAIT action waits DEFAULT_WAIT_S (never past the task's time)
                sleep(max(0.0, min(DEFAULT_WAIT_S, clock.remaining() or DEFAULT_WAIT_S)))
                continue
            result, error = _send(waa, action, clock, index, observation.accessibility_tree)
            # what the worker answered goes to the agent (next observation) and the record:
            # a worker's error quotes the URL it was sent to, its capability included
            step.result = None if result is None else redact_json(result)
            step.error = None if error is None else redact_text(error)
            if step.error is not None:
                step.rejected = True
            last_result, last_error = step.result, step.error
            last_command = action.to_string()
            if config.step_pause_s > 0:
                sleep(config.step_pause_s)
            if ends_episode is not None and ends_episode():
                return last_command
        finally:
            step.duration_s = round(time.monotonic() - begun, 3)
    return last_command


def _send(
    waa: WaaClient, action: BenchmarkAction, clock: _Clock, index: int,
    tree: str | None = None,
) -> tuple[dict[str, Any] | None, str | None]:
    """Send an action; returns ``(result, error)``. The worker refusing an action is the
    agent's problem: it is recorded in the step and the loop goes on. GUI actions (click,
    type...) go as pyautogui source to ``/execute_windows``, as WAA's agents send them."""
    timeout = clock.bound(waa.read_timeout, f"sending step {index}")
    try:
        if action.type == EXECUTE:
            assert action.command is not None
            return waa.execute(action.command, shell=False, timeout=timeout), None
        if action.type == EXECUTE_WINDOWS or action.type in GUI_ACTION_TYPES:
            try:
                code = action.to_pyautogui(tree)
            except ValueError as exc:
                return None, f"the action cannot be sent: {exc}"
            return waa.execute_windows(code, timeout=timeout), None
    except WaaError as exc:
        # who pays, by what happened (the one rule: evals.results.agent_failures.blame_action); a
        # task whose own time ran out meanwhile fails the probe: error/timeout, as before
        blame = blame_action(exc, command=action.type == EXECUTE,
                             worker_answers=lambda: _still_healthy(waa, clock))
        if blame is Blame.WORKER:
            raise clock.classify(exc, f"sending step {index}") from exc
        if blame is Blame.AGENT_TIMED_OUT:
            raise _TaskEnded(
                ErrorType.AGENT,
                f"{ACTION_TIMED_OUT}: the worker was still running the action of step {index} "
                f"when the read timeout ({timeout:g}s) passed, and it answers its probe: the "
                "action is too long for it (split it, or raise --read-timeout); a worker "
                f"stops an action whose caller has gone ({exc})",
            ) from exc
        if isinstance(exc, ServerError) and exc.endpoint_answered and action.type == EXECUTE:
            return None, f"the worker failed on this action: {exc}"
        return None, str(exc)
    raise _TaskEnded(ErrorType.AGENT, f"action type {action.type!r} cannot be sent")


def _still_healthy(waa: WaaClient, clock: _Clock) -> bool:
    """Whether the worker answers its probe now (within the task's time)."""
    try:
        if clock.remaining() is not None and (clock.remaining() or 0.0) <= 0:
            return False
        waa.probe(deadline=clock.deadline)
    except WaaError:
        return False
    return True


def _evaluate(
    scoring: ScoringClient,
    task: dict[str, Any],
    last_action: str,
    clock: _Clock,
    *,
    attempts: int,
    backoff_s: float,
    sleep: Callable[[float], None],
) -> dict[str, Any]:
    """Score with the checker, retrying its 5xx answers with backoff (they say nothing of the
    agent); a checker that keeps failing ends the task as ``error/evaluation``."""
    tries = 0
    gave_up: list[retry.GaveUp] = []

    def once() -> dict[str, Any]:
        nonlocal tries
        tries += 1
        return scoring.evaluate(
            task, last_action, timeout=clock.bound(EVALUATE_TIMEOUT_S, "scoring")
        )

    def checker_failed(exc: BaseException) -> bool:
        # The path to the worker failing is infrastructure, never retried here; a 4xx is final.
        return (isinstance(exc, ServerError) and not isinstance(exc, RequestRejectedError)
                and not exc.is_infrastructure)

    try:
        return retry.call(once, attempts=max(1, attempts), retryable=checker_failed,
                          backoff_max=math.inf, first_wait=backoff_s, sleep=sleep,
                          deadline=clock.deadline, on_give_up=gave_up.append)
    except WaaError as exc:
        if exc.is_infrastructure:
            raise clock.classify(exc, "scoring") from exc
        stop = gave_up[0] if gave_up and checker_failed(exc) else None
        if stop is not None and stop.reason is retry.StopReason.DEADLINE:
            raise _TaskEnded(ErrorType.TIMEOUT, "the task ran out of time while retrying the "
                             f"checker (after {stop.tries_text}): {exc}") from exc
        if stop is not None and stop.reason is retry.StopReason.WAIT_PAST_DEADLINE:
            raise _TaskEnded(
                ErrorType.TIMEOUT, f"the checker failed (after {stop.tries_text}) and the next "
                f"backoff ({retry.seconds_text(stop.wait_s)}) would end past the attempt's time "
                f"({retry.seconds_text(stop.left_s or 0.0)} left): {exc}") from exc
        raise _TaskEnded(
            ErrorType.EVALUATION, f"the checker failed after {retry.tries_text(tries)}: {exc}"
        ) from exc


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
