"""The local "cloud": simulated Windows Agent Arena workers on loopback.

A simulated worker speaks WAA's HTTP protocol (the guest's server and the scoring server) over a
sandboxed desktop, so pools, sweeps, tests and benchmarks run without a cloud account. Run it as
``python -m infra.local`` (see ``docs/local-worker.md``) or in-process with :func:`start_worker`.
"""

from __future__ import annotations

from infra.local.faults import FaultError, Faults, parse_faults
from infra.local.taskstore import tasks_dir
from infra.local.worker import RunningWorker, start_worker

__all__ = ["FaultError", "Faults", "RunningWorker", "parse_faults", "start_worker", "tasks_dir"]
