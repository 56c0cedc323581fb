"""What every benchmark shares: the machine's description, an isolated oa-vm home, local pools
that are always removed, killing pool workers, and one-line errors for bad input."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

REPO_ROOT = Path(__file__).resolve().parent.parent
WAA_DATA = REPO_ROOT.parent / "shared" / "waa"


class BenchInputError(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def parser(prog: str, description: str) -> argparse.ArgumentParser:
    """An argument parser whose errors are one line and exit 2."""
    return _Parser(prog=prog, description=description)


def run_cli(main: Callable[[Sequence[str] | None], int], prog: str) -> NoReturn:
    """Run ``main`` and exit with its status; known errors become one line on stderr."""
    from oa_vm.errors import OaVmError

    try:
        code = main(None)
    except BenchInputError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        code = 2
    except OaVmError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        code = 1
    except KeyboardInterrupt:
        code = 130
    sys.exit(code)


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), or the platform's guess."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def machine_info() -> dict[str, Any]:
    """What the figures were measured on (they mean little without it)."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    return {
        "nproc": os.cpu_count(),
        "cpu_model": cpu_model(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "load_average_1m": round(load[0], 2),
    }


@contextlib.contextmanager
def isolated_home(keep: bool = False) -> Iterator[Path]:
    """A fresh ``OA_VM_HOME`` (and scratch folder) for the benchmark's own pools.

    The user's pools are never seen or touched; every pool created inside is removed on exit,
    even after an error, and the folder with it unless ``keep``.
    """
    from oa_vm import api
    from oa_vm.model import state

    scratch = Path(tempfile.mkdtemp(prefix="oa-vm-bench-"))
    before = os.environ.get("OA_VM_HOME")
    os.environ["OA_VM_HOME"] = str(scratch / "home")
    try:
        yield scratch
    finally:
        for name in state.list_names():
            with contextlib.suppress(Exception):  # cleanup must go on to the next pool
                api.cleanup_pool(name)
        if before is None:
            os.environ.pop("OA_VM_HOME", None)
        else:
            os.environ["OA_VM_HOME"] = before
        if not keep:
            import shutil

            shutil.rmtree(scratch, ignore_errors=True)


def create_local_pool(name: str, workers: int, **options: Any) -> None:
    """Create a local pool and wait until every worker answers."""
    from oa_vm import api

    api.create_pool(name=name, cloud="local", workers=workers, **options)
    api.wait_pool(name, timeout_s=180.0)


def remove_pool(name: str) -> None:
    """Remove a pool created by the benchmark (idempotent)."""
    from oa_vm import api

    with contextlib.suppress(Exception):
        api.cleanup_pool(name)


def kill_workers(pool: str, names: Sequence[str]) -> list[str]:
    """SIGKILL the processes of the named workers of ``pool`` (ones this benchmark started).

    Returns:
        The names of the workers whose process was killed.
    """
    from oa_vm.model import state

    killed = []
    for worker in state.load(pool).workers:
        if worker.name in names and worker.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker.pid, signal.SIGKILL)
                killed.append(worker.name)
    return killed


def emit(figures: dict[str, Any], as_json: bool, text: str) -> None:
    """Print the figures as one JSON object, or the human-readable text."""
    if as_json:
        print(json.dumps(figures, sort_keys=False))
    else:
        print(text)


def progress(message: str) -> None:
    """A progress line on stderr (stdout carries only the result)."""
    print(message, file=sys.stderr, flush=True)
