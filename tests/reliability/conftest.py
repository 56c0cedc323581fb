"""Shared fixtures of the reliability suites: a home whose pools and processes are gone after
each test, and controllers run as real subprocesses."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from oa_vm import api
from oa_vm.model import state
from tests.support.controller import WAIT_LIMIT_S


def processes_of(home: Path) -> list[psutil.Process]:
    """Live (non-zombie) processes whose command line names a path inside ``home``."""
    found = []
    marker = str(home)
    for proc in psutil.process_iter(["cmdline", "status"]):
        with contextlib.suppress(psutil.Error):
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if any(marker in part for part in proc.info["cmdline"] or []):
                found.append(proc)
    return found


def wait_until(condition: object, what: str, limit: float = WAIT_LIMIT_S) -> None:
    """Poll ``condition()`` until true; fail naming ``what`` after ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An oa-vm home; afterwards its pools are removed and no process of it may be left."""
    home = tmp_path / "home"
    monkeypatch.setenv("OA_VM_HOME", str(home))
    yield home
    for name in state.list_names():
        with contextlib.suppress(Exception):
            for worker in state.load(name).workers:
                if worker.pid is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(worker.pid, signal.SIGCONT)
            api.cleanup_pool(name)
    leftovers = processes_of(home)
    for proc in leftovers:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    assert not leftovers, f"processes left running: {[p.pid for p in leftovers]}"


@pytest.fixture(scope="module")
def pooled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A home with one ready local pool, ``p``."""
    home = tmp_path_factory.mktemp("files") / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OA_VM_HOME", str(home))
        api.create_pool(name="p", cloud="local", workers=1)
        try:
            api.wait_pool("p", timeout_s=120)
            yield home
        finally:
            api.cleanup_pool("p", force=True)
