"""A resumed run is the same run: every setting that shapes its results is recorded when it
starts, kept by ``--resume`` and ``--rerun-errors`` when not given, refused in one line when
given otherwise, and changed only with ``--allow-change SETTING`` (recorded in the manifest and
shown on the run page, by a resume that runs something). Real CLI, real local pool
(:mod:`evals.run.settings`).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from oa_vm import api
from oa_vm.model import state
from tests.support.cli import BIN
from tests.support.pools import READY_S
from tests.support.run_records import reopen_task

pytestmark = [pytest.mark.slow, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]

TASK = "c499b229-110c-5fc8-9895-f2f879ac1512-WOS"
POOL = "same"
AGENT = ("class Mine(NoopAgent):\n    def __init__(self, flavour='plain'):\n"
         "        self.flavour = flavour\n")
HEADER = "from evals.agents.noop import NoopAgent\n\n\n"


@dataclass(frozen=True)
class World:
    home: Path
    cwd: Path
    results: Path


def cli(world: World, *args: str) -> subprocess.CompletedProcess[str]:
    """``openadapt-evals`` run in ``world.cwd`` (where the agent's module is)."""
    # this checkout's code (the console script's editable install may be another checkout's);
    # the agent's module is found in the working folder, not through this path
    env = {**os.environ, "OA_VM_HOME": str(world.home), "PYTHONPATH": str(ROOT)}
    return subprocess.run(  # a fixed argv, no shell
        [str(BIN / "openadapt-evals"), *args], capture_output=True, text=True, timeout=240,
        env=env, cwd=world.cwd, stdin=subprocess.DEVNULL, check=False,
    )


BASE = ("--pool", POOL, "--agent", "resume_agent:Mine", "--tasks", TASK, "--max-steps", "2",
        "--read-timeout", "30s", "--task-timeout", "300s", "--step-pause", "0s",
        "--reset", "stock", "--agent-arg", "flavour=plain")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("resume")
    w = World(root / "home", root, root / "results")
    (root / "resume_agent.py").write_text(HEADER + AGENT, encoding="utf-8")
    (root / "variations.json").write_text("{}", encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OA_VM_HOME", str(w.home))
        api.create_pool(name=POOL, cloud="local", workers=1)
        try:
            api.wait_pool(POOL, timeout_s=READY_S)
            done = cli(w, "run", *BASE, "--run-name", "base", "--results-dir", str(w.results))
            assert done.returncode == 0, done.stderr
            yield w
        finally:
            for name in state.list_names():
                api.cleanup_pool(name)


def _digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()
            and p.name not in (".lock",) and not p.name.startswith("queue.sqlite")}


def _copy(world: World, name: str) -> Path:
    import shutil

    target = world.results / name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(world.results / "base", target)
    return target


CHANGES = {
    # option changed -> (the setting's name, what the refusal shows as recorded, as given)
    "max-steps": (("--max-steps", "5"), "--max-steps '2', not '5'"),
    "read-timeout": (("--read-timeout", "60s"), "--read-timeout '30s', not '60s'"),
    "task-timeout": (("--task-timeout", "10m"), "--task-timeout '300s', not '600s'"),
    "step-pause": (("--step-pause", "3s"), "--step-pause '0s', not '3s'"),
    "reset": (("--reset", "clean-or-stock"), "--reset 'stock', not 'clean-or-stock'"),
    "agent-arg": (("--agent-arg", "flavour=spicy"),
                  "--agent-arg 'flavour=plain', not 'flavour=spicy'"),
    "tasks": (("--tasks", "all"), f"--tasks '{TASK}', not 'all'"),
    "agent": (("--agent", "noop"), "--agent 'resume_agent:Mine', not 'noop'"),
    "trials": (("--trials", "2"), "--trials '1', not '2'"),
    "variations": (("--variations", "{cwd}/variations.json"), "--variations '(none)', not"),
}


def _given(world: World, args: tuple[str, ...]) -> list[str]:
    return [a.replace("{cwd}", str(world.cwd)) for a in args]


@pytest.mark.parametrize("setting", sorted(CHANGES))
def test_a_resume_that_changes_a_recorded_setting_is_refused_in_one_line(
    world: World, setting: str
) -> None:
    args, shown = CHANGES[setting]
    folder = _copy(world, f"r-{setting}")
    before = _digests(folder)
    lease_before = (state.pool_dir(POOL) / "lease.json").exists()
    result = cli(world, "run", "--pool", POOL, "--run-name", folder.name, "--resume",
                 "--results-dir", str(world.results), *_given(world, args))
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert shown in lines[0], lines[0]
    changeable = setting not in ("tasks", "agent", "trials", "variations")
    if changeable:
        assert f"--allow-change {setting}" in lines[0], lines[0]
    else:
        assert "another --run-name" in lines[0], lines[0]
    assert _digests(folder) == before  # nothing recorded changed
    assert (state.pool_dir(POOL) / "lease.json").exists() == lease_before


def test_an_edited_agent_module_is_refused_then_allowed_and_recorded(world: World) -> None:
    folder = reopen_task(_copy(world, "edited"), TASK)
    module = world.cwd / "resume_agent.py"
    module.write_text(HEADER + AGENT + "\n\nVERSION = 2\n", encoding="utf-8")
    try:
        refused = cli(world, "run", *BASE, "--run-name", "edited", "--resume",
                      "--results-dir", str(world.results))
        line = refused.stderr.strip()
        assert refused.returncode == 2 and "\n" not in line, refused.stderr
        assert "the agent's module file" in line and "--allow-change agent-module" in line, line
        allowed = cli(world, "run", *BASE, "--run-name", "edited", "--resume",
                      "--allow-change", "agent-module", "--results-dir", str(world.results))
        assert allowed.returncode == 0, allowed.stderr
    finally:
        module.write_text(HEADER + AGENT, encoding="utf-8")
    manifest = json.loads((folder / "manifest.json").read_text())
    [change] = manifest["setting_changes"]
    assert change["setting"] == "agent-module"
    edited = (HEADER + AGENT + "\n\nVERSION = 2\n").encode()
    assert change["to"] == hashlib.sha256(edited).hexdigest()
    assert manifest["settings"]["agent-module"] == change["to"]


def test_a_resume_keeps_every_setting_it_is_not_given(world: World) -> None:
    # before: --max-steps 2 became 15 (and metadata.json said so), the read timeout became 60 s
    folder = _copy(world, "kept")
    result = cli(world, "run", "--pool", POOL, "--run-name", "kept", "--resume",
                 "--results-dir", str(world.results))
    assert result.returncode == 0, result.stderr
    metadata = json.loads((folder / "metadata.json").read_text())
    assert metadata["max_steps"] == 2 and metadata["agent"] == "resume_agent:Mine"
    assert metadata["reset"]["mode"] == "stock"
    assert metadata["task_timeout_s"] == 300
    settings = json.loads((folder / "manifest.json").read_text())["settings"]
    assert settings["read-timeout"] == 30 and settings["max-steps"] == 2
    assert settings["agent-arg"] == {"flavour": "plain"}


def test_an_allowed_change_is_recorded_in_the_manifest_and_on_the_page(world: World) -> None:
    folder = reopen_task(_copy(world, "allowed"), TASK)
    result = cli(world, "run", "--pool", POOL, "--run-name", "allowed", "--resume",
                 "--max-steps", "5", "--read-timeout", "45s", "--allow-change", "max-steps",
                 "--allow-change", "read-timeout", "--results-dir", str(world.results))
    assert result.returncode == 0, result.stderr
    manifest = json.loads((folder / "manifest.json").read_text())
    changes = {c["setting"]: (c["from"], c["to"]) for c in manifest["setting_changes"]}
    assert changes == {"max-steps": (2, 5), "read-timeout": (30, 45)}
    assert manifest["settings"]["max-steps"] == 5
    assert json.loads((folder / "metadata.json").read_text())["max_steps"] == 5
    page = world.cwd / "allowed.html"
    shown = cli(world, "view", "allowed", "--results-dir", str(world.results), "--out", str(page))
    assert shown.returncode == 0, shown.stderr
    html = page.read_text()
    assert "setting changed on resume" in html and "max-steps: 2 -&gt; 5" in html, html
    # the next resume keeps the changed value without the flag
    again = cli(world, "run", "--pool", POOL, "--run-name", "allowed", "--resume",
                "--results-dir", str(world.results))
    assert again.returncode == 0, again.stderr


def test_allow_change_of_an_unchanged_or_unknown_setting_is_refused(world: World) -> None:
    _copy(world, "unchanged")
    for extra, words in ((("--allow-change", "max-steps"), "unchanged"),
                         (("--allow-change", "tasks"), "not a setting a resumed run can change")):
        result = cli(world, "run", "--pool", POOL, "--run-name", "unchanged", "--resume",
                     "--results-dir", str(world.results), *extra)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert result.returncode == 2 and len(lines) == 1 and words in lines[0], result.stderr


def test_a_refused_resume_leaves_a_stalled_controllers_lease_alone(world: World) -> None:
    # A controller frozen mid-run: it holds the run's lock, its pool lease's heartbeat is stale.
    folder = _copy(world, "stalled")
    lease = state.pool_dir(POOL) / "lease.json"
    stale = {"host": "elsewhere", "pid": 1, "pid_start": None, "run": "stalled",
             "token": "t-stalled", "generation": 7, "acquired": time.time() - 3600,
             "heartbeat": time.time() - 3600}
    lease.write_text(json.dumps(stale))
    with open(folder / ".lock", "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            result = cli(world, "run", *BASE, "--run-name", "stalled", "--resume",
                         "--results-dir", str(world.results))
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    try:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert result.returncode != 0 and len(lines) == 1, result.stderr
        assert "in use by another" in lines[0], lines[0]
        assert json.loads(lease.read_text()) == stale  # not taken over, not dropped
    finally:
        lease.unlink(missing_ok=True)


SLOW = ("import time\n\nfrom evals.agents.noop import NoopAgent\n\n\n"
        "class Slow(NoopAgent):\n    def __init__(self, nap='0'):\n"
        "        self.nap = float(nap)\n\n"
        "    def act(self, *args, **kwargs):\n        time.sleep(self.nap)\n"
        "        return super().act(*args, **kwargs)\n")


def test_rerun_errors_lists_each_attempt_once_and_its_cost_is_the_ledgers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("OA_VM_HOME", str(home))
    w = World(home, tmp_path, tmp_path / "results")
    (tmp_path / "slow_agent.py").write_text(SLOW, encoding="utf-8")
    api.create_pool(name="priced", cloud="local", workers=1, price_per_hour=3600.0)
    try:
        api.wait_pool("priced", timeout_s=READY_S)
        base = ("run", "--pool", "priced", "--tasks", TASK, "--agent", "slow_agent:Slow",
                "--run-name", "errs", "--results-dir", str(w.results), "--max-attempts", "2")
        # every attempt outlasts its 1 s: two timeouts, the second final (given back by
        # release, so it is in the history already)
        first = cli(w, *base, "--task-timeout", "1s", "--agent-arg", "nap=3")
        assert first.returncode in (0, 4), first.stderr
        again = cli(w, "run", "--pool", "priced", "--rerun-errors", "errs", "--results-dir",
                    str(w.results), "--task-timeout", "5m", "--agent-arg", "nap=0",
                    "--allow-change", "task-timeout", "--allow-change", "agent-arg")
        assert again.returncode == 0, again.stderr
    finally:
        api.cleanup_pool("priced")
    folder = w.results / "errs"
    record = json.loads((folder / "tasks" / TASK / "execution.json").read_text())
    seen = [(a["attempt"], a["started_at"]) for a in record["previous_attempts"]]
    assert len(seen) == len(set(seen)) == 2, record["previous_attempts"]
    ledger = json.loads((folder / "metadata.json").read_text())["cost"]["total_usd"]
    summary = json.loads((folder / "summary.json").read_text())["cost"]["total_usd"]
    assert ledger > 0 and summary == pytest.approx(ledger, abs=1e-4)
    assert record["cost"]["total_usd"] == pytest.approx(ledger, abs=1e-4)
