"""Queue behaviour that a mutation run showed no test would notice breaking (see
``docs/reliability.md``, mutation testing): attempt limits, heartbeats, retry placement, lookups
of unknown tasks, and the messages of misuse."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from evals.run.queue import ReleaseOutcome, TaskQueue
from tests.support.leasing import lease_next
from tests.support.queue_reads import final_record

ATTEMPT = {"attempt": 1, "worker": "w0", "error_type": "infrastructure", "error_message": "down",
           "started_at": None, "ended_at": None}


def _queue(tmp_path: Path, **kwargs: float) -> TaskQueue:
    return TaskQueue(tmp_path / "queue.sqlite", owner="ctl", **kwargs)  # type: ignore[arg-type]


def _expiries(tmp_path: Path) -> dict[str, float]:
    conn = sqlite3.connect(tmp_path / "queue.sqlite")
    try:
        rows = conn.execute(
            "SELECT task_id, lease_expires_at FROM tasks WHERE status='leased'"
        ).fetchall()
    finally:
        conn.close()
    return {str(r[0]): float(r[1]) for r in rows}


def test_one_attempt_is_a_valid_limit_and_zero_is_not(tmp_path: Path) -> None:
    q = _queue(tmp_path, max_attempts=1)
    q.add([("a", 1.0)])
    lease = lease_next(q, "w0")
    assert lease is not None
    final = {"task_id": "a", "status": "error"}
    assert q.release("a", "w0", "down", attempt=ATTEMPT, final_record=final) is (
        ReleaseOutcome.FINAL
    )
    q.close()
    with pytest.raises(ValueError, match="max_attempts"):
        _queue(tmp_path / "other", max_attempts=0)


def test_heartbeat_pushes_every_lease_forward_and_counts_them(tmp_path: Path) -> None:
    q = _queue(tmp_path, lease_seconds=100.0)
    q.add([("a", 2.0), ("b", 1.0)])
    assert lease_next(q, "w0") is not None and lease_next(q, "w1") is not None
    now = time.time()
    assert q.heartbeat() == 2
    assert all(expiry > now + 50 for expiry in _expiries(tmp_path).values())
    q.close()


def test_a_retry_goes_to_another_worker_first(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    q.add([("long", 50.0), ("short", 1.0)])
    assert lease_next(q, "w0") is not None  # 'long'
    q.release("long", "w0", "down", attempt=ATTEMPT, final_record={"task_id": "long"})
    again = lease_next(q, "w0")
    assert again is not None and again.task_id == "short"  # not the task that just failed here
    other = lease_next(q, "w1")
    assert other is not None and other.task_id == "long"
    assert other.expected_seconds == 50.0
    q.close()


def test_unknown_and_unfinished_tasks_have_no_record_and_no_history(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    q.add([("a", 1.0)])
    assert final_record(q, "nope") is None
    assert q.history("nope") == []
    assert final_record(q, "a") is None  # pending: no final record yet
    q.close()


def test_misuse_names_the_task(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    q.add([("a", 1.0)])
    with pytest.raises(LookupError, match="'?a'? is not leased|task a"):
        q.release("a", "w0", "x", attempt=ATTEMPT, final_record={"task_id": "a"})
    q.complete("a", {"task_id": "a", "status": "success"})
    with pytest.raises(LookupError, match="task a"):
        q.complete("a", {"task_id": "a", "status": "success"})
    q.close()
