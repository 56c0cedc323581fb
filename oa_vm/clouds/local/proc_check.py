"""A read-only check that a local pool's worker processes are as its record says, from ``/proc``.

``oa-vm pool-status`` and ``pool-list`` refresh local pools through the local provider, which
identifies each worker's process with ``psutil`` (PID, start time, command line). Importing
``psutil`` and the provider is a third of those commands' start-up. On Linux the same facts are
three small files under ``/proc``, so :func:`record_is_current` answers the common case, "every
process is still there and still ours", without them. It only ever says "current" when the
provider's own check would find nothing to change; any doubt (a process gone, a zombie, a worker
still starting, no ``/proc``) answers False and the caller refreshes through the provider.
"""

from __future__ import annotations

import os

from oa_vm.kit.process_start import boot_id, mark_of, same_start
from oa_vm.model.state import PoolRecord, WorkerRecord, WorkerState, derive_pool_state


def _boot_time() -> float | None:
    try:
        with open("/proc/stat", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except OSError:
        return None
    return None


def _process_is(worker: WorkerRecord, boot: float, boot_mark: str = "") -> bool:
    """The worker's PID runs, is no zombie, started as recorded (by its start mark when it has
    one and the boot's ID ``boot_mark`` is known, else by the wall-clock start: see
    :mod:`oa_vm.kit.process_start`), and runs ``infra.local`` from the worker's folder."""
    if worker.pid is None or not worker.workdir or (
            worker.pid_create_time is None and worker.pid_start_mark is None):
        return False
    try:
        with open(f"/proc/{worker.pid}/stat", encoding="ascii", errors="replace") as handle:
            stat = handle.read()
        with open(f"/proc/{worker.pid}/cmdline", "rb") as handle:
            cmdline = handle.read().split(b"\0")
    except OSError:
        return False
    fields = stat[stat.rfind(")") + 2:].split()
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return False
    if worker.pid_start_mark is not None and boot_mark:
        if mark_of(boot_mark, stat) != worker.pid_start_mark:
            return False
    elif worker.pid_create_time is None or not same_start(
            worker.pid_create_time, boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")):
        return False
    args = [a.decode("utf-8", "surrogateescape") for a in cmdline if a]
    return "infra.local" in args and worker.workdir in args


def record_is_current(record: PoolRecord) -> bool:
    """True when refreshing this local pool's record would change nothing (see the module)."""
    boot = _boot_time()
    if boot is None:
        return False
    this_boot = boot_id()
    for worker in record.workers:
        if worker.state in (WorkerState.STOPPED, WorkerState.LOST, WorkerState.PAUSED):
            continue
        if worker.waa_url is None or not _process_is(worker, boot, this_boot):
            return False
    return record.state == derive_pool_state(record.workers)
