"""Whether this machine's memory holds a local pool, known before a process is started.

A local pool's workers are processes of this machine: a pool larger than its memory does not
fail on its own, the kernel's out-of-memory killer picks its victims among everything the user
runs. The estimate fits two measurements (``ps``'s resident size at its peak while an
``oracle`` run of the local suite used the workers): one worker a process peaked at 40 MB, ten
workers in one process (``--per-process 10``) at 89 MB. So a process is :data:`PROCESS_MB` and
each worker it serves adds :data:`WORKER_MB` (40 and 94 MB by the estimate). A browser that a
Cua-Bench or OpenApps task opens is not counted: the pool cannot know its tasks.
"""

from __future__ import annotations

from pathlib import Path

from oa_vm.kit.lazy import psutil

MAX_PER_PROCESS = 100
"""The most workers one process serves (``--per-process``)."""

PROCESS_MB = 34
"""A worker process without its workers (an idle one measured 26 to 30 MB resident)."""

WORKER_MB = 6
"""What each worker adds to its process while it runs tasks (see the module docstring)."""

_CGROUPS = Path("/sys/fs/cgroup")
_OWN_GROUPS = Path("/proc/self/cgroup")
# (limit, usage) file names: cgroup v2 (``0::/path``), then v1's memory controller
_V2 = ("memory.max", "memory.current")
_V1 = ("memory.limit_in_bytes", "memory.usage_in_bytes")


def processes(workers: int, per_process: int) -> int:
    """How many processes serve ``workers`` workers, ``per_process`` of them in each."""
    return -(-workers // per_process)


def needed_mb(workers: int, per_process: int) -> int:
    """The memory ``workers`` workers take, ``per_process`` of them in each process."""
    return processes(workers, per_process) * PROCESS_MB + workers * WORKER_MB


def available_mb() -> float:
    """What this machine can still give, in MB: the kernel's ``MemAvailable`` (psutil), or less
    where this process's control group (a container's memory limit) leaves less."""
    free = psutil.virtual_memory().available
    try:
        lines = _OWN_GROUPS.read_text(encoding="utf-8").splitlines()
    except OSError:
        lines = []
    for line in lines:  # "0::/path" (v2), "4:memory:/path" (v1)
        number, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        kind = _V2 if number == "0" else _V1 if "memory" in controllers.split(",") else None
        if kind is None:
            continue
        mount = _CGROUPS if kind is _V2 else _CGROUPS / "memory"
        # the group's own folder, or the mount's root where a container sees only its own
        for folder in (mount / path.lstrip("/"), mount):
            left = _left_in(folder, kind)
            if left is not None:
                free = min(free, left)
                break
    return free / 2**20


def _left_in(folder: Path, names: tuple[str, str]) -> int | None:
    """Bytes the group at ``folder`` may still take (None: no limit, or not readable)."""
    try:
        limit, used = ((folder / name).read_text(encoding="ascii").strip() for name in names)
    except OSError:
        return None
    # v1 writes "no limit" as a page-rounded 2**63 - 1; v2 as "max"
    if not (limit.isdigit() and used.isdigit()) or int(limit) >= 2**62:
        return None
    return max(0, int(limit) - int(used))


def memory_problem(workers: int, per_process: int, available: float | None = None) -> str | None:
    """Why this machine cannot hold the pool (``None`` when it can), with what would fit:
    fewer workers, or several workers a process (``oa-vm pool-create --per-process``).

    Args:
        workers: The pool's workers.
        per_process: Workers served by each process.
        available: MB available (default: :func:`available_mb`).
    """
    free = available_mb() if available is None else available
    need = needed_mb(workers, per_process)
    if need <= free:
        return None
    said = (f"--workers {workers}: {processes(workers, per_process)} local worker process(es) "
            f"need about {_gb(need)} of memory, and this machine has {_gb(free)} available")
    fit = max((n for n in range(1, workers) if needed_mb(n, per_process) <= free), default=0)
    group = next((g for g in range(per_process + 1, MAX_PER_PROCESS + 1)
                  if needed_mb(workers, g) <= free), None)
    ways = ([f"use at most --workers {fit}"] if fit else []) + (
        [f"serve {group} workers from each process (oa-vm pool-create --per-process {group})"]
        if group else [])
    return f"{said}; {', or '.join(ways) or 'free some memory first'}"


def _gb(mb: float) -> str:
    return f"{mb / 1024:.1f} GB"
