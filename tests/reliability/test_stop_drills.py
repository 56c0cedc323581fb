"""Stop drills: ``oa-vm pool-create`` and ``pool-wait`` of a local pool stopped by Ctrl-C or
SIGTERM, through the real CLI as a subprocess with real signals.

The stop must end the command in one line naming the pool and what to do next (exit 130, no
traceback) and leave no process that no record names: a create stopped while a worker starts
stops every worker it started, a wait stopped leaves the pool as it was. (``openadapt-evals
run`` and ``sweep`` stopped the same ways: ``test_fencing_regressions.py``,
``test_sweep_local.py``.)
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import psutil
import pytest

from oa_vm.model import state
from tests.support import start_gate
from tests.support.cli import BIN, run_cli
from tests.support.pools import make_local_pool, processes_of
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

STOPS = [signal.SIGINT, signal.SIGTERM]


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.mark.parametrize(("signum", "per_process"),
                         [(signal.SIGINT, 1), (signal.SIGTERM, 1), (signal.SIGINT, 2)],
                         ids=["SIGINT", "SIGTERM", "SIGINT-2-per-process"])
def test_pool_create_stopped_while_a_worker_starts_leaves_no_process_unrecorded(
    home: Path, tmp_path: Path, signum: signal.Signals, per_process: int
) -> None:
    # held with the first process recorded and the second just started, its PID not yet known
    # to the command: the stop lands exactly where it used to leave that process running for
    # good (one worker per process, or two)
    gate = tmp_path / "start-gate"
    argv, env = start_gate.command(gate, 2, "pool-create", "--cloud", "local", "--workers",
                                   str(2 * per_process + 1), "--per-process", str(per_process),
                                   "--name", "cut", "-y")
    env["OA_VM_HOME"] = str(home)
    create = subprocess.Popen(  # fixed argv, no shell
        argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )
    try:
        waiting = Path(f"{gate}.waiting")
        wait_until(waiting.exists, "the second process to start")
        started = int(waiting.read_text())
        create.send_signal(signum)
        gate.touch()
        _, stderr = create.communicate(timeout=120)
    finally:
        if create.poll() is None:
            create.kill()
            create.wait(timeout=10)
    assert create.returncode == 130, stderr
    line = _one_error_line(stderr)
    assert line.startswith("oa-vm: error: interrupted; pool 'cut' was not created whole"), line
    assert "oa-vm pool-cleanup --pool cut" in line, line
    # every process it started was stopped, the second too
    wait_until(lambda: _gone(started), "the second process to end")
    assert not processes_of(home)
    removed = run_cli("oa-vm", "pool-cleanup", "--pool", "cut", "-y", home=home)
    assert removed.returncode == 0, removed.stderr
    assert not state.exists("cut")


@pytest.mark.parametrize("signum", STOPS, ids=lambda s: s.name)
def test_pool_wait_stopped_says_how_to_wait_again_and_leaves_the_pool_as_it_was(
    home: Path, tmp_path: Path, signum: signal.Signals
) -> None:
    make_local_pool("slow", workers=1, home=home, wait=False)
    pid = state.load("slow").workers[0].pid
    assert pid is not None
    shown = tmp_path / "pool-wait.out"
    # a worker that never answers keeps pool-wait waiting until it is stopped
    psutil.Process(pid).suspend()
    try:
        with shown.open("w") as out:
            wait = subprocess.Popen(  # fixed argv, no shell
                [str(BIN / "oa-vm"), "pool-wait", "--pool", "slow", "--timeout", "10m"],
                env={**os.environ, "OA_VM_HOME": str(home)}, stdin=subprocess.DEVNULL,
                stdout=out, stderr=subprocess.PIPE, text=True,
            )
        try:
            # its first line about the worker: the wait has begun
            wait_until(lambda: "worker-0" in shown.read_text(), "pool-wait's first line")
            wait.send_signal(signum)
            _, stderr = wait.communicate(timeout=120)
        finally:
            if wait.poll() is None:
                wait.kill()
                wait.wait(timeout=10)
    finally:
        psutil.Process(pid).resume()
    assert wait.returncode == 130, stderr
    line = _one_error_line(stderr)
    assert line.startswith("oa-vm: error: interrupted; pool 'slow' is left as it is"), line
    assert "oa-vm pool-wait --pool slow" in line and "oa-vm pool-cleanup --pool slow" in line
    # its worker still runs, named by the pool's record: pool-cleanup (the home fixture's) ends it
    assert psutil.Process(pid).is_running()
    assert [w.pid for w in state.load("slow").workers] == [pid]
