"""The two ways stock tools spread WAA tasks over workers, run for real, and the lower bound.

``WAA_PROTOCOL.md`` section 7: WAA's ``run.py`` gives each of k workers one contiguous slice of
the flattened index; a later wrapper deals task IDs round-robin. In both, each worker runs its
fixed list one task after another, nothing is retried, and a worker that fails is dropped with
every task it had left. :func:`run_fixed_lists` does exactly that on real worker connections
with the same agent loop the runner uses (:func:`evals.run.agent_loop.run_task`), so the three
policies differ only in how they hand out tasks.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evals.agents.base import BenchmarkAgent
    from oa_vm.reach.connect import WorkerConnection

OUTCOMES = ("success", "failure")


def static_slices(task_ids: Sequence[str], workers: int) -> list[list[str]]:
    """WAA ``run.py``'s split: worker i runs the i-th run of ``ceil(n / workers)`` tasks.

    Raises:
        ValueError: ``workers`` is less than 1.
    """
    if workers < 1:
        raise ValueError("workers must be at least 1")
    size = math.ceil(len(task_ids) / workers) if task_ids else 0
    return [list(task_ids[i * size:(i + 1) * size]) for i in range(workers)]


def round_robin(task_ids: Sequence[str], workers: int) -> list[list[str]]:
    """The wrapper's split: task j goes to worker ``j % workers``.

    Raises:
        ValueError: ``workers`` is less than 1.
    """
    if workers < 1:
        raise ValueError("workers must be at least 1")
    return [list(task_ids[i::workers]) for i in range(workers)]


def lower_bound(work: Sequence[float], workers: int) -> float:
    """No schedule of ``work`` on ``workers`` ends before ``max(longest, total / workers)``.

    Raises:
        ValueError: ``workers`` is less than 1.
    """
    if workers < 1:
        raise ValueError("workers must be at least 1")
    if not work:
        return 0.0
    return max(max(work), sum(work) / workers)


def capacity_lower_bound(
    work: Sequence[float], workers: int, *, failed: int = 0, fail_at_s: float = 0.0
) -> float:
    """The lower bound when ``failed`` of the workers stop at ``fail_at_s``.

    Until ``fail_at_s`` all ``workers`` can work, afterwards ``workers - failed``; work is taken
    as divisible, and the longest task still bounds it. With no failure this is
    :func:`lower_bound`.

    Raises:
        ValueError: no worker is left after the failure, or ``workers`` is less than 1.
    """
    if failed == 0:
        return lower_bound(work, workers)
    left = workers - failed
    if left < 1:
        raise ValueError("at least one worker must survive the failure")
    total = sum(work)
    before = workers * fail_at_s
    divisible = total / workers if total <= before else fail_at_s + (total - before) / left
    return max(max(work, default=0.0), divisible)


@dataclass(frozen=True)
class TaskResult:
    """How one task ended under a fixed-list policy.

    Attributes:
        task_id: The task.
        worker: The worker that ran it.
        status: ``success``, ``failure`` or ``error``.
        error_type: The error's type for ``error``.
        duration_s: The attempt's duration as the agent loop measured it.
        ended_s: When it ended, in seconds since the policy started.
    """

    task_id: str
    worker: str
    status: str
    error_type: str | None
    duration_s: float
    ended_s: float


@dataclass
class FixedListRun:
    """What a fixed-list policy ended with.

    Attributes:
        makespan_s: From the start to the end of the last worker's list.
        results: The tasks that were attempted, by ID.
        lost: Tasks without an outcome: failed, or never run because their worker was dropped.
        dropped: Workers dropped after an infrastructure error, with when (seconds).
        worker_end_s: When each worker finished (or was dropped), in seconds.
    """

    makespan_s: float
    results: dict[str, TaskResult] = field(default_factory=dict)
    lost: list[str] = field(default_factory=list)
    dropped: dict[str, float] = field(default_factory=dict)
    worker_end_s: dict[str, float] = field(default_factory=dict)


def run_fixed_lists(
    workers: Sequence[WorkerConnection],
    lists: Sequence[Sequence[str]],
    tasks: Mapping[str, dict[str, Any]],
    domains: Mapping[str, str],
    make_agent: Callable[[], BenchmarkAgent],
    *,
    record_root: Path | None = None,
    task_timeout_s: float = 600.0,
    on_start: Callable[[], None] | None = None,
) -> FixedListRun:
    """Run ``lists[i]`` on ``workers[i]``, one task after another, no retry.

    A task that ends in an infrastructure error or a timeout drops its worker, with every task
    it had left (what the stock tools do). Tasks that end in other errors are recorded and the
    worker goes on.

    Args:
        workers: One connection per list.
        lists: Task IDs per worker.
        tasks: Task JSON by ID.
        domains: Domain by task ID.
        make_agent: Builds one agent per worker.
        record_root: Where step screenshots go (``<root>/<task_id>/``), as the runner saves them.
        task_timeout_s: Budget of one task.
        on_start: Called once, just as the workers start (e.g. to arm a fault).

    Raises:
        ValueError: there are fewer connections than lists.
    """
    from evals.run.agent_loop import run_task
    from evals.run.settings import RunConfig

    config = RunConfig(pool=None, selection="all", agent="oracle")  # the loop's defaults
    if len(workers) < len(lists):
        raise ValueError(f"{len(lists)} task lists but only {len(workers)} workers")
    lock = threading.Lock()
    run = FixedListRun(makespan_s=0.0)
    started = time.monotonic()

    def work(worker: WorkerConnection, todo: Sequence[str]) -> None:
        agent = make_agent()
        for position, task_id in enumerate(todo):
            record_dir = None if record_root is None else record_root / task_id
            if record_dir is not None:
                record_dir.mkdir(parents=True, exist_ok=True)
            execution = run_task(
                worker.waa, worker.scoring, tasks[task_id], task_id, agent, config,
                deadline=time.monotonic() + task_timeout_s, record_dir=record_dir,
                domain=domains[task_id],
            )
            error_type = None if execution.error_type is None else execution.error_type.value
            result = TaskResult(
                task_id, worker.name, execution.status.value, error_type,
                float(execution.duration_s or 0.0), time.monotonic() - started,
            )
            with lock:
                run.results[task_id] = result
                if result.status not in OUTCOMES:
                    run.lost.append(task_id)
                if error_type in ("infrastructure", "timeout"):
                    run.dropped[worker.name] = result.ended_s
                    run.lost.extend(todo[position + 1:])
                    break
        with lock:
            run.worker_end_s[worker.name] = time.monotonic() - started

    threads = [
        threading.Thread(target=work, args=(w, todo), name=f"fixed-{w.name}", daemon=True)
        for w, todo in zip(workers, lists, strict=False)
    ]
    if on_start is not None:
        on_start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    run.makespan_s = time.monotonic() - started
    return run
