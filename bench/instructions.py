"""Instructions per step: the controller's cost on a fixed workload, counted by callgrind.

Wall-clock and CPU-time figures of :mod:`bench.scale` move by 15 to 30 % from run to run on a
shared machine, more than the few per cent two commits differ by. This benchmark counts the
instructions the controller executes instead (``valgrind --tool=callgrind``), which the
machine's load does not change: it runs :func:`bench.scale.run_direct` (the scale benchmark's
direct run: one controller, simulated workers in their own processes, the ``oracle`` agent,
three observed steps per task with a 200 KB screenshot) under callgrind, with
``--trace-children=no`` so that only the controller is counted (the workers are other
processes and run at full speed). Counters are dumped when the dispatcher reports ``started``
and ``finished`` (``callgrind_control --dump``), so the figure covers dispatch only, not the
interpreter's start-up, the pool's creation or its removal.

The figure is instructions per step of that window. Under callgrind the controller runs some
fifty times slower and its threads one at a time, and some of its work depends on time rather
than on the work done: the interpreter's lock changes hands every 5 ms when threads wait for
it, heartbeats run every few seconds. A run that lasts longer (a busier machine: the
controller's share of the cores shrinks) therefore counts more: about 2,000 instructions per
step for each second of run time on the default workload (0.03 % of the figure; runs of 25 to
90 s), 1,000 at 60 workers. The idle workers' polls are not the cause (a 30 s poll instead of
0.2 s left it unchanged), the lock's handoffs are a tenth of it. The result therefore also
gives the ratio at the same run time: a line per tree with one slope for all, fitted over the
runs.

``--beside DIR`` runs the same workload with another checkout of the project (its own
``DIR/.venv``; the scale benchmark there is the one used, so a commit from before a layout
change works as long as its ``bench/scale.py`` has ``run_direct``). The trees alternate
(this, beside, beside, this, ...), and the result is the ratio of mean instructions per step,
this tree over the other, with the lowest and highest ratio of any two runs as its spread,
and the ratio at the same run time (above).

Usage (from the repository root; a run of the default workload takes a few minutes)::

    .venv/bin/python bench/instructions.py [--workers 20] [--tasks 120] [--repeat 2] [--json]
    .venv/bin/python bench/instructions.py --beside ../old-checkout --repeat 2
    .venv/bin/python bench/instructions.py --keep cg/   # keep callgrind's files, then
    callgrind_annotate --inclusive=yes cg/this-1/callgrind.out.<pid>.2
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import REPO_ROOT, BenchInputError, emit, machine_info, parser, progress, run_cli

HERE = Path(__file__).resolve()
PROG = "bench/instructions.py"
RUN_TIMEOUT_S = 7200.0  # one run under callgrind: minutes; this only stops a hung one
DUMP_TIMEOUT_S = 600.0
PACKAGES = ("bench", "oa_vm", "evals", "waa_client", "infra")
DISPATCH = "dispatch"  # the label of the dump that ends at the dispatcher's "finished"


# ---- inside callgrind: the controller -----------------------------------------------------


def _dump(label: str) -> None:
    """Ask callgrind to write (and zero) this process's counters now, labelled ``label``."""
    subprocess.run(
        ["callgrind_control", f"--dump={label}", str(os.getpid())],
        check=True, capture_output=True, timeout=DUMP_TIMEOUT_S,
    )


def _runner_module() -> Any:
    """The runner of the tree on ``sys.path`` (``evals.run.runner``, or ``evals.runner``
    before the renovation's layout)."""
    try:
        return importlib.import_module("evals.run.runner")
    except ModuleNotFoundError:
        return importlib.import_module("evals.runner")


def _dump_around_dispatch(runner: Any) -> None:
    """Make the runner's ``run_evaluation`` dump the counters at ``started`` and ``finished``.

    The scale benchmark imports ``run_evaluation`` from the module at call time, so replacing
    the module's attribute is enough. ``started`` comes before the dispatcher's threads start
    and ``finished`` after they ended, both on the calling thread.
    """
    original = runner.run_evaluation

    def run_evaluation(config: Any, *args: Any, on_event: Callable[[Any], None] | None = None,
                       **kwargs: Any) -> Any:
        def hook(event: Any) -> None:
            if event.kind == "started":
                _dump("setup")
            if event.kind == "finished":
                _dump(DISPATCH)
            if on_event is not None:
                on_event(event)

        return original(config, *args, on_event=hook, **kwargs)

    runner.run_evaluation = run_evaluation


def inner(tree: Path, workers: int, per_process: int, tasks: int, out: Path, *,
          dump: bool = True) -> None:
    """Run the scale benchmark's direct run of ``tree`` in this process and write its figures
    to ``out``; with ``dump``, callgrind's counters are dumped around dispatch."""
    # This file's checkout made itself importable, and its bench package (and the errors
    # run_cli imports) are loaded: forget them, so that every module comes from ``tree``.
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO_ROOT]
    sys.path.insert(0, str(tree))
    for name in list(sys.modules):
        if name.split(".")[0] in PACKAGES:
            del sys.modules[name]
    harness = importlib.import_module("bench.harness")
    scale = importlib.import_module("bench.scale")
    runner = _runner_module()
    if dump:
        _dump_around_dispatch(runner)
    with harness.isolated_home() as scratch:
        figures = scale.run_direct(scratch, workers, per_process, tasks)
    figures["runner"] = runner.__file__  # shows which checkout's code ran
    out.write_text(json.dumps(figures), encoding="utf-8")


# ---- outside: run each tree under callgrind and read its counts ---------------------------


def dump_totals(folder: Path) -> dict[str, int]:
    """``label -> instructions`` of every callgrind dump in ``folder`` (``Program
    termination`` for the last one)."""
    totals: dict[str, int] = {}
    for path in sorted(folder.glob("callgrind.out.*")):
        label, total = None, None
        with path.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                if line.startswith("desc: Trigger:"):
                    label = line.split(":", 2)[2].strip().removeprefix("dump ").strip()
                elif line.startswith(("totals:", "summary:")):
                    total = int(line.split()[1])
                if label is not None and total is not None:
                    break
        if label is not None and total is not None:
            totals[label] = total
    return totals


def _run_inner(tree: Path, folder: Path, prefix: list[str], workload: list[str]) -> int:
    """Run this file's inner part with ``tree``'s interpreter (behind ``prefix``); its exit
    status, its output in ``folder/log.txt``."""
    command = [*prefix, str(tree / ".venv" / "bin" / "python"), str(HERE), "--inner", str(tree),
               *workload, "--out", str(folder / "figures.json")]
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # the warm-up leaves byte-code for the runs
    with (folder / "log.txt").open("w", encoding="utf-8") as log:
        done = subprocess.run(command, stdout=log, stderr=log, timeout=RUN_TIMEOUT_S,
                              check=False, cwd=tree, env=env)
    return done.returncode


def _failed(tree: Path, folder: Path, status: int) -> BenchInputError:
    tail = (folder / "log.txt").read_text(encoding="utf-8", errors="replace").strip()
    return BenchInputError(f"the run with {tree} failed (exit {status}): "
                           f"{' | '.join(tail.splitlines()[-3:])}")


def warm_up(tree: Path, folder: Path) -> None:
    """A small run of ``tree`` at full speed, first: it writes the byte-code of every module
    the workload imports, so that no run under callgrind counts a compilation (a module
    imported lazily during dispatch would otherwise be compiled there)."""
    folder.mkdir(parents=True, exist_ok=True)
    status = _run_inner(tree, folder, [], ["--workers", "2", "--per-process", "2",
                                           "--tasks", "4", "--warm"])
    if status != 0:
        raise _failed(tree, folder, status)


def run_tree(tree: Path, folder: Path, workers: int, per_process: int, tasks: int
             ) -> dict[str, Any]:
    """One run of the workload with ``tree``'s code under callgrind; its figures."""
    folder.mkdir(parents=True, exist_ok=True)
    prefix = ["valgrind", "--tool=callgrind", "--trace-children=no",
              f"--callgrind-out-file={folder}/callgrind.out.%p"]
    status = _run_inner(tree, folder, prefix, ["--workers", str(workers), "--per-process",
                                               str(per_process), "--tasks", str(tasks)])
    totals = dump_totals(folder)
    if status != 0 or DISPATCH not in totals:
        raise _failed(tree, folder, status)
    out = folder / "figures.json"
    figures = json.loads(out.read_text(encoding="utf-8"))
    steps = int(figures["steps"])
    return {
        "tree": str(tree),
        "runner": figures["runner"],
        "tasks": figures["tasks"],
        "steps": steps,
        "errors": figures["errors"],
        "wall_s_under_callgrind": figures["wall_s"],
        "instructions": totals[DISPATCH],
        "instructions_per_step": round(totals[DISPATCH] / max(1, steps)),
        "setup_instructions": totals.get("setup"),
    }


def _order(repeat: int, trees: Sequence[str]) -> list[str]:
    """``A B B A A B ...``: each tree runs as often first as second."""
    order: list[str] = []
    for r in range(repeat):
        order.extend(trees if r % 2 == 0 else list(reversed(trees)))
    return order


def time_slope(runs: dict[str, list[dict[str, Any]]]) -> float | None:
    """Instructions per step that one more second of run time adds (what runs on a timer),
    fitted over every run with a line per tree and one slope for all (least squares); None
    when no tree has two runs of different lengths."""
    num = den = 0.0
    for rows in runs.values():
        walls = [float(r["wall_s_under_callgrind"]) for r in rows]
        counts = [float(r["instructions_per_step"]) for r in rows]
        wall_mean, count_mean = statistics.fmean(walls), statistics.fmean(counts)
        num += sum((w - wall_mean) * (c - count_mean) for w, c in zip(walls, counts, strict=True))
        den += sum((w - wall_mean) ** 2 for w in walls)
    return num / den if den > 0 else None


def summarize(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Mean and spread of instructions per step per tree, and the ratio this / beside: of the
    means, its extremes over any two runs, and at the same run time (each tree's mean moved
    along :func:`time_slope` to the mean run time of all runs)."""
    out: dict[str, Any] = {}
    for key, rows in runs.items():
        per_step = [r["instructions_per_step"] for r in rows]
        mean = statistics.fmean(per_step)
        out[key] = {"mean_per_step": round(mean), "min_per_step": min(per_step),
                    "max_per_step": max(per_step),
                    "spread": round((max(per_step) - min(per_step)) / mean, 4)}
    if "beside" in runs:
        this = [r["instructions_per_step"] for r in runs["this"]]
        other = [r["instructions_per_step"] for r in runs["beside"]]
        out["ratio_this_to_beside"] = round(out["this"]["mean_per_step"]
                                            / out["beside"]["mean_per_step"], 4)
        out["ratio_low"] = round(min(this) / max(other), 4)
        out["ratio_high"] = round(max(this) / min(other), 4)
        slope = time_slope(runs)
        if slope is not None:
            wall = statistics.fmean(r["wall_s_under_callgrind"] for rows in runs.values()
                                    for r in rows)

            def at_wall(rows: list[dict[str, Any]]) -> float:
                return statistics.fmean(r["instructions_per_step"] + slope * (
                    wall - r["wall_s_under_callgrind"]) for r in rows)

            out["time_slope_per_step_per_s"] = round(slope)
            out["ratio_at_same_run_time"] = round(at_wall(runs["this"])
                                                  / at_wall(runs["beside"]), 4)
    return out


def _text(result: dict[str, Any]) -> str:
    lines = [f"workload: {result['workers']} workers, {result['tasks']} tasks, "
             f"{result['per_process']} per process"]
    for run in result["runs"]:
        lines.append(
            f"{run['key']:>6}  {run['instructions_per_step']:>12,} instructions/step  "
            f"({run['steps']} steps, {run['errors']} errors, "
            f"{run['wall_s_under_callgrind']} s under callgrind)"
        )
    s = result["summary"]
    for key in ("this", "beside"):
        if key in s:
            lines.append(f"{key:>6}  mean {s[key]['mean_per_step']:,}, spread "
                         f"{100 * s[key]['spread']:.2f} %")
    if "ratio_this_to_beside" in s:
        lines.append(f"this / beside: {s['ratio_this_to_beside']:.4f} "
                     f"(any two runs: {s['ratio_low']:.4f} to {s['ratio_high']:.4f})")
    if "ratio_at_same_run_time" in s:
        lines.append(f"at the same run time: {s['ratio_at_same_run_time']:.4f} (a second more "
                     f"under callgrind adds {s['time_slope_per_step_per_s']:,} "
                     "instructions per step: what runs on a timer)")
    return "\n".join(lines)


def _check_tree(tree: Path, option: str) -> None:
    if not (tree / ".venv" / "bin" / "python").exists():
        raise BenchInputError(f"{option}: no .venv/bin/python in {tree}; create the checkout's "
                              "virtualenv and install the project there first")
    if not (tree / "bench" / "scale.py").exists():
        raise BenchInputError(f"{option}: {tree} has no bench/scale.py; give a checkout of "
                              "this project")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; returns the exit status."""
    ap = parser(PROG, "The controller's instructions per step (callgrind), optionally "
                      "beside another checkout.")
    ap.add_argument("--workers", type=int, default=20, help="simulated workers")
    ap.add_argument("--per-process", type=int, default=10, help="workers per process")
    ap.add_argument("--tasks", type=int, default=120, help="tasks (three steps each)")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each tree")
    ap.add_argument("--beside", type=Path, default=None, metavar="DIR",
                    help="another checkout to run the same workload with (its own .venv)")
    ap.add_argument("--keep", type=Path, default=None, metavar="DIR",
                    help="keep callgrind's files here, one folder per run "
                         "(for callgrind_annotate)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--inner", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    for name in ("workers", "per_process", "tasks", "repeat"):
        if getattr(args, name) < 1:
            raise BenchInputError(f"--{name.replace('_', '-')} must be at least 1")
    if args.inner is not None:
        inner(args.inner, args.workers, args.per_process, args.tasks, args.out,
              dump=not args.warm)
        return 0
    for tool in ("valgrind", "callgrind_control"):
        if shutil.which(tool) is None:
            raise BenchInputError(f"{tool} is not installed; install valgrind (it brings both)")
    trees = {"this": REPO_ROOT}
    _check_tree(REPO_ROOT, "this checkout")
    if args.beside is not None:
        trees["beside"] = args.beside.resolve()
        _check_tree(trees["beside"], "--beside")
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    base = args.keep.resolve() if args.keep is not None else Path(
        tempfile.mkdtemp(prefix="oa-vm-callgrind-"))
    runs: dict[str, list[dict[str, Any]]] = {key: [] for key in trees}
    ordered: list[dict[str, Any]] = []
    try:
        for key, tree in trees.items():
            progress(f"{key} ({tree}): warm-up at full speed")
            warm_up(tree, base / f"{key}-warm-up")
        for key in _order(args.repeat, list(trees)):
            n = len(runs[key]) + 1
            progress(f"{key} ({trees[key]}), run {n}: under callgrind")
            run = run_tree(trees[key], base / f"{key}-{n}", args.workers, args.per_process,
                           args.tasks)
            run["key"] = key
            progress(f"  {run['instructions_per_step']:,} instructions/step")
            runs[key].append(run)
            ordered.append(run)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    result = {"workers": args.workers, "tasks": args.tasks, "per_process": args.per_process,
              "runs": ordered, "summary": summarize(runs), "machine": machine_info()}
    emit(result, args.json, _text(result))
    return 0


if __name__ == "__main__":
    run_cli(main, PROG)
