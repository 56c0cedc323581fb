"""What a cloud plan tells a user besides the resources: machine, timing, money, alternatives.

Pure helpers used by the pool and image plans (:mod:`oa_vm.clouds.pulumi.provider`,
:mod:`oa_vm.images`). Figures come from the size tables (:mod:`infra.sizes`) and the price
catalog (:mod:`oa_vm.cost.pricing`); what neither knows is said plainly instead of guessed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from oa_vm.kit import timings

if TYPE_CHECKING:
    from oa_vm.cost.pool_cost import Billing

# Every time figure comes from oa_vm.kit.timings (one source, each marked estimated or measured);
# these names are the seconds the plans and deadlines add up.
WARM_READY_S = timings.WARM_READY.typical_s
"""A worker from a prepared image: boot, load the worker image, start Windows."""
BUILD_READY_S = timings.IMAGE_BUILD.typical_s
"""An image build: pull, build, install Windows and WAA's apps, shut down."""
WAIT_MARGIN = timings.WAIT_MARGIN
"""Deadlines are the expected time times this margin (see
:data:`oa_vm.kit.timings.WAIT_MARGIN`)."""
SNAPSHOT_READY_S = timings.SNAPSHOT_STAGE.typical_s
"""The snapshot stage of a build, the builder still running."""
SNAPSHOT_MAX_S = timings.SNAPSHOT_STAGE.high_s
"""The slow end of the snapshot stage (the snapshot resource's own timeout)."""
FIRST_POOL_WAIT_S = timings.FIRST_POOL_WAIT_S
"""``pool-wait``'s deadline for a pool from an image (and smoke's); see
:data:`oa_vm.kit.timings.FIRST_POOL_WAIT_S`."""

def disks_note(billing: Billing | None, size: str, disk_gb: int, storage_gb: int, hosts: int = 1,
               per_host: int = 1) -> str:
    """One line: what the disks cost per month (AWS gp3 by the GB; Azure by the tier each disk
    falls in: a 160 GB OS disk bills as P15, 256 GiB). A host has one OS disk and a storage disk
    for each of its ``per_host`` workers; ``billing`` is the cloud's."""
    if billing is None:
        return ""
    kind = billing.disk_type(size)
    monthly = billing.disk_per_month(disk_gb, kind) + per_host * billing.disk_per_month(
        storage_gb, kind)
    unit = "worker" if per_host == 1 else f"host (one OS disk, {per_host} storage disks)"
    return (
        f"disks: {billing.disks_detail(kind, disk_gb, storage_gb)}: ${monthly:.2f}/month per "
        f"{unit}" + (f", ${monthly * hosts:.2f}/month for {hosts}" if hosts > 1 else "")
        + ", billed while they exist"
    )


def machine(cloud: str, size: str, disk_gb: int, storage_gb: int) -> dict[str, Any]:
    """vCPUs, memory and disks of one worker: vCPUs and memory from the size tables, else the
    price catalog (``.metal`` sizes), else None."""
    from infra.sizes import size_spec

    spec = size_spec(cloud, size)
    vcpus, memory = (spec.vcpus, spec.memory_gib) if spec else _catalog_machine(cloud, size)
    return {
        "vcpus": vcpus,
        "memory_gib": memory,
        "os_disk_gb": disk_gb,
        "storage_gb": storage_gb,
    }


def _catalog_machine(cloud: str, size: str) -> tuple[int | None, float | None]:
    try:
        from oa_vm.cost.pricing import load_catalog

        entries = load_catalog().entries
    except Exception:  # a broken catalog must not break a plan; it is reported elsewhere
        return None, None
    entry = next((e for e in entries if (e.cloud, e.size.lower()) == (cloud, size.lower())), None)
    return (entry.vcpus, entry.memory_gib) if entry else (None, None)


def resource_tree(
    project: str,
    stack: str,
    resources: Sequence[tuple[str, str]],
    component: tuple[str, str],
    top_level: Sequence[str] = (),
) -> list[str]:
    """The plan's resources as Pulumi's preview draws them: the stack, its providers and
    ``top_level`` resources (by name), then the component with its children (``(type, name)``
    pairs in the order given: an offline run's, the program's declaration order, the same on
    every run)."""
    lines = [f"pulumi:pulumi:Stack  {project}-{stack}"]
    top = [r for r in resources if r[0].startswith("pulumi:providers:") or r[1] in top_level]
    children = [r for r in resources if r not in top]
    for kind, name in top:
        lines.append(f"├─ {kind}  {name}")
    lines.append(f"└─ {component[0]}  {component[1]}")
    for index, (kind, name) in enumerate(children):
        branch = "└─" if index == len(children) - 1 else "├─"
        lines.append(f"   {branch} {kind}  {name}")
    return lines


ALTERNATIVES_SAME_CLOUD = 3
"""Rows of the plan's own cloud in its comparison (each another size, or its size elsewhere)."""
ALTERNATIVES_OTHER_CLOUDS = 2
"""Rows of the other clouds (their cheapest sizes that also run WAA)."""


def _row(entry: Any, spot: bool, chosen: bool = False) -> dict[str, Any]:
    """One comparison row from a catalog entry; ``price_per_hour`` is what a worker would pay
    (spot or on demand, as the plan asks), None where there is no such figure."""
    price = entry.spot if spot else entry.on_demand
    return {
        "cloud": entry.cloud,
        "region": entry.region,
        "size": entry.size,
        "vcpus": entry.vcpus,
        "memory_gib": entry.memory_gib,
        "on_demand": entry.on_demand,
        "spot": entry.spot,
        "price_per_hour": None if price is None else float(price),
        "chosen": chosen,
    }


def alternatives(
    cloud: str, size: str, region: str, spot: bool, nests: Callable[[str, str], bool],
    same_cloud: int = ALTERNATIVES_SAME_CLOUD, other_clouds: int = ALTERNATIVES_OTHER_CLOUDS,
) -> list[dict[str, Any]]:
    """The plan's machine beside the cheapest others that can also run WAA, as SkyPilot's
    optimizer table shows them: cloud, region, size, vCPUs, memory, on-demand and spot $/h.

    The first row is the plan's own choice (``chosen``: True; absent when the catalog does not
    price it there). Then, cheapest first by the price the pool would pay: for every other size
    that nests and has at least the chosen size's vCPUs, its cheapest region (the plan's region
    on a tie, so only the size differs), and the chosen size in its cheapest other region; at
    most ``same_cloud`` rows of ``cloud`` and ``other_clouds`` rows of the other clouds. vCPUs
    and memory are the catalog's (offline data shipped with the package). ``nests(cloud, size)``
    says whether a size runs WAA (:func:`oa_vm.clouds.size_nests`).
    """
    try:
        from oa_vm.cost.pricing import load_catalog

        entries = load_catalog().entries
    except Exception:  # a broken catalog must not break a plan; it is reported elsewhere
        return []
    mine = next((e for e in entries if (e.cloud, e.size.lower(), e.region.lower())
                 == (cloud, size.lower(), region.lower())), None)
    sized = mine or next((e for e in entries if (e.cloud, e.size.lower())
                          == (cloud, size.lower())), None)
    from infra.sizes import size_spec

    spec = size_spec(cloud, size)
    floor = (sized.vcpus if sized and sized.vcpus else None) or (spec.vcpus if spec else 4)

    def price_of(entry: Any) -> float:
        return float(entry.spot if spot else entry.on_demand)

    def rank(entry: Any) -> tuple[float, bool, str]:
        # cheapest first; on a tie the plan's own region, so only the size differs
        return price_of(entry), entry.region.lower() != region.lower(), entry.region

    chosen_size = (cloud, sized.size if sized else size)
    best: dict[tuple[str, str], Any] = {}  # (cloud, size) -> its cheapest entry
    elsewhere = None  # the chosen size in its cheapest other region
    for entry in entries:
        if (entry is mine or (spot and entry.spot is None)
                or not nests(entry.cloud, entry.size) or (entry.vcpus or floor) < floor):
            continue
        if (entry.cloud, entry.size) == chosen_size:
            if elsewhere is None or rank(entry) < rank(elsewhere):
                elsewhere = entry
        elif (held := best.get((entry.cloud, entry.size))) is None or rank(entry) < rank(held):
            best[(entry.cloud, entry.size)] = entry

    def cheapest(items: list[Any]) -> list[Any]:
        return sorted(items, key=lambda e: (price_of(e), e.cloud, e.size, e.region))

    own = [e for (c, _s), e in best.items() if c == cloud] + ([elsewhere] if elsewhere else [])
    own = cheapest(own)[:same_cloud]
    others = cheapest([e for (c, _s), e in best.items() if c != cloud])[:other_clouds]
    rows = [_row(e, spot) for e in cheapest(own + others)]
    return ([_row(mine, spot, chosen=True)] if mine else []) + rows


def alternatives_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The comparison as a plain table (``*`` marks the plan's own choice)."""
    from oa_vm.kit.tables import hourly, render_table

    def memory(value: Any) -> str:
        return "-" if value is None else f"{value:g} GiB"

    return render_table(
        ("", "CLOUD", "REGION", "SIZE", "VCPUS", "MEMORY", "ON-DEMAND/H", "SPOT/H"),
        [("*" if row.get("chosen") else "", row["cloud"], row["region"], row["size"],
          row.get("vcpus") or "-", memory(row.get("memory_gib")), hourly(row.get("on_demand")),
          hourly(row.get("spot"))) for row in rows],
    )


def max_spend(price_per_hour: float | None, hours: float) -> float | None:
    """The most the priced part can cost before the expiry ends it, on the whole minutes left.

    Rounding the time left up to the minute keeps the figure a bound (a cloud bills at most to
    the second) and makes two plans of one command print the same figure: the plan is priced a
    few seconds after its expiry is set, and those seconds differ from run to run."""
    if price_per_hour is None:
        return None
    return price_per_hour * math.ceil(max(hours, 0.0) * 60.0 - 1e-9) / 60.0
