"""The abuse suite: bad input to the three console scripts, each run as a real subprocess.

Every case must end the same way: exactly one line on stderr, a non-zero exit, no traceback, and
nothing already recorded changed (the pool's record, the finished run's files; see
:func:`snapshot`). The cases come from a fault-and-abuse review: options, names, environment
variables, corrupt state and run files. ``docs/reliability.md`` carries this table with counts.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from oa_vm import api
from tests.support.cli import run_cli
from tests.support.devices import fifo, special_file
from tests.support.pools import READY_S

pytestmark = pytest.mark.integration

TASK = "c499b229-110c-5fc8-9895-f2f879ac1512-WOS"
POOL = "abuse"
DONE = "done"


@dataclass(frozen=True)
class World:
    """A home with one ready pool and one finished run, shared by every case."""

    home: Path
    results: Path
    afile: Path


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("abuse")
    home, results, afile = root / "home", root / "results", root / "afile"
    afile.write_text("not a folder\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OA_VM_HOME", str(home))
        api.create_pool(name=POOL, cloud="local", workers=1)
        try:
            api.wait_pool(POOL, timeout_s=READY_S)
            done = run_cli("openadapt-evals", "run", "--pool", POOL, "--agent", "oracle",
                           "--tasks", TASK, "--run-name", DONE, "--results-dir", str(results),
                           home=home, timeout=300)
            assert done.returncode == 0, done.stderr
            yield World(home, results, afile)
        finally:
            api.cleanup_pool(POOL)


def snapshot(world: World) -> dict[str, str]:
    """Digest of every file that records something: pool records and run folders (worker
    folders, logs and lock files change on their own and are left out)."""
    digests: dict[str, str] = {}
    for base in (world.home, world.results):
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            rel = path.relative_to(base)
            if not path.is_file() or rel.parts[-1] in ("lease.lock", ".lock", "lease.json"):
                # a held lease's heartbeat rewrites it every 10 s; lease.generation is kept:
                # bad input is refused before any lease is taken (oa_vm.model.lease)
                continue
            if "workers" in rel.parts or "logs" in rel.parts or rel.parts[0] == "scratch":
                continue
            if rel.name.startswith("queue.sqlite-"):
                continue  # SQLite's WAL companions come and go
            digests[f"{base.name}/{rel}"] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests


# --- corrupt inputs made per case (in a scratch copy, so the real run stays as it was) ---------


def _copy_done(world: World, name: str) -> Path:
    target = world.results / "scratch" / name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(world.results / DONE, target)
    return target


def corrupt_queue(world: World) -> None:
    folder = _copy_done(world, "badqueue")
    (folder / "queue.sqlite").write_bytes(b"this is not a database" * 100)


def truncated_metadata(world: World) -> None:
    folder = _copy_done(world, "badmeta")
    text = (folder / "metadata.json").read_text()
    (folder / "metadata.json").write_text(text[: len(text) // 2])


def foreign_queue(world: World) -> None:
    folder = _copy_done(world, "foreignq")
    (folder / "queue.sqlite").unlink()
    conn = sqlite3.connect(folder / "queue.sqlite")
    conn.execute("CREATE TABLE other (x)")
    conn.commit()
    conn.close()


def results_is_file(world: World) -> None:
    (world.results / "scratch").mkdir(parents=True, exist_ok=True)
    (world.results / "scratch" / "rfile").write_text("x")


def bad_task_file(world: World) -> None:
    folder = world.results / "scratch" / "badsrc"
    (folder / "examples" / "notepad").mkdir(parents=True, exist_ok=True)
    (folder / "local_x.json").write_text('{"notepad": ["t1"]}')
    (folder / "examples" / "notepad" / "t1.json").write_text('{"id": "t1", "config": [')


def ids_file(world: World) -> None:
    (world.results / "scratch").mkdir(parents=True, exist_ok=True)
    (world.results / "scratch" / "ids.txt").write_text("no-such-task-1\nno-such-task-2\n")


def _typed_home(world: World, name: str, change: Callable[[dict[str, object]], None]) -> None:
    """A scratch home holding one pool record that is valid JSON with a wrong-typed field."""
    folder = world.results / "scratch" / "typedhome" / "pools" / name
    folder.mkdir(parents=True, exist_ok=True)
    data: dict[str, object] = {
        "version": 1, "name": name, "cloud": "local", "state": "ready",
        "created_at": "2026-01-01T00:00:00+00:00", "expires_at": None,
        "workers": [{"name": "worker-0", "state": "ready", "pid": 4242}],
    }
    change(data)
    (folder / "pool.json").write_text(json.dumps(data))


def workers_not_a_list(world: World) -> None:
    _typed_home(world, "typed", lambda d: d.update(workers="x"))


def negative_pid(world: World) -> None:
    _typed_home(world, "negpid", lambda d: d.update(
        workers=[{"name": "worker-0", "state": "ready", "pid": -5}]))


def unknown_final_status(world: World) -> None:
    folder = _copy_done(world, "weirdstatus")
    conn = sqlite3.connect(folder / "queue.sqlite")
    conn.execute("UPDATE tasks SET final_status='weird'")
    conn.commit()
    conn.close()


_WRONG_TYPES = {  # run folder name: (record, field, a value of the wrong type)
    "typedmanifest": ("manifest.json", "agent", "x"),
    "typedpools": ("manifest.json", "pools", [1]),
    "typedmeta": ("metadata.json", "reset", []),
    "typedexec": ("execution.json", "steps", 3),
}


def wrong_typed_records(world: World) -> None:
    """Copies of the finished run, each with one record holding a field of the wrong type
    (and one intact copy, to compare them with)."""
    _copy_done(world, "intact")
    for name, (record, key, value) in _WRONG_TYPES.items():
        folder = _copy_done(world, name)
        path = (next((folder / "tasks").glob("*/execution.json"))
                if record == "execution.json" else folder / record)
        data = json.loads(path.read_text())
        data[key] = value
        path.write_text(json.dumps(data))


def symlinked_runs(world: World) -> None:
    """Run folders in the scratch results folder that lead out of it by a symlink: the run
    folder itself, a task's folder, the metadata (their targets are copies in the test's own
    folder, outside the results folder)."""
    scratch = _scratch(world)
    outside = world.results.parent / "outside"
    if outside.exists():
        shutil.rmtree(outside)
    shutil.copytree(world.results / DONE, outside / "run")
    for name in ("linkrun", "linktask", "linkmeta"):
        target = scratch / name
        if target.is_symlink():
            target.unlink()
        elif target.exists():
            shutil.rmtree(target)
    (scratch / "linkrun").symlink_to(outside / "run")
    task = _copy_done(world, "linktask") / "tasks" / TASK
    shutil.rmtree(task)
    task.symlink_to(outside / "run" / "tasks" / TASK)
    meta = _copy_done(world, "linkmeta") / "metadata.json"
    meta.unlink()
    meta.symlink_to(outside / "run" / "metadata.json")


def existing_page_target(world: World) -> None:
    (world.results / "scratch").mkdir(parents=True, exist_ok=True)
    (world.results / "scratch" / "notes.html").write_text("my own notes\n")


def device_target(world: World) -> None:
    """A device of the test's own folder (never the machine's /dev: a regression would write
    to it, or replace it with a file)."""
    scratch = world.results / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    (scratch / "device").unlink(missing_ok=True)
    special_file(scratch, "device")


# --- hostile input files (made in the scratch folder: never the machine's own /dev) -----------


def _scratch(world: World) -> Path:
    scratch = world.results / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    return scratch


_BOMB_LEVELS = 7  # 9**7 = 4.8 million strings once expanded: seconds, not minutes, unbounded


def input_files(world: World) -> None:
    """Every hostile input at once: a YAML alias bomb, a lone surrogate, a 300-digit variation
    number, duplicate keys, a FIFO, a non-regular node, a file over the size bound, a line of
    /etc/passwd's shape as task IDs."""
    scratch = _scratch(world)
    # a valid key whose goal_style is the bomb: the old check quoted it back, expanded
    lines = [f"{TASK}__casual_1:", "  instruction: hi",
             '  l0: &l0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for n in range(1, _BOMB_LEVELS):
        lines.append(f"  l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]")
    lines.append(f"  goal_style: *l{_BOMB_LEVELS - 1}")
    (scratch / "bomb.yaml").write_text("\n".join(lines) + "\n")
    (scratch / "surrogate.json").write_text(
        json.dumps({f"{TASK}__casual_1": {"instruction": "hi"}}).replace("hi", "hi \\ud800"))
    (scratch / "digits.json").write_text(
        json.dumps({f"{TASK}__casual_{'9' * 300}": {"instruction": "hi"}}))
    (scratch / "dupkeys.json").write_text(
        f'{{"{TASK}__casual_1": {{"instruction": "a"}}, "{TASK}__casual_1": '
        '{"instruction": "b"}}')
    (scratch / "huge.txt").write_text(TASK + "\n" + "x" * (5 * 1024 * 1024))
    (scratch / "passwd.txt").write_text("root:x:0:0:root:/root:/bin/bash\n")
    for name in ("fifo", "node"):
        (scratch / name).unlink(missing_ok=True)
    fifo(scratch, "fifo")
    special_file(scratch, "node")


@dataclass(frozen=True)
class Case:
    """One bad input: the script, its arguments ({res}, {file}, {home}, {scratch} filled in),
    extra environment, what to prepare first, and whether another live process (a run's
    stand-in) holds the pool's lease meanwhile."""

    script: str
    args: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    prepare: Callable[[World], None] | None = None
    held: bool = False


_HOLD = """
import sys
from oa_vm.model.lease import hold_pool
with hold_pool(sys.argv[1], "holder"):
    print("held", flush=True)
    sys.stdin.read()
"""


@contextlib.contextmanager
def _lease_held(world: World, held: bool) -> Iterator[None]:
    """The pool's lease held by another live process for the block (when ``held``), given back
    after it, as a run's controller would."""
    if not held:
        yield
        return
    proc = subprocess.Popen(  # fixed argv, no shell
        [sys.executable, "-c", _HOLD, POOL], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True, env={**os.environ, "OA_VM_HOME": str(world.home)},
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        assert proc.stdout.readline().strip() == "held"
        yield
    finally:
        proc.stdin.close()
        proc.wait(timeout=120)
        proc.stdout.close()


def _run(*args: str, **kw: object) -> Case:
    base = ("run", "--pool", POOL, "--agent", "oracle", "--tasks", TASK, "--results-dir", "{res}")
    return Case("openadapt-evals", base + args, **kw)  # type: ignore[arg-type]


def _sweep(*args: str, **kw: object) -> Case:
    base = ("sweep", "--cloud", "local", "--workers", "1", "--agent", "oracle", "--tasks", TASK,
            "--results-dir", "{res}")
    return Case("openadapt-evals", base + args, **kw)  # type: ignore[arg-type]


def _oavm(*args: str, **kw: object) -> Case:
    return Case("oa-vm", args, **kw)  # type: ignore[arg-type]


def _flow(*args: str, **kw: object) -> Case:
    return Case("openadapt-eval-flow", args, **kw)  # type: ignore[arg-type]


CASES: dict[str, Case] = {
    # --- openadapt-evals run: numbers
    "run max-cost nan": _run("--max-cost-usd", "nan"),
    "run max-cost inf": _run("--max-cost-usd", "inf"),
    "run max-cost negative": _run("--max-cost-usd", "-1"),
    "run step-pause negative": _run("--step-pause", "-1"),
    "run step-pause nan": _run("--step-pause", "nan"),
    "run task-timeout nan": _run("--task-timeout", "nan"),
    "run task-timeout zero": _run("--task-timeout", "0"),
    "run task-timeout inf": _run("--task-timeout", "inf"),
    "run read-timeout nan": _run("--read-timeout", "nan"),
    "run read-timeout negative": _run("--read-timeout", "-5"),
    "run max-steps zero": _run("--max-steps", "0"),
    "run max-steps text": _run("--max-steps", "many"),
    "run max-attempts zero": _run("--max-attempts", "0"),
    "run wait-for-pool bad": _run("--wait-for-pool", "soon"),
    # --- run: names and paths
    "run run-name with ../": _run("--run-name", "../escape"),
    "run run-name empty": _run("--run-name", ""),
    "run run-name slash": _run("--run-name", "a/b"),
    "run pool empty": Case("openadapt-evals", ("run", "--pool", "", "--agent", "oracle",
                                               "--tasks", TASK, "--results-dir", "{res}")),
    "run pool ../": Case("openadapt-evals", ("run", "--pool", "../x", "--agent", "oracle",
                                             "--tasks", TASK, "--results-dir", "{res}")),
    "run unknown pool": Case("openadapt-evals", ("run", "--pool", "nope", "--agent", "oracle",
                                                 "--tasks", TASK, "--results-dir", "{res}")),
    "run results-dir is a file": _run("--results-dir", "{file}"),
    "run results-dir env is a file": Case(
        "openadapt-evals", ("run", "--pool", POOL, "--agent", "oracle", "--tasks", TASK),
        env={"OA_EVALS_RESULTS": "{file}"}),
    "run OA_VM_HOME is a file": _run(env={"OA_VM_HOME": "{file}"}),
    "run unknown agent": Case("openadapt-evals", ("run", "--pool", POOL, "--agent", "nobody",
                                                  "--tasks", TASK, "--results-dir", "{res}")),
    "run agent module missing": Case(
        "openadapt-evals", ("run", "--pool", POOL, "--agent", "no_such_mod:Agent",
                            "--tasks", TASK, "--results-dir", "{res}")),
    "run http agent without url": Case(
        "openadapt-evals", ("run", "--pool", POOL, "--agent", "http", "--tasks", TASK,
                            "--results-dir", "{res}")),
    "run http agent ftp url": Case(
        "openadapt-evals", ("run", "--pool", POOL, "--agent", "http", "--agent-url",
                            "ftp://u:secret@h/x", "--tasks", TASK, "--results-dir", "{res}")),
    "run replay without bundles": Case(
        "openadapt-evals", ("run", "--pool", POOL, "--agent", "replay", "--tasks", TASK,
                            "--results-dir", "{res}")),
    "run unknown task": Case("openadapt-evals", ("run", "--pool", POOL, "--agent", "oracle",
                                                 "--tasks", "no-such-task",
                                                 "--results-dir", "{res}")),
    "run empty tasks": Case("openadapt-evals", ("run", "--pool", POOL, "--agent", "oracle",
                                                "--tasks", " ", "--results-dir", "{res}")),
    "run tasks @missing file": Case(
        "openadapt-evals", ("run", "--pool", POOL, "--agent", "oracle", "--tasks",
                            "@/no/such/file", "--results-dir", "{res}")),
    "run tasks @file of unknown ids": Case(
        "openadapt-evals", ("run", "--pool", POOL, "--agent", "oracle", "--tasks",
                            "@{scratch}/ids.txt", "--results-dir", "{res}"), prepare=ids_file),
    "run unknown domain": Case("openadapt-evals", ("run", "--pool", POOL, "--agent", "oracle",
                                                   "--tasks", "domain:nowhere",
                                                   "--results-dir", "{res}")),
    # --- run: existing and corrupt runs
    "run existing run without resume": _run("--run-name", DONE),
    "run resume missing run": _run("--run-name", "never", "--resume"),
    "run resume without run-name": _run("--resume"),
    "run resume other tasks": Case(
        "openadapt-evals", ("run", "--pool", POOL, "--agent", "oracle", "--tasks", "all",
                            "--run-name", DONE, "--resume", "--results-dir", "{res}")),
    "run resume other agent": Case(
        "openadapt-evals", ("run", "--pool", POOL, "--agent", "noop", "--tasks", TASK,
                            "--run-name", DONE, "--resume", "--results-dir", "{res}")),
    "run resume other max-steps": _run("--run-name", DONE, "--resume", "--max-steps", "7"),
    "run resume other read-timeout": _run("--run-name", DONE, "--resume", "--read-timeout",
                                          "5s"),
    "run resume allow-change of an unknown setting": _run(
        "--run-name", DONE, "--resume", "--allow-change", "tasks"),
    "run allow-change without resume": _run("--run-name", "ac", "--allow-change", "max-steps"),
    "run trials zero": _run("--trials", "0", "--run-name", "t0"),
    "run resume corrupt queue": Case(
        "openadapt-evals", ("run", "--pool", POOL, "--agent", "oracle", "--tasks", TASK,
                            "--run-name", "badqueue", "--resume",
                            "--results-dir", "{res}/scratch"), prepare=corrupt_queue),
    "run resume foreign queue": Case(
        "openadapt-evals", ("run", "--pool", POOL, "--agent", "oracle", "--tasks", TASK,
                            "--run-name", "foreignq", "--resume",
                            "--results-dir", "{res}/scratch"), prepare=foreign_queue),
    "run resume truncated metadata": Case(
        "openadapt-evals", ("run", "--pool", POOL, "--agent", "oracle", "--tasks", TASK,
                            "--run-name", "badmeta", "--resume",
                            "--results-dir", "{res}/scratch"), prepare=truncated_metadata),
    "run resume unknown final status in the queue": Case(
        "openadapt-evals", ("run", "--pool", POOL, "--agent", "oracle", "--tasks", TASK,
                            "--run-name", "weirdstatus", "--resume",
                            "--results-dir", "{res}/scratch"), prepare=unknown_final_status),
    # --- run: hostile input files and IDs (one bounded reader, one ID rule)
    "run variations alias bomb": _run("--variations", "{scratch}/bomb.yaml", prepare=input_files),
    "run variations lone surrogate": _run("--variations", "{scratch}/surrogate.json",
                                          prepare=input_files),
    "run variations 300-digit number": _run("--variations", "{scratch}/digits.json",
                                            prepare=input_files),
    "run variations duplicate keys": _run("--variations", "{scratch}/dupkeys.json",
                                          prepare=input_files),
    "run variations a FIFO": _run("--variations", "{scratch}/fifo", prepare=input_files),
    "run variations over the size bound": _run("--variations", "{scratch}/huge.txt",
                                               prepare=input_files),
    "run tasks @FIFO": Case("openadapt-evals", ("run", "--pool", POOL, "--agent", "oracle",
                                                "--tasks", "@{scratch}/fifo", "--results-dir",
                                                "{res}"), prepare=input_files),
    "run tasks @device": Case("openadapt-evals", ("run", "--pool", POOL, "--agent", "oracle",
                                                  "--tasks", "@{scratch}/node", "--results-dir",
                                                  "{res}"), prepare=input_files),
    "run tasks @file over the size bound": Case(
        "openadapt-evals", ("run", "--pool", POOL, "--agent", "oracle", "--tasks",
                            "@{scratch}/huge.txt", "--results-dir", "{res}"),
        prepare=input_files),
    "run task ID with #": Case("openadapt-evals", ("run", "--pool", POOL, "--agent", "oracle",
                                                   "--tasks", TASK + "#2", "--results-dir",
                                                   "{res}")),
    "run agent ../../x:Y": Case("openadapt-evals", ("run", "--pool", POOL, "--agent",
                                                    "../../x:Y", "--tasks", TASK,
                                                    "--results-dir", "{res}")),
    "audit-verifier benchmark ../../x:Y": Case("openadapt-evals", ("audit-verifier",
                                                                   "--benchmark", "../../x:Y")),
    # --- sweep
    "sweep name of an existing pool": _sweep("--name", POOL),
    "sweep name with ../": _sweep("--name", "../x"),
    "sweep name upper case": _sweep("--name", "Bad_Name"),
    "sweep unknown task": Case("openadapt-evals", ("sweep", "--cloud", "local", "--agent",
                                                   "oracle", "--tasks", "no-such-task",
                                                   "--results-dir", "{res}")),
    "sweep workers zero": _sweep("--workers", "0"),
    "sweep fault latency nan": _sweep("--fault", "latency=nan"),
    "sweep fault not key=value": _sweep("--fault", "latency"),
    "sweep fault unknown": _sweep("--fault", "explode=1"),
    "sweep price nan": _sweep("--price-per-hour", "nan"),
    "sweep max-cost nan": _sweep("--max-cost-usd", "nan"),
    "sweep unknown cloud": _sweep("--cloud", "mars"),
    "sweep resume of a missing run": _sweep("--run-name", "never", "--resume"),
    # --- other openadapt-evals commands
    "view missing run": Case("openadapt-evals", ("view", "--run-name", "never",
                                                 "--results-dir", "{res}")),
    "view run-name ../": Case("openadapt-evals", ("view", "--run-name", "../../etc",
                                                  "--results-dir", "{res}")),
    "view run name of 300 characters": Case("openadapt-evals", ("view", "r" * 300,
                                                            "--results-dir", "{res}")),
    "view --out an existing file": Case(
        "openadapt-evals", ("view", DONE, "--results-dir", "{res}", "--out",
                            "{scratch}/notes.html"), prepare=existing_page_target),
    "view --out the run's own metadata": Case(
        "openadapt-evals", ("view", DONE, "--results-dir", "{res}", "--out",
                            "{res}/" + DONE + "/metadata.json")),
    "view --out a device even with --force": Case(
        "openadapt-evals", ("view", DONE, "--results-dir", "{res}", "--out",
                            "{scratch}/device", "--force"), prepare=device_target),
    "view --out a missing folder": Case(
        "openadapt-evals", ("view", DONE, "--results-dir", "{res}", "--out",
                            "{scratch}/no/such/page.html")),
    "view --out under /proc": Case(
        "openadapt-evals", ("view", DONE, "--results-dir", "{res}", "--out", "/proc/x.html")),
    **{f"{command} {name} ({record} {key} of the wrong type)": Case(
        "openadapt-evals", (command, *(("intact", name) if command == "compare" else (name,)),
                            "--results-dir", "{res}/scratch",
                            *(("--out", "{scratch}/typed.html") if command == "view" else ())),
        prepare=wrong_typed_records)
       for name, (record, key, _) in _WRONG_TYPES.items() for command in ("view", "compare")},
    **{f"view a run whose {what} is a symlink out of the results folder": Case(
        "openadapt-evals", ("view", name, "--results-dir", "{res}/scratch", "--out",
                            "{scratch}/linked.html"), prepare=symlinked_runs)
       for what, name in (("folder", "linkrun"), ("task folder", "linktask"),
                          ("metadata.json", "linkmeta"))},
    "compare a run whose folder is a symlink": Case(
        "openadapt-evals", ("compare", "intact", "linkrun", "--results-dir", "{res}/scratch"),
        prepare=lambda w: (wrong_typed_records(w), symlinked_runs(w))),
    "compare missing run": Case("openadapt-evals", ("compare", DONE, "never",
                                                    "--results-dir", "{res}")),
    "compare a run with itself": Case("openadapt-evals", ("compare", DONE, DONE,
                                                          "--results-dir", "{res}")),
    "tasks missing source": Case("openadapt-evals", ("tasks", "--source", "/no/such/dir")),
    "tasks source is a file": Case("openadapt-evals", ("tasks", "--source", "{file}")),
    "tasks malformed task file": Case(
        "openadapt-evals", ("tasks", "--source", "{scratch}/badsrc", "--tasks", "t1"),
        prepare=bad_task_file),
    "mock tasks zero": Case("openadapt-evals", ("mock", "--tasks", "0",
                                                "--results-dir", "{res}")),
    # --- oa-vm
    "pool-cleanup name empty": _oavm("pool-cleanup", "--name", "", "-y"),
    "pool-cleanup name ../": _oavm("pool-cleanup", "--name", "../pools", "-y"),
    "pool-cleanup name ../../": _oavm("pool-cleanup", "--name", "../../outside", "-y"),
    "pool-cleanup unknown": _oavm("pool-cleanup", "--name", "nope", "-y"),
    "pool-cleanup name and expired": _oavm("pool-cleanup", "--name", POOL, "--expired", "-y"),
    "pool-pause while a run holds the pool": _oavm("pool-pause", "--name", POOL, held=True),
    "pool-cleanup while a run holds the pool": _oavm("pool-cleanup", "--name", POOL, "-y",
                                                     held=True),
    "pool-pause keep-days nan": _oavm("pool-pause", "--name", POOL, "--keep-days", "nan"),
    "pool-pause keep-days zero": _oavm("pool-pause", "--name", POOL, "--keep-days", "0"),
    "pool-status name ../": _oavm("pool-status", "--name", "../x"),
    "pool-status name empty": _oavm("pool-status", "--name", ""),
    "pool-wait name empty": _oavm("pool-wait", "--name", ""),
    "pool-wait bad timeout": _oavm("pool-wait", "--name", POOL, "--timeout", "soon"),
    "pool-create ttl inf": _oavm("pool-create", "--cloud", "local", "--name", "t1",
                                 "--ttl-hours", "inf", "-y"),
    "pool-create ttl nan": _oavm("pool-create", "--cloud", "local", "--name", "t1",
                                 "--ttl-hours", "nan", "-y"),
    "pool-create ttl zero": _oavm("pool-create", "--cloud", "local", "--name", "t1",
                                  "--ttl-hours", "0", "-y"),
    "pool-create fault latency nan": _oavm("pool-create", "--cloud", "local", "--name", "t1",
                                           "--fault", "latency=nan", "-y"),
    "pool-create fault error-rate 2": _oavm("pool-create", "--cloud", "local", "--name", "t1",
                                            "--fault", "error-rate=2", "-y"),
    "pool-create fault hang-after inf": _oavm("pool-create", "--cloud", "local", "--name",
                                              "t1", "--fault", "hang-after=inf", "-y"),
    "pool-create ssh port 99999": _oavm("pool-create", "--cloud", "local", "--name", "t1",
                                        "--ssh-via", "u@127.0.0.1:99999", "--ssh-key",
                                        "{file}", "-y"),
    "pool-create ssh port 0": _oavm("pool-create", "--cloud", "local", "--name", "t1",
                                    "--ssh-via", "u@127.0.0.1:0", "--ssh-key", "{file}", "-y"),
    "pool-create ssh no port": _oavm("pool-create", "--cloud", "local", "--name", "t1",
                                     "--ssh-via", "u@127.0.0.1", "--ssh-key", "{file}", "-y"),
    "pool-create cidr /33": _oavm("pool-create", "--cloud", "aws", "--name", "t1",
                                  "--allow-cidr", "1.2.3.4/33", "--plan"),
    "pool-create existing name": _oavm("pool-create", "--cloud", "local", "--name", POOL, "-y"),
    "pool-create name ../": _oavm("pool-create", "--cloud", "local", "--name", "../x", "-y"),
    "pool-create workers zero": _oavm("pool-create", "--cloud", "local", "--name", "t1",
                                      "--workers", "0", "-y"),
    "pool-create price negative": _oavm("pool-create", "--cloud", "local", "--name", "t1",
                                        "--price-per-hour", "-1", "-y"),
    "pool-create price nan": _oavm("pool-create", "--cloud", "local", "--name", "t1",
                                   "--price-per-hour", "nan", "-y"),
    "pool-create tasks-dir missing": _oavm("pool-create", "--cloud", "local", "--name", "t1",
                                           "--tasks-dir", "/no/such", "-y"),
    "pool-status pool.json workers not a list": _oavm(
        "pool-status", "--name", "typed", env={"OA_VM_HOME": "{scratch}/typedhome"},
        prepare=workers_not_a_list),
    "pool-extend pool.json pid -5": _oavm(
        "pool-extend", "--name", "negpid", "--by", "1h",
        env={"OA_VM_HOME": "{scratch}/typedhome"}, prepare=negative_pid),
    "pool-list OA_VM_HOME is a file": _oavm("pool-list", env={"OA_VM_HOME": "{file}"}),
    "pool-create OA_VM_HOME is a file": _oavm("pool-create", "--cloud", "local", "--name", "t1",
                                              "-y", env={"OA_VM_HOME": "{file}"}),
    # --- openadapt-eval-flow
    "flow fallback-rate nan": _flow("--mode", "hybrid", "--fallback-rate", "nan"),
    "flow fallback-rate 2": _flow("--mode", "hybrid", "--fallback-rate", "2"),
    "flow vm-hourly negative": _flow("--vm-hourly", "-1"),
    "flow vm-hourly nan": _flow("--vm-hourly", "nan"),
    "flow tasks zero": _flow("--tasks", "0"),
    "flow workers zero": _flow("--workers", "0"),
    "flow unknown mode": _flow("--mode", "magic"),
    "flow live without pool": _flow("--live", "--task-ids", TASK, "--bundles", "{res}"),
    "flow max-cost nan": _flow("--live", "--pool", POOL, "--task-ids", TASK, "--bundles",
                               "{res}", "--max-cost-usd", "nan", "--results-dir", "{res}"),
    "flow task-ids @FIFO": _flow("--task-ids", "@{scratch}/fifo", prepare=input_files),
    "flow task-ids @device": _flow("--task-ids", "@{scratch}/node", prepare=input_files),
    "flow task-ids @passwd-like file": _flow("--task-ids", "@{scratch}/passwd.txt",
                                             prepare=input_files),
    "flow task-ids over the size bound": _flow("--task-ids", "@{scratch}/huge.txt",
                                               prepare=input_files),
    "flow run-name ../": _flow("--live", "--pool", POOL, "--task-ids", TASK, "--bundles",
                               "{res}", "--run-name", "../x", "--results-dir", "{res}"),
}


def _fill(text: str, world: World) -> str:
    return (text.replace("{res}", str(world.results)).replace("{file}", str(world.afile))
            .replace("{home}", str(world.home)).replace("{scratch}",
                                                        str(world.results / "scratch")))


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_one_line_nonzero_and_loses_nothing(world: World, name: str) -> None:
    case = CASES[name]
    if case.prepare is not None:
        case.prepare(world)
    with _lease_held(world, case.held):
        before = snapshot(world)
        result = run_cli(
            case.script, *(_fill(a, world) for a in case.args), home=world.home,
            env={k: _fill(v, world) for k, v in case.env.items()}, timeout=120,
        )
    line = result.assert_one_line_error()
    assert "unexpected error" not in line, line
    assert len(line) < 1000, f"not one clear line: {len(line)} characters"
    if case.held:  # refused because of the holder, and naming it, not for another reason
        assert "in use by run 'holder'" in line and "--force" in line, line
    assert "secret" not in result.stderr + result.stdout
    assert snapshot(world) == before
    assert api.pool_status(POOL).state.value == "ready"


def test_the_suite_has_at_least_sixty_cases() -> None:
    assert len(CASES) >= 60
    assert {c.script for c in CASES.values()} == {"oa-vm", "openadapt-evals",
                                                  "openadapt-eval-flow"}


def test_reliability_md_counts_the_cases_the_suite_runs() -> None:
    """docs/reliability.md's table of this suite: its rows add up to its total, which is the
    number of cases here (a case added or removed without the table fails)."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "reliability.md").read_text(
        encoding="utf-8")
    section = doc.split("## The abuse suite", 1)[1].split("\n## ", 1)[0]
    rows = [int(n) for n in re.findall(r"^\| `[^|]+` \| [^|]+ \| (\d+) \|", section, re.M)]
    total = re.search(r"\*\*total\*\* \| \| \*\*(\d+)\*\*", section)
    said = re.search(r"runs (\d+) bad inputs", section)
    assert total is not None and said is not None
    assert sum(rows) == int(total.group(1)) == int(said.group(1)) == len(CASES), (
        sum(rows), total.group(1), said.group(1), len(CASES))


_PAUSED = "napping"

# every command that needs the pool's workers running (oa_vm.model.state.refuse_paused)
_NEEDS_WORKERS: dict[str, tuple[str, ...]] = {
    "pool-wait": ("oa-vm", "pool-wait", "--name", _PAUSED, "--timeout", "2m"),
    "pool-tunnel": ("oa-vm", "pool-tunnel", "--name", _PAUSED),
    "pool-repair": ("oa-vm", "pool-repair", "--name", _PAUSED, "--no-wait"),
    "run": ("openadapt-evals", "run", "--pool", _PAUSED, "--agent", "oracle", "--tasks", TASK,
            "--results-dir", "{res}"),
    "run --wait-ready": ("openadapt-evals", "run", "--pool", _PAUSED, "--agent", "oracle",
                         "--tasks", TASK, "--results-dir", "{res}", "--wait-ready", "2m"),
    "tasks --pool": ("openadapt-evals", "tasks", "--pool", _PAUSED),
    "audit-verifier --pool": ("openadapt-evals", "audit-verifier", "--pool", _PAUSED,
                              "--tasks", TASK),
    "study ui-change --pool": ("openadapt-evals", "study", "ui-change", "--pool", _PAUSED,
                               "--runs", "1"),
    "flow --live": ("openadapt-eval-flow", "--live", "--pool", _PAUSED, "--task-ids", TASK,
                    "--bundles", "{res}", "--results-dir", "{res}"),
}


def test_a_paused_pool_is_refused_by_every_command_that_needs_its_workers(
    home: Path, tmp_path: Path
) -> None:
    """Each command says the pool is paused and names pool-resume, and the pool stays paused:
    ``pool-wait`` (and a run's ``--wait-ready``) took the stopped workers for lost and wrote so
    into the record, which left a pool ``pool-resume`` refused as "not paused", and a run,
    ``tasks`` and the flow told the user to run that ``pool-wait``; ``pool-tunnel`` printed
    ``WAA None`` and exited 0."""
    results = tmp_path / "results"
    results.mkdir()
    created = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "2", "--name",
                      _PAUSED, "-y", home=home)
    assert created.returncode == 0, created.stderr
    api.wait_pool(_PAUSED, timeout_s=READY_S)
    paused = run_cli("oa-vm", "pool-pause", "--name", _PAUSED, home=home)
    assert paused.returncode == 0, paused.stderr
    record = home / "pools" / _PAUSED / "pool.json"
    before = record.read_bytes()
    for what, (script, *args) in _NEEDS_WORKERS.items():
        result = run_cli(script, *(a.replace("{res}", str(results)) for a in args), home=home)
        assert result.returncode != 0, (what, result.stdout)
        assert "Traceback" not in result.stderr, (what, result.stderr)
        last = result.stderr.strip().splitlines()[-1]
        assert f"pool '{_PAUSED}' is paused" in last, (what, result.stderr)
        assert f"oa-vm pool-resume --pool {_PAUSED}" in last, (what, last)
        assert record.read_bytes() == before, f"{what} changed the paused pool's record"
    assert list(results.iterdir()) == []
    resumed = run_cli("oa-vm", "pool-resume", "--name", _PAUSED, "--timeout", "5m", home=home)
    assert resumed.returncode == 0, resumed.stderr
    assert api.pool_status(_PAUSED).state.value == "ready"
