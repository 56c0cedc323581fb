"""What ``oa-vm pool-status`` and ``pool-list`` print, as text or JSON.

Shared by the Typer commands (:mod:`oa_vm.cli.app`) and the fast path that answers these two
commands without loading Typer (:mod:`oa_vm.cli.quick`), so both print exactly the same. Only light
modules are imported here.
"""

from __future__ import annotations

from oa_vm.clouds import facts, price_per_hour
from oa_vm.cost.pool_cost import current_paused_per_day, paused_since, pool_cost_so_far
from oa_vm.errors import CorruptRecordError, StackWithoutRecordError
from oa_vm.kit.durations import format_duration
from oa_vm.kit.tables import money, render_table
from oa_vm.model import state
from oa_vm.model.state import PoolRecord

# typing is not imported at run time: these modules are on pool-status's start-up path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def cost_so_far(record: PoolRecord) -> float | None:
    """$ spent so far, or None for a pool with no price that was never paused."""
    if price_per_hour(record) is None and not record.provider_data.get("pauses"):
        return None
    return pool_cost_so_far(record)


def keeps_billing(record: PoolRecord) -> tuple[float, str] | None:
    """What a paused pool still bills, per day, and for what: its disks (and on Azure its
    public IPs). None for a running pool, and for an expired one, which the cloud's kill switch
    ended with its disks."""
    billing = facts(record.cloud).billing
    paused = current_paused_per_day(record)
    if paused is None or record.is_expired():
        return None
    return paused, billing.keeps if billing else "disks"


def _per_hour(record: PoolRecord) -> float | None:
    each = price_per_hour(record)
    return None if each is None else each * len(record.workers)


def _host_price_line(record: PoolRecord) -> str | None:
    """With several workers on a host: the price of a worker and of a host (None otherwise)."""
    hosts = record.by_host()
    most = max((len(w) for w in hosts.values()), default=0)
    if most < 2:
        return None
    each = price_per_hour(record)
    host_price = "" if each is None else f", {money(each * most)}/hour per host of {most}"
    return (f"{len(record.workers)} worker(s) on {len(hosts)} host(s): "
            f"{money(each)}/hour per worker{host_price}")


def status_json(record: PoolRecord) -> dict[str, Any]:
    """The pool as ``--json`` shows it: the record plus age, expiry, prices and cost so far."""
    data = record.to_json()
    data["price_per_hour"] = each = price_per_hour(record)
    data["age_s"] = round(record.age_seconds(), 1)
    data["expired"] = record.is_expired()
    data["price_per_hour_total"] = _per_hour(record)
    data["cost_so_far_usd"] = cost_so_far(record)
    data["paused_price_per_day"] = current_paused_per_day(record)
    data["paused_since"] = state.format_time(paused_since(record))
    billing = keeps_billing(record)
    data["keeps_billing_per_day"] = None if billing is None else billing[0]
    data["keeps_billing"] = None if billing is None else billing[1]
    for worker in data["workers"]:
        worker["reached_via"] = "ssh" if worker.get("ssh") else "direct"
    # the workers by machine, each host with its price (a worker's price times its workers)
    data["hosts"] = [
        {"host": host, "workers": [w.name for w in workers],
         "price_per_hour": None if each is None else each * len(workers)}
        for host, workers in record.by_host().items()
    ]
    return data


def status_text(record: PoolRecord) -> str:
    """The pool as ``pool-status`` prints it: a header, prices, one row per worker."""
    from oa_vm.kit.redact import redact_worker_secrets  # start-up: none without a pool

    expiry = state.show_time(record.expires_at)
    lines = [
        f"Pool {record.name} ({record.cloud}): {record.state.value}, "
        f"age {format_duration(record.age_seconds())}, expires {expiry}"
        + (" (EXPIRED)" if record.is_expired() else "")
    ]
    since = paused_since(record)
    if since is not None:
        paused_for = (state.utcnow() - since).total_seconds()
        lines.append(
            f"Paused for {format_duration(paused_for)}: "
            f"{money(current_paused_per_day(record))}/day (disks and addresses only), "
            f"cost so far {money(cost_so_far(record))}"
        )
    else:
        lines.append(
            f"Price {money(_per_hour(record))}/hour, cost so far {money(cost_so_far(record))}"
        )
    hosts_line = _host_price_line(record)
    if hosts_line is not None:
        lines.append(hosts_line)
    # A local worker's URLs carry its pool's secret: masked here, whole in --json.
    rows = [
        [w.name, w.state.value, w.phase or "", redact_worker_secrets(w.waa_url or ""),
         redact_worker_secrets(w.scoring_url or ""),
         w.pid or w.provider_id or "", "ssh" if w.ssh else "direct"]
        for w in record.workers
    ]
    headers = ["WORKER", "STATE", "PHASE", "WAA", "SCORING", "ID", "VIA"]
    if hosts_line is not None:
        # workers sharing a machine: grouped under their host, which is named once
        rows = []
        for host, workers in record.by_host().items():
            for i, w in enumerate(workers):
                rows.append([host if i == 0 else "", w.name, w.state.value, w.phase or "",
                             redact_worker_secrets(w.waa_url or ""),
                             redact_worker_secrets(w.scoring_url or ""),
                             w.pid or w.provider_id or "", "ssh" if w.ssh else "direct"])
        headers = ["HOST", *headers]
    lines.append(render_table(headers, rows))
    # A draining worker goes away soon: say why and when (its notice).
    lines += [f"{w.name} is draining: {w.detail or 'no new task'}"
              for w in record.workers if w.state == state.WorkerState.DRAINING]
    return "\n".join(lines)


def list_json(items: list[PoolRecord | CorruptRecordError]) -> list[dict[str, Any]]:
    """Every pool as ``pool-list --json`` shows it (an unreadable or missing record as an error
    entry naming its pool, and its cloud when known)."""
    return [
        status_json(item) if isinstance(item, PoolRecord)
        else {"name": item.pool, "cloud": getattr(item, "cloud", None), "error": str(item),
              "path": str(item.path)}
        for item in items
    ]


def list_text(items: list[PoolRecord | CorruptRecordError]) -> str:
    """Every pool as ``pool-list`` prints it; a paused pool's price is its price per day."""
    if not items:
        return "No pools. Create one with: oa-vm pool-create --cloud local --workers 3"
    rows: list[list[object]] = []
    for item in items:
        if not isinstance(item, PoolRecord):
            if isinstance(item, StackWithoutRecordError):  # not corrupt: only its state left
                rows.append([item.pool, item.cloud, "?", "?", item.reason, "", ""])
            else:
                rows.append([item.pool, "?", "?", "?", f"corrupt: {item.reason}", "", ""])
            continue
        billing = keeps_billing(item)
        per_hour = _per_hour(item)
        price = (f"{money(billing[0])}/day ({billing[1]})" if billing is not None
                 else "-" if item.is_expired() or per_hour is None else f"{money(per_hour)}/h")
        rows.append([
            item.name, item.cloud, len(item.workers), format_duration(item.age_seconds()),
            item.state.value + (" (expired)" if item.is_expired() else ""),
            price, money(cost_so_far(item)),
        ])
    return render_table(["NAME", "CLOUD", "WORKERS", "AGE", "STATE", "PRICE", "COST"], rows)


def unreadable_lines(items: list[PoolRecord | CorruptRecordError]) -> list[str]:
    """One line per unreadable record, naming its file and what to do (``pool-list`` prints
    them on stderr beside the table, which still lists every other pool)."""
    return [f"oa-vm: warning: {item}" for item in items if isinstance(item, CorruptRecordError)]
