"""What a pool costs: running hours at the compute price, paused days at the storage price.

Kept apart from :mod:`oa_vm.pricing` (the price catalog and its live sources) and free of heavy
imports, because ``oa-vm pool-status`` and ``pool-list`` show these figures and must start fast.

A pause is recorded in ``record.provider_data["pauses"]`` as ``{"from", "to", "per_day"}``
(``to`` is None while the pool is paused): while paused a pool pays only for what it keeps, its
disks (and, on Azure, static addresses), at ``per_day`` dollars per day for the whole pool.

Storage rates (list prices, on-demand, checked November 2026; the catalog's regions differ by a
few percent at most):

- AWS EBS gp3: $0.08 per GB-month (us-east-1), https://aws.amazon.com/ebs/pricing/. A stopped
  instance keeps its volumes and releases its automatic public IPv4 address, which is then not
  billed (https://aws.amazon.com/vpc/pricing/: $0.005 per hour only while in use).
- Azure Premium SSD P10 (128 GiB): $19.71 per month (East US),
  https://azure.microsoft.com/pricing/details/managed-disks/; a Standard static public IP is
  billed while allocated, deallocated VM or not: $0.005 per hour,
  https://azure.microsoft.com/pricing/details/ip-addresses/.
"""

from __future__ import annotations

from datetime import datetime

from oa_vm import state
from oa_vm.state import PoolRecord

# typing is not imported at run time: these modules are on pool-status's start-up path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

HOURS_PER_MONTH = 730.0
AWS_GP3_PER_GB_MONTH = 0.08
AZURE_P10_PER_MONTH = 19.71  # 128 GiB Premium SSD, the pools' OS disk
AZURE_P10_GB = 128
AZURE_STATIC_IP_PER_HOUR = 0.005


def paused_price_per_day(cloud: str, workers: int, disk_gb: int = 128) -> float:
    """Dollars per day for a paused pool of ``workers`` on ``cloud``: disks and addresses only.

    A local pool rents nothing, so it costs nothing paused.
    """
    if cloud == "aws":
        per_worker = disk_gb * AWS_GP3_PER_GB_MONTH * 24.0 / HOURS_PER_MONTH
    elif cloud == "azure":
        disk = AZURE_P10_PER_MONTH * max(1.0, disk_gb / AZURE_P10_GB) * 24.0 / HOURS_PER_MONTH
        per_worker = disk + AZURE_STATIC_IP_PER_HOUR * 24.0
    else:
        per_worker = 0.0
    return per_worker * workers


def pauses(record: PoolRecord) -> list[dict[str, Any]]:
    """The pool's pauses, oldest first (a copy)."""
    return [dict(p) for p in record.provider_data.get("pauses") or []]


def paused_since(record: PoolRecord) -> datetime | None:
    """When the current pause began, or None when the pool is not paused."""
    items = pauses(record)
    if items and items[-1].get("to") is None:
        return state.parse_time(str(items[-1]["from"]))
    return None


def current_paused_per_day(record: PoolRecord) -> float | None:
    """Dollars per day while paused, for the current pause (None when not paused)."""
    items = pauses(record)
    if items and items[-1].get("to") is None:
        return float(items[-1].get("per_day") or 0.0)
    return None


def _workers(record: PoolRecord) -> int:
    workers = len(record.workers)
    if workers == 0:
        requested = record.settings.get("workers")
        workers = requested if isinstance(requested, int) and requested > 0 else 0
    return workers


def pool_cost_so_far(record: PoolRecord, now: datetime | None = None) -> float:
    """What a pool has cost since it was created.

    Running time (uptime minus paused time) x price per worker-hour x workers, plus each
    pause's length x its price per day. Time stops at the pool's expiry, when the cloud-side
    kill switch (or ``pool-cleanup --expired`` for a paused pool) ends billing. A pool without a
    price (``price_per_hour`` None, e.g. a local pool) costs 0.0 running.
    """
    end = now or state.utcnow()
    if record.expires_at is not None and record.expires_at < end:
        end = record.expires_at
    total_s = max(0.0, (end - record.created_at).total_seconds())
    paused_s = 0.0
    paused_cost = 0.0
    for item in pauses(record):
        began = state.parse_time(str(item["from"]))
        stopped = state.parse_time(item["to"]) if item.get("to") else end
        if began is None or stopped is None:
            continue
        seconds = max(0.0, (min(stopped, end) - max(began, record.created_at)).total_seconds())
        paused_s += seconds
        paused_cost += seconds / 86400.0 * float(item.get("per_day") or 0.0)
    running_h = max(0.0, total_s - paused_s) / 3600.0
    running = 0.0 if record.price_per_hour is None else (
        running_h * float(record.price_per_hour) * _workers(record)
    )
    return running + paused_cost
