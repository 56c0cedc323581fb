"""Files the project makes: explicit modes whatever the umask, never through a symlink, never
into a folder another user owns, no lost update of ``pool.json``, a full disk named in one line.

Every command runs as the real console script in a subprocess (the umask is set in the child).
"""

from __future__ import annotations

import json
import os
import pwd
import stat
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from oa_vm.model import state
from oa_vm.model.state import PoolRecord, PoolState
from tests.support.cli import BIN, Result, run_cli
from tests.support.pools import READY_TIMEOUT

TASK = "c499b229-110c-5fc8-9895-f2f879ac1512-WOS"


def masked(*argv: str, home: Path, timeout: float = 300) -> Result:
    """Run ``argv`` (a console script and its arguments) under ``umask 000``."""
    proc = subprocess.run(  # our own console scripts, fixed arguments
        [str(BIN / argv[0]), *argv[1:]], capture_output=True, text=True, timeout=timeout,
        check=False, stdin=subprocess.DEVNULL, env={**os.environ, "OA_VM_HOME": str(home)},
        preexec_fn=lambda: os.umask(0),
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def loose(root: Path, skip: tuple[str, ...] = ()) -> list[str]:
    """Every folder not 0700 and file not 0600 under ``root`` (``root`` included)."""
    found = []
    for path in [root, *root.rglob("*")]:
        rel = path.relative_to(root)
        if any(part in skip for part in rel.parts):
            continue
        mode = stat.S_IMODE(path.lstat().st_mode)
        want = 0o700 if path.is_dir() else 0o600
        if mode != want:
            found.append(f"{rel or '.'} {oct(mode)}")
    return found


def test_under_umask_000_home_pools_runs_and_keys_are_private(tmp_path: Path) -> None:
    home, results = tmp_path / "home", tmp_path / "results"
    created = masked("oa-vm", "pool-create", "--cloud", "local", "--name", "masked",
                     "--workers", "1", "-y", home=home)
    assert created.returncode == 0, created.stderr
    try:
        assert masked("oa-vm", "pool-wait", "--name", "masked", "--timeout", READY_TIMEOUT,
                      home=home).returncode == 0
        ran = masked("openadapt-evals", "run", "--pool", "masked", "--agent", "oracle",
                     "--tasks", TASK, "--run-name", "r", "--results-dir", str(results),
                     home=home)
        assert ran.returncode == 0, ran.stderr
        # the commands that take the pool's fleet lock (it was made 0666 under umask 000)
        for command in (("pool-extend", "--by", "1h"), ("pool-repair",)):
            done = masked("oa-vm", command[0], "--name", "masked", *command[1:], home=home)
            assert done.returncode == 0, done.stderr
        assert (home / "pools" / "masked" / "fleet.lock").is_file()
        # the pool's key, made as a cloud pool makes it, in a process of its own
        key = subprocess.run(  # fixed argv, no shell
            [sys.executable, "-c",
             "from oa_vm.model import sshkeys; sshkeys.ensure_pool_key('keyed')"],
            capture_output=True, text=True, timeout=120, check=False,
            env={**os.environ, "OA_VM_HOME": str(home)}, preexec_fn=lambda: os.umask(0),
        )
        assert key.returncode == 0, key.stderr
        # a worker's own drive is the simulated Windows desktop's, written by the worker
        assert loose(home, skip=("workers",)) == []
        assert loose(results) == []
        assert stat.S_IMODE((home / "pools" / "keyed" / "id_ed25519").stat().st_mode) == 0o600
        assert (results / "r" / "queue.sqlite").is_file()
    finally:
        cleaned = run_cli("oa-vm", "pool-cleanup", "--name", "masked", "--force", "-y", home=home)
        assert cleaned.returncode == 0, cleaned.stderr


def test_a_refused_repair_makes_no_file(home: Path, pool: str) -> None:
    folder = home / "pools" / pool
    before = sorted(p.name for p in folder.iterdir())
    for worker in (("--worker", "nope"), ("--worker", "worker-0", "--worker", "worker-0")):
        refused = run_cli("oa-vm", "pool-repair", "--name", pool, *worker, home=home)
        assert "--worker" in refused.assert_one_line_error() or "nope" in refused.stderr
    assert sorted(p.name for p in folder.iterdir()) == before


def _save(home: Path, name: str) -> Path:
    env = os.environ.get("OA_VM_HOME")
    os.environ["OA_VM_HOME"] = str(home)
    try:
        now = state.utcnow()
        return state.save(PoolRecord(name=name, cloud="local", state=PoolState.FAILED,
                                     created_at=now, expires_at=now + timedelta(days=1)))
    finally:
        if env is None:
            del os.environ["OA_VM_HOME"]
        else:
            os.environ["OA_VM_HOME"] = env


def test_a_symlink_planted_as_pool_json_is_refused_and_its_target_untouched(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    record = _save(home, "sym")
    victim = tmp_path / "victim.json"
    victim.write_text(record.read_text())
    before = victim.read_text()
    record.unlink()
    record.symlink_to(victim)
    line = run_cli("oa-vm", "pool-extend", "--name", "sym", "--by", "1h",
                   home=home).assert_one_line_error()
    assert str(record) in line and "symlink" in line
    assert victim.read_text() == before
    assert record.is_symlink()


def test_a_symlink_planted_in_a_run_folder_is_refused(tmp_path: Path, pooled: Path) -> None:
    home, results = pooled, tmp_path / "results"
    args = ("run", "--pool", "p", "--agent", "oracle", "--tasks", TASK, "--run-name", "r",
            "--results-dir", str(results))
    assert run_cli("openadapt-evals", *args, home=home).returncode == 0
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    lock = results / "r" / ".lock"
    lock.unlink()
    lock.symlink_to(victim)  # the run's lock is truncated and rewritten by each controller
    line = run_cli("openadapt-evals", *args, "--resume", home=home).assert_one_line_error()
    assert str(lock) in line and "symlink" in line, line
    assert victim.read_text() == "precious\n"


def test_a_symlinked_lock_in_a_run_folder_is_refused(tmp_path: Path) -> None:
    from evals.results.records import RunFolder
    from oa_vm.kit.safe_fs import UnsafePathError

    (tmp_path / "r").mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / "r" / ".lock").symlink_to(victim)
    with pytest.raises(UnsafePathError, match="symlink"):
        os.close(RunFolder(tmp_path / "r").open_private(".lock", append=False))
    assert victim.read_text() == "precious\n"


def _give_to_nobody(path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    nobody = pwd.getpwnam("nobody")
    os.chown(path, nobody.pw_uid, nobody.pw_gid)


def test_a_pool_folder_squatted_by_another_user_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    squat = home / "pools" / "squat"
    squat.mkdir(parents=True)
    _give_to_nobody(squat)
    line = run_cli("oa-vm", "pool-create", "--cloud", "local", "--name", "squat",
                   "--workers", "1", "-y", home=home).assert_one_line_error()
    assert str(squat) in line and "nobody" in line
    assert list(squat.iterdir()) == []


def test_a_results_folder_owned_by_another_user_is_refused(
    tmp_path: Path, pooled: Path
) -> None:
    home, results = pooled, tmp_path / "results"
    results.mkdir()
    _give_to_nobody(results)
    line = run_cli("openadapt-evals", "run", "--pool", "p", "--agent", "oracle", "--tasks",
                   TASK, "--run-name", "r", "--results-dir", str(results),
                   home=home).assert_one_line_error()
    assert str(results) in line and "nobody" in line
    assert list(results.iterdir()) == []


def test_eight_parallel_pool_extends_move_the_expiry_by_exactly_eight_hours(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    record = _save(home, "ext")
    start = datetime.fromisoformat(json.loads(record.read_text())["expires_at"])
    env = {**os.environ, "OA_VM_HOME": str(home)}
    procs = [
        subprocess.Popen(  # our own console script, fixed arguments
            [str(BIN / "oa-vm"), "pool-extend", "--name", "ext", "--by", "1h"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
        )
        for _ in range(8)
    ]
    for proc in procs:
        _out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    end = datetime.fromisoformat(json.loads(record.read_text())["expires_at"])
    assert (end - start).total_seconds() == 8 * 3600
