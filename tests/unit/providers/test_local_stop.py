"""Stopping local worker processes: all signalled at once, a zombie counted as stopped.

A pool's workers are started by one command and stopped by another, so they are not the
stopping process's children: when one exits, it stays a zombie until its own parent reaps it.
The stop must not wait for that reaping (it waited its grace, then "killed" a dead process).
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator

import psutil
import pytest

from oa_vm.clouds.local import provider

SLEEPER = "import time; time.sleep(600)"
DEAF = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ok', flush=True); time.sleep(600)")


@pytest.fixture
def unreaped() -> Iterator[psutil.Process]:
    """A sleeping process whose parent never reaps it (so it is not our child either)."""
    parent = subprocess.Popen(
        [sys.executable, "-c",
         "import subprocess, sys, time\n"
         f"p = subprocess.Popen([sys.executable, '-c', {SLEEPER!r}])\n"
         "print(p.pid, flush=True)\n"
         "time.sleep(600)\n"],
        stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = psutil.Process(int(parent.stdout.readline()))
    yield child
    parent.kill()
    parent.wait(timeout=60)


def test_a_worker_left_a_zombie_by_its_parent_counts_as_stopped_by_sigterm(
        unreaped: psutil.Process) -> None:
    assert provider._end_all([unreaped]) == set()
    assert unreaped.status() == psutil.STATUS_ZOMBIE  # its parent has not reaped it


def test_every_process_is_signalled_and_only_a_deaf_one_is_killed() -> None:
    deaf = subprocess.Popen([sys.executable, "-c", DEAF], stdout=subprocess.PIPE, text=True)
    assert deaf.stdout is not None and deaf.stdout.readline().strip() == "ok"
    polite = subprocess.Popen([sys.executable, "-c", SLEEPER])
    procs = [psutil.Process(deaf.pid), psutil.Process(polite.pid)]
    assert provider._end_all(procs) == {deaf.pid}
    assert deaf.wait(timeout=60) == -signal.SIGKILL
    assert polite.wait(timeout=60) == -signal.SIGTERM
