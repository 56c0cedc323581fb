"""The local "cloud": simulated Windows Agent Arena workers on loopback.

A simulated worker speaks WAA's HTTP protocol (the guest's server and the scoring server) over a
sandboxed desktop, so pools, sweeps, tests and benchmarks run without a cloud account. Run it as
``python -m infra.local`` (see ``docs/local-worker.md``) or in-process with :func:`start_worker`.

The names below are imported on first use: the task store (:func:`tasks_dir`, which every
``--help`` naming the local suite's indexes reads) must not load the worker's code.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from infra.local.faults import FaultError, Faults, parse_faults
    from infra.local.taskstore import tasks_dir
    from infra.local.worker import RunningWorker, start_worker

_HOMES = {
    "FaultError": "faults", "Faults": "faults", "parse_faults": "faults",
    "tasks_dir": "taskstore", "RunningWorker": "worker", "start_worker": "worker",
}

__all__ = ["FaultError", "Faults", "RunningWorker", "parse_faults", "start_worker", "tasks_dir"]


def __getattr__(name: str) -> Any:
    """The public name ``name``, imported from its module on first use."""
    if name not in _HOMES:
        raise AttributeError(f"module 'infra.local' has no attribute {name!r}")
    return getattr(importlib.import_module(f"infra.local.{_HOMES[name]}"), name)
