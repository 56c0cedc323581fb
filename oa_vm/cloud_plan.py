"""What a cloud plan tells a user besides the resources: machine, timing, money, alternatives.

Pure helpers used by the pool and image plans (:mod:`oa_vm.providers.pulumi_provider`,
:mod:`oa_vm.images`). Figures come from the size tables (:mod:`infra.sizes`) and the price
catalog (:mod:`oa_vm.pricing`); what neither knows is said plainly instead of guessed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Honest times (docs/providers.md, "The first run, phase by phase"). No build has been timed on a
# cloud yet; these follow a review of what each step does, and are to be replaced by measured
# figures (oa-vm smoke prints each phase's duration):
# - a build pulls the WAA and dockur images, downloads the Windows ISO, installs Windows and
#   WAA's apps under nested virtualization, then shuts down: 1.5-3 h, about 2 h;
# - the first pool from a new AWS snapshot reads every block of the 40-60 GB volume from S3 as
#   it is first touched (EBS restores lazily): 15-35 min;
# - later pools (the snapshot's blocks warm in the region) about 20 min.
WARM_READY_S = 20 * 60
"""A worker from a prepared image: boot, load the worker image, start Windows (about 20 min)."""
FIRST_POOL_READY_S = 35 * 60
"""The first pool from a new AWS snapshot, whose blocks are fetched lazily from S3: at most 35
min (15-35)."""
BUILD_READY_S = 2 * 60 * 60
"""An image build: pull, build, install Windows and WAA's apps, shut down (about 2 h)."""
BUILD_MAX_S = 3 * 60 * 60
"""The slow end of an image build (1.5-3 h)."""
WAIT_MARGIN = 2.0
"""Deadlines are the expected time times this margin: twice the typical figure covers the slow
end of each range (a 3 h build within 4 h, a 35 min first pool within 40 min)."""

STORAGE_USD_PER_GB_MONTH = {"aws": 0.05, "azure": 0.05}
"""Snapshot storage list prices (EBS snapshots standard tier; Azure Standard HDD snapshots)."""

NOT_PRICED = {
    "aws": [
        "root and storage volumes (gp3, about $0.08/GB-month)",
        "public IPv4 addresses ($0.005/h each)",
        "traffic out of AWS",
        "the image's snapshot while kept (see oa-vm image-list)",
    ],
    "azure": [
        "OS and storage disks (billed by tier, not by GB: see the disks note)",
        "Standard public IPs (about $0.005/h each)",
        "traffic out of Azure",
        "the image's snapshot while kept (see oa-vm image-list)",
    ],
}

BILLS_AFTER_EXPIRY = {
    "aws": [
        "nothing of the workers: the expiry schedule terminates the instances and their volumes "
        "are deleted with them",
        "the security group and key pair (free) stay until oa-vm pool-cleanup",
        "the image's snapshot stays until oa-vm image-delete",
    ],
    "azure": [
        "the VMs are deallocated (compute stops billing)",
        "their OS and storage disks and public IPs keep billing until oa-vm pool-cleanup",
        "the image's snapshot stays until oa-vm image-delete",
    ],
}


def disks_note(cloud: str, size: str, disk_gb: int, storage_gb: int, workers: int = 1) -> str:
    """One line: what the workers' two disks cost per month (AWS gp3 by the GB; Azure by the
    tier each disk falls in: a 160 GB OS disk bills as P15, 256 GiB)."""
    from infra.sizes import azure_disk_type
    from oa_vm.pool_cost import azure_disk_tier, disk_price_per_month

    if cloud == "azure":
        kind = azure_disk_type(size)
        parts = []
        for label, gb in (("OS disk", disk_gb), ("storage disk", storage_gb)):
            tier, gib, usd = azure_disk_tier(gb, kind)
            parts.append(f"{label} {gb} GB bills as {tier} ({gib} GiB, ${usd:.2f}/month)")
        monthly = sum(azure_disk_tier(gb, kind)[2] for gb in (disk_gb, storage_gb))
        detail = "; ".join(parts)
    else:
        monthly = sum(disk_price_per_month(cloud, gb) for gb in (disk_gb, storage_gb))
        detail = f"{disk_gb} + {storage_gb} GB gp3 at ${monthly / (disk_gb + storage_gb):.2f}/GB"
    return (
        f"disks: {detail}: ${monthly:.2f}/month per worker"
        + (f", ${monthly * workers:.2f}/month for {workers}" if workers > 1 else "")
        + ", billed while they exist"
    )


def minutes(seconds: float) -> str:
    """``about 20 min``."""
    return f"about {round(seconds / 60)} min"


def hours(seconds: float) -> str:
    """``about 2 h``."""
    return f"about {seconds / 3600:g} h"


def machine(cloud: str, size: str, disk_gb: int, storage_gb: int) -> dict[str, Any]:
    """vCPUs, memory and disks of one worker (vCPUs/memory None when the table lacks the size)."""
    from infra.sizes import size_spec

    spec = size_spec(cloud, size)
    return {
        "vcpus": spec.vcpus if spec else None,
        "memory_gib": spec.memory_gib if spec else None,
        "os_disk_gb": disk_gb,
        "storage_gb": storage_gb,
    }


def resource_tree(
    project: str,
    stack: str,
    resources: Sequence[tuple[str, str]],
    component: tuple[str, str],
    top_level: Sequence[str] = (),
) -> list[str]:
    """The plan's resources as Pulumi's preview draws them: the stack, its providers and
    ``top_level`` resources (by name), then the component with its children (``(type, name)``
    pairs in registration order)."""
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


def alternatives(
    cloud: str, size: str, region: str, spot: bool, limit: int = 3
) -> list[dict[str, Any]]:
    """The cheapest catalog entries (size and region) other than the chosen one that can also
    run WAA (nesting sizes with at least the chosen size's vCPUs), cheapest first."""
    try:
        from oa_vm.pricing import load_catalog
    except ImportError:
        return []
    from infra.sizes import size_spec

    def nests(candidate: str) -> bool:
        from infra import sizes

        try:
            (sizes.check_aws_size if cloud == "aws" else sizes.check_azure_size)(candidate)
        except ValueError:
            return False
        return True

    wanted = size_spec(cloud, size)
    floor = wanted.vcpus if wanted else 4
    out: list[dict[str, Any]] = []
    try:
        entries = load_catalog().select(cloud=cloud)
    except Exception:  # a broken catalog must not break a plan; it is reported elsewhere
        return []
    for entry in entries:
        if (entry.size, entry.region) == (size, region) or not nests(entry.size):
            continue
        spec = size_spec(cloud, entry.size)
        if spec is not None and spec.vcpus < floor:
            continue
        try:
            price = float(entry.price(spot))
        except Exception:  # no spot figure for this entry: skip it
            continue
        out.append({"size": entry.size, "region": entry.region, "price_per_hour": price})
    out.sort(key=lambda item: (item["price_per_hour"], item["size"], item["region"]))
    return out[:limit]


def max_spend(price_per_hour: float | None, hours: float) -> float | None:
    """The most the priced part can cost before the expiry ends it."""
    return None if price_per_hour is None else price_per_hour * max(hours, 0.0)
