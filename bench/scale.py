"""Scale benchmark: one controller (the runner) driving hundreds of simulated workers.

Two measurements, one after the other, each a real ``run_evaluation`` with the ``oracle`` agent
on short tasks whose every step carries realistic traffic (a screenshot padded to at least
200 KB and an accessibility tree):

1. **direct**: hundreds of workers on loopback, an ordinary local pool with several workers per
   process (``oa-vm pool-create --per-process N``), reached directly;
2. **tunnel**: a sample of workers (8 by default) reached directly (the baseline), then
   the same workers and tasks behind a real OpenSSH server on loopback,
   reached through :mod:`waa_client.ssh` tunnels as cloud workers are, once per backend
   (``--tunnel-backends openssh,paramiko``). Skipped with a note when ``/usr/sbin/sshd`` is
   missing.

Figures: tasks/s, steps/s, controller CPU ms per step (``getrusage(RUSAGE_SELF)`` of this
process, which is the controller; workers are other processes), MB of observations moved per
controller CPU second, the controller's peak RSS; for each tunnel backend, its CPU per MB (in the
controller and in the ``ssh`` child processes) and whether the controller's core would carry
200 workers taking a screenshot every 3 s.

Usage (from the repository root)::

    .venv/bin/python bench/scale.py [--workers 200] [--per-process 25] [--tasks 2000] [--json]
    .venv/bin/python bench/scale.py --workers 500 --tasks 3000 --json
    .venv/bin/python bench/scale.py --workers 100 --tasks 600 --tunnel-workers 0 \\
        --profile prof.pstats        # then read prof.pstats.txt, or python -m pstats prof.pstats
"""

from __future__ import annotations

import contextlib
import json
import os
import pstats
import resource
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
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
    remove_pool,
    run_cli,
)
from bench.profiling import ThreadProfiler, write_profile
from bench.workload import short_tasks, write_task_folder

PROG = "bench/scale.py"
SCREENSHOT_BYTES = 204_800
STEPS_SOLUTION = ["echo step-1", "echo step-2", "DONE"]  # three observed steps per task
SCREENSHOT_EVERY_S = 3.0
FLEET = 200


@dataclass
class Usage:
    """This process's CPU time and the wall clock at one moment."""

    cpu_s: float
    wall_s: float
    sys_s: float = 0.0
    """The part of ``cpu_s`` spent in the kernel (sockets, files, fsync, thread switches)."""

    @classmethod
    def now(cls) -> Usage:
        """Sample now."""
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return cls(ru.ru_utime + ru.ru_stime, time.monotonic(), ru.ru_stime)


@dataclass
class Measured:
    """One run of the controller, between the dispatcher's ``started`` and ``finished``."""

    workers: int
    tasks: int = 0
    steps: int = 0
    errors: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0
    sys_cpu_s: float = 0.0
    setup_cpu_s: float = 0.0
    setup_wall_s: float = 0.0
    worker_cpu_s: float = 0.0
    helper_cpu_s: float = 0.0
    client_cpu_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def _observation_bytes(waa_url: str) -> int:
    """Bytes of one step's observation: ``/obs_winagent`` plus ``/accessibility`` bodies."""
    import requests

    with requests.Session() as session:
        obs = session.get(f"{waa_url}/obs_winagent", timeout=30)
        tree = session.get(f"{waa_url}/accessibility", timeout=30)
    return len(obs.content) + len(tree.content)


def _cpu_of(pids: Sequence[int]) -> float:
    import psutil

    total = 0.0
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            times = psutil.Process(pid).cpu_times()
            total += times.user + times.system
    return total


def _sshd_cpu(listener_pid: int | None) -> float:
    """CPU seconds of the per-connection sshd processes (they serve the tunnels)."""
    import psutil

    if listener_pid is None:
        return 0.0
    try:
        children = psutil.Process(listener_pid).children(recursive=True)
    except psutil.Error:
        return 0.0
    return _cpu_of([c.pid for c in children])


def _ssh_client_cpu() -> float:
    """CPU seconds of this process's ``ssh`` children (the OpenSSH tunnels' forwarding)."""
    import psutil

    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        return 0.0
    ssh = []
    for child in children:
        with contextlib.suppress(psutil.Error):
            if child.name() == "ssh":
                ssh.append(child.pid)
    return _cpu_of(ssh)


def _measure_run(
    pool: str, run_name: str, results: Path, workers: int, worker_pids: Sequence[int],
    helper_pid: int | None = None, profile: Path | None = None,
) -> Measured:
    """Run every task of the pool's index once and measure the controller around dispatch
    (and profile it there, into ``profile``, when given)."""
    from evals.run.runner import RunConfig, RunEvent, run_evaluation

    marks: dict[str, Usage] = {}
    helper: dict[str, float] = {}
    before = Usage.now()
    workers_before = _cpu_of(worker_pids)
    profiler = ThreadProfiler() if profile is not None else None
    profiled: list[pstats.Stats] = []

    def on_event(event: RunEvent) -> None:
        # "started" and "finished" come from the dispatcher's calling thread, before its
        # worker threads start and after they ended.
        if event.kind == "started":
            marks["start"] = Usage.now()
            if profiler is not None:
                profiler.start()
        elif event.kind == "finished":
            if profiler is not None:
                stats = profiler.stop()
                if stats is not None:
                    profiled.append(stats)
            marks["end"] = Usage.now()
            # per-connection sshd processes end with the tunnels: sample them now
            helper["end"] = _sshd_cpu(helper_pid)
            helper["client_end"] = _ssh_client_cpu()

    helper["start"] = _sshd_cpu(helper_pid)

    def on_started(event: RunEvent) -> None:
        on_event(event)
        if event.kind == "started":  # the tunnels are open by now
            helper["client_start"] = _ssh_client_cpu()
    config = RunConfig(
        pool=pool, selection="all", agent="oracle", run_name=run_name, results_dir=results,
        task_timeout_s=120.0, read_timeout_s=60.0,
    )
    result = run_evaluation(config, on_event=on_started)
    start, end = marks["start"], marks["end"]
    measured = Measured(workers=workers)
    measured.wall_s = end.wall_s - start.wall_s
    measured.cpu_s = end.cpu_s - start.cpu_s
    measured.sys_cpu_s = end.sys_s - start.sys_s
    measured.setup_cpu_s = start.cpu_s - before.cpu_s
    measured.setup_wall_s = start.wall_s - before.wall_s
    measured.worker_cpu_s = _cpu_of(worker_pids) - workers_before
    measured.helper_cpu_s = helper.get("end", 0.0) - helper.get("start", 0.0)
    measured.client_cpu_s = helper.get("client_end", 0.0) - helper.get("client_start", 0.0)
    for path in (result.run_dir / "tasks").glob("*/execution.json"):
        record = json.loads(path.read_text(encoding="utf-8"))
        measured.tasks += 1
        measured.steps += len(record.get("steps") or [])
        measured.errors += 1 if record["status"] not in ("success", "failure") else 0
    if profile is not None and profiled:
        write_profile(profiled[0], profile, ("step", measured.steps))
    shutil.rmtree(result.run_dir, ignore_errors=True)  # gigabytes of screenshots
    return measured


def _figures(m: Measured, observation_bytes: int) -> dict[str, Any]:
    moved_mb = m.steps * observation_bytes / 1e6
    return {
        "workers": m.workers,
        "tasks": m.tasks,
        "steps": m.steps,
        "errors": m.errors,
        "wall_s": round(m.wall_s, 2),
        "tasks_per_s": round(m.tasks / m.wall_s, 2),
        "steps_per_s": round(m.steps / m.wall_s, 2),
        "controller_cpu_s": round(m.cpu_s, 2),
        "controller_cpu_ms_per_step": round(1000 * m.cpu_s / max(1, m.steps), 2),
        "controller_cpu_cores": round(m.cpu_s / m.wall_s, 2),
        "controller_sys_cpu_ms_per_step": round(1000 * m.sys_cpu_s / max(1, m.steps), 2),
        "controller_setup_cpu_s": round(m.setup_cpu_s, 2),
        "controller_setup_wall_s": round(m.setup_wall_s, 2),
        "observation_bytes_per_step": observation_bytes,
        "mb_moved": round(moved_mb, 1),
        "mb_per_controller_cpu_s": round(moved_mb / m.cpu_s, 1) if m.cpu_s else None,
        "worker_cpu_ms_per_step": round(1000 * m.worker_cpu_s / max(1, m.steps), 2),
    }


def run_direct(
    scratch: Path, workers: int, per_process: int, tasks: int, profile: Path | None = None,
    *, label: str = "direct", seed: int = 11,
) -> dict[str, Any]:
    """The fleet reached directly; returns its figures.

    The pool is an ordinary local pool with ``per_process`` workers in each process
    (``oa-vm pool-create --per-process``), so hundreds of workers cost tens of interpreters.
    With ``profile``, the controller's dispatch is profiled into that ``pstats`` file (its CPU
    figures then include the profiler's own cost). ``label`` names the pool, folder and run
    (the tunnels' baseline is a second, small direct run); ``seed`` draws the task IDs.
    """
    folder = write_task_folder(
        short_tasks(tasks, seed=seed), scratch / f"tasks-{label}", solution=STEPS_SOLUTION
    )
    progress(f"{label}: starting {workers} workers, {per_process} per process")
    pool = f"bench-{label}"
    try:
        create_local_pool(
            pool, workers, tasks_dir=str(folder), per_process=per_process,
            faults={"screenshot-min-bytes": str(SCREENSHOT_BYTES)},
        )
        from oa_vm.model import state

        record = state.load(pool)
        pids = sorted({w.pid for w in record.workers if w.pid is not None})
        first = record.workers[0]
        assert first.waa_url is not None
        obs_bytes = _observation_bytes(first.waa_url)
        progress(f"{label}: running {tasks} tasks")
        measured = _measure_run(
            pool, f"scale-{label}", scratch / "results", workers, pids, profile=profile
        )
    finally:
        remove_pool(pool)
    figures = _figures(measured, obs_bytes)
    figures["processes"] = len(pids)
    figures["peak_rss_mb"] = round(_peak_rss_mb(), 1)
    return figures


@contextlib.contextmanager
def _ssh_server(scratch: Path) -> Iterator[Any]:
    from tests.support.sshd import SshServer

    server = SshServer(scratch / "sshd")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def run_tunnel(scratch: Path, workers: int, tasks: int, backend: str) -> dict[str, Any]:
    """A sample of workers behind the test SSH server, tunnelled with ``backend``
    (``openssh`` or ``paramiko``); returns its figures (or a skip note)."""
    from tests.support.sshd import sshd_available
    from waa_client.ssh import ssh_binary

    if not sshd_available():
        return {"skipped": "OpenSSH server not installed (/usr/sbin/sshd); tunnel not measured"}
    if backend == "openssh" and ssh_binary() is None:
        return {"skipped": "no ssh client installed; OpenSSH tunnels not measured"}
    folder = write_task_folder(
        short_tasks(tasks, seed=12), scratch / f"tasks-tunnel-{backend}", solution=STEPS_SOLUTION
    )
    pool = f"bench-tunnel-{backend}"
    previous = os.environ.get("OA_VM_SSH_BACKEND")
    os.environ["OA_VM_SSH_BACKEND"] = backend
    try:
        with _ssh_server(scratch / backend) as sshd:
            progress(f"tunnel ({backend}): starting {workers} workers behind sshd on port "
                     f"{sshd.port}")
            try:
                create_local_pool(
                    pool, workers, tasks_dir=str(folder),
                    faults={"screenshot-min-bytes": str(SCREENSHOT_BYTES)},
                    ssh_via={"host": sshd.host, "port": sshd.port, "user": sshd.user,
                             "key_path": str(sshd.client_key)},
                )
                from oa_vm.model import state

                record = state.load(pool)
                pids = [w.pid for w in record.workers if w.pid is not None]
                assert record.workers[0].waa_url is not None
                obs_bytes = _observation_bytes(record.workers[0].waa_url)
                progress(f"tunnel ({backend}): running {tasks} tasks")
                measured = _measure_run(
                    pool, f"scale-tunnel-{backend}", scratch / "results", workers, pids,
                    helper_pid=sshd.pid,
                )
            finally:
                remove_pool(pool)
    finally:
        if previous is None:
            os.environ.pop("OA_VM_SSH_BACKEND", None)
        else:
            os.environ["OA_VM_SSH_BACKEND"] = previous
    figures = _figures(measured, obs_bytes)
    figures["backend"] = backend
    figures["sshd_cpu_ms_per_step"] = round(
        1000 * measured.helper_cpu_s / max(1, measured.steps), 2
    )
    figures["ssh_client_cpu_s"] = round(measured.client_cpu_s, 2)
    return figures


def tunnel_capacity(direct: dict[str, Any], tunnel: dict[str, Any]) -> dict[str, Any]:
    """What the tunnel costs per MB and whether one core carries a 200-worker fleet.

    The tunnel's own cost is the controller CPU per MB with tunnels minus that without
    (paramiko forwards in the controller's threads) plus the CPU of the ``ssh`` child
    processes per MB (OpenSSH forwards there; zero for paramiko). ``direct`` is the run
    without tunnels to subtract: the baseline of the same workers and tasks reached directly
    (the 500-worker run costs more per MB than 8 workers do, for reasons of its own, and
    subtracting it hid most of paramiko's cost).
    """
    if "skipped" in tunnel:
        return {"skipped": tunnel["skipped"]}
    mb_direct = direct["mb_moved"]
    mb_tunnel = tunnel["mb_moved"]
    cpu_per_mb_direct = direct["controller_cpu_s"] / mb_direct
    cpu_per_mb_tunnel = tunnel["controller_cpu_s"] / mb_tunnel
    client_per_mb = tunnel.get("ssh_client_cpu_s", 0.0) / mb_tunnel
    in_controller = max(cpu_per_mb_tunnel - cpu_per_mb_direct, 0.0)
    tunnel_cpu_per_mb = max(in_controller + client_per_mb, 1e-9)
    needed = FLEET / SCREENSHOT_EVERY_S * tunnel["observation_bytes_per_step"] / 1e6
    per_core = 1.0 / tunnel_cpu_per_mb
    whole_per_core = 1.0 / cpu_per_mb_tunnel
    return {
        "backend": tunnel.get("backend"),
        "tunnel_cpu_ms_per_mb": round(1000 * tunnel_cpu_per_mb, 2),
        "tunnel_cpu_ms_per_mb_in_controller": round(1000 * in_controller, 2),
        "tunnel_cpu_ms_per_mb_in_ssh_processes": round(1000 * client_per_mb, 2),
        "tunnel_mb_per_s_per_core": round(per_core, 1),
        "controller_with_tunnels_mb_per_s_per_core": round(whole_per_core, 1),
        "fleet_need_mb_per_s": round(needed, 1),
        "fleet": f"{FLEET} workers, one observation every {SCREENSHOT_EVERY_S:g} s",
        "one_core_carries_fleet": whole_per_core >= needed,
        "cores_needed": round(needed / whole_per_core, 2),
    }


def _peak_rss_mb() -> float:
    # ru_maxrss is in KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _text(figures: dict[str, Any]) -> str:
    lines = []
    parts = [("direct", figures["direct"]), ("tunnel baseline", figures["tunnel_baseline"])] + [
        (f"tunnel {name}", data) for name, data in figures["tunnels"].items()
    ]
    for part, data in parts:
        if "skipped" in data:
            lines.append(f"{part}: skipped ({data['skipped']})")
            continue
        lines.append(
            f"{part}: {data['workers']} workers, {data['tasks']} tasks, {data['steps']} steps "
            f"in {data['wall_s']} s: {data['tasks_per_s']} tasks/s, {data['steps_per_s']} "
            f"steps/s, controller {data['controller_cpu_ms_per_step']} ms CPU/step, "
            f"{data['mb_per_controller_cpu_s']} MB per CPU s, {data['errors']} errors"
        )
    lines.append(f"controller peak RSS: {figures['direct'].get('peak_rss_mb')} MB")
    for name, cap in figures["tunnel_capacity"].items():
        if "skipped" in cap:
            continue
        lines.append(
            f"tunnel {name}: {cap['tunnel_cpu_ms_per_mb']} ms CPU per MB "
            f"({cap['tunnel_mb_per_s_per_core']} MB/s per core); a fleet of {cap['fleet']} "
            f"needs {cap['fleet_need_mb_per_s']} MB/s: the controller's core carries it: "
            f"{cap['one_core_carries_fleet']} ({cap['cores_needed']} of its core needed)"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; returns the exit status."""
    ap = parser(PROG, "One controller driving hundreds of simulated workers.")
    ap.add_argument("--workers", type=int, default=200, help="workers reached directly")
    ap.add_argument("--per-process", type=int, default=25, help="workers per process")
    ap.add_argument("--tasks", type=int, default=2000, help="tasks for the direct run")
    ap.add_argument("--tunnel-workers", type=int, default=8, help="workers behind sshd (0: skip)")
    ap.add_argument("--tunnel-tasks", type=int, default=240, help="tasks for the tunnel run")
    ap.add_argument("--tunnel-backends", default="openssh,paramiko",
                    help="SSH backends to measure, comma-separated (openssh, paramiko)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--profile", type=Path, metavar="FILE",
                    help="profile the direct run's dispatch (every thread, CPU time) into this "
                         "pstats file, with a text summary in FILE.txt; CPU figures then "
                         "include the profiler's cost")
    args = ap.parse_args(argv)
    for name in ("workers", "per_process", "tasks"):
        if getattr(args, name) < 1:
            raise BenchInputError(f"--{name.replace('_', '-')} must be at least 1")
    if args.profile is not None and not args.profile.resolve().parent.is_dir():
        raise BenchInputError(f"--profile: the folder of {args.profile} does not exist")
    if args.workers > 1000 or args.tasks > 20000:
        raise BenchInputError("--workers is limited to 1000 and --tasks to 20000")
    if args.tunnel_workers < 0 or args.tunnel_tasks < 1:
        raise BenchInputError("--tunnel-workers must be 0 or more and --tunnel-tasks at least 1")
    backends = [b.strip() for b in args.tunnel_backends.split(",") if b.strip()]
    if not backends or any(b not in ("openssh", "paramiko") for b in backends):
        raise BenchInputError("--tunnel-backends takes openssh, paramiko or both")
    with isolated_home() as scratch:
        profile = args.profile.resolve() if args.profile is not None else None
        direct = run_direct(scratch, args.workers, args.per_process, args.tasks, profile)
        tunnels: dict[str, dict[str, Any]] = {}
        baseline: dict[str, Any] = {"skipped": "--tunnel-workers 0"}
        if args.tunnel_workers:
            # the tunnels' workers and tasks, reached directly: what the tunnels add is measured
            # against this, like for like
            baseline = run_direct(
                scratch, args.tunnel_workers, 1, args.tunnel_tasks, label="baseline", seed=12
            )
        for backend in backends:
            if args.tunnel_workers:
                tunnels[backend] = run_tunnel(
                    scratch, args.tunnel_workers, args.tunnel_tasks, backend
                )
            else:
                tunnels[backend] = {"skipped": "--tunnel-workers 0"}
    figures = {
        "direct": direct,
        "tunnel_baseline": baseline,
        "tunnels": tunnels,
        "tunnel_capacity": {
            b: tunnel_capacity(baseline, t) if "skipped" not in baseline else {"skipped": "-"}
            for b, t in tunnels.items()
        },
        "targets": {"controller_cpu_ms_per_step_direct": 5.0, "peak_rss_mb": 500.0},
        "machine": machine_info(),
    }
    emit(figures, args.json, _text(figures))
    return 0


if __name__ == "__main__":
    run_cli(main, PROG)
