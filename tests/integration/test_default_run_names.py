"""A run without ``--run-name`` gets a folder of its own, even when its default name
(``<agent>-<UTC second>``) is taken: by a run started in the same second, before or while
this one chose its name. Real runs on a real local pool: the CLI as a subprocess, and the
Python API (whose caller gives no name either)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import psutil
import pytest

import evals.run.runner as runner
import oa_vm
from evals.results.records import RunFolder
from evals.run.runner import RunConfig, run_evaluation
from oa_vm.model import state
from tests.support.cli import BIN, run_cli
from tests.support.controller import Controller, RunController
from tests.support.waiting import wait_until

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


def test_runs_reserving_one_default_name_at_once_each_get_their_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # eight controllers choosing the same second's name together: each folder is made by one
    # mkdir, which only one of them wins; the others take the next number
    import threading

    monkeypatch.setattr(runner, "now_iso", lambda: "2026-12-05T02:40:00.123456+00:00")
    results, names = tmp_path / "results", []
    start = threading.Barrier(8)

    def reserve() -> None:
        start.wait(timeout=60)
        names.append(runner.reserve_run_name("noop", results))

    threads = [threading.Thread(target=reserve) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(set(names)) == 8 and {p.name for p in results.iterdir()} == set(names)
    runner.drop_unused(results / names[0])
    assert not (results / names[0]).exists()  # an unused reservation goes; a started run's not
    (results / names[1] / "metadata.json").write_text("{}", encoding="utf-8")
    runner.drop_unused(results / names[1], results)
    assert (results / names[1]).is_dir()
    # the folders the reservation made above the run's go with it, and no further
    deep = tmp_path / "a" / "b" / "results"
    runner.drop_unused(deep / runner.reserve_run_name("noop", deep), tmp_path / "a")
    assert tmp_path.is_dir() and not (tmp_path / "a").exists()


def test_three_runs_started_together_without_names_each_get_a_folder(
        home: Path, local_pool: Callable[..., str], tmp_path: Path) -> None:
    # started at once, they usually choose the same second's name: each must get a folder
    pools = [local_pool(name) for name in ("ra", "rb", "rc")]
    results = tmp_path / "results"
    procs = [subprocess.Popen(  # our own console script, fixed arguments
        [str(BIN / "openadapt-evals"), "run", "--pool", pool, "--agent", "noop", "--tasks", "1",
         "--results-dir", str(results)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL, env={**os.environ, "OA_VM_HOME": str(home)}) for pool in pools]
    ended = [proc.communicate(timeout=600) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0], [err for _, err in ended]
    made = sorted(p.name for p in results.iterdir())
    assert len(made) == 3 and all((results / n / "summary.json").is_file() for n in made), made


def test_a_refused_run_leaves_no_folder_for_its_default_name(home: Path, pool: str,
                                                             tmp_path: Path) -> None:
    results = tmp_path / "made" / "for" / "results"
    refused = run_cli("openadapt-evals", "run", "--pool", pool, "--agent", "noop", "--tasks",
                      "no-such-task", "--results-dir", str(results), home=home)
    assert refused.returncode != 0 and "no-such-task" in refused.stderr
    # the name reserved, then given back with the folders it made
    assert not (tmp_path / "made").exists()


def test_a_killed_runs_reserved_folder_is_removed_by_the_next_run_and_nothing_else(
        home: Path, pool: str, tmp_path: Path, controllers: list[Controller]) -> None:
    # Runs waiting for a pool that another run holds have reserved their default names and
    # written nothing yet: one is killed with SIGKILL (no exit handler runs), one lives on.
    results = tmp_path / "results"
    ports = {urlsplit(url).port for w in state.load(pool).workers
             for url in (w.waa_url, w.scoring_url) if url}

    def waiting(*args: str) -> tuple[RunController, Path]:
        # a run started, its folder made, and the pool read (after the name is reserved)
        before = set(results.iterdir()) if results.is_dir() else set()
        run = RunController(home, results, *args)
        controllers.append(run)

        def reserved() -> Path | None:
            if run.proc.poll() is not None:
                raise AssertionError(f"the run ended:\n{run.output()}")
            made = [p for p in results.iterdir() if p not in before]
            connected = any(c.raddr and c.raddr.port in ports
                            for c in psutil.Process(run.proc.pid).net_connections("tcp"))
            return made[0] if len(made) == 1 and connected else None

        return run, wait_until(reserved, lambda: f"the run's reservation:\n{run.output()}")

    def long_ago(path: Path) -> None:
        # older than any margin for a reservation being made (no run waits a minute here)
        then = path.lstat().st_mtime - 3600
        os.utime(path, (then, then), follow_symlinks=False)

    with oa_vm.hold_pool(pool, "another run"):
        start = ("--pool", pool, "--agent", "noop", "--tasks", "1", "--wait-for-pool", "10m")
        live, held = waiting(*start)
        killed, dead = waiting(*start)
        os.kill(killed.proc.pid, signal.SIGKILL)
        killed.wait()
        assert list(dead.iterdir()) == [] and list(held.iterdir()) == []
        mine = results / "my-sweep"  # a user's own empty folder
        started = results / "noop-2020-01-02T030405"  # a default name with content
        elsewhere = tmp_path / "elsewhere"  # an empty folder behind a default-named symlink
        mine.mkdir()
        started.mkdir()
        (started / "notes.txt").write_text("mine", encoding="utf-8")
        elsewhere.mkdir()
        link = results / "noop-2020-01-02T030405-2"
        link.symlink_to(elsewhere, target_is_directory=True)
        for path in (held, dead, mine, started, elsewhere, link):
            long_ago(path)
        # the next run with a default name (refused: the pool is busy) clears the dead one
        refused = run_cli("openadapt-evals", "run", *start[:-2], "--results-dir", str(results),
                          home=home)
        assert refused.returncode != 0 and "another run" in refused.stderr, refused.stderr
        assert not dead.exists()
        assert held.is_dir() and list(held.iterdir()) == []
        assert mine.is_dir() and (started / "notes.txt").is_file()
        assert link.is_symlink() and elsewhere.is_dir()
    # the reservation held does not stand in the way of its run: it runs in that folder
    assert live.wait() == 0, live.output()
    assert (held / "summary.json").is_file()
    assert {p.name for p in results.iterdir()} == {held.name, mine.name, started.name, link.name}
