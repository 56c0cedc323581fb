"""A process is told by its PID and its start (``oa_vm.kit.process_start``) wherever oa-vm asks
whether a process is still the one it recorded: a local pool's worker (the provider's check and
``pool-status``'s ``/proc`` fast path) and a run's lease holder.

Linux gives a process's wall-clock start as its ticks since boot plus a boot time worked out
from the current clock: when the clock is stepped, every start read afterwards is off by the
step. A record with a start mark (the boot's ID and the ticks) is compared by it, and no step
moves it: a step of several seconds once took every live local worker of a machine for lost.
A record without one is compared by the wall-clock start, within a second's rollover."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from oa_vm.clouds.local import proc_check
from oa_vm.clouds.local.provider import LocalProvider
from oa_vm.kit import process_start
from oa_vm.model import lease
from oa_vm.model.state import WorkerRecord, WorkerState
from tests.support.waiting import wait_until

ROLLOVER_S = 1.0
"""What a boot time read across a second's boundary moves every start by."""


@pytest.fixture
def worker_process(tmp_path: Path) -> Iterator[psutil.Process]:
    """A live process with a local worker's command line (``infra.local`` and its folder)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)",
                             "infra.local", str(tmp_path)])
    try:
        process = psutil.Process(proc.pid)
        # until it has exec'd, the child shows this test's own command line
        wait_until(lambda: "infra.local" in process.cmdline(), "the child's command line")
        yield process
    finally:
        proc.kill()
        proc.wait(timeout=60)


def _worker(proc: psutil.Process, tmp_path: Path, shift: float,
            mark: str | None = None) -> WorkerRecord:
    return WorkerRecord(name="worker-0", state=WorkerState.READY, pid=proc.pid,
                        pid_create_time=proc.create_time() + shift, pid_start_mark=mark,
                        workdir=str(tmp_path), waa_url="http://127.0.0.1:9/x",
                        scoring_url="http://127.0.0.1:9/y")


def _checks(proc: psutil.Process, tmp_path: Path, shift: float,
            mark: str | None = None) -> dict[str, bool]:
    worker = _worker(proc, tmp_path, shift, mark)
    held: dict[str, object] = {"host": lease.host_id(), "pid": proc.pid,
                               "pid_start": proc.create_time() + shift}
    if mark is not None:
        held["start_mark"] = mark
    boot = proc_check._boot_time()
    assert boot is not None
    return {"provider": LocalProvider.is_ours(worker),
            "/proc fast path": proc_check._process_is(worker, boot, process_start.boot_id()),
            "lease holder": lease.holder_alive(held)}


@pytest.mark.parametrize("shift", [-3600.0, -30.0, 30.0, 3600.0])
def test_a_clock_step_of_any_size_leaves_a_marked_start_the_same_process(
    shift: float, worker_process: psutil.Process, tmp_path: Path
) -> None:
    mark = process_start.start_mark(worker_process.pid)
    assert mark is not None and mark.startswith(process_start.boot_id() + "/")
    assert _checks(worker_process, tmp_path, shift, mark) == dict.fromkeys(
        ("provider", "/proc fast path", "lease holder"), True)


def test_another_start_mark_is_another_process_whatever_the_time_says(
    worker_process: psutil.Process, tmp_path: Path
) -> None:
    mark = process_start.start_mark(worker_process.pid)
    assert mark is not None
    boot, ticks = mark.rsplit("/", 1)
    for other in (f"{boot}/{int(ticks) + 1}", f"another-boot/{ticks}"):
        assert _checks(worker_process, tmp_path, 0.0, other) == dict.fromkeys(
            ("provider", "/proc fast path", "lease holder"), False), other


@pytest.mark.parametrize("shift", [-ROLLOVER_S, ROLLOVER_S, 0.0])
def test_a_start_read_across_the_boot_times_second_is_the_same_process(
    shift: float, worker_process: psutil.Process, tmp_path: Path
) -> None:
    assert _checks(worker_process, tmp_path, shift) == dict.fromkeys(
        ("provider", "/proc fast path", "lease holder"), True)


@pytest.mark.parametrize("shift", [-30.0, 30.0])
def test_a_start_far_from_the_recorded_one_is_another_process(
    shift: float, worker_process: psutil.Process, tmp_path: Path
) -> None:
    assert _checks(worker_process, tmp_path, shift) == dict.fromkeys(
        ("provider", "/proc fast path", "lease holder"), False)


def test_a_lost_workers_phase_says_which_way_it_was_lost(
    worker_process: psutil.Process, tmp_path: Path
) -> None:
    from oa_vm.clouds.local.provider import _not_ours

    assert _not_ours(_worker(worker_process, tmp_path, 0.0)) is None
    assert _not_ours(_worker(worker_process, tmp_path, 30.0)) == (
        "process gone (its PID runs another process now)")
    elsewhere = _worker(worker_process, tmp_path, 0.0)
    elsewhere.workdir = str(tmp_path / "another")
    assert _not_ours(elsewhere) == "process gone (its PID runs another command now)"
    ended = subprocess.Popen([sys.executable, "-c", "pass", "infra.local", str(tmp_path)])
    ended.wait(timeout=60)
    gone = WorkerRecord(name="worker-0", state=WorkerState.READY, pid=ended.pid,
                        pid_create_time=1.0, workdir=str(tmp_path))
    assert (_not_ours(gone) or "").startswith("process gone")
