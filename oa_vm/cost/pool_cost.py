"""What a pool costs: running hours at the compute price, paused days at the storage price.

Kept apart from :mod:`oa_vm.cost.pricing` (the price catalog and its live sources) and free of heavy
imports, because ``oa-vm pool-status`` and ``pool-list`` show these figures and must start fast.

A pause is recorded in ``record.provider_data["pauses"]`` as ``{"from", "to", "per_day"}``
(``to`` is None while the pool is paused): while paused a pool pays only for what it keeps, its
disks (and, on Azure, static addresses), at ``per_day`` dollars per day for the whole pool.

Storage rates (list prices, on-demand, checked November 2026; the catalog's regions differ by a
few percent at most):

- AWS EBS gp3: $0.08 per GB-month (us-east-1), https://aws.amazon.com/ebs/pricing/. A stopped
  instance keeps its volumes and releases its automatic public IPv4 address, which is then not
  billed (https://aws.amazon.com/vpc/pricing/: $0.005 per hour only while in use).
- Azure managed disks bill by tier, not by GB: a disk is billed as the smallest tier that
  holds it (a 160 GB disk as P15, 256 GiB), https://learn.microsoft.com/azure/virtual-machines/
  disks-understand-billing. Premium SSD (East US): P10 128 GiB $19.71, P15 256 GiB $38.01,
  P20 512 GiB $73.22, P30 1 TiB $135.17, P40 2 TiB $259.05, P50 4 TiB $495.57 per month;
  Standard SSD (sizes without ``s``, :func:`infra.sizes.azure_disk_type`): E10 $9.60, E15
  $19.20, E20 $38.40, E30 $76.80, E40 $153.60, E50 $307.20,
  https://azure.microsoft.com/pricing/details/managed-disks/. Disks of 128 GiB or less are
  priced as the 128 GiB tier (the pools' disks are never smaller than 64 GB): an estimate that
  never comes out below the bill. A Standard static public IP is
  billed while allocated, deallocated VM or not: $0.005 per hour,
  https://azure.microsoft.com/pricing/details/ip-addresses/.
"""

from __future__ import annotations

from datetime import datetime

from infra.sizes import PREMIUM_SSD, STANDARD_SSD, azure_disk_type
from oa_vm.model import state
from oa_vm.model.state import PoolRecord

# typing is not imported at run time: these modules are on pool-status's start-up path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

HOURS_PER_MONTH = 730.0
AWS_GP3_PER_GB_MONTH = 0.08
AZURE_P10_PER_MONTH = 19.71  # 128 GiB Premium SSD
AZURE_P10_GB = 128
AZURE_STATIC_IP_PER_HOUR = 0.005
AZURE_PREMIUM = PREMIUM_SSD
AZURE_STANDARD_SSD = STANDARD_SSD
AZURE_DISK_TIERS: dict[str, tuple[tuple[str, int, float], ...]] = {
    # (tier, GiB, $/month), smallest first
    AZURE_PREMIUM: (
        ("P10", 128, 19.71), ("P15", 256, 38.01), ("P20", 512, 73.22), ("P30", 1024, 135.17),
        ("P40", 2048, 259.05), ("P50", 4096, 495.57),
    ),
    AZURE_STANDARD_SSD: (
        ("E10", 128, 9.60), ("E15", 256, 19.20), ("E20", 512, 38.40), ("E30", 1024, 76.80),
        ("E40", 2048, 153.60), ("E50", 4096, 307.20),
    ),
}


def azure_disk_tier(size_gb: int, disk_type: str = AZURE_PREMIUM) -> tuple[str, int, float]:
    """The tier an Azure disk of ``size_gb`` bills as: ``(name, GiB, $/month)`` (160 -> P15).

    Raises:
        ValueError: a disk larger than the biggest tier listed, or an unknown disk type.
    """
    tiers = AZURE_DISK_TIERS.get(disk_type)
    if tiers is None:
        raise ValueError(f"no tier prices for Azure disk type {disk_type!r}")
    for tier in tiers:
        if size_gb <= tier[1]:
            return tier
    raise ValueError(f"an Azure disk of {size_gb} GiB is beyond the tiers priced here")


def disk_price_per_month(cloud: str, size_gb: int, disk_type: str = AZURE_PREMIUM) -> float:
    """What one disk of ``size_gb`` costs per month: by the GB on AWS (gp3), by the tier on
    Azure (``disk_type`` picks Premium or Standard SSD); 0 elsewhere."""
    if cloud == "aws":
        return size_gb * AWS_GP3_PER_GB_MONTH
    if cloud == "azure":
        return azure_disk_tier(size_gb, disk_type)[2]
    return 0.0


def paused_price_per_day(
    cloud: str, workers: int, disk_gb: int = 128, *, disks: tuple[int, ...] | None = None,
    disk_type: str = AZURE_PREMIUM,
) -> float:
    """Dollars per day for a paused pool of ``workers`` on ``cloud``: disks and addresses only.

    ``disks`` are one worker's disk sizes (OS disk, storage); without them one disk of
    ``disk_gb``. Azure bills each disk by its tier, so the sizes must be given apart. A local
    pool rents nothing, so it costs nothing paused.
    """
    sizes = disks if disks else (disk_gb,)
    if cloud not in ("aws", "azure"):
        return 0.0
    monthly = sum(disk_price_per_month(cloud, size, disk_type) for size in sizes)
    per_worker = monthly * 24.0 / HOURS_PER_MONTH
    if cloud == "azure":
        per_worker += AZURE_STATIC_IP_PER_HOUR * 24.0
    return per_worker * workers


def paused_price_of(record: PoolRecord) -> float:
    """:func:`paused_price_per_day` for a pool record: its workers, each with its OS disk and
    storage volume (from the record's settings), of the disk type its size takes."""
    disks = tuple(
        int(value) for key in ("disk_gb", "storage_gb")
        if isinstance(value := record.settings.get(key), int | float) and value > 0
    )
    disk_type = AZURE_PREMIUM
    size = record.settings.get("size")
    if record.cloud == "azure" and isinstance(size, str):
        disk_type = azure_disk_type(size)
    return paused_price_per_day(
        record.cloud, len(record.workers), disks=disks or (128,), disk_type=disk_type
    )


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


KEEPS_BILLING_DEALLOCATED = {
    "azure": "disks and public IPs",
    "aws": "volumes",
}
"""What a stopped (AWS) or deallocated (Azure) worker still bills for (its compute does not)."""


def after_expiry_per_day(record: PoolRecord) -> float:
    """Dollars per day the pool keeps costing once it has expired, until ``oa-vm
    pool-cleanup`` removes it: on Azure the expiry only deallocates the VMs, whose disks and
    public IPs keep billing (:func:`paused_price_of`); on AWS the expiry terminates the
    instances and their volumes go with them (0); a local pool rents nothing (0)."""
    return paused_price_of(record) if record.cloud == "azure" else 0.0


def pool_cost_so_far(record: PoolRecord, now: datetime | None = None) -> float:
    """What a pool has cost since it was created.

    Running time (uptime minus paused time) x price per worker-hour x workers, plus each
    pause's length x its price per day. The workers' time stops at the pool's expiry, when the
    cloud-side kill switch ends it; what the kill switch leaves billing (an Azure pool's disks
    and public IPs, :func:`after_expiry_per_day`) is counted on from then until now. A pool
    without a price (``price_per_hour`` None, e.g. a local pool) costs 0.0 running.
    """
    end = now or state.utcnow()
    after = 0.0
    if record.expires_at is not None and record.expires_at < end:
        after = (end - record.expires_at).total_seconds() / 86400.0 * after_expiry_per_day(record)
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
    return running + paused_cost + after
