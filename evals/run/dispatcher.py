"""The dispatcher: runs a run's queued tasks on its workers, one task in flight per worker.

One loop (thread) per worker leases from the run's durable queue (:mod:`evals.run.queue`), longest
expected task first; :func:`evals.run.runner.run_evaluation` builds it after every check.

What happens to a task that goes wrong:

- the worker could not be reached, or the task ran past ``task_timeout_s``: the attempt is
  released and another worker takes the task (``max_attempts`` in all; the last failure is the
  final record, ``error/infrastructure`` or ``error/timeout``);
- a worker that fails ``quarantine_after`` tasks in a row that way is quarantined: it gets no more
  tasks and is named in ``metadata.json``; so is, from the start, a worker that did not answer
  when the run started (``left_out``; with ``--repair`` it is replaced first, then works);
- a host that is gone (:attr:`oa_vm.reach.connect.WorkerConnection.host`, shared by several
  workers):
  when a worker of a shared host fails that way, every worker of the host is probed (both its
  servers, as the run's start does: :func:`evals.run.pools.unanswered`); if none answers, the
  host is quarantined once, as one host (one ``host_quarantined`` event, one entry in
  ``metadata.json``'s ``quarantined_hosts``), its workers take no more tasks, and the tasks they
  had in flight are retried on other hosts (a task that just failed on a host is not handed to
  another worker of the same host while a worker of another host can take it). A worker of a
  one-worker host is its own host: the rule above names it;
- the SSH path to the worker went down (the SSH server in front of it refuses or does not
  answer: a network blip, sshd restarting; :mod:`evals.run.paths`): no worker and no task is
  blamed. The attempt is given back to the queue uncounted (three times a task at most: a path
  that keeps flapping then counts as the cases above), the workers behind that server take
  no task and re-open their tunnels with backoff, and go on once it answers. A path down longer
  than the patience (``OA_EVALS_SSH_PATIENCE_S``, 5 minutes: a cloud host gone, its SSH server
  with it) has its workers quarantined as one, as a host is (its endpoint named; with
  ``--repair`` each is replaced first, a new host being a new path), and the run goes on behind
  the other paths; when no worker is left behind another path, the run stops in
  one line naming the endpoint (:class:`evals.errors.SshPathLost`), its attempts in flight given
  back uncounted, and ``--resume`` runs the rest. A worker dead behind a live SSH server is the
  cases above;
- setup failed, the agent raised, the checker kept failing: the task's final record says so
  (``error/setup``, ``error/agent``, ``error/evaluation``), without retry;
- the budget cap: dispatching stops, running tasks finish, the rest are recorded ``not_run``;
- a worker that is draining (a spot interruption notice, :mod:`oa_vm.reach.drain`) finishes its task
  and takes no new one (with ``--repair`` it is replaced when the pool can);
- the run folder refused a write (a full or read-only disk, a planted symlink:
  :data:`oa_vm.kit.safe_fs.LOCAL_FILE_ERRORS`, the queue's included): the controller's own fault,
  charged to no task and no worker; the run stops with that error, its attempts in flight
  uncommitted (``--resume`` runs them).

Every task ends with exactly one final record, committed to the queue before ``execution.json``
is written, so a controller killed at any moment loses nothing that finished and ``--resume``
redoes nothing that finished.

Fencing: every write the dispatcher makes carries the lease it holds. Each request to a worker,
each lease taken from the queue and each repair first asks ``fence`` (the run's pool leases,
:meth:`oa_vm.model.lease.Hold.check`); each commit carries the attempt's task lease
(:meth:`evals.run.queue.TaskQueue.complete`). Once a pool lease is lost (taken over by another
controller after a freeze, ``pool-cleanup`` begun) the dispatcher sends nothing more to any worker,
gives its attempts in flight back to the queue uncounted (``--resume`` runs them; none runs twice)
and :meth:`Dispatcher.run` raises the fence's error (one line). A commit refused because the
task's lease is no longer this attempt's is dropped, with its ``execution.json`` unwritten. An
earlier attempt's screenshots are moved aside (``attempt_<n>/``), never deleted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from evals.agents import BenchmarkAgent
from evals.errors import EvalsError, SshPathLost
from evals.results.events import EventKind, EventSink, RunEvent, Snapshot
from evals.results.ledger import Ledger
from evals.results.records import (
    AttemptRecord,
    ErrorType,
    RunFolder,
    TaskExecution,
    TaskInfo,
    TaskStatus,
    error_execution,
    step_files,
)
from evals.results.trials import split_key
from evals.run.agent_loop import run_task
from evals.run.paths import DEFAULT_PATIENCE_S, PathWatch, endpoint_of, may_give_back
from evals.run.queue import AttemptFencedError, QueuedTask, QueueStatus, ReleaseOutcome, TaskQueue
from evals.run.reset import ResetFailed, WorkerReset
from oa_vm import LeaseLostError, PoolRemovingError
from oa_vm.kit.durations import format_duration
from oa_vm.kit.redact import redact_text
from oa_vm.kit.safe_fs import LOCAL_FILE_ERRORS, WriteFailedError, ensure_dir

if TYPE_CHECKING:
    from evals.run.settings import RunConfig
    from oa_vm import WorkerConnection
    from waa_client import ScoringClient, WaaClient

FENCE_ERRORS = (LeaseLostError, PoolRemovingError)
"""What ``fence`` raises: the run no longer holds its pool (taken over, or being removed)."""

_IDLE_POLL_S = 0.2


# What a progress display is fed (Snapshot, RunEvent, EventSink) is in evals.results.events.


# --- the dispatcher ----------------------------------------------------------------------------


@dataclass
class DispatchOutcome:
    """What the dispatcher ended with."""

    budget_stopped: bool
    quarantined: list[str]
    """Workers quarantined alone (a quarantined host's workers are in ``quarantined_hosts``)."""
    quarantined_hosts: list[dict[str, Any]] = field(default_factory=list)
    """Each host quarantined as one: ``{"host", "workers", "reason"}``."""
    workers: list[str] = field(default_factory=list)
    """Every worker the run dispatched to: those it started with, then those left out at the
    start that ``--repair`` replaced (they joined it)."""


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
        config: The run's options (steps, timeouts, quarantine threshold, trials), whole.
        on_event: Called (from worker threads) as things happen; must be quick and thread-safe.
        repair: Gives a replacement for a quarantined worker (``run --repair``).
        draining: A worker's drain notice, or None.
        fence: Raises one of :data:`FENCE_ERRORS` once the run's pool lease is lost; asked
            before every request, lease and repair (see the module docstring).
        fence_token: The lease generation a worker's requests carry, by worker name
            (``waa_client.FENCE_HEADER``): the worker refuses a request sent by this run after
            a later holder's, which closes the moment between ``fence`` and the request.
        resets: The reset of each worker before each task, by worker name
            (:func:`evals.run.reset.plan_resets`); a worker without one gets WAA's stock reset
            inside :func:`evals.run.agent_loop.run_task`, unrecorded.
        path_patience_s: How long the workers behind an SSH server that went down wait for it
            before they are quarantined, or the run stops when no other worker is left
            (:func:`evals.run.paths.patience_s`).
        left_out: Workers of the run's pools that did not answer when it started
            (:attr:`evals.run.pools.RunPool.left_out`): quarantined from the start; with
            ``repair`` each has a loop that first asks for its replacement, then works.
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
        config: RunConfig,
        on_event: EventSink | None = None,
        repair: Callable[[str], WorkerConnection | None] | None = None,
        draining: Callable[[str], object | None] | None = None,
        fence: Callable[[], None] | None = None,
        resets: Mapping[str, WorkerReset] | None = None,
        fence_token: Callable[[str], str | None] | None = None,
        path_patience_s: float = DEFAULT_PATIENCE_S,
        left_out: Sequence[str] = (),
    ) -> None:
        self.folder = folder
        self._paths = PathWatch(
            path_patience_s, str(folder.path),
            on_down=lambda endpoint, detail: self._emit(EventKind.PATH_DOWN, worker=endpoint,
                                                        detail=detail),
            on_back=lambda endpoint, seconds: self._emit(
                EventKind.PATH_BACK, worker=endpoint,
                detail=f"after {format_duration(seconds)}; its workers go on"),
        )
        self._path_lost: SshPathLost | None = None
        self.fence = fence or (lambda: None)
        self.fence_token = fence_token or (lambda _worker: None)
        self._fenced: BaseException | None = None
        self.resets = resets or {}
        self.repair = repair
        # Asked before every lease: a notice (e.g. oa_vm.reach.drain.DrainWatch) means no new task.
        self.draining = draining
        self._drained_workers: list[str] = []
        self.queue = queue
        self.ledger = ledger
        self.workers = workers
        self.tasks = tasks
        self._attempts = _attempts_for(tasks.values())
        self.infos = infos
        self.make_agent = make_agent
        self.config = config
        self.on_event = on_event
        self._lease_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._wake = threading.Condition()
        self._stop = threading.Event()
        self._budget_stopped = False
        self._left_out = list(left_out)
        self._quarantined: list[str] = list(left_out)
        # host -> its workers (a worker without a host is its own), and the hosts quarantined
        self._hosts: dict[str, list[str]] = {}
        for w in workers:
            self._hosts.setdefault(w.host or w.name, []).append(w.name)
        self._host_of = {name: host for host, names in self._hosts.items() for name in names}
        self._connections = {w.name: w for w in workers}
        self._lost_hosts: dict[str, dict[str, Any]] = {}
        self._running: dict[str, str | None] = {w.name: None for w in workers}
        self._counts = {s.value: 0 for s in TaskStatus}
        self._done_this_session = 0
        self._crash: BaseException | None = None
        self._started = time.monotonic()
        # Only the selection's own trials count: a queue may hold rows of other tasks (a run
        # resumed or rerun with a narrower selection), and counting those printed "19/18 done".
        for key, record in queue.records().items():
            task_id, trial = split_key(key)
            if task_id in tasks and trial <= config.trials:
                self._counts[str(record["status"])] += 1

    # --- events -------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """Where the run stands now."""
        spent = self.ledger.spent()  # outside the state lock: the two locks never nest
        with self._state_lock:
            return Snapshot(
                total=len(self.tasks) * self.config.trials,  # units of work: trials
                done=sum(self._counts.values()),
                successes=self._counts[TaskStatus.SUCCESS],
                failures=self._counts[TaskStatus.FAILURE],
                errors=self._counts[TaskStatus.ERROR],
                not_run=self._counts[TaskStatus.NOT_RUN],
                running=dict(self._running),
                quarantined=[*self._quarantined,
                             *(n for h in self._lost_hosts.values() for n in h["workers"])],
                elapsed_s=time.monotonic() - self._started,
                done_this_session=self._done_this_session,
                spent_usd=spent,
            )

    def _emit(self, kind: EventKind, *, rejected: int = 0, **details: str | None) -> None:
        if self.on_event is not None:
            # events reach the terminal (and a caller's sink): their texts are masked too
            shown = {k: None if v is None else redact_text(v) for k, v in details.items()}
            self.on_event(RunEvent(kind, self.snapshot(), rejected=rejected, **shown))

    # --- running ------------------------------------------------------------------------------

    def run(self) -> DispatchOutcome:
        """Dispatch until every task has a final record (or Ctrl-C: leases stay for --resume).

        Raises:
            KeyboardInterrupt: passed on after the loops were told to stop committing.
            LeaseLostError, PoolRemovingError: the run's pool lease was lost; attempts in
                flight were given back, pending tasks are left for ``--resume``.
            SshPathLost: an SSH path stayed down past the patience; the same.
        """
        self._emit(EventKind.STARTED)
        # a worker left out at the start has a loop only if it can be repaired
        loops: list[WorkerConnection | str] = [
            *self.workers, *(self._left_out if self.repair is not None else [])]
        threads = [
            threading.Thread(target=self._worker_loop, args=(w,), daemon=True,
                             name=f"dispatch-{w if isinstance(w, str) else w.name}")
            for w in loops
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
        if self._fenced is not None:
            raise self._fenced
        if self._path_lost is not None:
            raise self._path_lost
        if isinstance(self._crash, LOCAL_FILE_ERRORS):
            raise self._crash  # one line naming the file (evals.run.runner adds --resume)
        if self._crash is not None:
            raise EvalsError(
                f"a dispatch loop failed ({type(self._crash).__name__}: {self._crash}); "
                "finished tasks are kept, continue with --resume"
            ) from self._crash
        self._finalize_leftovers()
        self._emit(EventKind.FINISHED)
        with self._state_lock:
            joined = [*self._connections]  # a worker left out enters once it is replaced
        return DispatchOutcome(self._budget_stopped, list(self._quarantined),
                               [dict(entry) for entry in self._lost_hosts.values()],
                               [n for n in (*(w.name for w in self.workers), *self._left_out)
                                if n in joined])

    def _heartbeat(self) -> None:
        # at least every 5 s: the last heartbeat is also what an attempt a crash interrupted is
        # billed up to (evals.run.queue.TaskQueue.recover)
        interval = max(0.5, min(5.0, self.queue.lease_seconds / 3.0))
        try:
            while not self._stop.wait(interval):
                self.queue.heartbeat()
        except BaseException as exc:
            # the queue's disk refused the heartbeat (full): stop the run as a loop that dies
            # does, rather than let the leases run out unnoticed
            self._crash = self._crash or exc
            self._stop.set()
            with self._wake:
                self._wake.notify_all()

    def _worker_loop(self, worker: WorkerConnection | str) -> None:
        """One worker's loop; a worker's name (one left out at the start, ``--repair``) is
        replaced from its pool first, and its loop ends at once if it cannot be."""
        name = worker if isinstance(worker, str) else worker.name
        try:
            connection = self._replace(worker) if isinstance(worker, str) else worker
            if connection is not None:
                self._dispatch(connection)
        except FENCE_ERRORS as exc:
            self._fenced = self._fenced or exc
            self._stop.set()
        except BaseException as exc:
            # A loop that dies would leave its lease held and the others waiting for ever:
            # stop the run instead (its leases are recovered by --resume) and report why (the
            # first: a full disk fails every loop, and the first says where it began).
            self._crash = self._crash or exc
            self._stop.set()
        finally:
            with self._state_lock:
                if name in self._running:  # a worker left out and never replaced ran nothing
                    self._running[name] = None
            with self._wake:
                self._wake.notify_all()

    def _dispatch(self, worker: WorkerConnection) -> None:
        agent = self.make_agent()
        consecutive = 0
        while not self._stop.is_set():
            if self._host_lost(worker.name):
                break  # its host was quarantined (by this loop or a sibling's)
            if self._paths.is_down(worker):
                try:
                    if not self._paths.wait_until_up(worker, self._stop, self._drained):
                        break  # the run stops, or every task ended, while the path is down
                except SshPathLost as lost:
                    replacement = self._path_lost_for(worker, lost)
                    if replacement is not None:
                        worker, consecutive = replacement, 0
                    elif not self._paths.wait_until_up(worker, self._stop, self._lost_wait_ends,
                                                       lost=True):
                        break  # the run stops, every task ended or no worker is left
                    else:  # it answers again: the worker is back at work
                        self._off_lost_path(lost.endpoint, worker.name)
                continue
            if self._is_draining(worker.name):
                # Its last task has finished; with --repair a replacement takes its place.
                replacement = self._replace(worker.name)
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
            if worker_fault and self._check_host(worker):
                break
            consecutive = consecutive + 1 if worker_fault else 0
            if consecutive >= self.config.quarantine_after:
                self._quarantine(worker.name, consecutive)
                replacement = self._replace(worker.name)
                if replacement is None:
                    break
                worker, consecutive = replacement, 0

    def _replace(self, worker: str) -> WorkerConnection | None:
        """A repaired connection for a quarantined worker (``run --repair``), or None."""
        if self.repair is None or self._stop.is_set() or self._drained():
            return None
        replacement = self.repair(worker)
        if replacement is None or self._stop.is_set():
            return None
        with self._state_lock:
            if worker in self._quarantined:
                self._quarantined.remove(worker)
            if worker in self._drained_workers:
                self._drained_workers.remove(worker)
            self._connections[replacement.name] = replacement
        self._emit(EventKind.WORKER_REPAIRED, worker=worker, detail="replaced from the pool")
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
            self._emit(EventKind.WORKER_DRAINING, worker=worker,
                       detail=str(getattr(notice, "message", notice)))
        return True

    def _drained(self) -> bool:
        return not self.queue.unfinished()

    def _active_workers(self) -> int:
        with self._state_lock:
            return len(self.workers) + len(self._left_out) - len(self._out_of_work())

    def _out_of_work(self) -> set[str]:
        """Workers that take no task (quarantined, alone or with their host, or draining);
        call with ``_state_lock`` held."""
        lost = (n for h in self._lost_hosts.values() for n in h["workers"])
        return {*self._quarantined, *self._drained_workers, *lost}

    # --- hosts --------------------------------------------------------------------------------

    def _host_lost(self, worker: str) -> bool:
        """Whether the worker's host, or its SSH path, was quarantined."""
        with self._state_lock:
            return any(worker in entry["workers"] for entry in self._lost_hosts.values())

    def _check_host(self, worker: WorkerConnection) -> bool:
        """After a failure ``worker`` is blamed for: is its host gone? True (the host is
        quarantined, once, whichever of its workers asks first) when the host is shared and
        none of its workers answers a probe; False for a one-worker host (the worker's own
        quarantine rule applies) or a host with a worker that answers."""
        host = self._host_of.get(worker.name, worker.name)
        with self._state_lock:
            if host in self._lost_hosts:
                return True
            names = list(self._hosts.get(host, []))
            probed = [self._connections[n] for n in names
                      if n in self._connections and n not in self._quarantined]
        if len(names) < 2:
            return False
        from evals.run.pools import unanswered

        self.fence()  # the pool lease asked first
        if None in unanswered(probed):  # the start's probe: a worker answers with both servers
            return False
        return self._quarantine_host(
            host, f"none of its {len(names)} workers answers (the host is unreachable or down)")

    def _quarantine_host(self, host: str, reason: str) -> bool:
        """Quarantine ``host`` and all its workers: one event, one entry (the first caller
        records it; a sibling that finds it recorded says nothing more)."""
        with self._state_lock:
            if host in self._lost_hosts:
                return True
            workers = list(self._hosts[host])
            self._lost_hosts[host] = {"host": host, "workers": workers, "reason": reason}
        self._emit(EventKind.HOST_QUARANTINED, worker=host,
                   detail=f"{reason}; its workers {', '.join(workers)} take no more tasks and "
                          "their tasks run on other hosts")
        with self._wake:
            self._wake.notify_all()
        return True

    def _path_lost_for(self, worker: WorkerConnection,
                       lost: SshPathLost) -> WorkerConnection | None:
        """The path of ``worker`` stayed down past the patience. Its workers are quarantined as
        one (one event, one ``quarantined_hosts`` entry named by the endpoint, whichever of them
        asks first); with ``--repair`` each is replaced (a cloud worker's replacement is a new
        host, a new path) and goes back to work, else it waits for the path past the patience
        and goes back to work if it answers again. The run goes on while a worker behind another
        path can take tasks; with none left it stops (:class:`SshPathLost`, ``--resume``)."""
        endpoint = lost.endpoint
        with self._state_lock:
            first = endpoint not in self._lost_hosts
            if first:
                behind = sorted(name for name, connection in self._connections.items()
                                if endpoint_of(connection) == endpoint)
                self._lost_hosts[endpoint] = {
                    "host": endpoint, "workers": behind,
                    "reason": f"its SSH server did not answer for {lost.waited} "
                              f"({lost.last_error})"}
            entry = self._lost_hosts[endpoint]
        if first and (self._active_workers() > 0 or self.repair is not None):
            self._emit(EventKind.HOST_QUARANTINED, worker=endpoint,
                       detail=f"{entry['reason']}; its workers {', '.join(entry['workers'])} "
                              + ("are replaced from the pool where they can be (--repair)"
                                 if self.repair is not None else
                                 "take no more tasks and their tasks run behind other SSH "
                                 "servers"))
        replacement = self._replace(worker.name)
        if replacement is not None:
            self._off_lost_path(endpoint, worker.name)
            return replacement
        if self._active_workers() == 0:
            self._path_lost = self._path_lost or lost
            self._stop.set()
        with self._wake:
            self._wake.notify_all()
        return None

    def _lost_wait_ends(self) -> bool:
        """Whether a worker waiting for its lost path stops waiting: every task is final, or
        no worker behind another path is left to take one (the run ends as any run whose
        workers are all out; waiting on would hold it open for ever)."""
        return self._drained() or self._active_workers() == 0

    def _off_lost_path(self, endpoint: str, worker: str) -> None:
        """``worker`` is back at work (replaced, or its path answers again): no longer among the
        lost path's workers; the path's entry goes with its last worker."""
        with self._state_lock:
            entry = self._lost_hosts.get(endpoint)
            if entry is not None:
                entry["workers"] = [n for n in entry["workers"] if n != worker]
                if not entry["workers"]:
                    del self._lost_hosts[endpoint]

    def _other_host_active(self, worker: str) -> bool:
        """A worker on another host than ``worker``'s can still take tasks."""
        host = self._host_of.get(worker, worker)
        with self._state_lock:
            out = self._out_of_work()
            return any(self._host_of.get(n, n) != host and n not in out for n in self._running)

    def _next_lease(self, worker: str) -> QueuedTask | None:
        with self._lease_lock:
            if self._stop.is_set() or self._budget_stopped:
                return None
            self.fence()
            candidate = self.queue.peek_next(worker)
            if candidate is None:
                return None
            if candidate.last_worker == worker and self._active_workers() > 1:
                # Every task left just failed here: leave it to a healthier worker.
                return None
            last_host = self._host_of.get(candidate.last_worker or "", None)
            if (last_host is not None and last_host == self._host_of.get(worker)
                    and len(self._hosts.get(last_host, [])) > 1
                    and self._other_host_active(worker)):
                # It just failed on this host: another host takes it while one can (a host
                # whose workers all fail is found by the first of them, _check_host).
                return None
            if not self.ledger.try_reserve(candidate.task_id, candidate.expected_seconds):
                if self.ledger.in_flight() > 0:
                    # Reservations are estimates; once the running tasks settle, their real
                    # cost (and better estimates) may leave room. Wait rather than stop.
                    return None
                self._budget_stopped = True
                self._emit(
                    EventKind.BUDGET_STOP,
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
        """Run one leased attempt and commit what it ended with; True if the worker is to blame.

        Raises:
            LeaseLostError, PoolRemovingError: the run's pool lease was lost (the attempt was
                given back to the queue).
        """
        task_id = lease.task_id  # the trial's key; the task's ID for trial 1 (evals.results.trials)
        base, trial = split_key(task_id)
        info = self.infos[base]
        if self.config.trials > 1:
            self.queue.spread_trials(task_id, worker.name)  # other trials: other workers
        with self._state_lock:
            self._running[worker.name] = task_id
        # every request of this attempt (a repaired worker's new clients too) carries the lease
        worker.waa.fence_token = worker.scoring.fence_token = self.fence_token(worker.name)
        self._emit(EventKind.TASK_STARTED, task_id=task_id, worker=worker.name)
        _keep_earlier_evidence(self.folder.task_dir(task_id), self.folder.path)
        began = time.monotonic()
        path_mark = self._paths.mark(worker)
        reset = self.resets.get(worker.name)
        try:
            # the reset (evals.run.reset) is its own step: a clean restore may take minutes on a
            # cloud worker, so the task's own time limit starts after it
            done_reset = None if reset is None else reset.before_task(worker, self.fence)
            task = self.tasks[base]
            waa = cast("WaaClient", _Fenced(worker.waa, self.fence))
            deadline = time.monotonic() + self.config.task_timeout_s
            record_dir, stock_reset = self.folder.task_dir(task_id), reset is None
            attempt = self._attempts.get(_kind_of(task))
            if attempt is not None:  # a Cua-Bench variant or an OpenApps-style entry
                execution = attempt(waa, task, base, agent, self.config, deadline=deadline,
                                    record_dir=record_dir, stock_reset=stock_reset, trial=trial)
            else:
                execution = run_task(
                    waa, cast("ScoringClient", _Fenced(worker.scoring, self.fence)), task, base,
                    agent, self.config, deadline=deadline, record_dir=record_dir,
                    domain=info.domain, stock_reset=stock_reset, trial=trial)
            if done_reset is not None:
                done_reset.apply(execution)
        except FENCE_ERRORS:
            self._give_back(worker.name, lease)
            raise
        except LOCAL_FILE_ERRORS:
            # the run folder refused a screenshot (a full disk): the controller's fault, not the
            # task's or the worker's; the run stops and --resume runs the attempt again
            raise
        except ResetFailed as failed:
            execution = error_execution(info, failed.error_type, failed.message)
            execution.reset = None if reset is None else reset.kind
        except Exception as exc:  # a harness bug must still leave a record, not a stuck lease
            execution = error_execution(
                info, ErrorType.INFRASTRUCTURE, f"unexpected {type(exc).__name__}: {exc}"
            )
        seconds = time.monotonic() - began
        execution.egress = worker.egress
        if execution.error_message:
            # records end up in execution.json, queue.sqlite and the run page: no credentials
            execution.error_message = redact_text(execution.error_message)
        with self._state_lock:
            self._running[worker.name] = None
        if self._stop.is_set():
            # Interrupted: commit nothing, the lease is recovered by --resume (given back now
            # when the stop is a lost pool lease or a lost SSH path).
            try:
                self.fence()
            except FENCE_ERRORS:
                self.queue.give_back(task_id, worker.name, lease)
                return False
            if self._path_lost is not None:
                self.queue.give_back(task_id, worker.name, lease,
                                     "interrupted: the run stopped, an SSH path was lost")
            return False
        try:
            self.fence()  # a result obtained while the lease was lost is not committed
        except FENCE_ERRORS:
            self._give_back(worker.name, lease)
            raise
        if execution.status is TaskStatus.ERROR:
            cut = self._paths.at_fault(worker, path_mark)
            if cut is not None and may_give_back(self.queue.history(task_id)):
                self._path_give_back(worker.name, lease, seconds, cut,
                                     [s.usage for s in execution.steps])
                return False
        execution.worker = worker.name
        execution.trial = trial
        execution.attempts = lease.attempts
        execution.cost = self.ledger.charge(
            task_id, seconds, [s.usage for s in execution.steps], worker=worker.name
        )
        execution.previous_attempts = [AttemptRecord.from_json(h)
                                       for h in self.queue.history(task_id)]
        retryable = execution.error_type in (ErrorType.INFRASTRUCTURE, ErrorType.TIMEOUT) or (
            # a setup failure may be the worker's (a broken desktop): once more, elsewhere
            execution.error_type is ErrorType.SETUP
            and lease.attempts < 2
            and self._active_workers() > 1
        )
        if not retryable:
            self._commit(execution, lease, seconds, worker.name)
            # a failed setup or reset counts towards the worker's quarantine even when final
            return execution.error_type is ErrorType.SETUP
        try:
            outcome = self.queue.release(
                task_id,
                worker.name,
                execution.error_message or "",
                attempt=execution.attempt().to_json(),
                final_record=execution.to_json(),
                lease=lease,
            )
        except AttemptFencedError:
            self._dropped(task_id, worker.name, seconds, lease)
            return False
        final = outcome is ReleaseOutcome.FINAL
        self.ledger.settle(
            task_id, expected_seconds=lease.expected_seconds, actual_seconds=seconds, final=final
        )
        if final:
            # committed by the queue first: the copy needs no fsync (RunFolder.sync_executions)
            self.folder.write_execution(execution, durable=False)
            self._count(execution)
            self._emit(
                EventKind.TASK_FINISHED, task_id=task_id, worker=worker.name,
                status=execution.status.value, detail=execution.error_message,
                rejected=execution.rejected_actions,
            )
        else:
            self._emit(
                EventKind.TASK_RETRY, task_id=task_id, worker=worker.name,
                detail=execution.error_message,
            )
            with self._wake:
                self._wake.notify_all()
        return True

    def _commit(
        self, execution: TaskExecution, lease: QueuedTask, seconds: float, worker: str
    ) -> None:
        document = execution.to_json()  # one copy for the queue and execution.json
        try:
            self.queue.complete(execution.key, document, lease=lease, worker=worker)
        except AttemptFencedError:
            self._dropped(execution.key, worker, seconds, lease)
            return
        # committed by the queue first: the copy needs no fsync (RunFolder.sync_executions)
        self.folder.write_execution(execution, document, durable=False)
        self.ledger.settle(
            execution.key,
            expected_seconds=lease.expected_seconds,
            actual_seconds=seconds,
            final=True,
        )
        self._count(execution)
        self._emit(
            EventKind.TASK_FINISHED, task_id=execution.key, worker=execution.worker,
            status=execution.status.value, detail=execution.error_message or execution.reason,
            rejected=execution.rejected_actions,
        )

    def _give_back(self, worker: str, lease: QueuedTask) -> None:
        """The pool lease is lost: the attempt is not counted, ``--resume`` runs the task."""
        with self._state_lock:
            self._running[worker] = None
        self._stop.set()
        self.queue.give_back(lease.task_id, worker, lease)
        self.ledger.settle(lease.task_id, expected_seconds=0.0, actual_seconds=0.0, final=False)

    def _path_give_back(self, worker: str, lease: QueuedTask, seconds: float, why: str,
                        usages: list[dict[str, Any] | None]) -> None:
        """The attempt failed because the SSH path to its worker went down: no one is blamed.
        It is given back uncounted; the worker time it took is charged to its task now (and
        kept in its history as interrupted, which ``--resume`` bills if the run stops before
        the task ends)."""
        self.ledger.charge(lease.task_id, seconds, usages, worker=worker)
        self.queue.give_back(lease.task_id, worker, lease, why)
        self.ledger.settle(lease.task_id, expected_seconds=0.0, actual_seconds=0.0, final=False)
        self._emit(EventKind.TASK_GIVEN_BACK, task_id=lease.task_id, worker=worker,
                   detail=why)
        with self._wake:
            self._wake.notify_all()

    def _dropped(self, task_id: str, worker: str, seconds: float, lease: QueuedTask) -> None:
        """The task's lease is no longer this attempt's: its result is not committed (the
        attempt that holds the lease now owns the task's record)."""
        self.ledger.settle(task_id, expected_seconds=lease.expected_seconds,
                           actual_seconds=seconds, final=False)
        self._emit(EventKind.TASK_RETRY, task_id=task_id, worker=worker,
                   detail="result dropped: the task's lease is no longer this attempt's")

    def _count(self, execution: TaskExecution) -> None:
        with self._state_lock:
            self._counts[execution.status.value] += 1
            self._done_this_session += 1

    def _quarantine(self, worker: str, failures: int) -> None:
        with self._state_lock:
            self._quarantined.append(worker)
        self._emit(
            EventKind.WORKER_QUARANTINED, worker=worker,
            detail=f"{failures} consecutive infrastructure failures or timeouts",
        )

    def _finalize_leftovers(self) -> None:
        """Give every task still pending its final record (budget cap, or no worker left)."""
        pending = self.queue.ids_with_status(QueueStatus.PENDING)
        for task_id in pending:
            base, trial = split_key(task_id)
            info = self.infos[base]
            if self._budget_stopped:
                record = error_execution(
                    info, ErrorType.BUDGET,
                    f"not run: the budget cap ${self.ledger.cap_usd} was reached",
                    status=TaskStatus.NOT_RUN,
                )
            else:
                names = ", ".join(self._quarantined) or "none"
                drained = ", ".join(self._drained_workers)
                hosts = ", ".join(self._lost_hosts)
                record = error_execution(
                    info, ErrorType.INFRASTRUCTURE,
                    f"no healthy worker was left to run it (quarantined: {names}"
                    + (f"; hosts quarantined: {hosts}" if hosts else "")
                    + (f"; draining: {drained})" if drained else ")"),
                )
            record.trial = trial
            record.attempts = len(self.queue.history(task_id))
            record.cost = self.ledger.task_cost(task_id)
            record.previous_attempts = [AttemptRecord.from_json(h)
                                        for h in self.queue.history(task_id)]
            self.queue.complete(task_id, record.to_json())
            self.folder.write_execution(record)
            self._count(record)
            self._emit(EventKind.TASK_FINISHED, task_id=task_id, status=record.status.value,
                       detail=record.error_message)


_KINDS = ("cua_bench", "openapps")
"""The task kinds with an attempt of their own, each named by the key that holds its part of a
queued task (:meth:`evals.tasks.cua_bench.loader.Variant.task_json`,
:meth:`evals.tasks.openapps.loader.Entry.task_json`); every other task is a WAA task."""


def _kind_of(task: Mapping[str, Any]) -> str:
    return next((kind for kind in _KINDS if isinstance(task.get(kind), dict)), "")  # "": WAA


def _attempts_for(tasks: Iterable[Mapping[str, Any]]) -> dict[str, Callable[..., TaskExecution]]:
    """The attempt of each kind among ``tasks``: a Cua-Bench variant runs its module's setup and
    evaluate (:func:`evals.run.attempt_cua.run_cua_task`), an OpenApps-style entry reads the
    apps' state twice (:func:`evals.run.attempt_openapps.run_openapps_task`). Each is imported
    only for a run that holds such a task: with their task packages, ``asyncio`` and ``yaml``
    they were a third of the runner's import, paid by every run of WAA tasks."""
    kinds = {_kind_of(task) for task in tasks}
    attempts: dict[str, Callable[..., TaskExecution]] = {}
    if "cua_bench" in kinds:
        from evals.run.attempt_cua import run_cua_task
        attempts["cua_bench"] = run_cua_task
    if "openapps" in kinds:
        from evals.run.attempt_openapps import run_openapps_task
        attempts["openapps"] = run_openapps_task
    return attempts


class _Fenced:
    """A worker client whose every call first asks the fence: a controller that lost its pool
    lease sends nothing more to the workers (another controller drives them now)."""

    def __init__(self, client: object, fence: Callable[[], None]) -> None:
        self._client = client
        self._fence = fence

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        def fenced(*args: Any, **kwargs: Any) -> Any:
            self._fence()
            return attr(*args, **kwargs)

        return fenced


def _keep_earlier_evidence(folder: Path, root: Path) -> None:
    """Move an earlier attempt's screenshots to ``attempt_<n>/`` (the next free ``n``) before a
    new attempt writes its own: no attempt deletes another's evidence. ``root``: the run folder.

    Raises:
        oa_vm.kit.safe_fs.WriteFailedError: the folder refused the move (read-only).
    """
    shots = step_files(folder)
    if not shots:
        return
    n = 1
    while (folder / f"attempt_{n}").exists():
        n += 1
    aside = ensure_dir(folder / f"attempt_{n}", root=root)
    for shot in shots:
        try:
            shot.rename(aside / shot.name)
        except OSError as exc:
            raise WriteFailedError(aside / shot.name, exc) from exc


