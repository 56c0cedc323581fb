"""What a pool costs: running hours at the compute price, paused days at the storage price.

Kept apart from :mod:`oa_vm.cost.pricing` (the price catalog and its live sources) and free of heavy
imports, because ``oa-vm pool-status`` and ``pool-list`` show these figures and must start fast.

A pause is recorded in ``record.provider_data["pauses"]`` as ``{"from", "to", "per_day"}``
(``to`` is None while the pool is paused): while paused a pool pays only for what it keeps, its
disks (and, on Azure, static addresses), at ``per_day`` dollars per day for the whole pool.

Storage rates are each cloud's, declared with its provider
(:class:`Billing`: ``oa_vm/clouds/<name>/__init__.py``). One host keeps one OS
disk and one address, and one storage disk for each of its workers (``--workers-per-host``).
"""

from __future__ import annotations

from datetime import datetime

from oa_vm.model import state
from oa_vm.model.state import PoolRecord

# typing is not imported at run time: these modules are on pool-status's start-up path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    class Billing(Protocol):
        """How a cloud bills what a pool keeps while its compute is stopped (paused, or deallocated
        by the expiry): disks and addresses. One host has one OS disk and one public address, and
        one storage disk per worker on it (``--workers-per-host``)."""

        keeps: str
        """What a stopped worker still bills for (``"volumes"``)."""
        address_per_hour: float
        """A host's public address while its compute is stopped ($/hour; 0 when released)."""
        snapshot_per_gb_month: float
        """An image's snapshot storage ($ per GB-month)."""
        not_priced: tuple[str, ...]
        """What a plan's price leaves out, one item each."""
        bills_after_expiry: tuple[str, ...]
        """What keeps billing after the expiry, one item each (the expiry ends the workers with
        their disks on every cloud: AWS's schedule terminates them, Azure's deleter removes
        the pool's resource group)."""

        def disk_type(self, size: str) -> str:
            """The disk type the workers of ``size`` get."""
            ...

        def disk_per_month(self, size_gb: int, disk_type: str) -> float:
            """What one disk of ``size_gb`` and ``disk_type`` costs per month."""
            ...

        def disks_detail(self, disk_type: str, os_gb: int, storage_gb: int) -> str:
            """How the two disks bill, in words, for a plan's note."""
            ...

HOURS_PER_MONTH = 730.0


def paused_price_per_day(
    billing: Billing | None, workers: int, disk_gb: int = 128, *,
    disks: tuple[int, ...] | None = None, disk_type: str | None = None, per_host: int = 1,
) -> float:
    """Dollars per day for a paused pool of ``workers`` billed by ``billing`` (its cloud's,
    :attr:`oa_vm.clouds.declared.ProviderFacts.billing`): disks and addresses only.

    ``disks`` are one worker's disk sizes (OS disk, storage); without them one disk of
    ``disk_gb``. A host of ``per_host`` workers keeps one OS disk and one address, and a storage
    disk per worker. ``disk_type`` is the cloud's (:meth:`Billing.disk_type`; None: the cloud's
    for its default size). A cloud that rents nothing (``billing`` None: a local pool) costs
    nothing paused.
    """
    if billing is None:
        return 0.0
    kind = disk_type or billing.disk_type("")
    os_disk, *storage = disks if disks else (disk_gb,)
    monthly = billing.disk_per_month(os_disk, kind) + per_host * sum(
        billing.disk_per_month(size, kind) for size in storage)
    per_host_day = monthly * 24.0 / HOURS_PER_MONTH + billing.address_per_hour * 24.0
    return per_host_day * -(-workers // per_host)


def paused_price_of(record: PoolRecord, billing: Billing | None) -> float:
    """:func:`paused_price_per_day` for a pool record billed by ``billing``: its hosts
    (``workers_per_host`` of its workers each) with their OS disks and addresses, its workers
    with their storage volumes (sizes from the record's settings), of the disk type its size
    takes."""
    disks = tuple(
        int(value) for key in ("disk_gb", "storage_gb")
        if isinstance(value := record.settings.get(key), int | float) and value > 0
    )
    size = record.settings.get("size")
    disk_type = billing.disk_type(size) if billing and isinstance(size, str) else None
    per_host = record.settings.get("workers_per_host")
    return paused_price_per_day(
        billing, len(record.workers), disks=disks or (128,), disk_type=disk_type,
        per_host=per_host if isinstance(per_host, int) and per_host > 0 else 1,
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


def pool_cost_so_far(record: PoolRecord, now: datetime | None = None) -> float:
    """What a pool has cost since it was created.

    Running time (uptime minus paused time) x price per worker-hour x workers, plus each
    pause's length x its price per day. Everything stops at the pool's expiry, when the
    cloud-side kill switch ends it with its disks. A pool without a price (``price_per_hour``
    None, e.g. a local pool) costs 0.0 running.
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
