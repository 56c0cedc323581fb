"""``export --format hf`` on the runs a sweep leaves when things go wrong, through the real CLI:
a run with an unreadable record is refused in the one line the other formats give (not
``datasets``' own wrapper error), with nothing left beside ``--out``; a run whose attempts all
ended before their first step (every worker lost) is a dataset of no rows that ``datasets``
reads back, as ``--format jsonl`` writes ``steps.jsonl`` of no lines."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.cli import run_cli

pytestmark = pytest.mark.integration

FIXTURE = Path(__file__).parent.parent / "fixtures" / "run_folders" / "two-pools"
"""A run folder of two tasks with steps, two without, trials, every status."""


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "res" / "a"
    shutil.copytree(FIXTURE, run)
    return run


def _export(tmp_path: Path, fmt: str, out: Path) -> tuple[int, str, str]:
    done = run_cli("openadapt-evals", "export", "a", "--format", fmt, "--out", str(out),
                   "--results-dir", str(tmp_path / "res"), home=tmp_path / "home", timeout=300)
    return done.returncode, done.stdout, done.stderr


def test_an_unreadable_record_is_refused_in_one_line(tmp_path: Path) -> None:
    broken = _run(tmp_path) / "tasks" / "notepad-a" / "trial-2" / "execution.json"
    broken.write_text('{"task_id": "notepad-a", "sta')  # cut short, as by a full disk
    out = tmp_path / "out" / "hf"
    out.parent.mkdir()
    code, stdout, stderr = _export(tmp_path, "hf", out)
    assert code == 2, (stdout, stderr)
    assert len(stderr.strip().splitlines()) == 1 and str(broken) in stderr, stderr
    assert "unexpected" not in stderr and "Traceback" not in stderr
    assert list(out.parent.iterdir()) == []  # no half export, no cache of datasets' own
    # the line jsonl and inspect give for the same run
    assert _export(tmp_path, "jsonl", tmp_path / "out" / "jsonl")[2] == stderr


def test_a_run_with_no_step_is_a_dataset_of_no_rows(tmp_path: Path) -> None:
    import datasets

    run = _run(tmp_path)
    for task in ("calc-b", "notepad-a"):  # the two tasks that took steps
        shutil.rmtree(run / "tasks" / task)
    out = tmp_path / "out" / "hf"
    out.parent.mkdir()
    code, stdout, stderr = _export(tmp_path, "hf", out)
    assert code == 0, stderr
    assert f"{out}  (0 step row(s))" in stdout
    data = datasets.load_from_disk(str(out))
    assert data.num_rows == 0 and {"screenshot", "status"} <= set(data.column_names)
    assert sorted(p.name for p in out.parent.iterdir()) == ["hf"]
    jsonl = tmp_path / "out" / "jsonl"
    code, stdout, stderr = _export(tmp_path, "jsonl", jsonl)
    assert code == 0 and (jsonl / "steps.jsonl").read_text() == "", stderr
