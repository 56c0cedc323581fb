"""Dispatch benchmark: the runner against WAA's two stock policies, on the same local workers.

For each worker count W (4, 8, 16, or ``--workers``) and each drill (no failure; 2 workers
killed at 30% of the expected makespan), three policies run the same WAA-shaped workload
(:mod:`bench.workload`) for real on simulated workers:

- ``ours``: :func:`evals.run.runner.run_evaluation` with the ``oracle`` agent, given per-domain mean
  durations as estimates (not the tasks' own draws);
- ``static``: WAA ``run.py``'s contiguous slices; ``round_robin``: the wrapper's dealing
  (:mod:`bench.policies`: fixed lists, no retry, a dead worker loses what it had left).

Per policy it prints makespan / lower bound (LB = max(longest task, total work / W), from the
per-task work measured in this configuration), worker-time held / total work, and tasks lost;
then one line per (W, drill) with the runner's ratio against its target, to paste as is.

For the runner it also measures the controller's own time between two tasks of one worker (the
gap from one attempt's end to the next one's start: the commit, the record, the events, the
next lease), and with ``--profile FILE`` profiles its dispatch (every thread, CPU time) into
``FILE`` plus a text summary with a per-task breakdown (a profiled run's makespans include the
profiler's cost: the ratios to quote come from an unprofiled run).

Usage (from the repository root)::

    .venv/bin/python bench/dispatch.py [--workers 8] [--tasks 154] [--scale full] [--json]
    .venv/bin/python bench/dispatch.py --workers 8 --drills none --profile prof.pstats
    .venv/bin/python bench/dispatch.py --workers 8 --reset clean-or-stock   # the runner's default

The runner resets each worker with WAA's stock reset before a task, as the two stock policies
do (inside their agent loop); ``--reset clean-or-stock`` measures its default clean restore
instead. Either way a reset's ``reset_s`` counts as the task's work, not as dispatch.
"""

from __future__ import annotations

import json
import pstats
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import (
    WAA_DATA,
    BenchInputError,
    create_local_pool,
    emit,
    isolated_home,
    kill_workers,
    machine_info,
    parser,
    progress,
    remove_pool,
    run_cli,
)
from bench.policies import (
    OUTCOMES,
    capacity_lower_bound,
    lower_bound,
    round_robin,
    run_fixed_lists,
    static_slices,
)
from bench.profiling import ThreadProfiler, write_profile
from bench.workload import (
    Workload,
    WorkloadTask,
    domain_counts,
    make_workload,
    proportional_counts,
    sleep_solution,
    task_json,
    write_task_folder,
)

PROG = "bench/dispatch.py"
#: The ideal makespan (total work / W) each configuration is scaled to, in seconds.
SCALES = {"tiny": 0.5, "small": 5.0, "full": 10.0}
DEFAULT_WORKERS = (4, 8, 16)
POLICIES = ("ours", "static", "round_robin")
FAILING = 2
KILL_FRACTION = 0.3
SEED = 7
#: The runner's targets (issue 20): makespan within 5% of LB without failure, and of the
#: capacity-adjusted LB with workers killed.
TARGET = 1.05
#: What the per-task breakdown of a profile adds up: the dispatcher's own steps between tasks
#: and the plumbing under them (cumulative CPU, so the lines overlap: ``_commit`` holds the
#: queue's ``complete``, the record write and the ``task_finished`` event).
BREAKDOWN = (
    ("dispatcher.py", "_next_lease", "lease: choose, reserve, lease (under the lease lock)"),
    ("queue.py", "peek_next", "  queue.peek_next (SQLite select)"),
    ("queue.py", "lease", "  queue.lease (SQLite transaction)"),
    ("dispatcher.py", "_commit", "commit: queue, execution.json, ledger, event"),
    ("queue.py", "complete", "  queue.complete (SQLite transaction)"),
    ("records.py", "write_execution", "  RunFolder.write_execution (execution.json)"),
    ("dispatcher.py", "_emit", "events: snapshot + sink (all kinds)"),
    ("dispatcher.py", "snapshot", "  Dispatcher.snapshot"),
    # the queue's connections run in autocommit: a COMMIT is one more statement
    ("~", "<method 'execute' of 'sqlite3.Connection' objects>", "SQLite statements (all)"),
    ("~", "<built-in method posix.fsync>", "fsync (all)"),
    ("agent_loop.py", "run_task", "the task itself (agent loop: HTTP to the worker)"),
    ("dispatcher.py", "_heartbeat", "lease heartbeat thread"),
)


@dataclass
class PolicyFigures:
    """What one policy run measured (before the ratios, which need every run's work)."""

    policy: str
    makespan_s: float
    work: dict[str, float]  # task ID -> measured seconds of its scored attempt
    lost: list[str]
    held_s: float
    retried: int = 0
    gaps_ms: list[float] | None = None  # the runner only: controller time between two tasks
    wall_ms: dict[str, float] | None = None  # the runner only: wall ms per task of each step


#: Steps of the controller timed on the wall clock in the runner's runs (what a worker waits
#: for between two tasks: CPU, the SQLite writer lock, fsync): (module, class, method, label).
WALL_STEPS = (
    ("evals.run.dispatcher", "Dispatcher", "_next_lease",
     "lease (choose, reserve, lease; lease lock)"),
    ("evals.run.queue", "TaskQueue", "lease", "  queue.lease (SQLite commit)"),
    ("evals.run.dispatcher", "Dispatcher", "_commit",
     "commit (queue, execution.json, ledger, event)"),
    ("evals.run.queue", "TaskQueue", "complete", "  queue.complete (SQLite commit)"),
    ("evals.results.records", "RunFolder", "write_execution",
     "  execution.json (temp, rename; no fsync)"),
    ("evals.results.records", "RunFolder", "sync_executions", "execution.json checked (run's end)"),
    ("evals.run.queue", "TaskQueue", "release", "queue.release (a retry; SQLite commit)"),
    ("evals.run.queue", "TaskQueue", "heartbeat", "queue.heartbeat (SQLite commit)"),
    ("evals.run.dispatcher", "Dispatcher", "_emit", "events (snapshot + sink)"),
    ("evals.run.dispatcher", "Dispatcher", "_is_draining", "drain check"),
    ("evals.run.queue", "TaskQueue", "history", "queue.history (the attempts, read)"),
    ("evals.results.ledger", "Ledger", "charge", "ledger.charge"),
    ("evals.run.reset", "WorkerReset", "before_task", "reset before the task (evals.run.reset)"),
    ("evals.run.agent_loop", None, "run_task", "the task (agent loop, HTTP to the worker)"),
)


class _WallTimes:
    """Wall-clock seconds and calls per step of :data:`WALL_STEPS`, while in the block (the
    methods are wrapped, not changed; a perf_counter pair per call costs about a microsecond)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._lock = threading.Lock()
        self._undo: list[tuple[Any, str, Any]] = []

    def __enter__(self) -> _WallTimes:
        import importlib

        for module_name, owner_name, attr, label in WALL_STEPS:
            module = importlib.import_module(module_name)
            owner = module if owner_name is None else getattr(module, owner_name)
            original = getattr(owner, attr)
            self._undo.append((owner, attr, original))
            setattr(owner, attr, self._timed(original, label))
            if owner_name is None:  # a function: also where the dispatcher imported it
                dispatcher = importlib.import_module("evals.run.dispatcher")
                if getattr(dispatcher, attr, None) is original:
                    self._undo.append((dispatcher, attr, original))
                    setattr(dispatcher, attr, self._timed(original, label))
        return self

    def __exit__(self, *exc: object) -> None:
        for owner, attr, original in reversed(self._undo):
            setattr(owner, attr, original)

    def _timed(self, fn: Any, label: str) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.perf_counter() - began
                with self._lock:
                    self.seconds[label] = self.seconds.get(label, 0.0) + spent
                    self.calls[label] = self.calls.get(label, 0) + 1

        return timed

    def per_task_ms(self, tasks: int) -> dict[str, float]:
        """Milliseconds per task of each step (summed over the workers' threads)."""
        return {label: round(1000 * self.seconds.get(label, 0.0) / tasks, 3)
                for *_, label in WALL_STEPS}


def _held(workers: int, killed: int, kill_at_s: float | None, makespan_s: float) -> float:
    """Worker-seconds held: the pool is held for the whole run (no tool here releases an idle
    worker mid-run); a killed worker stops counting when it dies."""
    if kill_at_s is None or killed == 0:
        return workers * makespan_s
    return (workers - killed) * makespan_s + killed * min(kill_at_s, makespan_s)


class _Killer:
    """Kills the chosen workers of a pool ``delay_s`` after :meth:`arm` (once)."""

    def __init__(self, pool: str, names: Sequence[str], delay_s: float | None) -> None:
        self.pool = pool
        self.names = list(names)
        self.delay_s = delay_s
        self.killed: list[str] = []
        self._timer: threading.Timer | None = None

    def arm(self) -> None:
        if self.delay_s is None or self._timer is not None:
            return
        self._timer = threading.Timer(self.delay_s, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        self.killed = kill_workers(self.pool, self.names)

    def disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer.join()


def _run_ours(
    pool: str, workload: Workload, results: Path, run_name: str, killer: _Killer,
    overhead_s: float, profile: Path | None = None, reset: str = "stock",
) -> PolicyFigures:
    from evals.run.runner import RunConfig, RunEvent, run_evaluation

    marks: dict[str, float] = {}
    profiler = ThreadProfiler() if profile is not None else None
    stopped: list[pstats.Stats | None] = []

    def on_event(event: RunEvent) -> None:
        if event.kind == "started":
            # the "started" event comes from the run's own thread before its dispatch loops
            # start: the profile holds the dispatch and nothing of the preamble
            if profiler is not None:
                profiler.start()
            marks["start"] = time.monotonic()
            killer.arm()
        elif event.kind == "finished":
            marks["end"] = time.monotonic()
            if profiler is not None:  # the same thread as "started"; the summary is not profiled
                stopped.append(profiler.stop())

    config = RunConfig(
        pool=pool, selection="all", agent="oracle", run_name=run_name, results_dir=results,
        expected_seconds={t: s + overhead_s for t, s in workload.estimates().items()},
        reset=reset,
    )
    try:
        with _WallTimes() as wall:
            result = run_evaluation(config, on_event=on_event)
    finally:
        killer.disarm()
        if profiler is not None and not stopped:  # the run failed before "finished"
            profiler.stop()
    if stopped and stopped[0] is not None and profile is not None:
        _write_dispatch_profile(stopped[0], profile, len(workload.tasks))
        progress(f"profile written: {profile} and {profile}.txt")
    work: dict[str, float] = {}
    lost: list[str] = []
    retried = 0
    records = []
    for path in sorted((result.run_dir / "tasks").glob("*/execution.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        records.append(record)
        if record["status"] in OUTCOMES:
            # The runner resets a worker before run_task (evals.run.reset), the stock policies
            # inside it: the reset is the task's work either way.
            work[record["task_id"]] = float(record["duration_s"] or 0.0) + float(
                record.get("reset_s") or 0.0)
        else:
            lost.append(record["task_id"])
        retried += 1 if record.get("previous_attempts") else 0
    return PolicyFigures("ours", marks["end"] - marks["start"], work, lost, 0.0, retried,
                         gaps_ms=_gaps_ms(records),
                         wall_ms=wall.per_task_ms(len(workload.tasks)))


def _gaps_ms(records: Sequence[dict[str, Any]]) -> list[float]:
    """Milliseconds from each attempt's end to the start of its worker's next attempt.

    An attempt's ``started_at``/``ended_at`` bracket the agent loop (``run_task``); what lies
    between two of them on one worker is the controller's own work: committing the attempt
    (queue, ``execution.json``, ledger, events), the loop's drain check, choosing and leasing
    the next task. Earlier attempts (retries) count too.
    """
    from datetime import datetime

    spans: dict[str, list[tuple[float, float]]] = {}
    for record in records:
        for attempt in [*record.get("previous_attempts", []), record]:
            worker, began, ended = (attempt.get("worker"), attempt.get("started_at"),
                                    attempt.get("ended_at"))
            if worker and began and ended:
                spans.setdefault(str(worker), []).append(
                    (datetime.fromisoformat(began).timestamp(),
                     datetime.fromisoformat(ended).timestamp()))
    gaps = []
    for runs in spans.values():
        runs.sort()
        gaps += [1000.0 * (nxt[0] - prev[1]) for prev, nxt in zip(runs, runs[1:], strict=False)]
    return gaps


def _write_dispatch_profile(stats: pstats.Stats, path: Path, tasks: int) -> None:
    """The profile, its summary, and a per-task breakdown of the dispatcher's steps."""
    write_profile(stats, path, ("task", tasks))
    by_name = stats.stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in by_name.values())
    lines = [f"per-task breakdown over {tasks} tasks (cumulative thread CPU, profiler "
             f"included; total {1000 * total / tasks:.2f} ms per task):"]
    for file_tail, function, label in BREAKDOWN:
        calls, cumulative = 0, 0.0
        for (filename, _, name), (_, ncalls, _, cum, _) in by_name.items():
            if name == function and filename.endswith(file_tail):
                calls, cumulative = calls + ncalls, cumulative + cum
        lines.append(f"  {label:<52} {1000 * cumulative / tasks:8.3f} ms/task "
                     f"{100 * cumulative / total if total else 0:5.1f}%  ({calls} calls)")
    text = Path(f"{path}.txt").read_text(encoding="utf-8")
    Path(f"{path}.txt").write_text("\n".join(lines) + "\n\n" + text, encoding="utf-8")


def _run_fixed(
    policy: str, pool: str, workload: Workload, folder: Path, results: Path, workers: int,
    killer: _Killer,
) -> PolicyFigures:
    from evals.agents import agent_factory
    from oa_vm import api

    ids = workload.task_ids
    lists = static_slices(ids, workers) if policy == "static" else round_robin(ids, workers)
    domains = {t.task_id: t.domain for t in workload.tasks}
    tasks = {
        t.task_id: json.loads(
            (folder / "examples" / t.domain / f"{t.task_id}.json").read_text(encoding="utf-8")
        )
        for t in workload.tasks
    }
    with api.connect(pool) as connections:
        by_name = {c.name: c for c in connections}
        ordered = [by_name[name] for name in sorted(by_name, key=_worker_index)]
        try:
            run = run_fixed_lists(
                ordered, lists, tasks, domains, agent_factory("oracle"),
                record_root=results, on_start=killer.arm,
            )
        finally:
            killer.disarm()
    work = {
        tid: r.duration_s for tid, r in run.results.items() if r.status in OUTCOMES
    }
    return PolicyFigures(policy, run.makespan_s, work, sorted(set(run.lost)), 0.0)


def _worker_index(name: str) -> int:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def measure_overhead(pool: str, runs: int = 3) -> float:
    """The harness's own seconds per task (reset, setup, observations, scoring) on this pool:
    the median duration of a task that sleeps 0 s, run with the runner's agent loop."""
    from evals.agents import agent_factory
    from evals.run.agent_loop import run_task
    from evals.run.settings import RunConfig
    from oa_vm import api

    config = RunConfig(pool=pool, selection="all", agent="oracle")
    probe = WorkloadTask("00000000-0000-4000-8000-000000000000-WOS", "notepad", 0.0)
    task = task_json(probe, sleep_solution(0.0))
    agent = agent_factory("oracle")()
    with api.connect(pool) as connections:
        durations = [
            float(run_task(c.waa, c.scoring, task, probe.task_id, agent, config).duration_s or 0.0)
            for c in connections[:1] * runs
        ]
    return statistics.median(durations)


def run_configuration(
    workers: int, failing: int, workload: Workload, folder: Path, scratch: Path,
    profile: Path | None = None, reset: str = "stock",
) -> list[dict[str, Any]]:
    """Run the three policies for one (W, drill) and return their result rows.

    The kill time is 30% of the expected makespan: the estimates plus the harness's measured
    per-task overhead, over W (the same instant for every policy).
    """
    victims = [f"worker-{i}" for i in range(failing)]
    figures: list[PolicyFigures] = []
    pool: str | None = None
    tag = f"w{workers}-f{failing}"
    overhead = 0.0
    kill_at: float | None = None
    try:
        for number, policy in enumerate(POLICIES):
            if pool is None or failing:
                # Killed workers stay dead: a drill needs a fresh pool for each policy.
                if pool is not None:
                    remove_pool(pool)
                pool = f"bench-{tag}-{number}"
                progress(f"[{tag}] starting {workers} workers for {policy}")
                create_local_pool(pool, workers, tasks_dir=str(folder))
            if number == 0:
                overhead = measure_overhead(pool)
                expected = sum(workload.estimates().values()) + overhead * len(workload.tasks)
                kill_at = KILL_FRACTION * expected / workers if failing else None
                progress(f"[{tag}] harness overhead {overhead:.3f} s/task, expected makespan "
                         f"{expected / workers:.2f} s")
            killer = _Killer(pool, victims, kill_at)
            progress(f"[{tag}] running {policy}")
            results = scratch / "results"
            if policy == "ours":
                measured = _run_ours(pool, workload, results, f"ours-{tag}", killer, overhead,
                                     None if profile is None else _tagged(profile, tag), reset)
            else:
                measured = _run_fixed(
                    policy, pool, workload, folder, results / f"{policy}-{tag}", workers, killer
                )
            killed = len(killer.killed)
            measured.held_s = _held(workers, killed, kill_at, measured.makespan_s)
            figures.append(measured)
            progress(f"[{tag}] {policy}: {measured.makespan_s:.2f} s, "
                     f"{len(measured.lost)} lost, killed {killer.killed or 'none'}")
    finally:
        if pool is not None:
            remove_pool(pool)
    rows = _rows(workers, failing, kill_at, workload, figures)
    for row in rows:
        row["harness_overhead_s_per_task"] = round(overhead, 3)
    return rows


def _tagged(path: Path, tag: str) -> Path:
    """``prof.pstats`` -> ``prof-w8-f0.pstats``: one profile per configuration."""
    return path.with_name(f"{path.stem}-{tag}{path.suffix}")


def _rows(
    workers: int, failing: int, kill_at: float | None, workload: Workload,
    figures: list[PolicyFigures],
) -> list[dict[str, Any]]:
    """Ratios against the work measured in this configuration (median per task over the runs
    that scored it; a task no run scored counts its estimate)."""
    samples: dict[str, list[float]] = {}
    for measured in figures:
        for tid, seconds in measured.work.items():
            samples.setdefault(tid, []).append(seconds)
    estimates = workload.estimates()
    work = [statistics.median(samples[t]) if t in samples else estimates[t]
            for t in workload.task_ids]
    total = sum(work)
    lb = lower_bound(work, workers)
    cap_lb = capacity_lower_bound(
        work, workers, failed=failing, fail_at_s=kill_at or 0.0
    )
    rows = []
    for measured in figures:
        rows.append({
            "workers": workers,
            "failures": failing,
            "policy": measured.policy,
            "makespan_over_lb": round(measured.makespan_s / lb, 3),
            "worker_time_over_work": round(measured.held_s / total, 3),
            "tasks_lost": len(measured.lost),
            "makespan_s": round(measured.makespan_s, 3),
            "lb_s": round(lb, 3),
            "makespan_over_capacity_lb": round(measured.makespan_s / cap_lb, 3),
            "total_work_s": round(total, 3),
            "own_work_s": round(sum(measured.work.values()), 3),
            "longest_task_s": round(max(work), 3),
            "kill_at_s": None if kill_at is None else round(kill_at, 3),
            "tasks_retried": measured.retried,
        })
        if measured.gaps_ms:
            gaps = sorted(measured.gaps_ms)
            rows[-1].update({
                "gap_ms_median": round(statistics.median(gaps), 2),
                "gap_ms_p90": round(gaps[int(0.9 * (len(gaps) - 1))], 2),
                "gap_ms_max": round(gaps[-1], 2),
                "gaps": len(gaps),
            })
        if measured.wall_ms:
            rows[-1]["wall_ms_per_task"] = measured.wall_ms
    return rows


def verdicts(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One line per (W, drill) for the runner: the ratio that has a target, and the verdict.

    Without failure the ratio is makespan / LB; with workers killed it is makespan / capLB
    (the bound that knows the capacity lost at the kill).
    """
    lines = []
    for r in rows:
        if r["policy"] != "ours":
            continue
        key = "makespan_over_lb" if r["failures"] == 0 else "makespan_over_capacity_lb"
        name = "makespan/LB" if r["failures"] == 0 else "makespan/capLB"
        ratio = r[key]
        gap = (f", gap between tasks median {r['gap_ms_median']:.1f} ms p90 "
               f"{r['gap_ms_p90']:.1f} ms" if "gap_ms_median" in r else "")
        lines.append(
            f"dispatch W={r['workers']} killed={r['failures']}: {name} {ratio:.3f} "
            f"({'met' if ratio <= TARGET and r['tasks_lost'] == 0 else 'MISSED'} <= {TARGET}), "
            f"{r['tasks_lost']} lost, {r['tasks_retried']} retried{gap}"
        )
    return lines


def _table(rows: list[dict[str, Any]], header: dict[str, Any]) -> str:
    lines = [
        f"{header['tasks']} tasks, total work {header['total_work_s']} s (scale "
        f"{header['scale']}), seed {header['seed']}",
        f"{'W':>3} {'fail':>4} {'policy':<12} {'makespan':>9} {'LB':>7} {'mk/LB':>6} "
        f"{'mk/capLB':>8} {'held/work':>9} {'lost':>4}",
    ]
    for r in rows:
        lines.append(
            f"{r['workers']:>3} {r['failures']:>4} {r['policy']:<12} {r['makespan_s']:>8.2f}s "
            f"{r['lb_s']:>6.2f}s {r['makespan_over_lb']:>6.3f} "
            f"{r['makespan_over_capacity_lb']:>8.3f} {r['worker_time_over_work']:>9.3f} "
            f"{r['tasks_lost']:>4}"
        )
    for r in rows:
        if r.get("wall_ms_per_task"):
            lines.append(f"W={r['workers']} killed={r['failures']}: the runner's steps, wall ms "
                         "per task (summed over the workers' threads):")
            lines += [f"  {label:<48} {ms:9.3f}" for label, ms in r["wall_ms_per_task"].items()]
    return "\n".join([*lines, "", *verdicts(rows)])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; returns the exit status."""
    ap = parser(PROG, "The runner against WAA's static slices and round-robin dealing.")
    ap.add_argument("--workers", type=int, default=None, help="one W only (default 4, 8, 16)")
    ap.add_argument("--tasks", type=int, default=154, help="tasks (WAA's 154 by default)")
    ap.add_argument("--scale", choices=sorted(SCALES), default="full",
                    help="ideal makespan per configuration: tiny 0.5 s, small 5 s, full 10 s")
    ap.add_argument("--drills", choices=("both", "none", "failures"), default="both",
                    help="run without failures, with 2 workers killed, or both")
    ap.add_argument("--seed", type=int, default=SEED, help="seed of the durations and IDs")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder (run folders)")
    ap.add_argument("--reset", choices=("stock", "clean-or-stock"), default="stock",
                    help="the runner's reset before each task: stock (WAA's, as the stock "
                         "policies do; default) or clean-or-stock (the runner's default: a "
                         "clean restore of each local worker, counted as the task's work)")
    ap.add_argument("--profile", type=Path, metavar="FILE",
                    help="profile the runner's dispatch into FILE-<config> (pstats) and "
                         "FILE-<config>.txt (summary, per-task breakdown); its makespans then "
                         "include the profiler's cost")
    args = ap.parse_args(argv)
    if args.workers is not None and not 1 <= args.workers <= 64:
        raise BenchInputError(f"--workers must be between 1 and 64, not {args.workers}")
    if not 1 <= args.tasks <= 2000:
        raise BenchInputError(f"--tasks must be between 1 and 2000, not {args.tasks}")
    worker_counts = (args.workers,) if args.workers else DEFAULT_WORKERS
    counts = proportional_counts(domain_counts(WAA_DATA), args.tasks)
    rows: list[dict[str, Any]] = []
    header: dict[str, Any] = {}
    with isolated_home(keep=args.keep) as scratch:
        if args.keep:
            progress(f"scratch folder: {scratch}")
        for workers in worker_counts:
            ideal = SCALES[args.scale]
            workload = make_workload(counts, total_seconds=ideal * workers, seed=args.seed)
            folder = write_task_folder(workload.tasks, scratch / f"tasks-w{workers}")
            header = {"tasks": len(workload.tasks), "seed": args.seed, "scale": args.scale,
                      "total_work_s": round(workload.total_seconds, 2)}
            failing_options = {"both": (0, FAILING), "none": (0,), "failures": (FAILING,)}
            for failing in failing_options[args.drills]:
                # Never kill every worker: someone must be left to finish the work.
                failing = min(failing, workers - 1)
                if failing == 0 and args.drills == "failures":
                    continue
                rows += run_configuration(workers, failing, workload, folder, scratch,
                                          args.profile, args.reset)
    figures = {
        "results": rows,
        "machine": machine_info(),
        "workload": {
            "tasks": args.tasks,
            "domains": counts,
            "seed": args.seed,
            "scale": args.scale,
            "ideal_makespan_s": SCALES[args.scale],
            "estimates": "per-domain lognormal means plus the measured harness overhead per task "
            "(not the tasks' own durations)",
            "kill_at_fraction_of_expected_makespan": KILL_FRACTION,
            "reset": args.reset,
        },
    }
    emit(figures, args.json, _table(rows, header))
    return 0


if __name__ == "__main__":
    run_cli(main, PROG)
