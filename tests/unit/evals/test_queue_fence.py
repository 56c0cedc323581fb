"""The queue's attempt fence, proved by order: the queue's clock is the test's (a controller
frozen for an hour is the clock moved forward an hour), two attempts on one worker are made one
after the other, and two controllers share one real SQLite file. Nothing waits on a thread."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest

import evals.run.queue as queue_module
from evals.run.queue import AttemptFencedError, QueuedTask, QueueStatus, ReleaseOutcome, TaskQueue
from tests.support.queue_reads import final_record, queue_counts

T0 = 1_000_000.0
LEASE_S = 60.0


class Clock:
    """The queue's ``time.time``, moved only by the test."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(queue_module, "time", SimpleNamespace(time=clock))
    return clock


def _queue(tmp_path: Path, owner: str = "ctl-a", *, max_attempts: int = 3) -> TaskQueue:
    return TaskQueue(tmp_path / "queue.sqlite", owner=owner, lease_seconds=LEASE_S,
                     max_attempts=max_attempts)


def _record(task_id: str, status: str = "success") -> dict[str, object]:
    return {"task_id": task_id, "status": status}


def _attempt(worker: str) -> dict[str, object]:
    return {"attempt": 1, "worker": worker, "error_type": "infrastructure",
            "error_message": "down", "started_at": None, "ended_at": None}


def _lease(q: TaskQueue, task_id: str, worker: str) -> QueuedTask:
    leased = q.lease(task_id, worker)
    assert leased is not None, f"{task_id} could not be leased to {worker}"
    return leased


def _retry(q: TaskQueue, task_id: str, worker: str) -> None:
    assert q.release(task_id, worker, "down", attempt=_attempt(worker),
                     final_record=_record(task_id, "error")) is ReleaseOutcome.RETRY


def _row(tmp_path: Path, task_id: str) -> sqlite3.Row:
    conn = sqlite3.connect(tmp_path / "queue.sqlite")
    conn.row_factory = sqlite3.Row
    try:
        row = conn.execute("SELECT * FROM tasks WHERE task_id=?", (task_id,)).fetchone()
    finally:
        conn.close()
    assert row is not None
    return row


# --- a controller frozen past its leases ------------------------------------------------------


def test_a_controller_woken_from_a_freeze_never_hands_out_its_own_attempts(
    tmp_path: Path, clock: Clock
) -> None:
    q = _queue(tmp_path)
    q.add([("a", 9.0), ("b", 1.0), ("c", 1.0)])
    in_flight = _lease(q, "a", "w0")
    clock.now += 3600  # frozen an hour: a's lease expired long ago, its attempt still runs here
    # other workers ask for work: each lease() runs the reclaim of expired leases first
    assert q.peek_next("w1") == QueuedTask("b", 0, 1.0, None)
    _lease(q, "b", "w1")
    assert q.peek_next("w2") == QueuedTask("c", 0, 1.0, None)
    _lease(q, "c", "w2")
    assert q.peek_next("w3") is None
    assert q.lease("a", "w3") is None
    assert queue_counts(q) == {"pending": 0, "leased": 3, "done": 0}
    q.complete("a", _record("a"), lease=in_flight, worker="w0")  # the attempt still commits


def test_an_earlier_controllers_expired_lease_is_reclaimed_when_leasing(
    tmp_path: Path, clock: Clock
) -> None:
    earlier = _queue(tmp_path, "ctl-old")
    earlier.add([("a", 1.0)])
    _lease(earlier, "a", "w0")
    clock.now += LEASE_S + 1
    now = _queue(tmp_path, "ctl-new")
    assert now.peek_next("w1") is not None
    assert now.lease("a", "w1") is not None  # reclaimed, then leased, in one transaction


def test_a_task_is_leased_once(tmp_path: Path, clock: Clock) -> None:
    q = _queue(tmp_path)
    q.add([("a", 1.0)])
    _lease(q, "a", "w0")
    assert q.lease("a", "w1") is None


def test_the_heartbeat_pushes_only_this_controllers_leases(tmp_path: Path, clock: Clock) -> None:
    other = _queue(tmp_path, "ctl-other")
    mine = _queue(tmp_path, "ctl-mine")
    other.add([("theirs", 1.0), ("ours", 1.0)])
    _lease(other, "theirs", "w0")
    _lease(mine, "ours", "w1")
    clock.now += LEASE_S - 1
    assert mine.heartbeat() == 1
    clock.now += 2  # past the other controller's lease, not ours
    assert mine.peek_next("w2") == QueuedTask("theirs", 1, 1.0, None)


# --- two attempts on one worker ----------------------------------------------------------------


def test_a_stale_attempt_on_the_same_worker_cannot_commit_release_or_give_back(
    tmp_path: Path, clock: Clock
) -> None:
    q = _queue(tmp_path)
    q.add([("a", 1.0)])
    first = _lease(q, "a", "w0")
    _retry(q, "a", "w0")  # the first attempt ended (its worker went down and came back)
    second = _lease(q, "a", "w0")  # the retry lands on the same worker
    assert (first.attempts, second.attempts) == (1, 2)
    with pytest.raises(AttemptFencedError):
        q.complete("a", _record("a", "failure"), lease=first, worker="w0")
    with pytest.raises(AttemptFencedError):
        q.release("a", "w0", "late", attempt=_attempt("w0"),
                  final_record=_record("a", "error"), lease=first)
    assert q.give_back("a", "w0", first) is False
    assert queue_counts(q)["leased"] == 1
    q.complete("a", _record("a"), lease=second, worker="w0")
    assert final_record(q, "a") == _record("a")


def test_a_commit_names_the_worker_of_its_attempt(tmp_path: Path, clock: Clock) -> None:
    q = _queue(tmp_path)
    q.add([("a", 1.0)])
    leased = _lease(q, "a", "w0")
    with pytest.raises(AttemptFencedError):
        q.complete("a", _record("a"), lease=leased, worker="w1")
    q.complete("a", _record("a"), lease=leased, worker="w0")


def test_a_task_gets_max_attempts_and_no_more(tmp_path: Path, clock: Clock) -> None:
    q = _queue(tmp_path, max_attempts=2)
    q.add([("a", 1.0)])
    _lease(q, "a", "w0")
    _retry(q, "a", "w0")
    _lease(q, "a", "w1")
    assert q.release("a", "w1", "down", attempt=_attempt("w1"),
                     final_record=_record("a", "error")) is ReleaseOutcome.FINAL
    assert q.ids_with_status(QueueStatus.DONE) == ["a"]


def test_a_retry_goes_to_another_worker_first(tmp_path: Path, clock: Clock) -> None:
    q = _queue(tmp_path)
    q.add([("long", 9.0), ("short", 1.0)])
    _lease(q, "long", "w0")
    _retry(q, "long", "w0")
    assert (q.peek_next("w0") or QueuedTask("", 0, 0, None)).task_id == "short"
    assert (q.peek_next("w1") or QueuedTask("", 0, 0, None)).task_id == "long"


# --- attempts given back: not counted, billed for the time they ran -----------------------


def test_an_attempt_given_back_is_billed_its_seconds_and_not_counted(
    tmp_path: Path, clock: Clock
) -> None:
    q = _queue(tmp_path)
    q.add([("a", 1.0)])
    leased = _lease(q, "a", "w0")
    clock.now += 30
    assert q.give_back("a", "w0", leased) is True
    assert q.history("a")[-1]["worker_seconds"] == 30.0
    assert q.interrupted_seconds() == {"a": [("w0", 30.0)]}
    assert _row(tmp_path, "a")["attempts"] == 0
    assert _lease(q, "a", "w1").attempts == 1


# --- recover: an earlier controller's attempts -------------------------------------------------


def test_recover_takes_back_only_earlier_controllers_leases_and_bills_them(
    tmp_path: Path, clock: Clock
) -> None:
    earlier = _queue(tmp_path, "ctl-old")
    earlier.add([("a", 1.0), ("b", 1.0), ("mine", 1.0)])
    _lease(earlier, "a", "w0")  # at T0; its lease's last heartbeat is T0
    clock.now += 30
    _lease(earlier, "b", "w1")  # the earlier controller was alive at T0 + 30
    now = _queue(tmp_path, "ctl-new")
    _lease(now, "mine", "w2")  # (no lease() after the jump below: it would reclaim a and b)
    clock.now += 500  # the earlier controller died; the new one recovers the run
    assert now.recover() == 2
    assert queue_counts(now) == {"pending": 2, "leased": 1, "done": 0}  # its own lease kept
    cut = {c.task_id: c for c in now.interrupted}
    # a ran from T0 until the earlier controller's last sign of life (b's lease), not T0
    assert cut["a"].seconds == 30.0 and cut["a"].worker == "w0"
    assert cut["b"].seconds == 0.0
    assert _row(tmp_path, "a")["attempts"] == 0  # given back: the attempt says nothing
    assert json.loads(_row(tmp_path, "a")["history"])[-1]["worker_seconds"] == 30.0


def test_an_interrupted_attempt_is_never_billed_past_now(tmp_path: Path, clock: Clock) -> None:
    earlier = _queue(tmp_path, "ctl-old")
    earlier.add([("a", 1.0), ("b", 1.0)])
    _lease(earlier, "a", "w0")
    clock.now += 200
    _lease(earlier, "b", "w1")  # stamped by a host whose clock ran 100 s ahead of ours
    clock.now -= 100
    now = _queue(tmp_path, "ctl-new")
    now.recover()
    assert {c.task_id: c.seconds for c in now.interrupted}["a"] == 100.0
