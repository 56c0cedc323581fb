"""The tests' rule for signalling a process group they started (``tests.support.procs``, and
the same rule in the systemctl stand-in): a group is signalled while its number is still its
own, never once the number runs another process. A stale number can end another test's local
worker with SIGTERM (PIDs wrap within minutes in this suite; a worker leads its own group): the
likely cause of live workers found gone in one CI run."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import procs
from tests.support.host_standins import standin_env, write_standins
from tests.support.waiting import alive, wait_gone

UNIT = "oa-vm-bootstrap.service"


@pytest.fixture
def group_leader() -> Iterator[subprocess.Popen[bytes]]:
    """A process leading its own group, as a local worker does."""
    proc = subprocess.Popen(["sleep", "120"], start_new_session=True)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=60)


def _write(pid_file: Path, pid: int, start: str) -> None:
    pid_file.write_text(f"{pid}\n", encoding="ascii")
    procs.start_file(pid_file).write_text(f"{start}\n", encoding="ascii")


def test_a_number_that_runs_another_process_now_is_not_signalled(
    group_leader: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    pid_file = tmp_path / "unit.pid"
    _write(pid_file, group_leader.pid, "1")  # a group that started at tick 1 and has ended
    procs.signal_group(pid_file, signal.SIGTERM)
    assert group_leader.poll() is None and alive(group_leader.pid)
    procs.record_group(group_leader.pid, pid_file)  # the group itself: signalled
    procs.signal_group(pid_file, signal.SIGTERM)
    group_leader.wait(timeout=60)
    wait_gone(group_leader.pid)


def test_the_systemctl_stand_in_stops_only_the_units_own_group(
    group_leader: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    bin_dir = write_standins(tmp_path / "bin", only=("systemctl",))
    state = tmp_path / "state"
    env = standin_env(bin_dir, state)
    _write(state / f"{UNIT}.pid", group_leader.pid, "1")
    subprocess.run(["systemctl", "stop", UNIT], env=env, check=True, timeout=60)
    assert group_leader.poll() is None and alive(group_leader.pid)
    _write(state / f"{UNIT}.pid", group_leader.pid, procs.started(group_leader.pid) or "")
    subprocess.run(["systemctl", "stop", UNIT], env=env, check=True, timeout=60)
    group_leader.wait(timeout=60)
