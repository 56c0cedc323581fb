"""CLI start-up benchmark: ``oa-vm`` and ``openadapt-evals`` commands against ``python -c pass``.

Each command is run several times as a real subprocess with this same interpreter's console
script, and the median wall time is divided by the median of ``python -c pass`` measured in the
same run, so the ratio says how much the CLI adds to bare interpreter start-up on this machine.
``pool-status`` is timed on an empty ``OA_VM_HOME`` (it answers that there is no pool) and with
one local pool of one worker, ``pool-list`` with that pool; both again through Typer
(``OA_VM_FAST_PATH=0``), as they ran before the fast path of :mod:`oa_vm.cli.quick`. Then
``openadapt-evals tasks`` and ``openadapt-evals run --tasks all --agent random`` on that pool
(the bundled local suite's 24 tasks): a run's figure is its start-up plus the whole run, which
is where its import cost shows (the run's other CPU is the same in both trees).

``--beside DIR`` times another checkout of the project too (its own ``DIR/.venv``, for example
an older commit made with ``git worktree add DIR COMMIT``; without one, this interpreter's
console scripts with ``DIR`` first on ``PYTHONPATH``, which an editable install lets win): every
command then runs alternately with this tree's console script and that one's, so the machine's
load falls on both alike, and each figure gets the ratio of this tree's median to that one's.
Byte-compile both trees first (``python -m compileall -q``), or the first runs write the caches.

Usage (from the repository root)::

    .venv/bin/python bench/cli.py [--runs 7] [--beside DIR] [--json]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
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


def _run_once(argv: Sequence[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user and system) and exit status of one run of ``argv``.

    ``Popen.wait(timeout=...)`` (and so ``subprocess.run(timeout=...)``) polls the child with
    sleeps that double up to 50 ms, which rounds every start-up time up to the next poll
    (about 32 ms, 64 ms, then every 50 ms). The run is reaped with ``os.wait4`` instead, which
    returns the moment the child exits and gives its CPU time (on a busy machine the CPU time
    moves far less than the wall time); a watchdog thread kills a hung run.
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
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        watchdog.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.perf_counter() - began
    if elapsed >= RUN_TIMEOUT_S:
        raise RuntimeError(f"{' '.join(argv)} did not finish within {RUN_TIMEOUT_S:g} s")
    return elapsed, usage.ru_utime + usage.ru_stime, proc.returncode


def time_commands(
    variants: dict[str, Sequence[str]], env: dict[str, str], runs: int,
    envs: Mapping[str, dict[str, str]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Median and spread of ``runs`` wall times of each variant's argv (one warm-up run each),
    in ``env`` updated with the variant's own entries of ``envs``.

    The variants run in turn (a, b, a, b, ...), so that a change of the machine's load during
    the measurement falls on all of them alike.
    """
    times: dict[str, list[float]] = {key: [] for key in variants}
    cpu: dict[str, list[float]] = {key: [] for key in variants}
    codes = dict.fromkeys(variants, 0)
    for attempt in range(runs + 1):
        for key, argv in variants.items():
            elapsed, used, codes[key] = _run_once(argv, {**env, **(envs or {}).get(key, {})})
            if attempt:  # the first run fills the OS's caches; it is not counted
                times[key].append(elapsed)
                cpu[key].append(used)
    return {
        key: {
            "median_s": round(statistics.median(t), 4),
            "min_s": round(min(t), 4),
            "max_s": round(max(t), 4),
            "cpu_median_s": round(statistics.median(cpu[key]), 4),
            "exit_code": codes[key],
        }
        for key, t in times.items()
    }


def _console_script(python: Path, tree: str, name: str = "oa-vm") -> Path:
    """The console script ``name`` beside ``python``; a clear error when it is missing."""
    script = python.parent / name
    if not script.is_file():
        raise BenchInputError(
            f"no {name} console script beside {python} ({tree}); install the project there "
            "(python -m venv .venv && .venv/bin/pip install -e .)"
        )
    return script


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; returns the exit status."""
    ap = parser(PROG, "Start-up time of the oa-vm CLI relative to a bare interpreter.")
    ap.add_argument("--runs", type=int, default=7, help="timed runs per command (median)")
    ap.add_argument("--beside", type=Path, default=None,
                    help="another checkout with its own .venv, timed alternately with this one")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    if not 1 <= args.runs <= 100:
        raise BenchInputError(f"--runs must be between 1 and 100, not {args.runs}")
    pythons = {"this": Path(sys.executable)}
    envs: dict[str, dict[str, str]] = {}
    if args.beside is not None:
        pythons["beside"] = args.beside / ".venv" / "bin" / "python"
        if not pythons["beside"].is_file():  # no venv of its own: its code through ours
            pythons["beside"] = Path(sys.executable)
            envs["beside"] = {"PYTHONPATH": str(args.beside.resolve())}
    for key, python in pythons.items():
        _console_script(python, "this tree" if key == "this" else "--beside")

    def time_cli(key: str, words: Sequence[str], env: dict[str, str],
                 name: str = "oa-vm") -> None:
        progress(f"timing {name} {' '.join(words)} ({key})")
        argvs: dict[str, Sequence[str]] = {
            k: [str(_console_script(p, k, name)), *words] for k, p in pythons.items()}
        timed = time_commands(argvs, env, args.runs, envs)
        results[key] = timed["this"]
        if "beside" in timed:
            results[key]["beside"] = timed["beside"]

    results: dict[str, Any] = {}
    with isolated_home() as scratch:
        empty = {**os.environ, "OA_VM_HOME": str(scratch / "empty-home")}
        progress("timing python -c pass")
        base = time_commands({"": [sys.executable, "-c", "pass"]}, empty, args.runs)[""]
        results["python_c_pass"] = base
        time_cli("oa_vm_help", ["--help"], empty)
        time_cli("pool_status_empty_home", ["pool-status"], empty)
        time_cli("pool_list_empty_home", ["pool-list"], empty)
        create_local_pool("bench-cli", 1)
        with_pool = {**os.environ}  # isolated_home set OA_VM_HOME to the pool's home
        time_cli("pool_status_one_local_pool", ["pool-status", "--name", "bench-cli"], with_pool)
        time_cli("pool_list_one_local_pool", ["pool-list"], with_pool)
        # The same two through Typer (the fast path turned off): the figures before it.
        typer_path = {**with_pool, "OA_VM_FAST_PATH": "0"}
        time_cli("typer_pool_status_one_local_pool", ["pool-status", "--name", "bench-cli"],
                 typer_path)
        time_cli("typer_pool_list_one_local_pool", ["pool-list"], typer_path)
        time_cli("evals_tasks", ["tasks"], with_pool, "openadapt-evals")
        time_cli("evals_run_local_pool", ["run", "--pool", "bench-cli", "--tasks", "all",
                                          "--agent", "random", "--results-dir",
                                          str(scratch / "runs")], with_pool, "openadapt-evals")
    baseline = base["median_s"]
    for figures in results.values():
        figures["ratio_to_python"] = round(figures["median_s"] / baseline, 2)
        if "beside" in figures:
            beside = figures["beside"]
            beside["ratio_to_python"] = round(beside["median_s"] / baseline, 2)
            figures["ratio_to_beside"] = round(figures["median_s"] / beside["median_s"], 3)
            figures["cpu_ratio_to_beside"] = round(
                figures["cpu_median_s"] / beside["cpu_median_s"], 3)
    out = {"runs": args.runs, "beside": str(args.beside) if args.beside else None,
           "results": results, "machine": machine_info()}
    lines = []
    for key, f in results.items():
        line = (f"{key:<34} median {f['median_s'] * 1000:7.1f} ms  x{f['ratio_to_python']:<5} "
                f"(exit {f['exit_code']})")
        if "beside" in f:
            b = f["beside"]
            line += (f"  beside {b['median_s'] * 1000:7.1f} ms  x{b['ratio_to_python']:<5} "
                     f"(exit {b['exit_code']})  this/beside {f['ratio_to_beside']:.3f}, "
                     f"CPU {f['cpu_ratio_to_beside']:.3f}")
        lines.append(line)
    emit(out, args.json, "\n".join(lines))
    return 0


if __name__ == "__main__":
    run_cli(main, PROG)
