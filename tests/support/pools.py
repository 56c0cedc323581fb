"""Local pools for tests: made ready in one call, removed with everything they started.

The fixtures of ``tests/conftest.py`` (``home``, ``local_pool``, ``pooled``) are built on these;
a test that needs a pool outside a fixture calls them directly.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.support.cli import run_cli

READY_S = 120.0
"""How long a local pool may take to become ready on a busy 2-core machine: every wait for a
pool's workers to be ready (``api.wait_pool``, and the ``--timeout`` of ``pool-wait``,
``pool-resume``, ``pool-repair``) is given this, unless the wait's own end is what is tested."""

READY_TIMEOUT = f"{READY_S:g}s"
""":data:`READY_S` as the CLI's ``--timeout`` takes it."""


def make_local_pool(name: str = "p", *, workers: int = 1, home: Path | None = None,
                    wait: bool = True, **options: Any) -> str:
    """Create the local pool ``name`` and wait until it is ready; returns its name.

    With ``home`` it is made by the real CLI (``pool-create``, ``pool-wait``), so its workers are
    not this process's children (a worker that is the test's child would stay a zombie once
    killed); otherwise through :mod:`oa_vm.api` in the home of ``OA_VM_HOME``. ``options`` are
    ``api.create_pool``'s keywords, or with ``home`` the CLI's options (``price_per_hour=3``
    becomes ``--price-per-hour 3``).
    """
    from oa_vm import api  # imported when first needed: every test process loads this module

    if home is None:
        api.create_pool(name=name, cloud="local", workers=workers, **options)
        if wait:
            api.wait_pool(name, timeout_s=READY_S)
        return name
    flags = [item for key, value in options.items()
             for item in (f"--{key.replace('_', '-')}", str(value))]
    steps = [("pool-create", "--cloud", "local", "--workers", str(workers), *flags, "-y")]
    if wait:
        steps.append(("pool-wait", "--timeout", READY_TIMEOUT))
    for args in steps:
        done = run_cli("oa-vm", *args, "--name", name, home=home)
        assert done.returncode == 0, done.stderr
    return name


def remove_pools(home: Path) -> None:
    """Remove every pool of ``home``, forced (a failed test may have left a process holding a
    pool's lease), stopped workers continued first so that they can exit. A pool that cannot be
    removed (a record the test corrupted on purpose) is left to :func:`leftover_processes`."""
    from oa_vm import api
    from oa_vm.errors import OaVmError
    from oa_vm.model import state

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OA_VM_HOME", str(home))
        for name in state.list_names():
            with contextlib.suppress(Exception):
                for worker in state.load(name).workers:
                    if worker.pid is not None:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(worker.pid, signal.SIGCONT)
            with contextlib.suppress(OaVmError):
                api.cleanup_pool(name, force=True)


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


def leftover_processes(home: Path) -> list[int]:
    """Kill the processes still running from ``home``; returns their IDs (none, if the code
    under test cleans up after itself)."""
    leftovers = processes_of(home)
    for proc in leftovers:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    return [proc.pid for proc in leftovers]


@contextlib.contextmanager
def pool_home(home: Path, pools: Mapping[str, Mapping[str, Any]]) -> Iterator[Path]:
    """``home`` (as ``OA_VM_HOME`` meanwhile) with ready local pools, removed afterwards:
    ``pools`` maps each pool's name to :func:`make_local_pool`'s options for it. As the
    ``home`` fixture, it fails if a process of ``home`` is left running once they are gone."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OA_VM_HOME", str(home))
        try:
            for name, options in pools.items():
                make_local_pool(name, **options)
            yield home
        finally:
            remove_pools(home)
    leftovers = leftover_processes(home)
    assert not leftovers, f"processes left running: {leftovers}"
