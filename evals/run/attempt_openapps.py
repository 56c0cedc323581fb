"""One attempt of one OpenApps-style task on one worker: reset, read the apps' state, the agent,
read the state again, score; always a record, never an exception for what happens in the task.

Every episode starts with OpenApps' start page on the worker's screen (:data:`START_COMMAND`, as
OpenApps' own environment starts its browser there), so an agent that acts from the screenshot
and the accessibility tree sees the apps; the task's setup commands (:meth:`Task.setup`: the app
the episode starts in) run after it. The state is read from the worker twice, right before the
agent's first step and right after its last (the simulated desktop answers ``appstate`` with one
JSON document per app). The class's reward over the two snapshots is the score (1 or 0), and the
snapshots' difference goes into the record (``state_diff``) and onto the run page. For an
abstention task the episode ends at the agent's first act (the first step that changes an app,
by the comparison the rewards use), question (``send_msg_to_user``) or report
(``report_infeasible``), whichever comes first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.agents.base import REPORT_INFEASIBLE, SEND_MSG_TO_USER, BenchmarkAgent
from evals.errors import InvalidRunInputError
from evals.results.records import ErrorType, TaskExecution, TaskStatus
from evals.run.agent_loop import (
    _Clock,
    _new_record,
    _recording,
    _reset_agent,
    _steps,
    _stock_reset,
    _TaskEnded,
    agent_traceback,
)
from evals.tasks.openapps.classes import ACT, CLARIFY, STOP, Episode, Task, state_diff
from evals.tasks.openapps.compare import states_match
from evals.tasks.openapps.loader import build
from waa_client.errors import WaaError
from waa_client.waa import WaaClient

if TYPE_CHECKING:
    from evals.run.settings import RunConfig

STATE_COMMAND = "appstate"
"""The simulated desktop's command that answers the apps' state (docs/local-worker.md)."""
START_COMMAND = "goto start_page"
"""The simulated desktop's command that opens the OpenApps window on the start page."""
_ENDED_BY = {SEND_MSG_TO_USER: CLARIFY, REPORT_INFEASIBLE: STOP}


def read_state(waa: WaaClient, clock: _Clock, what: str) -> dict[str, Any]:
    """The apps' state document, read from the worker.

    Raises:
        _TaskEnded: the worker failed (infrastructure) or answered something that is not a
            state document (the task's: its apps are not on this worker).
    """
    try:
        result = waa.execute(STATE_COMMAND, shell=False,
                             timeout=clock.bound(waa.read_timeout, what))
    except WaaError as exc:
        if exc.is_infrastructure:
            raise clock.classify(exc, what) from exc
        raise _TaskEnded(ErrorType.TASK, f"{what}: the worker has no app state to read "
                         f"({exc}); OpenApps-style tasks need the simulated desktop's apps"
                         ) from exc
    try:
        state = json.loads(str(result.get("output") or ""))
    except ValueError:
        state = None
    if int(result.get("returncode") or 0) != 0 or not isinstance(state, dict):
        raise _TaskEnded(ErrorType.TASK, f"{what}: the worker's app state is not a JSON "
                         f"document: {str(result.get('error') or result.get('output'))[:200]}")
    return state


def run_setup(waa: WaaClient, clock: _Clock, command: str) -> None:
    """Run one of the task's setup commands (where the episode starts) on the worker.

    Raises:
        _TaskEnded: the worker failed (infrastructure), or the command failed (the task's:
            its apps are not on this worker, or the desktop refused the command).
    """
    what = f"setting the task up ({command})"
    try:
        result = waa.execute(command, shell=False, timeout=clock.bound(waa.read_timeout, what))
    except WaaError as exc:
        if exc.is_infrastructure:
            raise clock.classify(exc, what) from exc
        raise _TaskEnded(ErrorType.TASK, f"{what}: {exc}") from exc
    if int(result.get("returncode") or 0) != 0:
        raise _TaskEnded(ErrorType.TASK, f"{what}: "
                         f"{str(result.get('error') or result.get('output'))[:200]}")


def run_openapps_task(
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
    """Run one attempt of an OpenApps-style task and return its record (see the module).

    Args:
        task: The queued task (:meth:`evals.tasks.openapps.loader.Entry.task_json`).
        task_id: Its task ID (the entry's name).
        agent: The agent (the oracle plays the class's reference solution).
        waa, config, deadline, record_dir, stock_reset, trial: As
            :func:`evals.run.agent_loop.run_task`'s (the stock reset puts the apps back to
            their seed).
    """
    spec = task["openapps"]
    bench_task, execution = _new_record(agent, task_id, str(task.get("domain", "")), task, False,
                                        trial)
    clock = _Clock(deadline)
    with _recording(execution, deadline):
        try:
            entry: Task = build(spec["entry"], f"openapps task {task_id!r}")[0]
        except InvalidRunInputError as exc:
            raise _TaskEnded(ErrorType.TASK, str(exc)) from exc
        _stock_reset(waa, clock, stock_reset)
        for command in (START_COMMAND, *entry.setup()):
            run_setup(waa, clock, command)
        initial = read_state(waa, clock, "reading the apps' state before the agent")
        _reset_agent(agent, bench_task)

        def acted() -> bool:  # an abstention episode ends at the first act
            return entry.expects_abstention and not states_match(
                initial, read_state(waa, clock, "reading the apps' state after a step"))

        execution.last_action = _steps(waa, agent, bench_task, execution, clock, config,
                                       record_dir=record_dir, ends_episode=acted)
        last = execution.steps[-1].action if execution.steps else None
        ended_by = _ENDED_BY.get(str((last or {}).get("type", "")), ACT)
        final = read_state(waa, clock, "reading the apps' state after the agent")
        episode = Episode(initial, final, ended_by)
        try:
            passed = entry.score(episode)
        except Exception as exc:  # a user's class: its failure is the task's
            raise _TaskEnded(ErrorType.TASK, f"{type(entry).__name__}'s reward raised "
                             f"{type(exc).__name__}: {exc}", agent_traceback(exc)) from exc
        execution.state_diff = state_diff(initial, final)
        execution.score = 1.0 if passed else 0.0
        execution.reward_components = [execution.score]
        execution.reason = (f"{type(entry).__name__}: {'complete' if passed else 'not complete'}"
                            f" (episode ended by {ended_by}; {len(execution.state_diff)} "
                            "state change(s))")
        execution.status = TaskStatus.SUCCESS if passed else TaskStatus.FAILURE
    return execution
