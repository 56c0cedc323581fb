"""A run without ``--run-name`` gets a folder of its own, even when its default name
(``<agent>-<UTC second>``) is taken: by a run started in the same second, before or while
this one chose its name. Real runs on a real local pool: the CLI as a subprocess, and the
Python API (whose caller gives no name either)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import evals.run.runner as runner
from evals.results.records import RunFolder
from evals.run.runner import RunConfig, run_evaluation
from tests.support.cli import run_cli

pytestmark = pytest.mark.integration

OTHER = {"note": "another run's metadata: must be left as it is"}


def _stamp(moment: datetime) -> str:
    """A default run name's time part, as :func:`evals.run.runner.default_run_name` writes it."""
    return moment.isoformat().replace(":", "").split(".")[0].split("+")[0]


def _taken(results: Path, name: str) -> Path:
    folder = results / name
    folder.mkdir(parents=True)
    (folder / "metadata.json").write_text(json.dumps(OTHER), encoding="utf-8")
    return folder


def test_the_cli_takes_the_next_number_when_the_default_name_is_taken(
        home: Path, pool: str, tmp_path: Path) -> None:
    results = tmp_path / "results"
    now = datetime.now(UTC)
    # every name the run could default to in the next ten minutes is another run's
    names = [f"noop-{_stamp(now + timedelta(seconds=s))}" for s in range(-5, 600)]
    for name in names:
        _taken(results, name)
    done = run_cli("openadapt-evals", "run", "--pool", pool, "--agent", "noop", "--tasks", "1",
                   "--results-dir", str(results), home=home, timeout=600.0)
    assert done.returncode == 0, done.stderr
    made = sorted(p.name for p in results.iterdir() if p.name not in names)
    assert len(made) == 1 and made[0].endswith("-2") and made[0][:-2] in names, made
    assert all(json.loads((results / n / "metadata.json").read_text()) == OTHER for n in names)


def test_a_python_run_without_a_name_leaves_other_runs_folders_alone(
        home: Path, pool: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = tmp_path / "results"
    monkeypatch.setattr(runner, "now_iso", lambda: "2026-12-05T02:40:00.123456+00:00")
    name = "noop-2026-12-05T024000"
    started = _taken(results, name)  # a run of the same second, started before this one
    # and one started while this one checked its folder: made before this run creates its own
    # (a folder without metadata yet, which the run took for one killed at its start)
    checked = runner.check_run_folder

    def racing(config: RunConfig, run_name: str | None = None
               ) -> tuple[RunFolder, bool, dict[str, object]]:
        found = checked(config, run_name)
        found[0].path.mkdir()
        return found

    monkeypatch.setattr(runner, "check_run_folder", racing)
    result = run_evaluation(RunConfig(pool=pool, selection="1", agent="noop",
                                      results_dir=results, reset="stock"))
    assert result.run_dir.name == f"{name}-3", result.run_dir
    assert json.loads((started / "metadata.json").read_text()) == OTHER
    assert list((results / f"{name}-2").iterdir()) == []  # the other run's, untouched
    assert (result.run_dir / "metadata.json").is_file()
