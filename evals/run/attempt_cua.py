"""One attempt of one Cua-Bench variant on one worker: setup, the agent (or the module's
oracle), evaluate; always a record, never an exception for what happens in the task.

The module's lifecycle functions run on one event loop of the attempt's own, in a thread of its
own, each bounded by the time the attempt has left: a function that never returns (even one
blocking its loop) costs the attempt its time, never the worker's loop. Their session's calls to
the worker end by the attempt's deadline too, retries included
(:func:`waa_client.retry.deadline_scope`), so none runs on behind a cut-off attempt. What a
module's function raises is the module's error (``error/task``, its traceback in the record,
the message naming the module file and the function), unless it is the worker failing under
it (unreachable, timed out: ``error/infrastructure``, retried elsewhere as any task's), or the
attempt's time running out (``error/timeout``, as in the agent loop: a call made after the
deadline, a function started after it, a ``WaitAction`` the session cut at it). The
reward list is recorded as the module returned it; the score is its mean (Cua-Bench's own
rule), a success when it is 1.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.agents.base import BenchmarkAgent
from evals.errors import InvalidRunInputError
from evals.results.records import ErrorType, StepRecord, TaskExecution, TaskStatus, now_iso
from evals.run.agent_loop import (
    _Clock,
    _new_record,
    _recording,
    _reset_agent,
    _steps,
    _stock_reset,
    _TaskEnded,
)
from evals.tasks.cua_bench.loader import lifecycle, load_module, module_traceback, variants_of
from evals.tasks.cua_bench.session import WorkerSession
from oa_vm.kit.redact import redact_text
from waa_client.errors import WaaError
from waa_client.waa import WaaClient

if TYPE_CHECKING:
    from evals.run.settings import RunConfig

SUCCESS_TOLERANCE = 1e-9


class _Loop:
    """The attempt's event loop, in a daemon thread: a coroutine that never yields cannot
    hold the dispatcher past the deadline (its thread is left behind, the attempt goes on)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="cua-bench-loop",
                                       daemon=True)
        self.thread.start()

    def run(self, coroutine: Coroutine[Any, Any, Any], timeout: float) -> Any:
        # The coroutine runs in a copy of the caller's context, and so do the session's worker
        # calls (asyncio.to_thread): the attempt's retry.deadline_scope holds there, so each
        # ends by the attempt's deadline rather than running on behind a cut-off attempt.
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result(timeout=max(0.0, timeout))
        except FutureTimeout:
            future.cancel()
            raise

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=2.0)
        if not self.thread.is_alive():
            self.loop.close()


async def _call(function: Callable[..., Any], *args: Any) -> Any:
    result = function(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


def rewards_of(value: Any) -> list[float] | None:
    """The reward list an ``evaluate_task`` returned, or None when it is not one (a number alone
    counts as a list of one)."""
    items = [value] if isinstance(value, (int, float)) and not isinstance(value, bool) else value
    if not isinstance(items, (list, tuple)) or not items:
        return None
    rewards = []
    for item in items:
        if (isinstance(item, bool) or not isinstance(item, (int, float))
                or not math.isfinite(float(item))):
            return None
        rewards.append(float(item))
    return rewards


def run_cua_task(
    waa: WaaClient,
    task: dict[str, Any],
    task_id: str,
    agent: BenchmarkAgent,
    config: RunConfig,
    *,
    deadline: float | None = None,
    record_dir: Path | None = None,
    stock_reset: bool = True,
    trial: int = 1,
) -> TaskExecution:
    """Run one attempt of a Cua-Bench variant and return its record (see the module).

    Args:
        task: The variant's queued task (:meth:`evals.tasks.cua_bench.loader.Variant.task_json`).
        task_id: Its task ID (``<module-dir>/<index>``).
        agent: The agent; one whose ``runs_module_oracle`` is true plays the module's
            ``solve_task`` instead of stepping.
        waa, config, deadline, record_dir, stock_reset, trial: As
            :func:`evals.run.agent_loop.run_task`'s.
    """
    spec = task["cua_bench"]
    module_file = Path(str(spec["module"]))
    where = f"{module_file.parent.name}/{module_file.name}"
    bench_task, execution = _new_record(agent, task_id, str(task.get("domain", "")), task, False,
                                        trial)
    clock = _Clock(deadline)
    loop = _Loop()
    session = WorkerSession(waa, timeout=waa.read_timeout,
                            on_action=lambda code: _note(execution, code))

    def lifecycle_call(kind: str, function: Callable[..., Any], variant: Any) -> Any:
        clock.check(f"{where}: {kind}")  # the time an earlier one's cut wait used up
        left = clock.remaining()
        budget = 3600.0 if left is None else left
        try:
            return loop.run(_call(function, variant, session), budget)
        except FutureTimeout:
            if session.wait_cut is not None:  # waiting, as the module asked, when time ran out
                raise _TaskEnded(
                    ErrorType.TIMEOUT, f"the task ran out of time during {where}: {kind} (its "
                    f"WaitAction of {session.wait_cut:g} s, cut at the attempt's time)",
                ) from None
            raise _TaskEnded(
                ErrorType.TASK,
                f"{where}: {kind} did not finish within {budget:.0f} s (the attempt's time)",
            ) from None
        except WaaError as exc:
            if exc.is_infrastructure:
                raise clock.classify(exc, f"{where}: {kind}") from exc
            raise _module_error(where, kind, exc, module_file) from exc
        except Exception as exc:  # the module's own code: any failure is the module's
            raise _module_error(where, kind, exc, module_file) from exc

    with _recording(execution, deadline):
        try:
            try:
                module = load_module(module_file)
                functions = lifecycle(module, str(spec["split"]))
                variant = variants_of(module_file, str(spec["split"]), module)[int(spec["index"])]
            except (InvalidRunInputError, IndexError) as exc:
                raise _TaskEnded(ErrorType.TASK, f"{where}: cannot load variant "
                                 f"#{spec['index']}: {exc}") from exc
            _stock_reset(waa, clock, stock_reset)
            setup = functions.get("setup_task")
            if setup is not None:
                lifecycle_call("setup_task", setup, variant)
            if getattr(agent, "runs_module_oracle", False):
                solve = functions.get("solve_task")
                if solve is None:
                    raise _TaskEnded(ErrorType.AGENT, f"{where}: no @cb.solve_task for the oracle")
                lifecycle_call("solve_task", solve, variant)
                execution.last_action = "DONE"
            else:
                _reset_agent(agent, bench_task)
                execution.last_action = _steps(waa, agent, bench_task, execution, clock, config,
                                               record_dir=record_dir)
            value = lifecycle_call("evaluate_task", functions["evaluate_task"], variant)
            rewards = rewards_of(value)
            if rewards is None:
                raise _TaskEnded(ErrorType.TASK, f"{where}: evaluate_task returned "
                                 f"{_shown(value)}, not a list of numbers")
            execution.reward_components = rewards
            execution.score = sum(rewards) / len(rewards)
            execution.reason = f"rewards {rewards} (mean {execution.score:g})"
            success = execution.score >= 1.0 - SUCCESS_TOLERANCE
            execution.status = TaskStatus.SUCCESS if success else TaskStatus.FAILURE
        finally:
            loop.close()
    return execution


def _note(execution: TaskExecution, code: str) -> None:
    """A module's own action (setup, oracle, evaluate), recorded as a step without picture."""
    execution.steps.append(StepRecord(index=len(execution.steps),
                                      action={"type": "execute_windows", "command": code},
                                      started_at=now_iso()))


def _module_error(where: str, kind: str, exc: BaseException, module_file: Path) -> _TaskEnded:
    return _TaskEnded(ErrorType.TASK, f"{where}: {kind} raised {type(exc).__name__}: {exc}",
                      redact_text(module_traceback(exc, module_file)))


def _shown(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"
