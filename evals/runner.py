"""Running a selection of tasks on a pool: the public entry point and the dispatcher.

:func:`run_evaluation` checks everything a user can get wrong before it dispatches anything (the
agent, the run folder, the pool, every task ID), then hands the tasks to a :class:`Dispatcher`:
one loop (thread) per worker, one task in flight per worker, leasing from the run's durable queue
(:mod:`evals.queue`), longest expected task first.

What happens to a task that goes wrong:

- the worker could not be reached, or the task ran past ``task_timeout_s``: the attempt is
  released and another worker takes the task (``max_attempts`` in all; the last failure is the
  final record, ``error/infrastructure`` or ``error/timeout``);
- a worker that fails ``quarantine_after`` tasks in a row that way is quarantined: it gets no more
  tasks and is named in ``metadata.json``;
- setup failed, the agent raised, the checker kept failing: the task's final record says so
  (``error/setup``, ``error/agent``, ``error/evaluation``), without retry;
- the budget cap: dispatching stops, running tasks finish, the rest are recorded ``not_run``;
- a worker that is draining (a spot interruption notice, :mod:`oa_vm.drain`) finishes its task
  and takes no new one (with ``--repair`` it is replaced when the pool can).

Every task ends with exactly one final record, committed to the queue before ``execution.json``
is written, so a controller killed at any moment loses nothing that finished and ``--resume``
redoes nothing that finished.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from evals.agent_loop import DEFAULT_EVALUATE_BACKOFF_S, DEFAULT_MAX_STEPS, run_task
from evals.agents import AgentOptions, BenchmarkAgent, agent_factory
from evals.agents.base import tasks_for_agent
from evals.errors import (
    EvalsError,
    InvalidRunInputError,
    ResumeMismatchError,
    RunExistsError,
    RunLockedError,
)
from evals.ledger import Ledger, default_token_pricer
from evals.queue import DEFAULT_MAX_ATTEMPTS, QueuedTask, QueueStatus, ReleaseOutcome, TaskQueue
from evals.records import (
    AttemptRecord,
    ErrorType,
    RunFolder,
    RunStatus,
    TaskExecution,
    TaskInfo,
    TaskStatus,
    error_execution,
    now_iso,
    results_root,
    versions,
)
from oa_vm.redact import redact_text

if TYPE_CHECKING:
    from evals.pools import RunPool
    from evals.repair import WorkerRepairer
    from oa_vm.connect import WorkerConnection

DEFAULT_TASK_TIMEOUT_S = 600.0
DEFAULT_QUARANTINE_AFTER = 2
DEFAULT_EXPECTED_SECONDS = 120.0
_RUN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_SLEEP_COMMAND = re.compile(r"^\s*sleep\s+([0-9]+(?:\.[0-9]+)?)\s*$")
_IDLE_POLL_S = 0.2


# --- configuration and results -----------------------------------------------------------------


@dataclass
class RunConfig:
    """Everything a run needs (the ``run`` command's options).

    Attributes:
        pool: The pool's name (``None``: the only pool there is).
        pools: Several pools for one run (``run --pool a --pool b``: one queue, one ledger
            priced per pool, workers named ``<pool>/<worker>``; :mod:`evals.pools`). Leave
            ``None`` (or give one name) for a single-pool run; ``pool`` is then the pool.
        selection: The task selection (``all``, an index, ``domain:X``, IDs, ``@file``).
        agent: A built-in agent name or ``module:Class``.
        agent_options: Options of built-in agents (bundles, URL).
        max_steps: Steps per task at most.
        run_name: The run folder's name (default: ``<agent>-<UTC time>``).
        resume: Continue the run of that name instead of starting one.
        task_timeout_s: Wall-clock budget of one attempt of one task.
        max_attempts: Attempts per task when attempts fail for infrastructure reasons.
        max_cost_usd: Stop dispatching when the run's spend would pass it.
        results_dir: Where run folders live (default ``$OA_EVALS_RESULTS`` or
            ``./benchmark_results``).
        connect_timeout_s: Seconds to connect to a worker.
        read_timeout_s: Seconds to wait for a worker's answer (short values make hung workers
            show quickly).
        step_pause_s: Pause after each action (WAA's stock loop: 3 s; the simulated worker
            needs none).
        expected_seconds: Expected duration per task ID; others are estimated from the task.
        quarantine_after: Consecutive infrastructure failures/timeouts that quarantine a worker.
        lease_seconds: How long a lease outlives a silent controller.
        evaluate_backoff_s: First wait before retrying a checker that answered 5xx.
        wait_for_pool_s: How long to wait for another run's lease on the pool (0: refuse).
    """

    pool: str | None
    selection: str
    agent: str
    agent_options: AgentOptions = field(default_factory=AgentOptions)
    max_steps: int = DEFAULT_MAX_STEPS
    run_name: str | None = None
    resume: bool = False
    task_timeout_s: float = DEFAULT_TASK_TIMEOUT_S
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    max_cost_usd: float | None = None
    results_dir: Path | None = None
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 60.0
    step_pause_s: float = 0.0
    expected_seconds: dict[str, float] | None = None
    quarantine_after: int = DEFAULT_QUARANTINE_AFTER
    lease_seconds: float = 60.0
    evaluate_backoff_s: float = DEFAULT_EVALUATE_BACKOFF_S
    repair: bool = False  # replace quarantined workers from the pool (evals.repair)
    wait_for_pool_s: float = 0.0
    pools: list[str] | None = None

    def pool_names(self) -> list[str]:
        """The pools asked for: ``pools`` if given, else ``[pool]``, else ``[]`` (the only one).

        Raises:
            InvalidRunInputError: ``pools`` repeats a name, or ``pool`` is not among them.
        """
        from evals.pools import check_pool_names

        if not self.pools:
            return [] if self.pool is None else [self.pool]
        check_pool_names(self.pools)
        if self.pool is not None and self.pool not in self.pools:
            raise InvalidRunInputError(
                f"pool {self.pool!r} and pools {', '.join(self.pools)} disagree; give pools only"
            )
        return list(self.pools)

    def validate(self) -> None:
        """Raise :class:`InvalidRunInputError` for values no run can use."""
        from oa_vm.validate import folder_problem, number_problem

        checks = [
            number_problem("--max-steps", self.max_steps, low=1),
            number_problem("--task-timeout", self.task_timeout_s, above=0),
            number_problem("--max-attempts", self.max_attempts, low=1),
            number_problem("--max-cost-usd", self.max_cost_usd, low=0),
            number_problem("--read-timeout", self.read_timeout_s, above=0),
            number_problem("connect timeout", self.connect_timeout_s, above=0),
            number_problem("--step-pause", self.step_pause_s, low=0),
            number_problem("lease seconds", self.lease_seconds, above=0),
            number_problem("--wait-for-pool", self.wait_for_pool_s, low=0),
            number_problem("quarantine threshold", self.quarantine_after, low=1),
            folder_problem("--results-dir", results_root(self.results_dir)),
        ]
        problems = [p for p in checks if p]
        if self.run_name is not None and not _RUN_NAME.match(self.run_name):
            problems.append(
                f"--run-name {self.run_name!r} is not a plain folder name "
                "(letters, digits, '.', '_', '-')"
            )
        if self.resume and not self.run_name:
            problems.append("--resume needs --run-name (the run to continue)")
        if not self.selection.strip():
            problems.append("--tasks is empty; give 'all', an index name, domain:<name> or IDs")
        if problems:
            raise InvalidRunInputError("; ".join(problems))
        self.pool_names()  # a pool given twice


@dataclass(frozen=True)
class Snapshot:
    """Where a run stands (what a progress display shows)."""

    total: int
    done: int
    successes: int
    failures: int
    errors: int
    not_run: int
    running: dict[str, str | None]
    quarantined: list[str]
    elapsed_s: float
    done_this_session: int
    spent_usd: float | None = None
    """$ charged so far (finished attempts, and tasks of an earlier controller on resume)."""


@dataclass(frozen=True)
class RunEvent:
    """Something that happened in a run.

    ``kind`` is one of ``started``, ``task_started``, ``task_finished``, ``task_retry``,
    ``worker_quarantined``, ``worker_draining``, ``budget_stop``, ``finished``.
    """

    kind: str
    snapshot: Snapshot
    task_id: str | None = None
    worker: str | None = None
    status: str | None = None
    detail: str | None = None
    rejected: int = 0
    """Actions the worker refused or failed in the finished task."""


EventSink = Callable[[RunEvent], None]


@dataclass
class RunResult:
    """How a run ended.

    Attributes:
        run_dir: The run folder.
        status: ``finished`` or ``budget_stopped`` (an interrupted run raises instead).
        counts: Final records by status (``success``, ``failure``, ``error``, ``not_run``).
        not_run: Tasks a budget cap kept from running.
        quarantined: Workers that were quarantined.
        spent_usd: The run's spend (earlier sessions of a resumed run included).
        cap_usd: The cap, if any.
        unpriced_models: Models whose tokens could not be priced (counted as $0).
        warning: Why the run is not a result (:func:`health_warning`), or ``None``.
        fail_on_errors: Whether any error is to end the command with exit code 4.
    """

    run_dir: Path
    status: RunStatus
    counts: dict[str, int]
    not_run: list[str]
    quarantined: list[str]
    spent_usd: float
    cap_usd: float | None
    unpriced_models: list[str] = field(default_factory=list)
    warning: str | None = None
    fail_on_errors: bool = False


def health_warning(counts: Mapping[str, int], *, lost_all: bool) -> str | None:
    """Why a run that went to the end is still not a result, or ``None`` when it is one.

    A run is unhealthy when every worker was lost or quarantined, or when more than half of its
    tasks ended in error (their success rate would describe a handful of tasks, or nothing).
    """
    total = sum(counts.values())
    errors = counts.get(TaskStatus.ERROR.value, 0)
    if lost_all:
        return f"every worker was lost or quarantined ({errors} of {total} task(s) in error)"
    if total and errors * 2 > total:
        return f"{errors} of {total} task(s) ended in error"
    return None


# --- estimates ---------------------------------------------------------------------------------


def estimate_seconds(
    task: Mapping[str, Any],
    *,
    step_pause_s: float = 0.0,
    default: float = DEFAULT_EXPECTED_SECONDS,
) -> float:
    """A task's expected duration, from what it holds (used to order tasks and to budget).

    A scripted reference solution gives the best guess (its ``sleep`` commands, a little per
    step, and the pause after each action sent); otherwise the number of setup steps and
    metrics gives a rough one on top of ``default``. Only the order and the rough size matter:
    the ledger corrects the scale from what finished tasks took.
    """
    solution = task.get("reference_solution")
    config = task.get("config")
    setup_steps = len(config) if isinstance(config, list) else 0
    if isinstance(solution, list) and solution:
        sleeps = 0.0
        sent = 0
        for action in solution:
            text = action.strip() if isinstance(action, str) else ""
            match = _SLEEP_COMMAND.match(text)
            if match:
                sleeps += float(match.group(1))
            if text.upper() not in ("DONE", "FAIL", "WAIT"):
                sent += 1
        pauses = step_pause_s * sent
        return round(1.0 + sleeps + pauses + 0.5 * len(solution) + 0.5 * setup_steps, 3)
    evaluator = task.get("evaluator")
    funcs = evaluator.get("func") if isinstance(evaluator, dict) else None
    metrics = len(funcs) if isinstance(funcs, list) else 1
    return round(default + 10.0 * setup_steps + 5.0 * metrics, 3)


# --- the run folder lock -----------------------------------------------------------------------


@contextlib.contextmanager
def run_lock(folder: RunFolder) -> Iterator[None]:
    """Hold the run's lock (one controller per run); the OS drops it if the process dies.

    Raises:
        RunLockedError: another live process holds it.
    """
    folder.path.mkdir(parents=True, exist_ok=True)
    handle: IO[str] = open(folder.path / ".lock", "a+", encoding="utf-8")  # noqa: SIM115
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunLockedError(str(folder.path)) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{socket.gethostname()} pid {os.getpid()}\n")
        handle.flush()
        yield
    finally:
        handle.close()


# --- the dispatcher ----------------------------------------------------------------------------


@dataclass
class DispatchSettings:
    """The dispatcher's knobs (a subset of :class:`RunConfig`)."""

    max_steps: int = DEFAULT_MAX_STEPS
    task_timeout_s: float = DEFAULT_TASK_TIMEOUT_S
    quarantine_after: int = DEFAULT_QUARANTINE_AFTER
    step_pause_s: float = 0.0
    evaluate_backoff_s: float = DEFAULT_EVALUATE_BACKOFF_S


@dataclass
class DispatchOutcome:
    """What the dispatcher ended with."""

    budget_stopped: bool
    quarantined: list[str]


class Dispatcher:
    """Runs the queue's pending tasks on the given workers until none is left.

    Args:
        folder: The run folder (records and screenshots go there).
        queue: The run's queue, filled and recovered.
        ledger: Prices attempts and holds the cap.
        workers: One connection per ready worker.
        tasks: Task JSON by ID (every task of the queue).
        infos: Record facts by ID (domain, instruction, infeasible).
        make_agent: Builds one agent per worker.
        settings: Steps, timeouts, quarantine threshold.
        on_event: Called (from worker threads) as things happen; must be quick and thread-safe.
    """

    def __init__(
        self,
        folder: RunFolder,
        queue: TaskQueue,
        ledger: Ledger,
        workers: list[WorkerConnection],
        tasks: Mapping[str, dict[str, Any]],
        infos: Mapping[str, TaskInfo],
        make_agent: Callable[[], BenchmarkAgent],
        settings: DispatchSettings,
        on_event: EventSink | None = None,
        repair: Callable[[str], WorkerConnection | None] | None = None,
        draining: Callable[[str], object | None] | None = None,
    ) -> None:
        self.folder = folder
        self.repair = repair  # gives a replacement for a quarantined worker (run --repair)
        # Asked before every lease: a notice (e.g. oa_vm.drain.DrainWatch) means no new task.
        self.draining = draining
        self._drained_workers: list[str] = []
        self.queue = queue
        self.ledger = ledger
        self.workers = workers
        self.tasks = tasks
        self.infos = infos
        self.make_agent = make_agent
        self.settings = settings
        self.on_event = on_event
        self._lease_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._wake = threading.Condition()
        self._stop = threading.Event()
        self._budget_stopped = False
        self._quarantined: list[str] = []
        self._running: dict[str, str | None] = {w.name: None for w in workers}
        self._counts = {s.value: 0 for s in TaskStatus}
        self._done_this_session = 0
        self._crash: BaseException | None = None
        self._started = time.monotonic()
        for record in queue.records().values():
            self._counts[str(record["status"])] += 1

    # --- events -------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """Where the run stands now."""
        spent = self.ledger.spent()  # outside the state lock: the two locks never nest
        with self._state_lock:
            return Snapshot(
                total=len(self.tasks),
                done=sum(self._counts.values()),
                successes=self._counts[TaskStatus.SUCCESS],
                failures=self._counts[TaskStatus.FAILURE],
                errors=self._counts[TaskStatus.ERROR],
                not_run=self._counts[TaskStatus.NOT_RUN],
                running=dict(self._running),
                quarantined=list(self._quarantined),
                elapsed_s=time.monotonic() - self._started,
                done_this_session=self._done_this_session,
                spent_usd=spent,
            )

    def _emit(self, kind: str, *, rejected: int = 0, **details: str | None) -> None:
        if self.on_event is not None:
            self.on_event(RunEvent(kind, self.snapshot(), rejected=rejected, **details))

    # --- running ------------------------------------------------------------------------------

    def run(self) -> DispatchOutcome:
        """Dispatch until every task has a final record (or Ctrl-C: leases stay for --resume).

        Raises:
            KeyboardInterrupt: passed on after the loops were told to stop committing.
        """
        self._emit("started")
        threads = [
            threading.Thread(
                target=self._worker_loop, args=(w,), name=f"dispatch-{w.name}", daemon=True
            )
            for w in self.workers
        ]
        beat = threading.Thread(target=self._heartbeat, name="lease-heartbeat", daemon=True)
        beat.start()
        for thread in threads:
            thread.start()
        try:
            # join with a timeout so that Ctrl-C reaches this (main) thread promptly
            for thread in threads:
                while thread.is_alive():
                    thread.join(timeout=0.5)
        except BaseException:
            self._stop.set()
            with self._wake:
                self._wake.notify_all()
            raise
        finally:
            self._stop.set()
        beat.join(timeout=5.0)
        if self._crash is not None:
            raise EvalsError(
                f"a dispatch loop failed ({type(self._crash).__name__}: {self._crash}); "
                "finished tasks are kept, continue with --resume"
            ) from self._crash
        self._finalize_leftovers()
        self._emit("finished")
        return DispatchOutcome(self._budget_stopped, list(self._quarantined))

    def _heartbeat(self) -> None:
        interval = max(0.5, self.queue.lease_seconds / 3.0)
        while not self._stop.wait(interval):
            self.queue.heartbeat()

    def _worker_loop(self, worker: WorkerConnection) -> None:
        try:
            self._dispatch(worker)
        except BaseException as exc:
            # A loop that dies would leave its lease held and the others waiting for ever:
            # stop the run instead (its leases are recovered by --resume) and report why.
            self._crash = exc
            self._stop.set()
        finally:
            with self._state_lock:
                self._running[worker.name] = None
            with self._wake:
                self._wake.notify_all()

    def _dispatch(self, worker: WorkerConnection) -> None:
        agent = self.make_agent()
        consecutive = 0
        while not self._stop.is_set():
            if self._is_draining(worker.name):
                # Its last task has finished; with --repair a replacement takes its place.
                replacement = self._replace(worker)
                if replacement is None:
                    break
                worker, consecutive = replacement, 0
                continue
            lease = self._next_lease(worker.name)
            if lease is None:
                if self._stop.is_set() or self._budget_stopped or self._drained():
                    break
                with self._wake:
                    self._wake.wait(_IDLE_POLL_S)
                continue
            worker_fault = self._run_one(worker, agent, lease)
            consecutive = consecutive + 1 if worker_fault else 0
            if consecutive >= self.settings.quarantine_after:
                self._quarantine(worker.name, consecutive)
                replacement = self._replace(worker)
                if replacement is None:
                    break
                worker, consecutive = replacement, 0

    def _replace(self, worker: WorkerConnection) -> WorkerConnection | None:
        """A repaired connection for a quarantined worker (``run --repair``), or None."""
        if self.repair is None or self._stop.is_set() or self._drained():
            return None
        replacement = self.repair(worker.name)
        if replacement is None or self._stop.is_set():
            return None
        with self._state_lock:
            if worker.name in self._quarantined:
                self._quarantined.remove(worker.name)
            if worker.name in self._drained_workers:
                self._drained_workers.remove(worker.name)
        self._emit("worker_repaired", worker=worker.name, detail="replaced from the pool")
        return replacement

    def _is_draining(self, worker: str) -> bool:
        """True (and said once, as ``worker_draining``) when the worker is going away."""
        notice = self.draining(worker) if self.draining is not None else None
        if notice is None:
            return False
        with self._state_lock:
            first = worker not in self._drained_workers
            if first:
                self._drained_workers.append(worker)
        if first:
            self._emit("worker_draining", worker=worker,
                       detail=str(getattr(notice, "message", notice)))
        return True

    def _drained(self) -> bool:
        return not self.queue.unfinished()

    def _active_workers(self) -> int:
        with self._state_lock:
            return len(self.workers) - len({*self._quarantined, *self._drained_workers})

    def _next_lease(self, worker: str) -> QueuedTask | None:
        with self._lease_lock:
            if self._stop.is_set() or self._budget_stopped:
                return None
            candidate = self.queue.peek_next(worker)
            if candidate is None:
                return None
            if candidate.last_worker == worker and self._active_workers() > 1:
                # Every task left just failed here: leave it to a healthier worker.
                return None
            if not self.ledger.try_reserve(candidate.task_id, candidate.expected_seconds):
                if self.ledger.in_flight() > 0:
                    # Reservations are estimates; once the running tasks settle, their real
                    # cost (and better estimates) may leave room. Wait rather than stop.
                    return None
                self._budget_stopped = True
                self._emit(
                    "budget_stop",
                    task_id=candidate.task_id,
                    detail=f"spent ${self.ledger.spent():.4f} of ${self.ledger.cap_usd}",
                )
                with self._wake:
                    self._wake.notify_all()
                return None
            lease = self.queue.lease(candidate.task_id, worker)
            if lease is None:
                self.ledger.settle(
                    candidate.task_id, expected_seconds=0.0, actual_seconds=0.0, final=False
                )
            return lease

    def _run_one(self, worker: WorkerConnection, agent: BenchmarkAgent, lease: QueuedTask) -> bool:
        """Run one leased attempt and commit what it ended with; True if the worker is to blame."""
        task_id = lease.task_id
        info = self.infos[task_id]
        with self._state_lock:
            self._running[worker.name] = task_id
        self._emit("task_started", task_id=task_id, worker=worker.name)
        self.folder.clear_steps(task_id)
        began = time.monotonic()
        try:
            execution = run_task(
                worker.waa,
                worker.scoring,
                self.tasks[task_id],
                task_id,
                agent,
                max_steps=self.settings.max_steps,
                step_pause_s=self.settings.step_pause_s,
                deadline=began + self.settings.task_timeout_s,
                record_dir=self.folder.task_dir(task_id),
                domain=info.domain,
                evaluate_backoff_s=self.settings.evaluate_backoff_s,
            )
        except Exception as exc:  # a harness bug must still leave a record, not a stuck lease
            execution = error_execution(
                info, ErrorType.INFRASTRUCTURE, f"unexpected {type(exc).__name__}: {exc}"
            )
        seconds = time.monotonic() - began
        if execution.error_message:
            # records end up in execution.json, queue.sqlite and the run page: no credentials
            execution.error_message = redact_text(execution.error_message)
        with self._state_lock:
            self._running[worker.name] = None
        if self._stop.is_set():
            # Interrupted: commit nothing, the lease is recovered by --resume.
            return False
        execution.worker = worker.name
        execution.attempts = lease.attempts
        execution.cost = self.ledger.charge(
            task_id, seconds, [s.usage for s in execution.steps], worker=worker.name
        )
        execution.previous_attempts = [
            AttemptRecord(**_attempt_fields(h)) for h in self.queue.history(task_id)
        ]
        retryable = execution.error_type in (ErrorType.INFRASTRUCTURE, ErrorType.TIMEOUT) or (
            # a setup failure may be the worker's (a broken desktop): once more, elsewhere
            execution.error_type is ErrorType.SETUP
            and lease.attempts < 2
            and self._active_workers() > 1
        )
        if not retryable:
            self._commit(execution, lease, seconds)
            # a failed setup or reset counts towards the worker's quarantine even when final
            return execution.error_type is ErrorType.SETUP
        attempt = {
            "attempt": lease.attempts,
            "worker": worker.name,
            "error_type": None if execution.error_type is None else execution.error_type.value,
            "error_message": execution.error_message,
            "started_at": execution.started_at,
            "ended_at": execution.ended_at,
        }
        outcome = self.queue.release(
            task_id,
            worker.name,
            execution.error_message or "",
            attempt=attempt,
            final_record=execution.to_json(),
        )
        final = outcome is ReleaseOutcome.FINAL
        self.ledger.settle(
            task_id, expected_seconds=lease.expected_seconds, actual_seconds=seconds, final=final
        )
        if final:
            self.folder.write_execution(execution)
            self._count(execution)
            self._emit(
                "task_finished", task_id=task_id, worker=worker.name,
                status=execution.status.value, detail=execution.error_message,
                rejected=execution.rejected_actions,
            )
        else:
            self._emit(
                "task_retry", task_id=task_id, worker=worker.name,
                detail=execution.error_message,
            )
            with self._wake:
                self._wake.notify_all()
        return True

    def _commit(self, execution: TaskExecution, lease: QueuedTask, seconds: float) -> None:
        document = execution.to_json()  # one copy for the queue and execution.json
        self.queue.complete(execution.task_id, document)
        self.folder.write_execution(execution, document)
        self.ledger.settle(
            execution.task_id,
            expected_seconds=lease.expected_seconds,
            actual_seconds=seconds,
            final=True,
        )
        self._count(execution)
        self._emit(
            "task_finished", task_id=execution.task_id, worker=execution.worker,
            status=execution.status.value, detail=execution.error_message or execution.reason,
            rejected=execution.rejected_actions,
        )

    def _count(self, execution: TaskExecution) -> None:
        with self._state_lock:
            self._counts[execution.status.value] += 1
            self._done_this_session += 1

    def _quarantine(self, worker: str, failures: int) -> None:
        with self._state_lock:
            self._quarantined.append(worker)
        self._emit(
            "worker_quarantined", worker=worker,
            detail=f"{failures} consecutive infrastructure failures or timeouts",
        )

    def _finalize_leftovers(self) -> None:
        """Give every task still pending its final record (budget cap, or no worker left)."""
        pending = self.queue.ids_with_status(QueueStatus.PENDING)
        for task_id in pending:
            info = self.infos[task_id]
            if self._budget_stopped:
                record = error_execution(
                    info, ErrorType.BUDGET,
                    f"not run: the budget cap ${self.ledger.cap_usd} was reached",
                    status=TaskStatus.NOT_RUN,
                )
            else:
                names = ", ".join(self._quarantined) or "none"
                drained = ", ".join(self._drained_workers)
                record = error_execution(
                    info, ErrorType.INFRASTRUCTURE,
                    f"no healthy worker was left to run it (quarantined: {names}"
                    + (f"; draining: {drained})" if drained else ")"),
                )
            record.attempts = len(self.queue.history(task_id))
            record.cost = self.ledger.task_cost(task_id)
            record.previous_attempts = [
                AttemptRecord(**_attempt_fields(h)) for h in self.queue.history(task_id)
            ]
            self.queue.complete(task_id, record.to_json())
            self.folder.write_execution(record)
            self._count(record)
            self._emit("task_finished", task_id=task_id, status=record.status.value,
                       detail=record.error_message)


def _attempt_fields(entry: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("attempt", "worker", "error_type", "error_message", "started_at", "ended_at")
    return {k: entry.get(k) for k in keys}


# --- the public entry point ---------------------------------------------------------------------


def default_run_name(agent: str) -> str:
    """``<agent>-<UTC time>``, safe as a folder name."""
    stamp = now_iso().replace(":", "").replace("+0000", "Z").split(".")[0]
    agent_part = re.sub(r"[^A-Za-z0-9]+", "-", agent).strip("-") or "agent"
    return f"{agent_part}-{stamp}"


def _check_resume(folder: RunFolder, config: RunConfig) -> dict[str, Any]:
    metadata = folder.read_metadata()
    recorded = str(metadata.get("selection", ""))
    if recorded != config.selection:
        raise ResumeMismatchError(str(folder.path), "--tasks", recorded, config.selection)
    recorded_agent = str(metadata.get("agent", ""))
    if recorded_agent != config.agent:
        raise ResumeMismatchError(str(folder.path), "--agent", recorded_agent, config.agent)
    return metadata


def run_evaluation(config: RunConfig, *, on_event: EventSink | None = None) -> RunResult:
    """Run (or resume) a selection of tasks on a pool and write the run folder.

    Nothing is dispatched, and the run folder is not touched, until the options, the agent, the
    pool and every task ID were checked.

    With several pools (``config.pools``) every pool is checked and leased first, the tasks
    must be the same on all of them, and one dispatcher runs the union of their workers
    (:mod:`evals.pools`).

    Raises:
        InvalidRunInputError: bad options, an unknown agent, a run that exists without
            ``resume`` (or is missing with it), ``resume`` with another selection, agent or
            set of pools, a task the agent cannot play, a pool given twice, pools that serve
            different tasks (exit code 2).
        oa_vm.errors.OaVmError: a pool is unknown, not ready, or held by another run.
        waa_client.errors.CatalogError: unknown or synthetic task IDs (all listed; exit code 2).
        RunLockedError: another process runs this run now.
        KeyboardInterrupt: Ctrl-C; the run is marked ``interrupted`` and can be resumed.
    """
    from evals.pools import connect_pools, hold_pools, load_ready, select_tasks

    config.validate()
    run_name = config.run_name or default_run_name(config.agent)
    folder = RunFolder(results_root(config.results_dir) / run_name)
    if config.resume and not folder.exists():
        raise InvalidRunInputError(
            f"there is no run {folder.path} to resume; check --run-name and --results-dir"
        )
    if not config.resume and folder.path.exists():
        raise RunExistsError(str(folder.path))
    previous = _check_resume(folder, config) if config.resume else {}
    make_agent = agent_factory(config.agent, config.agent_options)

    names = _resolve_pools(folder, config, previous)
    load_ready(names)  # every pool exists and is usable before any lease is taken
    with hold_pools(names, run_name, wait_s=config.wait_for_pool_s), connect_pools(
        names, connect_timeout=config.connect_timeout_s, read_timeout=config.read_timeout_s
    ) as pools:
        selected = select_tasks(pools, config.selection)
        refs = selected.refs
        task_ids = [r.task_id for r in refs]
        if config.resume and list(previous.get("task_ids") or []) != task_ids:
            raise ResumeMismatchError(
                str(folder.path), "--tasks (the tasks it names now differ)",
                ",".join(previous.get("task_ids") or []), ",".join(task_ids),
            )
        tasks = selected.tasks
        infos = {
            r.task_id: TaskInfo(r.task_id, r.domain, r.instruction, r.infeasible) for r in refs
        }
        for tid in task_ids:
            folder.task_dir(tid)  # refuses IDs unusable as folder names, before writing
        probe_agent = make_agent()
        probe_agent.check_tasks(tasks_for_agent(probe_agent, tasks))
        return _run_in_folder(
            folder, config, pools, tasks, infos, make_agent, previous, on_event,
        )


def _resolve_pools(folder: RunFolder, config: RunConfig, previous: Mapping[str, Any]) -> list[str]:
    """The run's pool names, resolved (none given: the only pool; resuming a multi-pool run
    without ``--pool``: its own pools), checked against a resumed run's.

    Raises:
        ResumeMismatchError: a resumed multi-pool run given other pools (or a single-pool run
            given several).
    """
    from evals.pools import recorded_pool_names
    from oa_vm import api

    names = config.pool_names()
    recorded = recorded_pool_names(previous) if config.resume else None
    if not names and recorded:
        names = recorded
    names = [api.resolve_name(n) for n in names] if names else [api.resolve_name(None)]
    if config.resume:
        before = recorded or ([str(previous["pool"])] if previous.get("pool") else [])
        # A single-pool run resumed on one pool keeps today's rule (any pool will do).
        if (len(before) > 1 or len(names) > 1) and sorted(before) != sorted(names):
            raise ResumeMismatchError(
                str(folder.path), "the pools", ", ".join(before), ", ".join(names)
            )
    return names


def _ledger(pools: list[RunPool], cap_usd: float | None) -> Ledger:
    """The run's ledger: one pool's price, or each worker priced at its own pool's."""
    from evals.pools import highest_price

    if len(pools) == 1:
        return Ledger(pools[0].record.price_per_hour, cap_usd, default_token_pricer())
    return Ledger(
        highest_price(pools), cap_usd, default_token_pricer(),
        worker_pools={w.name: p.name for p in pools for w in p.workers},
        pool_prices={p.name: p.record.price_per_hour for p in pools},
    )


def _per_pool_helpers(
    pools: list[RunPool], config: RunConfig
) -> tuple[list[WorkerRepairer], Callable[[str], WorkerConnection | None] | None,
           Callable[[str], object | None]]:
    """The repairers to close, the dispatcher's ``repair`` and ``draining``: each worker is
    repaired, and watched for drain notices, through its own pool."""
    from evals.pools import PoolRouter, renamed_connection
    from oa_vm.drain import DrainWatch

    watches = {p.name: DrainWatch(p.name) for p in pools}
    repairers: dict[str, WorkerRepairer] = {}
    if config.repair:
        from evals.repair import WorkerRepairer

        repairers = {
            # given its pool's drain check, it replaces a worker under notice right away
            p.name: WorkerRepairer(p.name, connect_timeout=config.connect_timeout_s,
                                   read_timeout=config.read_timeout_s, draining=watches[p.name])
            for p in pools
        }
    if len(pools) == 1:
        name = pools[0].name
        return list(repairers.values()), repairers.get(name), watches[name]
    repair = PoolRouter(repairers, renamed_connection) if repairers else None
    draining: PoolRouter[object] = PoolRouter(watches)
    return list(repairers.values()), repair, draining


def _check_resumable(path: Path) -> None:
    """A resumed run's queue must be this run's queue: without it, finished tasks would run again.

    Raises:
        sqlite3.DatabaseError: missing, not SQLite, or without the queue's table.
    """
    import sqlite3

    if not path.is_file():
        raise sqlite3.DatabaseError("the file is missing")
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        row = conn.execute(
            "SELECT COUNT(*) FROM sqlite_master WHERE type='table' AND name='tasks'"
        ).fetchone()
    finally:
        conn.close()
    if not row or row[0] != 1:
        raise sqlite3.DatabaseError("it holds no task queue")


def _open_queue(
    folder: RunFolder, config: RunConfig, owner: str, tasks: Mapping[str, dict[str, Any]]
) -> TaskQueue:
    """The run's queue, filled and recovered; an unreadable one is reported in one line.

    Raises:
        InvalidRunInputError: ``queue.sqlite`` is not a readable queue (nothing was changed).
    """
    import sqlite3

    queue: TaskQueue | None = None
    try:
        if config.resume:
            _check_resumable(folder.queue_path)
        queue = TaskQueue(
            folder.queue_path, owner=owner, lease_seconds=config.lease_seconds,
            max_attempts=config.max_attempts,
        )
        given = config.expected_seconds or {}
        pause = config.step_pause_s
        queue.add([
            (tid, given.get(tid) or estimate_seconds(task, step_pause_s=pause))
            for tid, task in tasks.items()
        ])
        queue.recover()
        queue.records()
    except (sqlite3.DatabaseError, ValueError) as exc:
        if queue is not None:
            queue.close()
        raise InvalidRunInputError(
            f"run {folder.path}: its queue {folder.queue_path.name} is unreadable ({exc}); "
            "it cannot be resumed: start a new run with another --run-name"
        ) from exc
    return queue


def _run_in_folder(
    folder: RunFolder,
    config: RunConfig,
    pools: list[RunPool],
    tasks: dict[str, dict[str, Any]],
    infos: dict[str, TaskInfo],
    make_agent: Callable[[], BenchmarkAgent],
    previous: dict[str, Any],
    on_event: EventSink | None,
) -> RunResult:
    from evals import metrics
    from evals.pools import summary_fields

    task_ids = list(tasks)
    workers = [w for p in pools for w in p.workers]
    first = pools[0].record  # a multi-pool run's pool keys are set from summary_fields below
    pool, cloud, price_per_hour = first.name, first.cloud, first.price_per_hour
    if not config.resume:
        folder.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            folder.path.mkdir()
        except FileExistsError:
            raise RunExistsError(str(folder.path)) from None
    with run_lock(folder):
        earlier_quarantined: list[str] = []
        metadata: dict[str, Any] = {
            "run": folder.path.name,
            "pool": pool,
            "cloud": cloud,
            "agent": config.agent,
            # Agents that opted in to the tasks' answers (evals.agents.base.sees_answers).
            "answer_visible_agents": [config.agent] if make_agent().sees_answers else [],
            "selection": config.selection,
            "task_ids": task_ids,
            "max_steps": config.max_steps,
            "max_attempts": config.max_attempts,
            "task_timeout_s": config.task_timeout_s,
            "max_cost_usd": config.max_cost_usd,
            "price_per_hour": price_per_hour,
            "versions": versions(),
            "workers": [w.name for w in workers],
            "started_at": previous.get("started_at") or now_iso(),
            "ended_at": None,
            "status": RunStatus.RUNNING.value,
            "quarantined_workers": [],
        }
        if len(pools) > 1:
            metadata.update(summary_fields(pools))  # pool "a+b", and each pool in "pools"
        if config.resume:
            metadata["resumed_at"] = [*previous.get("resumed_at", []), now_iso()]
            earlier_quarantined = [str(w) for w in previous.get("quarantined_workers") or []]
            metadata["quarantined_workers"] = earlier_quarantined
        owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        # The queue is opened and checked before metadata.json is touched: a --resume that
        # fails here leaves the run exactly as it was (a finished run is not marked running).
        queue = _open_queue(folder, config, owner, tasks)
        try:
            folder.write_metadata(metadata)
            for tid, task in tasks.items():
                folder.write_task(tid, task)
            ledger = _ledger(pools, config.max_cost_usd)
            done = queue.records()
            ledger.carry(r.get("cost") or {} for r in done.values())
            for tid, record in done.items():
                # The queue is the source of truth: restore a copy lost or cut short in a crash.
                try:
                    present = folder.read_execution(tid) is not None
                except (ValueError, TypeError, KeyError):
                    present = False
                if not present:
                    folder.write_execution(TaskExecution.from_json(record))
            repairers, repair, draining = _per_pool_helpers(pools, config)
            dispatcher = Dispatcher(
                folder, queue, ledger, workers, tasks, infos, make_agent,
                DispatchSettings(
                    max_steps=config.max_steps,
                    task_timeout_s=config.task_timeout_s,
                    quarantine_after=config.quarantine_after,
                    step_pause_s=config.step_pause_s,
                    evaluate_backoff_s=config.evaluate_backoff_s,
                ),
                on_event,
                repair=repair,
                draining=draining,
            )
            try:
                outcome = dispatcher.run()
            except BaseException:
                folder.update_metadata(
                    status=RunStatus.INTERRUPTED.value, ended_at=now_iso(),
                    cost=ledger.totals(),
                )
                raise
            finally:
                for repairer in repairers:
                    repairer.close()
            quarantined = sorted({*earlier_quarantined, *outcome.quarantined})
            status = RunStatus.BUDGET_STOPPED if outcome.budget_stopped else RunStatus.FINISHED
            records = queue.records()
        finally:
            queue.close()
        counts = {s.value: 0 for s in TaskStatus}
        for record in records.values():
            counts[str(record["status"])] += 1
        warning = health_warning(
            counts, lost_all=bool(workers) and set(outcome.quarantined) >= {w.name for w in workers}
        )
        folder.update_metadata(
            status=status.value, ended_at=now_iso(), quarantined_workers=quarantined,
            cost=ledger.totals(), warning=warning,
        )
        metrics.write_summary(folder.path)
    return RunResult(
        warning=warning,
        run_dir=folder.path,
        status=status,
        counts=counts,
        not_run=[tid for tid, r in records.items() if r["status"] == TaskStatus.NOT_RUN],
        quarantined=quarantined,
        spent_usd=ledger.spent(),
        cap_usd=config.max_cost_usd,
        unpriced_models=sorted(ledger.unpriced_models),
    )
