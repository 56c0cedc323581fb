"""What a Cua-Bench variant costs on the local pool: its setup + evaluate, and one browser's memory.

One simulated worker is started in this process (the same code a local pool's worker runs); in
one run, alternating, ``--rounds`` times each:

1. a Cua-Bench variant of ``docs/examples/cua_bench/`` (``submit/0`` and ``signup_form/0``) run
   as an attempt with no agent step: the module's ``setup_task`` then ``evaluate_task``, through
   the worker's HTTP API and its real Chromium (the browser already started);
2. the same with the module's oracle between them (setup + solve + evaluate);
3. a local-suite task's attempt with the ``oracle`` agent (``notepad_1``-style, the reference
   for what a task costs without a browser).

Reported: medians, the ratio variant / local task, the browser's first start, and the memory
of the worker's browser (the proportional set size of Chromium's whole process tree, so pages
shared between its processes are counted once) against the worker process's own.

Usage (from the repository root)::

    .venv/bin/python bench/browser_tasks.py [--rounds 10] [--json]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import REPO_ROOT, BenchInputError, emit, machine_info, parser, progress, run_cli

PROG = "bench/browser_tasks.py"
EXAMPLES = REPO_ROOT / "docs" / "examples" / "cua_bench"


def _pss_mb(pid: int) -> float:
    import psutil

    root = psutil.Process(pid)
    total = 0
    for process in [root, *root.children(recursive=True)]:
        try:
            total += process.memory_full_info().pss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total / 2**20


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; returns the exit status."""
    args_parser = parser(PROG, __doc__ or "")
    args_parser.add_argument("--rounds", type=int, default=10)
    args_parser.add_argument("--json", action="store_true")
    args = args_parser.parse_args(argv)
    if args.rounds < 1:
        raise BenchInputError("--rounds must be at least 1")
    import os

    import psutil

    from evals.agents import create_agent
    from evals.agents.noop import NoopAgent
    from evals.run.agent_loop import run_task
    from evals.run.attempt_cua import run_cua_task
    from evals.run.settings import RunConfig
    from evals.tasks.cua_bench import load_selection
    from infra.local.browser import find_chromium
    from infra.local.worker import start_worker
    from oa_vm.clouds.local.suite import local_tasks_dir
    from waa_client import ScoringClient, WaaClient
    from waa_client.catalog import Catalog

    if find_chromium() is None:
        raise BenchInputError("no Chromium here: install Debian's chromium")
    variants = {v.task_id: v.task_json() for v in load_selection(f"cua-bench:{EXAMPLES}")}
    chosen = {tid: variants[tid] for tid in ("submit/0", "signup_form/0")}
    catalog = Catalog.from_folder(local_tasks_dir())
    local_id = catalog.select("all", live=False)[0].task_id
    local_task = catalog.load(local_id)
    with tempfile.TemporaryDirectory(prefix="bench-cua-") as folder:
        worker = start_worker("bench", Path(folder) / "w")
        try:
            waa = WaaClient(worker.waa_url, read_timeout=60.0)
            scoring = ScoringClient(worker.scoring_url, read_timeout=60.0)
            oracle, noop = create_agent("oracle"), NoopAgent()
            started = time.perf_counter()
            waa.browser("launch", {"html": "<p>warm</p>"})
            first_start = time.perf_counter() - started
            times: dict[str, list[float]] = {}

            def timed(label: str, run: Any) -> None:
                began = time.perf_counter()
                record = run()
                times.setdefault(label, []).append(time.perf_counter() - began)
                if record.status.value == "error":
                    raise RuntimeError(f"{label}: {record.error_message}")

            config = RunConfig(pool=None, selection="all", agent="oracle")
            # no agent step at all (the module's setup and evaluate alone): below what a run
            # accepts (--max-steps is at least 1), so not a RunConfig but the fields read
            no_steps = cast("RunConfig", SimpleNamespace(max_steps=0, step_pause_s=0.0,
                                                         record_tree=True))
            for round_no in range(args.rounds):
                progress(f"round {round_no + 1} of {args.rounds}")
                for tid, task in chosen.items():
                    timed(f"{tid} setup+evaluate", lambda t=task, i=tid: run_cua_task(
                        waa, t, i, noop, no_steps))
                    timed(f"{tid} setup+solve+evaluate", lambda t=task, i=tid: run_cua_task(
                        waa, t, i, oracle, no_steps))
                timed(f"local task {local_id} (oracle)", lambda: run_task(
                    waa, scoring, local_task, local_id, oracle, config))
            browser = worker.desktop.browser
            assert browser is not None and browser.pid() is not None
            browser_mb = _pss_mb(int(browser.pid() or 0))
            worker_mb = psutil.Process(os.getpid()).memory_full_info().pss / 2**20
        finally:
            worker.stop()
    medians = {label: statistics.median(values) for label, values in times.items()}
    local = medians[f"local task {local_id} (oracle)"]
    figures = {
        "machine": machine_info(), "rounds": args.rounds,
        "median_s": {k: round(v, 4) for k, v in medians.items()},
        "ratio_to_local_task": {k: round(v / local, 2) for k, v in medians.items()},
        "browser_first_start_s": round(first_start, 2),
        "browser_pss_mb": round(browser_mb, 1),
        "controller_and_worker_process_pss_mb": round(worker_mb, 1),
    }
    rows = [f"{label:<44} {value:8.3f} s  x{value / local:6.2f}"
            for label, value in medians.items()]
    text = "\n".join([
        f"median of {args.rounds} rounds (ratio to the local task)", *rows,
        f"browser's first start: {first_start:.2f} s",
        f"one worker's browser (PSS of Chromium's process tree): {browser_mb:.0f} MB; "
        f"this process (controller + worker): {worker_mb:.0f} MB",
        f"load average {machine_info().get('loadavg')}",
    ])
    emit(figures, args.json, text)
    return 0


if __name__ == "__main__":
    run_cli(main, PROG)
