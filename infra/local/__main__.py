"""``python -m infra.local``: run simulated WAA workers until SIGTERM or SIGINT, or until their
``--root`` folder is removed (within about a second).

Binds every server first, then writes the ready file atomically, so whoever waits for the file
can connect at once. Bad command-line input prints one line and exits 2.

The secret every request path must start with is read from ``--secret-file`` (a 0600 file: it
never appears on the command line, where ``ps`` would show it), or made at random; either way
the ready file (0600) lists each worker's URLs with it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import math
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

from infra.local.access import (
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_READ_TIMEOUT,
    Limits,
    SecretError,
    new_secret,
    read_secret_file,
)
from infra.local.faults import FaultError, parse_fault_args
from infra.local.taskstore import TaskStore, TaskStoreError
from infra.local.worker import RunningWorker, start_worker

PROG = "python -m infra.local"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{PROG}: error: {message} (see --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Run simulated Windows Agent Arena workers.")
    parser.add_argument("--name", required=True, help="worker name (NAME-0.. with --count)")
    parser.add_argument("--root", required=True, type=Path, help="working folder")
    parser.add_argument("--ready-file", required=True, type=Path, help="JSON written when ready")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind")
    parser.add_argument("--waa-port", type=int, default=0, help="WAA server port (0: free)")
    parser.add_argument("--scoring-port", type=int, default=0, help="scoring port (0: free)")
    parser.add_argument("--tasks", type=Path, default=None, help="task folder (default: bundled)")
    parser.add_argument(
        "--fault", action="append", default=[], metavar="KEY=VALUE", help="fault knob, repeatable"
    )
    parser.add_argument("--count", type=int, default=1, help="workers in this process")
    parser.add_argument(
        "--secret-file", type=Path, default=None,
        help="0600 file holding the secret path prefix of every URL (default: a random one)",
    )
    parser.add_argument(
        "--no-auth", action="store_true",
        help="no secret prefix: only to stand in for a guest that WAA's code calls at "
        "http://VM_IP:5000 (never for a pool)",
    )
    parser.add_argument(
        "--max-body-mb", type=float, default=DEFAULT_MAX_BODY / 2**20,
        help="largest request body, in MiB (413 above; default %(default)g)",
    )
    parser.add_argument(
        "--max-connections", type=int, default=DEFAULT_MAX_CONNECTIONS,
        help="connections served at once per worker, counted once their request line shows "
             "the secret (503 above; default %(default)d)",
    )
    parser.add_argument(
        "--read-timeout", type=float, default=DEFAULT_READ_TIMEOUT,
        help="seconds a request may take to arrive whole, line, headers and body together, "
             "before its connection is closed (default %(default)g)",
    )
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING"])
    return parser


def write_ready_file(path: Path, workers: Sequence[RunningWorker], started_at: dt.datetime) -> None:
    """Write ``{"pid", "started_at", "workers": [...]}`` atomically (temp file, fsync, rename)."""
    data: dict[str, Any] = {
        "pid": os.getpid(),
        "started_at": started_at.isoformat(),
        "workers": [w.describe() for w in workers],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    # mkstemp makes the file 0600: it lists URLs that carry the workers' secret.
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _identity(folder: Path | int) -> tuple[int, int] | None:
    """The device and inode of a folder, by path or open descriptor (``None``: no such path)."""
    try:
        found = os.stat(folder)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _port(base: int, index: int) -> int:
    return base + index if base else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the workers; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        faults = parse_fault_args(args.fault)
        if args.count < 1:
            raise ValueError("--count must be at least 1")
        for port in (args.waa_port, args.scoring_port):
            if not 0 <= port <= 65535 - args.count:
                raise ValueError(f"port {port} is out of range")
        if not math.isfinite(args.max_body_mb):
            raise ValueError("--max-body-mb must be a number of MiB")
        limits = Limits(max_body=int(args.max_body_mb * 2**20),
                        max_connections=args.max_connections, read_timeout=args.read_timeout)
        if args.no_auth and args.secret_file is not None:
            raise ValueError("give --secret-file or --no-auth, not both")
        secret = read_secret_file(args.secret_file) if args.secret_file else new_secret()
        if args.tasks is not None:
            if not args.tasks.is_dir():  # bad input (exit 2), not a worker that failed to start
                # worded as oa_vm.kit.validate.read_problem (infra cannot import oa_vm)
                try:
                    args.tasks.stat()
                    state = "is a file, not a folder"
                except (FileNotFoundError, NotADirectoryError):
                    state = "does not exist"
                except OSError as exc:  # a symbolic link loop, a folder it may not enter
                    state = f"cannot be read ({exc.strerror or exc})"
                raise ValueError(f"--tasks {args.tasks} {state}; give a task folder in WAA's "
                                 "layout (an index file such as test_all.json, and examples/)")
            TaskStore.load(args.tasks)  # its index read now: a bad one is bad input too
    except (FaultError, SecretError, ValueError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        stream=sys.stderr,
        level=args.log_level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    started_at = dt.datetime.now(dt.UTC)
    workers: list[RunningWorker] = []
    try:
        for index in range(args.count):
            single = args.count == 1
            workers.append(
                start_worker(
                    args.name if single else f"{args.name}-{index}",
                    args.root if single else args.root / f"{args.name}-{index}",
                    host=args.host,
                    waa_port=_port(args.waa_port, index),
                    scoring_port=_port(args.scoring_port, index),
                    tasks=args.tasks,
                    faults=faults,
                    secret=secret,
                    auth=not args.no_auth,
                    limits=limits,
                )
            )
    except (OSError, TaskStoreError) as exc:
        for worker in workers:
            worker.stop()
        print(f"{PROG}: error: cannot start worker: {exc}", file=sys.stderr)
        return 1

    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    write_ready_file(args.ready_file, workers, started_at)
    log = logging.getLogger("infra.local")
    log.info("%d worker(s) ready, pid %d", len(workers), os.getpid())
    # The folder removed (a pool's folder deleted by hand) or replaced (a new pool of the same
    # name) leaves no record that names this process: no command could stop it, so it stops
    # itself. The folder is held open so that its inode cannot be given to a folder made again
    # under its path; two stats a second, on the wake-up the loop has anyway.
    root = os.open(args.root, os.O_RDONLY | os.O_DIRECTORY)
    while not stop.wait(1.0):
        if _identity(args.root) != _identity(root):
            log.warning("its folder %s is gone: stopping", args.root)
            break
    os.close(root)
    for worker in workers:
        worker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
