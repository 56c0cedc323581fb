"""Disk drills: the run folder's disk fills up, or turns read-only, while a run writes to it.

The real ``openadapt-evals run`` as a subprocess on a real local pool, its results folder on a
real small tmpfs (or bound read-only in place) of the test's own. The run must stop with one
line naming the file it could not write, blame no task and no worker for its own disk, leave no
file half-written, and once the disk is fixed ``--resume`` must finish every task exactly once.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_cli
from tests.support.controller import Controller, wait_for_records
from tests.support.disks import fill, read_only, tmpfs
from tests.support.run_records import assert_summary_matches, read_records

pytestmark = [pytest.mark.integration, pytest.mark.pool(name="disk", workers=2)]

TASKS, COUNT = "local_small", 6
RESUMED = "continue the run with --resume"


def _queue(run_dir: Path) -> list[tuple[str, str, str | None]]:
    """Every row of the run's queue (read-only), after SQLite's own integrity check."""
    conn = sqlite3.connect(f"{(run_dir / 'queue.sqlite').resolve().as_uri()}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = conn.execute("SELECT task_id, status, final_status FROM tasks").fetchall()
    finally:
        conn.close()
    return sorted((str(t), str(s), f) for t, s, f in rows)


def _nothing_half_written(run_dir: Path) -> dict[str, Any]:
    """Every JSON file of the run parses and no temp file is left; returns the metadata."""
    assert not [p for p in run_dir.rglob("*.tmp")], "a temp file was left behind"
    for path in run_dir.rglob("*.json"):
        json.loads(path.read_text())  # fails the drill on a file cut short
    metadata: dict[str, Any] = json.loads((run_dir / "metadata.json").read_text())
    return metadata


@contextlib.contextmanager
def _fault(kind: str, disk: Path, run_dir: Path) -> Iterator[None]:
    """The disk refuses writes inside the block, and takes them again after it."""
    if kind == "disk-full":
        filler = fill(disk)
        try:
            yield
        finally:
            filler.unlink()
    else:
        with read_only(run_dir / "tasks"):
            yield


@pytest.mark.parametrize("kind", ["disk-full", pytest.param("read-only", marks=pytest.mark.slow)])
def test_a_run_folder_that_refuses_writes_stops_the_run_in_one_line_and_resume_finishes(
    pooled: Path, tmp_path: Path, controllers: list[Controller], kind: str
) -> None:
    with tmpfs(tmp_path / "disk", "24m") as disk:
        results = disk / "results"
        run_dir = results / "r"
        args = ("run", "--pool", "disk", "--agent", "oracle", "--tasks", TASKS,
                "--run-name", "r", "--step-pause", "1.0", "--results-dir", str(results))
        # its log on the test's disk, not on the one that fills
        run = Controller(pooled, *args, log_dir=tmp_path)
        controllers.append(run)
        wait_for_records(run_dir, 2, run)
        with _fault(kind, disk, run_dir):
            assert run.wait() == 1, run.output()
            output = run.output()
            said = [line for line in output.splitlines()
                    if line.strip() and not line.startswith(("[", "run started"))]
            assert len(said) == 1, output
            line = said[0]
            reason = "No space left on device" if kind == "disk-full" else "Read-only file system"
            assert line.startswith(f"openadapt-evals: error: could not write {run_dir}/"), line
            assert reason in line and RESUMED in line, line
            # its own disk is the controller's fault: no task charged, no worker quarantined
            rows = _queue(run_dir)
            assert {final for _, status, final in rows if status == "done"} == {"success"}, rows
            metadata = _nothing_half_written(run_dir)
            assert metadata["status"] in ("running", "interrupted")
            assert not metadata["quarantined_workers"]
            finished = {t: r["started_at"] for t, r in read_records(run_dir).items()}
            assert 2 <= len(finished) < COUNT
            if kind == "disk-full":
                # resumed while the disk is still full: the same line, nothing changed, never
                # "unreadable, start a new run"
                again = run_cli("openadapt-evals", *args, "--resume", home=pooled)
                line = again.assert_one_line_error()
                assert str(run_dir) in line and reason in line and RESUMED in line, line
                assert _queue(run_dir) == rows
        resumed = run_cli("openadapt-evals", *args, "--resume", home=pooled, timeout=300)
        assert resumed.returncode == 0, resumed.stderr
        records = read_records(run_dir)
        assert len(records) == COUNT
        assert {r["status"] for r in records.values()} == {"success"}
        for task_id, started_at in finished.items():
            assert records[task_id]["started_at"] == started_at, f"{task_id} was redone"
        # an attempt the stop cut short is given back, never an error of its worker
        assert not [a for r in records.values() for a in r["previous_attempts"]
                    if a["error_type"] is not None], records
        metadata = _nothing_half_written(run_dir)
        assert metadata["status"] == "finished" and not metadata["quarantined_workers"]
        assert metadata["warning"] is None
        assert_summary_matches(run_dir, records)
