"""Reading a run folder back in tests: the records, and the summary checked against them."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any


def read_records(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Every ``execution.json`` of a run, by task ID (a file being replaced is skipped, so this
    also works while the run is going on)."""
    records = {}
    for path in sorted((run_dir / "tasks").glob("*/execution.json")):
        try:
            records[path.parent.name] = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
    return records


def assert_summary_matches(run_dir: Path, records: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``summary.json`` agrees with the records it was computed from; returns the summary."""
    summary: dict[str, Any] = json.loads((run_dir / "summary.json").read_text())
    statuses = Counter(r["status"] for r in records.values())
    assert summary["successes"] == statuses["success"]
    assert summary["failures"] == statuses["failure"]
    assert summary["errors"] == statuses["error"]
    assert summary["not_run"] == statuses["not_run"]
    assert summary["attempts"] == len(records) - statuses["not_run"]
    assert sorted(summary["task_ids_not_run"]) == sorted(
        t for t, r in records.items() if r["status"] == "not_run"
    )
    return summary


def reopen_task(run_dir: Path, task_id: str | None = None) -> Path:
    """The run ``run_dir`` as a controller killed before ``task_id`` ran leaves it (the first
    task with a record when none is named): its queue row pending again and its record gone, so
    a ``--resume`` has work left (a resume with nothing left records no change)."""
    task_id = task_id or sorted(read_records(run_dir))[0]
    conn = sqlite3.connect(run_dir / "queue.sqlite")
    try:
        with conn:
            conn.execute("UPDATE tasks SET status='pending', final_status=NULL, record=NULL,"
                         " attempts=0 WHERE task_id=?", (task_id,))
    finally:
        conn.close()
    shutil.rmtree(run_dir / "tasks" / task_id)
    return run_dir
