"""The dispatcher's rules for a task that goes wrong, one test each, on a fake pool of two
in-process workers: ``broken`` ends every attempt with the error the test chooses, ``healthy``
scores every task (unless the task itself is broken everywhere).

The fake replaces :func:`evals.run.agent_loop.run_task` inside :mod:`evals.run.dispatcher`; the
queue
(SQLite), the ledger, the run folder and the dispatch loops are the real ones. Each rule is
named in the module docstring of :mod:`evals.run.dispatcher`; the mutation each test kills is
written on the test.

Order is made deterministic, not waited for: ``healthy`` takes no lease (the dispatcher asks
``draining`` before every lease) until ``broken`` has run a task and come back for another, or
was quarantined. So ``broken`` always has the first pick, and whatever ``broken`` does with a
task it just failed happens before ``healthy`` can take that task.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evals.agents.noop import NoopAgent
from evals.results.events import RunEvent
from evals.results.ledger import Ledger
from evals.results.records import ErrorType, RunFolder, TaskExecution, TaskInfo, TaskStatus, now_iso
from evals.run import dispatcher as dispatcher_module
from evals.run.dispatcher import Dispatcher, DispatchOutcome
from evals.run.queue import QueueStatus, TaskQueue
from evals.run.settings import RunConfig
from oa_vm.reach.connect import WorkerConnection
from tests.support.queue_reads import final_record

GATE_DEADLINE_S = 60.0  # generous: only a hung dispatcher comes near it
# A loop that keeps asking without ever running a task is a dispatcher that would poll for
# ever: counted, not timed, so a busy machine never trips it (a test asks about ten times).
MAX_ASKS = 100


class _FakeClient:
    """Stands in for a worker's WAA and scoring clients: the fake ``run_task`` only reads its
    name (a plain attribute passes through the dispatcher's fencing wrapper)."""

    def __init__(self, worker_name: str) -> None:
        self.worker_name = worker_name


class FakePool:
    """Two in-process workers and the fake ``run_task`` they run tasks with.

    Args:
        broken_error: How every attempt on ``broken`` ends.
        broken_everywhere: Task IDs whose setup fails on every worker.
    """

    def __init__(
        self, broken_error: ErrorType, broken_everywhere: frozenset[str] = frozenset()
    ) -> None:
        self.broken_error = broken_error
        self.broken_everywhere = broken_everywhere
        self.runs: list[tuple[str, str]] = []  # (worker, task ID) in the order they ran
        self.stop_on_healthy: threading.Event | None = None
        self._cond = threading.Condition()
        self._broken_asks = 0  # how often broken's loop came round for a lease
        self._asks: dict[str, int] = {}
        self._broken_gone = False
        self._all_done = False
        self.gate_opened_by: str | None = None

    def connections(self) -> list[WorkerConnection]:
        """``broken`` and ``healthy``, as the dispatcher gets them."""
        return [
            WorkerConnection(name=name, waa=_FakeClient(name),  # type: ignore[arg-type]
                             scoring=_FakeClient(name),  # type: ignore[arg-type]
                             waa_url=f"fake://{name}", scoring_url=f"fake://{name}")
            for name in ("broken", "healthy")
        ]

    def runs_on(self, worker: str) -> list[str]:
        """Task IDs run on ``worker``, in order."""
        return [task for who, task in self.runs if who == worker]

    # --- hooks the dispatcher calls -----------------------------------------------------------

    def draining(self, worker: str) -> None:
        """Asked before every lease: holds ``healthy`` back until ``broken`` had its turn."""
        with self._cond:
            self._asks[worker] = self._asks.get(worker, 0) + 1
            if self._asks[worker] > MAX_ASKS:
                # raised in the dispatch loop: Dispatcher.run stops and raises (EvalsError)
                raise AssertionError(f"{worker} asked for a lease {MAX_ASKS} times: stuck")
            if worker == "broken":
                self._broken_asks += 1
                self._cond.notify_all()
                return None
            opened = self._cond.wait_for(self._broken_had_its_turn, timeout=GATE_DEADLINE_S)
            if self.gate_opened_by is None:
                self.gate_opened_by = "broken's turn" if opened else "the deadline"
        return None

    def _broken_had_its_turn(self) -> bool:
        # Each lease broken takes follows one ask; two asks since its last run mean the first
        # was refused (nothing it would take was left). Or it was quarantined, or nothing is
        # left at all.
        ran = len(self.runs_on("broken"))
        refused = self._broken_asks >= ran + 2
        return self._broken_gone or self._all_done or refused

    def on_event(self, event: RunEvent) -> None:
        """The dispatcher's events: a quarantined ``broken`` asks for nothing more, and once
        every task has its final record nobody will."""
        with self._cond:
            if event.kind == "worker_quarantined" and event.worker == "broken":
                self._broken_gone = True
            if event.kind == "task_finished" and event.snapshot.done >= event.snapshot.total:
                self._all_done = True
            self._cond.notify_all()

    def run_task(self, waa: Any, scoring: Any, task: dict[str, Any], task_id: str,
                 agent: Any, config: Any, **_: Any) -> TaskExecution:
        """One attempt: ``broken`` fails, ``healthy`` scores 1 (same shape as the real one)."""
        worker = str(waa.worker_name)
        with self._cond:
            self.runs.append((worker, task_id))
            self._cond.notify_all()
        execution = TaskExecution(
            task_id=task_id, domain="d", instruction="x", infeasible=False,
            status=TaskStatus.ERROR, attempts=1, started_at=now_iso(),
        )
        if task_id in self.broken_everywhere:
            execution.error_type = ErrorType.SETUP
            execution.error_message = "setup failed: the task's file is missing"
        elif worker == "broken":
            execution.error_type = self.broken_error
            execution.error_message = f"{self.broken_error.value} on broken"
        else:
            execution.status, execution.score, execution.reason = TaskStatus.SUCCESS, 1.0, "ok"
            if self.stop_on_healthy is not None:
                self.stop_on_healthy.set()  # what Dispatcher.run does on Ctrl-C
        execution.ended_at = now_iso()
        return execution


@pytest.fixture
def run_folder(tmp_path: Path) -> RunFolder:
    folder = RunFolder(tmp_path / "run")
    folder.path.mkdir()
    return folder


@pytest.fixture
def queue(run_folder: RunFolder) -> Iterator[TaskQueue]:
    q = TaskQueue(run_folder.queue_path, owner="t", max_attempts=5)
    yield q
    q.close()


def _dispatcher(
    pool: FakePool, folder: RunFolder, queue: TaskQueue, task_ids: list[str],
    monkeypatch: pytest.MonkeyPatch, *, quarantine_after: int = 10,
) -> Dispatcher:
    monkeypatch.setattr(dispatcher_module, "run_task", pool.run_task)
    if not queue.task_ids():
        # longest expected first: the queue hands tasks out in this order
        queue.add([(tid, 100.0 - n) for n, tid in enumerate(task_ids)])
    tasks = {tid: {"id": tid, "config": [], "evaluator": {"func": "exact_match"}}
             for tid in task_ids}
    infos = {tid: TaskInfo(tid, "d", "x", False) for tid in task_ids}
    return Dispatcher(
        folder, queue, Ledger(None), pool.connections(), tasks, infos, NoopAgent,
        RunConfig(pool=None, selection="all", agent="noop", max_steps=2, task_timeout_s=60,
                  quarantine_after=quarantine_after),
        on_event=pool.on_event, draining=pool.draining,
    )


def _run(dispatcher: Dispatcher, pool: FakePool) -> DispatchOutcome:
    outcome = dispatcher.run()
    # the order came from broken's turn, never from the safety deadline
    assert pool.gate_opened_by in (None, "broken's turn")
    return outcome


def _attempt_workers(record: dict[str, Any]) -> list[str]:
    return [a["worker"] for a in record["previous_attempts"]] + [record["worker"]]


# --- the rules ---------------------------------------------------------------------------------


def test_a_task_that_just_failed_is_left_to_another_worker(
    run_folder: RunFolder, queue: TaskQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kills: ``candidate.last_worker == worker and ...`` in ``_next_lease`` removed, negated
    (``!=``), or its ``_active_workers() > 1`` raised to ``> 2``; and ``peek_next`` given no
    fallback to a task that just failed here (covered by the next test)."""
    pool = FakePool(ErrorType.INFRASTRUCTURE)
    dispatcher = _dispatcher(pool, run_folder, queue, ["t0"], monkeypatch)
    outcome = _run(dispatcher, pool)
    record = final_record(queue, "t0")
    assert record is not None
    assert pool.runs == [("broken", "t0"), ("healthy", "t0")]
    assert _attempt_workers(record) == ["broken", "healthy"]
    assert record["status"] == "success"
    assert outcome.quarantined == []


def test_the_only_worker_left_retries_its_own_failure(
    run_folder: RunFolder, queue: TaskQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other side of the rule: with no other worker active, a task that failed here is
    retried here (max_attempts in all). Kills ``_active_workers() > 1`` lowered to ``> 0``
    and ``>= 1`` (the task would wait for ever: the fake's ask counter stops the run)."""
    pool = FakePool(ErrorType.INFRASTRUCTURE)
    monkeypatch.setattr(dispatcher_module, "run_task", pool.run_task)
    queue.add([("t0", 1.0)])
    only_broken = [c for c in pool.connections() if c.name == "broken"]
    dispatcher = Dispatcher(
        run_folder, queue, Ledger(None), only_broken,
        {"t0": {"id": "t0", "config": []}}, {"t0": TaskInfo("t0", "d", "x", False)},
        NoopAgent, RunConfig(pool=None, selection="all", agent="noop", max_steps=2,
                             task_timeout_s=60, quarantine_after=10),
        draining=pool.draining,
    )
    dispatcher.run()
    record = final_record(queue, "t0")
    assert record is not None
    assert pool.runs_on("broken") == ["t0"] * queue.max_attempts
    assert record["error_type"] == "infrastructure"


@pytest.mark.parametrize("threshold", [2, 3])
def test_a_worker_is_quarantined_after_exactly_n_failures_in_a_row(
    threshold: int, run_folder: RunFolder, queue: TaskQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kills: ``consecutive >= quarantine_after`` as ``>`` (N + 1 failures) or against
    ``quarantine_after - 1`` / ``+ 1``; the counter never counting (``consecutive = 0``);
    ``_run_one`` returning False for a retried infrastructure failure."""
    pool = FakePool(ErrorType.INFRASTRUCTURE)
    ids = [f"t{i}" for i in range(threshold + 3)]
    dispatcher = _dispatcher(pool, run_folder, queue, ids, monkeypatch,
                             quarantine_after=threshold)
    outcome = _run(dispatcher, pool)
    assert outcome.quarantined == ["broken"]
    assert len(pool.runs_on("broken")) == threshold
    records = queue.records()
    assert {r["status"] for r in records.values()} == {"success"}
    assert {r["worker"] for r in records.values()} == {"healthy"}


def test_a_final_setup_failure_counts_towards_quarantine(
    run_folder: RunFolder, queue: TaskQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each task was tried once already (an infrastructure failure on ``healthy``), so a setup
    failure on ``broken`` is final (its second attempt), committed as ``error/setup``, and must
    still count. Kills ``_run_one`` returning False (or ``is not SETUP``) after a final
    commit."""
    pool = FakePool(ErrorType.SETUP)
    ids = [f"t{i}" for i in range(4)]
    queue.add([(tid, 100.0 - n) for n, tid in enumerate(ids)])
    for tid in ids:  # attempt 1 of each task: healthy could not be reached
        lease = queue.lease(tid, "healthy")
        assert lease is not None
        queue.release(tid, "healthy", "connection refused", lease=lease, final_record={},
                      attempt={"attempt": 1, "worker": "healthy",
                               "error_type": "infrastructure"})
    dispatcher = _dispatcher(pool, run_folder, queue, ids, monkeypatch, quarantine_after=2)
    outcome = _run(dispatcher, pool)
    assert outcome.quarantined == ["broken"]
    assert pool.runs_on("broken") == ["t0", "t1"]
    records = queue.records()
    assert [records[t]["error_type"] for t in ("t0", "t1")] == ["setup", "setup"]
    assert {records[t]["worker"] for t in ("t2", "t3")} == {"healthy"}


def test_a_setup_failure_is_tried_twice_in_all(
    run_folder: RunFolder, queue: TaskQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A setup failure is retried once, on another worker: a worker's broken desktop costs the
    task nothing, a task whose setup fails everywhere ends ``error/setup`` after two attempts
    (the queue would allow five). Kills ``lease.attempts < 2`` as ``< 1`` / ``<= 0`` (no
    retry: ``ok`` would end in error), ``< 3`` / ``<= 2`` (a third attempt), and SETUP
    dropped from the retryable errors."""
    pool = FakePool(ErrorType.SETUP, broken_everywhere=frozenset({"bad"}))
    dispatcher = _dispatcher(pool, run_folder, queue, ["ok", "bad"], monkeypatch)
    _run(dispatcher, pool)
    records = queue.records()
    assert records["ok"]["status"] == "success"
    assert _attempt_workers(records["ok"]) == ["broken", "healthy"]
    assert records["bad"]["error_type"] == "setup"
    assert records["bad"]["attempts"] == 2
    assert len(records["bad"]["previous_attempts"]) == 1
    assert [w for w, t in pool.runs if t == "bad"] == ["broken", "healthy"]


def test_a_result_that_ends_after_a_stop_is_not_committed(
    run_folder: RunFolder, queue: TaskQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while a task runs: its result, even a success, is not committed; the lease stays
    for ``--resume`` (recovered, the task runs again; nothing ran twice that was recorded).
    Kills the ``if self._stop.is_set()`` branch of ``_run_one`` removed or negated."""
    pool = FakePool(ErrorType.INFRASTRUCTURE)
    dispatcher = _dispatcher(pool, run_folder, queue, ["t0"], monkeypatch)
    pool.stop_on_healthy = dispatcher._stop
    _run(dispatcher, pool)
    assert pool.runs == [("broken", "t0"), ("healthy", "t0")]
    assert final_record(queue, "t0") is None
    assert queue.ids_with_status(QueueStatus.LEASED) == ["t0"]
    assert not (run_folder.task_dir("t0") / "execution.json").exists()
    assert [a["worker"] for a in queue.history("t0")] == ["broken"]  # only broken's release


def test_a_timeout_is_retried_on_another_worker(
    run_folder: RunFolder, queue: TaskQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kills ``ErrorType.TIMEOUT`` dropped from the retryable errors (the timeout would be the
    task's final record)."""
    pool = FakePool(ErrorType.TIMEOUT)
    dispatcher = _dispatcher(pool, run_folder, queue, ["t0"], monkeypatch)
    _run(dispatcher, pool)
    record = final_record(queue, "t0")
    assert record is not None
    assert record["status"] == "success"
    assert [a["error_type"] for a in record["previous_attempts"]] == ["timeout"]
    assert _attempt_workers(record) == ["broken", "healthy"]


def test_progress_counts_only_the_selections_own_trials(
    run_folder: RunFolder, queue: TaskQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A queue holding finished rows outside the selection (another task, a trial beyond
    --trials) never makes progress read "3/2 done": done counts the selection's own trials."""
    queue.add([("t0", 2.0), ("t1", 1.0), ("other", 0.5), ("t0#2", 0.4)])
    for key in ("other", "t0#2"):
        lease = queue.lease(key, "w0")
        assert lease is not None
        queue.complete(key, {"task_id": key, "status": "success"}, lease=lease, worker="w0")
    pool = FakePool(ErrorType.INFRASTRUCTURE)
    dispatcher = _dispatcher(pool, run_folder, queue, ["t0", "t1"], monkeypatch)
    before = dispatcher.snapshot()
    assert (before.done, before.total) == (0, 2)
    _run(dispatcher, pool)
    after = dispatcher.snapshot()
    assert after.done <= after.total == 2


@pytest.mark.parametrize("refusal", ["no space", "planted symlink"])
def test_a_run_folder_that_refuses_a_write_stops_the_run_and_blames_no_worker(
    run_folder: RunFolder, queue: TaskQueue, monkeypatch: pytest.MonkeyPatch, refusal: str
) -> None:
    """A screenshot the run folder refused (a full disk, a symlink planted in it) is the
    controller's fault: the run stops with that error, the attempt is neither released nor
    committed (``--resume`` recovers its lease) and the worker is not charged. Kills the
    ``except LOCAL_FILE_ERRORS: raise`` of ``_run_one`` removed (the attempt became the
    worker's infrastructure error, retried elsewhere, the worker quarantined), and
    ``Dispatcher.run`` wrapping it in its generic "a dispatch loop failed"."""
    import errno

    from oa_vm.kit.safe_fs import UnsafePathError, WriteFailedError

    shot = run_folder.task_dir("t0") / "step_000.png"
    error = (WriteFailedError(shot, OSError(errno.ENOSPC, "No space left on device"))
             if refusal == "no space" else UnsafePathError(shot, "it is a symlink"))
    pool = FakePool(ErrorType.INFRASTRUCTURE)

    def refused(waa: Any, *args: Any, **kwargs: Any) -> TaskExecution:
        if waa.worker_name == "broken":
            with pool._cond:  # broken's loop ends here: healthy's turn comes now
                pool.runs.append(("broken", args[2]))
                pool._broken_gone = True
                pool._cond.notify_all()
            raise error
        return FakePool.run_task(pool, waa, *args, **kwargs)

    dispatcher = _dispatcher(pool, run_folder, queue, ["t0", "t1"], monkeypatch,
                             quarantine_after=1)
    monkeypatch.setattr(dispatcher_module, "run_task", refused)
    with pytest.raises(type(error)) as raised:
        _run(dispatcher, pool)
    assert raised.value is error
    assert "t0" in queue.ids_with_status(QueueStatus.LEASED)
    assert queue.history("t0") == []  # nothing released in the worker's name
    assert not dispatcher._quarantined
    assert not (run_folder.task_dir("t0") / "execution.json").exists()
