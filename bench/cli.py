"""CLI start-up benchmark: ``oa-vm --help`` and ``oa-vm pool-status`` against ``python -c pass``.

Each command is run several times as a real subprocess with this same interpreter's console
script, and the median wall time is divided by the median of ``python -c pass`` measured in the
same run, so the ratio says how much the CLI adds to bare interpreter start-up on this machine.
``pool-status`` is timed on an empty ``OA_VM_HOME`` (it answers that there is no pool) and with
one local pool of one worker, ``pool-list`` with that pool; both again through Typer
(``OA_VM_FAST_PATH=0``), as they ran before the fast path of :mod:`oa_vm.cli.quick`.

Usage (from the repository root)::

    .venv/bin/python bench/cli.py [--runs 7] [--json]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import (
    BenchInputError,
    create_local_pool,
    emit,
    isolated_home,
    machine_info,
    parser,
    progress,
    run_cli,
)

PROG = "bench/cli.py"
RUN_TIMEOUT_S = 60.0


def _run_once(argv: Sequence[str], env: dict[str, str]) -> tuple[float, int]:
    """Wall seconds and exit status of one run of ``argv``.

    ``Popen.wait(timeout=...)`` (and so ``subprocess.run(timeout=...)``) polls the child with
    sleeps that double up to 50 ms, which rounds every start-up time up to the next poll
    (about 32 ms, 64 ms, then every 50 ms). A watchdog thread kills a hung run instead, so the
    wait blocks in ``waitpid`` and returns the moment the child exits.
    """
    began = time.perf_counter()
    proc = subprocess.Popen(  # fixed argv, no shell
        list(argv), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    watchdog = threading.Timer(RUN_TIMEOUT_S, proc.kill)
    watchdog.daemon = True
    watchdog.start()
    try:
        code = proc.wait()
    finally:
        watchdog.cancel()
    elapsed = time.perf_counter() - began
    if elapsed >= RUN_TIMEOUT_S:
        raise RuntimeError(f"{' '.join(argv)} did not finish within {RUN_TIMEOUT_S:g} s")
    return elapsed, code


def time_command(argv: Sequence[str], env: dict[str, str], runs: int) -> dict[str, Any]:
    """Median and spread of ``runs`` wall times of ``argv`` (one warm-up run first)."""
    times = []
    code = 0
    for attempt in range(runs + 1):
        elapsed, code = _run_once(argv, env)
        if attempt:  # the first run fills the OS's caches; it is not counted
            times.append(elapsed)
    return {
        "median_s": round(statistics.median(times), 4),
        "min_s": round(min(times), 4),
        "max_s": round(max(times), 4),
        "exit_code": code,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; returns the exit status."""
    ap = parser(PROG, "Start-up time of the oa-vm CLI relative to a bare interpreter.")
    ap.add_argument("--runs", type=int, default=7, help="timed runs per command (median)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    if not 1 <= args.runs <= 100:
        raise BenchInputError(f"--runs must be between 1 and 100, not {args.runs}")
    oa_vm = Path(sys.executable).parent / "oa-vm"
    if not oa_vm.is_file():
        raise BenchInputError(
            f"no oa-vm console script beside {sys.executable}; install the project "
            "(pip install -e .) and run this with that interpreter"
        )
    results: dict[str, Any] = {}
    with isolated_home() as scratch:
        empty = {**os.environ, "OA_VM_HOME": str(scratch / "empty-home")}
        progress("timing python -c pass")
        base = time_command([sys.executable, "-c", "pass"], empty, args.runs)
        results["python_c_pass"] = base
        progress("timing oa-vm --help")
        results["oa_vm_help"] = time_command([str(oa_vm), "--help"], empty, args.runs)
        progress("timing oa-vm pool-status (no pool)")
        results["pool_status_empty_home"] = time_command(
            [str(oa_vm), "pool-status"], empty, args.runs
        )
        create_local_pool("bench-cli", 1)
        with_pool = {**os.environ}  # isolated_home set OA_VM_HOME to the pool's home
        progress("timing oa-vm pool-status --name bench-cli (one local pool)")
        results["pool_status_one_local_pool"] = time_command(
            [str(oa_vm), "pool-status", "--name", "bench-cli"], with_pool, args.runs
        )
        progress("timing oa-vm pool-list (one local pool)")
        results["pool_list_one_local_pool"] = time_command(
            [str(oa_vm), "pool-list"], with_pool, args.runs
        )
        # The same two through Typer (the fast path turned off): the figures before it.
        typer_path = {**with_pool, "OA_VM_FAST_PATH": "0"}
        progress("timing both again through Typer (OA_VM_FAST_PATH=0)")
        results["typer_pool_status_one_local_pool"] = time_command(
            [str(oa_vm), "pool-status", "--name", "bench-cli"], typer_path, args.runs
        )
        results["typer_pool_list_one_local_pool"] = time_command(
            [str(oa_vm), "pool-list"], typer_path, args.runs
        )
    baseline = base["median_s"]
    for figures in results.values():
        figures["ratio_to_python"] = round(figures["median_s"] / baseline, 2)
    out = {"runs": args.runs, "results": results, "machine": machine_info()}
    text = "\n".join(
        f"{key:<34} median {f['median_s'] * 1000:7.1f} ms  x{f['ratio_to_python']:<5} "
        f"(exit {f['exit_code']})"
        for key, f in results.items()
    )
    emit(out, args.json, text)
    return 0


if __name__ == "__main__":
    run_cli(main, PROG)
