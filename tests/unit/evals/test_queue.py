"""The durable queue: ordering, leases, retries, crash recovery, one lease per task."""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from evals.run.queue import AttemptFencedError, QueueStatus, ReleaseOutcome, TaskQueue
from tests.support.leasing import lease_next
from tests.support.queue_reads import final_record, queue_counts


def _queue(
    path: Path, owner: str = "ctl-a", *, lease_seconds: float = 60.0, max_attempts: int = 3
) -> TaskQueue:
    return TaskQueue(
        path / "queue.sqlite", owner=owner, lease_seconds=lease_seconds, max_attempts=max_attempts
    )


def _record(task_id: str, status: str = "success") -> dict[str, object]:
    return {"task_id": task_id, "status": status}


ATTEMPT = {"attempt": 1, "worker": "w0", "error_type": "infrastructure", "error_message": "down",
           "started_at": None, "ended_at": None}


def test_sqlite_file_is_in_wal_mode(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    q.add([("a", 1.0)])
    q.close()
    conn = sqlite3.connect(tmp_path / "queue.sqlite")
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_only_a_lease_skips_the_fsync_and_every_other_commit_is_full(tmp_path: Path) -> None:
    # PRAGMA synchronous: 1 NORMAL (no fsync in WAL mode), 2 FULL (an fsync per commit)
    q = _queue(tmp_path)
    q.add([("a", 1.0), ("b", 1.0)])

    def mode() -> int:
        return int(q._conn().execute("PRAGMA synchronous").fetchone()[0])

    assert mode() == 2
    lease = q.lease("a", "w0")
    assert lease is not None and mode() == 1
    q.heartbeat()
    assert mode() == 2
    second = q.lease("b", "w0")
    assert second is not None and mode() == 1
    q.complete("a", _record("a"), lease=lease, worker="w0")
    assert mode() == 2
    q.close()
    reopened = _queue(tmp_path, owner="ctl-b")
    assert final_record(reopened, "a") == _record("a")
    assert reopened.recover() == 1  # the lease of b was committed (made durable by a's commit)
    reopened.close()


def test_longest_expected_first_then_selection_order(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    q.add([("short", 1.0), ("long", 50.0), ("mid-1", 10.0), ("mid-2", 10.0)])
    order = []
    while (lease := lease_next(q, "w0")) is not None:
        order.append(lease.task_id)
    assert order == ["long", "mid-1", "mid-2", "short"]
    assert queue_counts(q) == {"pending": 0, "leased": 4, "done": 0}
    q.close()


def test_add_is_idempotent_and_keeps_order(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    assert q.add([("a", 1.0), ("b", 1.0)]) == 2
    assert q.add([("b", 1.0), ("c", 1.0)]) == 1
    assert q.task_ids() == ["a", "b", "c"]
    q.close()


def test_complete_stores_the_record_and_a_done_task_is_never_leased_again(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    q.add([("a", 1.0)])
    lease = lease_next(q, "w0")
    assert lease is not None and lease.attempts == 1
    q.complete("a", _record("a"))
    assert final_record(q, "a") == _record("a")
    assert lease_next(q, "w0") is None
    with pytest.raises(LookupError):
        q.complete("a", _record("a"))
    q.close()


def test_release_retries_until_attempts_run_out_then_commits_the_final_record(
    tmp_path: Path,
) -> None:
    q = _queue(tmp_path, max_attempts=2)
    q.add([("a", 1.0)])
    assert lease_next(q, "w0") is not None
    final = _record("a", "error")
    assert q.release("a", "w0", "down", attempt=ATTEMPT, final_record=final) is ReleaseOutcome.RETRY
    assert queue_counts(q)["pending"] == 1
    second = lease_next(q, "w1")
    assert second is not None and second.attempts == 2 and second.last_worker == "w0"
    assert q.release("a", "w1", "down", attempt=ATTEMPT, final_record=final) is ReleaseOutcome.FINAL
    assert queue_counts(q) == {"pending": 0, "leased": 0, "done": 1}
    assert final_record(q, "a") == final
    assert [h["reason"] for h in q.history("a")] == ["down", "down"]
    q.close()


def test_release_by_a_worker_that_does_not_hold_the_lease_is_refused(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    q.add([("a", 1.0)])
    lease_next(q, "w0")
    with pytest.raises(LookupError):
        q.release("a", "w1", "x", attempt=ATTEMPT, final_record=_record("a", "error"))
    q.close()


def test_a_task_that_failed_on_a_worker_goes_to_the_others_first(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    q.add([("big", 9.0), ("small", 1.0)])
    assert q.lease("big", "w0") is not None
    q.release("big", "w0", "down", attempt=ATTEMPT, final_record=_record("big", "error"))
    nxt = q.peek_next("w0")
    assert nxt is not None and nxt.task_id == "small"
    other = q.peek_next("w1")
    assert other is not None and other.task_id == "big"
    q.close()


def test_recover_gives_back_a_dead_controllers_leases_and_its_attempts(tmp_path: Path) -> None:
    first = _queue(tmp_path, owner="ctl-a")
    first.add([("a", 1.0), ("b", 2.0), ("c", 3.0)])
    lease_next(first, "w0")  # c
    lease_next(first, "w1")  # b
    first.complete("b", _record("b"))
    first.close()  # the controller "dies" with c leased

    second = _queue(tmp_path, owner="ctl-b")
    assert second.recover() == 1
    assert queue_counts(second) == {"pending": 2, "leased": 0, "done": 1}
    again = lease_next(second, "w0")
    assert again is not None and again.task_id == "c" and again.attempts == 1
    assert final_record(second, "b") == _record("b")
    second.close()


def test_recover_puts_not_run_tasks_back_but_keeps_real_outcomes(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    q.add([("a", 1.0), ("b", 1.0)])
    q.complete("a", _record("a", "not_run"))
    q.complete("b", _record("b", "failure"))
    assert q.recover() == 1
    assert q.ids_with_status(QueueStatus.PENDING) == ["a"]
    assert q.ids_with_status(QueueStatus.DONE) == ["b"]
    q.close()


def test_expired_leases_of_another_controller_are_handed_out_again(tmp_path: Path) -> None:
    gone = _queue(tmp_path, owner="ctl-gone", lease_seconds=-1.0)  # every lease born expired
    gone.add([("a", 1.0)])
    assert lease_next(gone, "w0") is not None
    q = _queue(tmp_path, lease_seconds=60.0)
    assert lease_next(q, "w1") is not None  # reclaimed from the silent controller
    live = _queue(tmp_path, owner="ctl-b", lease_seconds=60.0)
    assert live.heartbeat() == 0  # not its lease
    for queue in (gone, q, live):
        queue.close()


def test_a_controller_never_reclaims_its_own_expired_leases(tmp_path: Path) -> None:
    # A controller frozen past its leases (a laptop asleep) wakes with its attempts still in
    # flight: its idle workers must not be handed those tasks a second time, and the attempt's
    # commit still goes through (its lease was never taken).
    q = _queue(tmp_path, lease_seconds=-1.0)
    q.add([("a", 1.0)])
    first = lease_next(q, "w0")
    assert first is not None
    assert q.peek_next("w1") is None
    assert lease_next(q, "w1") is None
    q.complete("a", _record("a"), lease=first, worker="w0")
    assert queue_counts(q)["done"] == 1
    q.close()


def test_a_commit_whose_lease_was_taken_over_is_refused(tmp_path: Path) -> None:
    old = _queue(tmp_path, owner="ctl-old", lease_seconds=-1.0)
    old.add([("a", 1.0)])
    stale = lease_next(old, "w0")
    assert stale is not None
    new = _queue(tmp_path, owner="ctl-new")
    taken = lease_next(new, "w1")
    assert taken is not None and taken.attempts == 2
    with pytest.raises(AttemptFencedError):
        old.complete("a", _record("a"), lease=stale, worker="w0")
    with pytest.raises(AttemptFencedError):
        old.release("a", "w0", "late", attempt=ATTEMPT, final_record=_record("a", "error"),
                    lease=stale)
    assert not old.give_back("a", "w0", stale)
    new.complete("a", _record("a"), lease=taken, worker="w1")
    assert final_record(new, "a") is not None
    for queue in (old, new):
        queue.close()


def test_recover_keeps_an_interrupted_attempt_to_bill(tmp_path: Path) -> None:
    killed = _queue(tmp_path, owner="ctl-killed", lease_seconds=60.0)
    killed.add([("a", 1.0), ("b", 1.0)])
    leased = lease_next(killed, "w0")
    assert leased is not None
    conn = killed._conn()
    # leased 100 s ago, last heartbeat 40 s ago (expiry = heartbeat + 60 s)
    now = time.time()
    conn.execute("UPDATE tasks SET updated_at=?", (now - 100.0,))  # its last lease or commit
    conn.execute("UPDATE tasks SET lease_started_at=?, lease_expires_at=? WHERE task_id=?",
                 (now - 100.0, now + 20.0, leased.task_id))
    killed.close()
    resumed = _queue(tmp_path, owner="ctl-resumed", lease_seconds=60.0)
    assert resumed.recover() == 1
    [cut] = resumed.interrupted
    assert cut.task_id == leased.task_id and cut.worker == "w0"
    assert cut.seconds == pytest.approx(60.0, abs=2.0)
    billed = resumed.interrupted_seconds()
    assert list(billed) == [leased.task_id]
    assert billed[leased.task_id][0][1] == pytest.approx(60.0, abs=2.0)
    resumed.close()


def test_an_attempt_given_back_keeps_its_worker_time_to_bill(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    q.add([("a", 1.0)])
    leased = lease_next(q, "w0")
    assert leased is not None
    assert q.give_back("a", "w0", leased)
    assert queue_counts(q)["pending"] == 1 and q.history("a")[-1]["reason"] == "interrupted"
    assert list(q.interrupted_seconds()) == ["a"]
    again = lease_next(q, "w1")
    assert again is not None and again.attempts == 1  # the given-back attempt is not counted
    q.close()


def test_heartbeat_extends_only_this_controllers_leases(tmp_path: Path) -> None:
    q = _queue(tmp_path, lease_seconds=60.0)
    q.add([("a", 1.0), ("b", 1.0)])
    lease_next(q, "w0")
    lease_next(q, "w1")
    assert q.heartbeat() == 2
    q.close()


def test_many_threads_lease_each_task_exactly_once(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    ids = [f"t{i:03d}" for i in range(120)]
    q.add([(t, float(i % 7)) for i, t in enumerate(ids)])
    taken: list[str] = []
    lock = threading.Lock()

    def worker(name: str) -> None:
        while (lease := lease_next(q, name)) is not None:
            q.complete(lease.task_id, _record(lease.task_id))
            with lock:
                taken.append(lease.task_id)

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(taken) == ids
    assert list(q.records()) == ids
    q.close()


def test_max_attempts_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        TaskQueue(tmp_path / "q.sqlite", owner="x", max_attempts=0)


_REFERENCE_PEEK = (
    "SELECT task_id FROM tasks WHERE status='pending' OR (status='leased' AND"
    " lease_expires_at < ? AND lease_owner NOT LIKE 'ctl-a/%')"
    " ORDER BY (last_worker IS NOT NULL AND last_worker = ?) ASC,"
    " expected_seconds DESC, position ASC LIMIT 1"
)


@pytest.mark.parametrize("seed", range(6))
def test_peek_next_picks_what_one_sort_of_every_candidate_would(
    tmp_path: Path, seed: int
) -> None:
    # peek_next answers from an index in the usual case; it must pick exactly the task that
    # sorting every candidate (pending, or leased and expired) picks, whatever the state.
    rng = random.Random(seed)
    q = _queue(tmp_path, lease_seconds=60.0, max_attempts=5)
    q.add([(f"t{i:03d}", float(rng.choice([1, 2, 2, 3, 5]))) for i in range(120)])
    workers = [f"w{i}" for i in range(6)]
    for step in range(150):
        worker = rng.choice(workers)
        leased = lease_next(q, worker)
        if leased is None:
            break
        roll = rng.random()
        if roll < 0.3:
            q.release(leased.task_id, worker, "down", attempt=ATTEMPT,
                      final_record=_record(leased.task_id, "error"))
        elif roll < 0.6:
            q.complete(leased.task_id, _record(leased.task_id))
        if step % 40 == 39:  # some leases run out (a silent controller)
            conn = q._conn()
            # (another controller's: a controller never reclaims its own leases)
            conn.execute("UPDATE tasks SET lease_expires_at = 0,"
                         " lease_owner = 'ctl-gone/' || task_id WHERE status='leased'"
                         " AND position % 3 = 0")
        conn = q._conn()
        now = time.time()
        for asking in workers:
            row = conn.execute(_REFERENCE_PEEK, (now, asking)).fetchone()
            got = q.peek_next(asking)
            assert (got.task_id if got else None) == (row[0] if row else None)
    q.close()


def test_unfinished_says_whether_anything_is_pending_or_leased(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    assert not q.unfinished()
    q.add([("a", 1.0), ("b", 1.0)])
    assert q.unfinished()
    a = lease_next(q, "w0")
    b = lease_next(q, "w1")
    assert a is not None and b is not None
    q.complete(a.task_id, _record(a.task_id))
    assert q.unfinished()  # b is leased
    q.complete(b.task_id, _record(b.task_id))
    assert not q.unfinished()


@pytest.mark.parametrize(("limit", "reason"), [
    ("PRAGMA max_page_count = 1", "No space left on device"),  # SQLite's own "disk is full"
    ("PRAGMA query_only = 1", "attempt to write a readonly database"),
], ids=["full", "read-only"])
def test_a_write_its_disk_refuses_names_the_queue_file_and_keeps_what_was_committed(
    tmp_path: Path, limit: str, reason: str
) -> None:
    """SQLite's disk errors are a write that failed, named like every other write of the run
    (never "the queue is unreadable"), and the transaction they cut is rolled back whole."""
    from oa_vm.kit.safe_fs import WriteFailedError

    q = _queue(tmp_path)
    try:
        q.add([("a", 1.0)])
        q._conn().execute(limit)  # this thread's connection: the one the writes below use
        with pytest.raises(WriteFailedError) as refused:
            q.add([(f"t{n}", 1.0) for n in range(2000)])
        message = str(refused.value)
        assert message.startswith(f"could not write {tmp_path / 'queue.sqlite'}: {reason};")
        assert q.task_ids() == ["a"]  # the refused transaction left nothing behind
        assert not q._conn().in_transaction
    finally:
        q.close()
