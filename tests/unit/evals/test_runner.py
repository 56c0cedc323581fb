"""The runner's pure parts: estimates, option checks, run names, the progress displays."""

from __future__ import annotations

import dataclasses
import io
import os
from pathlib import Path

import pytest

import evals.run.runner as runner
from evals.cli.commands.sweep import parse_faults
from evals.errors import InvalidRunInputError, RunLockedError
from evals.report.progress import (
    LiveDisplay,
    PlainLines,
    eta_text,
    event_line,
    make_progress,
    totals_line,
)
from evals.results.records import RunFolder
from evals.run.runner import (
    RunConfig,
    RunEvent,
    Snapshot,
    default_run_name,
    drop_unused,
    estimate_seconds,
    hold_run,
    reserve_run_name,
    run_lock,
)


def _snapshot(done: int = 3, running: dict[str, str | None] | None = None) -> Snapshot:
    return Snapshot(total=10, done=done, successes=2, failures=1, errors=0, not_run=0,
                    running=running or {"w0": "t4", "w1": None}, quarantined=[],
                    elapsed_s=30.0, done_this_session=done)


def test_estimates_follow_the_reference_solution_and_the_pause() -> None:
    short = {"reference_solution": ["DONE"], "config": []}
    long = {"reference_solution": ["a", "sleep 4", "b", "DONE"], "config": [{}, {}]}
    assert estimate_seconds(long) > estimate_seconds(short)
    assert estimate_seconds(long) >= 4.0
    paused = estimate_seconds(long, step_pause_s=3.0)
    assert paused == pytest.approx(estimate_seconds(long) + 3 * 3.0)  # three actions are sent
    waa_task = {"config": [{}, {}, {}], "evaluator": {"func": ["a", "b"]}}
    assert estimate_seconds(waa_task) > estimate_seconds({"config": []})


@pytest.mark.parametrize(
    ("changes", "needle"),
    [({"max_steps": 0}, "--max-steps"), ({"task_timeout_s": 0}, "--task-timeout"),
     ({"max_attempts": 0}, "--max-attempts"), ({"max_cost_usd": -1.0}, "--max-cost-usd"),
     ({"run_name": "a/b"}, "--run-name"), ({"selection": " "}, "--tasks")],
)
def test_bad_run_options_are_refused(changes: dict[str, object], needle: str) -> None:
    with pytest.raises(InvalidRunInputError, match=needle):
        RunConfig(**{"pool": None, "selection": "all", "agent": "noop", **changes})


def test_a_run_config_is_checked_once_and_cannot_be_changed() -> None:
    config = RunConfig(pool=None, selection="all", agent="noop")
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.max_steps = 0
    with pytest.raises(InvalidRunInputError, match="--max-steps"):
        dataclasses.replace(config, max_steps=0)  # a changed copy is checked in turn
    assert dataclasses.replace(config, max_steps=3).max_steps == 3


def test_default_run_names_are_folder_safe() -> None:
    name = default_run_name("my_agents:Clicker")
    assert name.startswith("my-agents-Clicker-")
    assert "/" not in name and ":" not in name


@pytest.mark.parametrize("now", ["2026-12-05T02:40:00.123456+00:00",
                                 "2026-12-05T02:40:00+00:00"])
def test_default_run_names_have_one_shape_at_a_whole_second_too(
        monkeypatch: pytest.MonkeyPatch, now: str) -> None:
    monkeypatch.setattr(runner, "now_iso", lambda: now)
    assert default_run_name("noop") == "noop-2026-12-05T024000"  # was ...T024000Z on the second


def _aged(path: Path, seconds: float) -> Path:
    then = path.lstat().st_mtime + seconds
    os.utime(path, (then, then), follow_symlinks=False)
    return path


@pytest.mark.parametrize("now", ["2026-12-05T02:40:00.123456+00:00",
                                 "2026-12-05T02:40:00+00:00"])  # a whole second
def test_a_reservation_left_unheld_is_removed_by_the_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, now: str) -> None:
    # what dead processes reserved (a folder nobody holds), for every shape of agent name
    monkeypatch.setattr(runner, "now_iso", lambda: now)
    results = tmp_path / "results"
    results.mkdir()
    names = [default_run_name(a) for a in ("noop", "my_agents:Clicker", "--", "api-claude")]
    dead = [_aged(results / n, -3600) for n in (*names, f"{names[0]}-2", f"{names[1]}-12")
            if not (results / n).mkdir()]
    held = reserve_run_name("oracle", results)  # this one clears them, then holds its own
    assert not any(p.exists() for p in dead), sorted(p.name for p in results.iterdir())
    _aged(results / held, -3600)
    kept = [_aged(results / n, -3600) for n in ("my-sweep", "noop-latest", f"{names[0]}-x")
            if not (results / n).mkdir()]
    (results / f"{names[0]}-9").mkdir()  # made since the margin began: maybe not held yet
    kept.append(_aged(results / f"{names[0]}-9", 3600))
    again = reserve_run_name("oracle", results)
    assert (results / held).is_dir() and all(p.is_dir() for p in kept)  # held, or not a dead one
    drop_unused(results / held)
    drop_unused(results / again)
    assert sorted(p.name for p in results.iterdir()) == sorted(p.name for p in kept)


def test_fault_options() -> None:
    assert parse_faults(["latency=0.5", "hang-after = 20"]) == {"latency": "0.5",
                                                                 "hang-after": "20"}
    assert parse_faults(None) == {}
    with pytest.raises(InvalidRunInputError, match="KEY=VALUE"):
        parse_faults(["latency"])


def test_a_run_lock_is_exclusive(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run")
    with run_lock(folder), pytest.raises(RunLockedError), run_lock(folder):
        pass
    with run_lock(folder):
        pass


def test_a_run_held_around_its_run_lends_its_lock_to_that_run_alone(tmp_path: Path) -> None:
    folder, other = RunFolder(tmp_path / "run"), RunFolder(tmp_path / "other")
    with hold_run(folder):
        with run_lock(RunFolder(tmp_path / "." / "run")):  # the same folder, spelled otherwise
            pass
        with run_lock(other), pytest.raises(RunLockedError), run_lock(other):
            pass
    with run_lock(folder), pytest.raises(RunLockedError), hold_run(folder):
        pass


def test_plain_progress_prints_one_line_per_finished_task_with_the_eta() -> None:
    out = io.StringIO()
    show = PlainLines(out)
    show(RunEvent("task_started", _snapshot(), task_id="t4", worker="w0"))
    show(RunEvent("task_finished", _snapshot(4), task_id="t4", worker="w0", status="success"))
    show(RunEvent("task_finished", _snapshot(5), task_id="t5", worker="w1", status="error",
                  detail="worker unreachable"))
    assert out.getvalue().splitlines() == [
        f"[4/10] success t4 on w0 - ETA {eta_text(_snapshot(4))}",
        f"[5/10] error t5 on w1 (worker unreachable) - ETA {eta_text(_snapshot(5))}",
    ]


def test_live_display_shows_totals_workers_and_notices() -> None:
    out = io.StringIO()
    show = LiveDisplay(out)
    show(RunEvent("started", _snapshot()))
    show(RunEvent("worker_quarantined", _snapshot(), worker="w1", detail="2 failures"))
    show.close()
    text = out.getvalue()
    assert totals_line(_snapshot()).split(" | ")[0] in text
    assert "worker w1 quarantined: 2 failures" in text
    rows = {line.split()[0]: line.split()[1:] for line in text.splitlines()
            if line.strip().startswith(("w0", "w1"))}
    assert rows["w0"][:2] == ["running", "t4"] and rows["w1"] == ["idle"]


def test_progress_kind_follows_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setenv("TERM", "xterm")
    assert isinstance(make_progress(io.StringIO()), PlainLines)
    assert isinstance(make_progress(Tty(), json_out=True), PlainLines)
    monkeypatch.setattr("sys.stdout", Tty())
    live = make_progress(Tty())
    assert isinstance(live, LiveDisplay)
    live.close()
    monkeypatch.setenv("TERM", "dumb")
    assert isinstance(make_progress(Tty()), PlainLines)
    assert event_line(RunEvent("task_started", _snapshot())) is None
