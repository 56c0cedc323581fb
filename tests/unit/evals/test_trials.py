"""Trials: keys, the queue's trial column (and its migration), record folders per trial."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from evals.results.records import RunFolder, TaskExecution, TaskStatus
from evals.results.run_reader import read_records
from evals.results.trials import split_key, trial_key
from evals.run.queue import TaskQueue
from tests.support.leasing import lease_next

OLD_SCHEMA = """
CREATE TABLE tasks (
    task_id TEXT PRIMARY KEY, position INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'leased', 'done')),
    attempts INTEGER NOT NULL DEFAULT 0, lease_owner TEXT, lease_expires_at REAL,
    lease_started_at REAL, expected_seconds REAL NOT NULL, last_worker TEXT, final_status TEXT,
    record TEXT, history TEXT NOT NULL DEFAULT '[]', updated_at REAL NOT NULL
);
INSERT INTO tasks (task_id, position, status, expected_seconds, updated_at, final_status, record)
    VALUES ('done-1', 0, 'done', 5, 0, 'success', '{"task_id": "done-1", "status": "success"}');
INSERT INTO tasks (task_id, position, status, expected_seconds, updated_at)
    VALUES ('todo-1', 1, 'pending', 5, 0);
"""


def test_keys_round_trip_and_trial_one_is_the_task_id() -> None:
    assert trial_key("abc-WOS", 1) == "abc-WOS"
    assert trial_key("abc-WOS", 3) == "abc-WOS#3"
    assert split_key("abc-WOS#3") == ("abc-WOS", 3)
    assert split_key("abc-WOS") == ("abc-WOS", 1)
    with pytest.raises(ValueError):
        trial_key("a", 0)


def test_a_queue_from_before_trials_is_migrated_and_still_resumes(tmp_path: Path) -> None:
    path = tmp_path / "queue.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(OLD_SCHEMA)
    conn.close()

    queue = TaskQueue(path, owner="me")
    try:
        columns = {r[1] for r in queue._conn().execute("PRAGMA table_info(tasks)")}
        assert "trial" in columns
        trials = dict(queue._conn().execute("SELECT task_id, trial FROM tasks").fetchall())
        assert trials == {"done-1": 1, "todo-1": 1}
        assert list(queue.records()) == ["done-1"]  # the finished task stays finished
        leased = lease_next(queue, "w0")
        assert leased is not None and leased.task_id == "todo-1"
    finally:
        queue.close()
    TaskQueue(path, owner="again").close()  # migrating twice is a no-op


def test_trial_rows_and_spreading_them_over_workers(tmp_path: Path) -> None:
    queue = TaskQueue(tmp_path / "q.sqlite", owner="me")
    try:
        queue.add([(trial_key("t", n), 10.0) for n in (1, 2, 3)] + [("t#x", 1.0), ("u", 5.0)])
        rows = dict(queue._conn().execute("SELECT task_id, trial FROM tasks").fetchall())
        assert rows == {"t": 1, "t#2": 2, "t#3": 3, "t#x": 1, "u": 1}
        first = lease_next(queue, "w0")
        assert first is not None and first.task_id == "t"
        # The other trials of t (not t#x, another ID, nor u) now prefer other workers.
        assert queue.spread_trials("t", "w0") == 2
        again = lease_next(queue, "w0")
        assert again is not None and again.task_id == "u"
        other = lease_next(queue, "w1")
        assert other is not None and other.task_id == "t#2"
    finally:
        queue.close()


def test_trial_records_live_in_the_task_folder(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    assert folder.task_dir("t") == tmp_path / "tasks" / "t"
    assert folder.task_dir("t#2") == tmp_path / "tasks" / "t" / "trial-2"
    with pytest.raises(ValueError):
        folder.task_dir("../x#2")
    record = TaskExecution("t", "d", "i", False, TaskStatus.SUCCESS, score=1.0, trial=2)
    folder.write_execution(record)
    assert (tmp_path / "tasks" / "t" / "trial-2" / "execution.json").is_file()
    assert record.to_json()["trial"] == 2
    assert "trial" not in TaskExecution("t", "d", "i", False, TaskStatus.SUCCESS).to_json()
    assert [(r.key, r.trial) for r in read_records(tmp_path)] == [("t#2", 2)]


def test_reopen_errors_reopens_only_those_types_and_keeps_the_record(tmp_path: Path) -> None:
    queue = TaskQueue(tmp_path / "q.sqlite", owner="me")
    try:
        queue.add([("a", 1.0), ("b", 1.0), ("c", 1.0), ("d", 1.0)])
        ends = {"a": ("error", "infrastructure"), "b": ("error", "agent"),
                "c": ("success", None), "d": ("error", "timeout")}
        for key, (status, error_type) in ends.items():
            assert queue.lease(key, "w0") is not None
            queue.complete(key, {"task_id": key, "status": status, "error_type": error_type,
                                 "error_message": f"{key} broke", "attempts": 1,
                                 "worker": "w0", "cost": {"total_usd": 0.5}})
        assert queue.reopen_errors(("infrastructure", "setup", "timeout")) == ["a", "d"]
        assert list(queue.records()) == ["b", "c"]
        (entry,) = queue.history("a")
        assert entry["reason"] == "rerun" and entry["error_message"] == "a broke"
        assert entry["cost"] == {"total_usd": 0.5} and entry["worker"] == "w0"
        again = queue.lease("a", "w1")
        assert again is not None and again.attempts == 1  # a fresh count of attempts
    finally:
        queue.close()
