"""``openadapt-evals`` run as a real subprocess that a test can wait on, signal or kill, and the
polling helpers the drills use with it."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from oa_vm.model import state
from tests.support.cli import BIN
from tests.support.repair_gate import command as repair_gate_command
from tests.support.run_records import read_records
from tests.support.waiting import WAIT_LIMIT_S, wait_until


class Controller:
    """``openadapt-evals ARGS`` as a subprocess, its output in a log file under ``log_dir``;
    with ``repair_gate``, its pool repairs are held at that gate
    (:mod:`tests.support.repair_gate`)."""

    def __init__(self, home: Path, *args: str, log_dir: Path,
                 repair_gate: Path | None = None) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log = log_dir / f"controller-{time.monotonic_ns()}.log"
        argv, env = [str(BIN / "openadapt-evals"), *args], dict(os.environ)
        if repair_gate is not None:
            argv, env = repair_gate_command(repair_gate, "openadapt-evals", *args)
        env["OA_VM_HOME"] = str(home)
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(  # our own console script, fixed arguments
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
            )

    def output(self) -> str:
        """Everything the command printed so far."""
        return self.log.read_text(errors="replace")

    def wait(self, timeout: float = WAIT_LIMIT_S) -> int:
        """The exit code; a command still running after ``timeout`` is killed and fails the test."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            raise AssertionError(f"controller did not finish:\n{self.output()[-3000:]}") from None

    def kill(self) -> None:
        """SIGKILL, if it still runs."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


class RunController(Controller):
    """``openadapt-evals run ARGS --results-dir RESULTS`` (its log beside ``results``)."""

    def __init__(self, home: Path, results: Path, *args: str) -> None:
        results.mkdir(parents=True, exist_ok=True)
        super().__init__(home, "run", *args, "--results-dir", str(results),
                         log_dir=results.parent)


def wait_for_records(run_dir: Path, count: int, controller: Controller) -> None:
    """Wait until ``count`` tasks have a final record (fails if the controller ends first)."""

    def enough() -> bool:
        if len(read_records(run_dir)) >= count:
            return True
        if controller.proc.poll() is not None:
            raise AssertionError(f"controller ended early:\n{controller.output()[-3000:]}")
        return False

    wait_until(enough, lambda: f"{count} records:\n{controller.output()}")


def worker_pid(pool: str, name: str) -> int:
    """The PID recorded for a pool's worker."""
    pid = next(w.pid for w in state.load(pool).workers if w.name == name)
    assert pid is not None
    return pid
