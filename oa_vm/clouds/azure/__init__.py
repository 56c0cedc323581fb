"""Azure: the provider (Pulumi program in ``infra/azure.py``) and what the provider declares as
data (:data:`FACTS`): how its disks and addresses bill (while paused: the expiry deletes them),
what a plan leaves unpriced.

Managed disks bill by tier, not by GB: a disk is billed as the smallest tier that holds it (a
160 GB disk as P15, 256 GiB), https://learn.microsoft.com/azure/virtual-machines/
disks-understand-billing. Premium SSD (East US, list prices checked November 2026): P10 128 GiB
$19.71, P15 256 GiB $38.01, P20 512 GiB $73.22, P30 1 TiB $135.17, P40 2 TiB $259.05, P50 4 TiB
$495.57 per month; Standard SSD (sizes without ``s``, :func:`infra.sizes.azure_disk_type`): E10
$9.60, E15 $19.20, E20 $38.40, E30 $76.80, E40 $153.60, E50 $307.20,
https://azure.microsoft.com/pricing/details/managed-disks/. Disks of 128 GiB or less are priced
as the 128 GiB tier (the pools' disks are never smaller than 64 GB): an estimate that never
comes out below the bill. A Standard static public IP is billed while allocated, deallocated VM
or not: $0.005 per hour, https://azure.microsoft.com/pricing/details/ip-addresses/.
"""

from __future__ import annotations

from infra.sizes import PREMIUM_SSD, STANDARD_SSD, azure_disk_type, check_azure_size
from oa_vm.clouds.declared import ProviderFacts

STATIC_IP_PER_HOUR = 0.005
DISK_TIERS: dict[str, tuple[tuple[str, int, float], ...]] = {
    # (tier, GiB, $/month), smallest first
    PREMIUM_SSD: (
        ("P10", 128, 19.71), ("P15", 256, 38.01), ("P20", 512, 73.22), ("P30", 1024, 135.17),
        ("P40", 2048, 259.05), ("P50", 4096, 495.57),
    ),
    STANDARD_SSD: (
        ("E10", 128, 9.60), ("E15", 256, 19.20), ("E20", 512, 38.40), ("E30", 1024, 76.80),
        ("E40", 2048, 153.60), ("E50", 4096, 307.20),
    ),
}


def disk_tier(size_gb: int, disk_type: str = PREMIUM_SSD) -> tuple[str, int, float]:
    """The tier an Azure disk of ``size_gb`` bills as: ``(name, GiB, $/month)`` (160 -> P15).

    Raises:
        ValueError: a disk larger than the biggest tier listed, or an unknown disk type.
    """
    tiers = DISK_TIERS.get(disk_type)
    if tiers is None:
        raise ValueError(f"no tier prices for Azure disk type {disk_type!r}")
    for tier in tiers:
        if size_gb <= tier[1]:
            return tier
    raise ValueError(f"an Azure disk of {size_gb} GiB is beyond the tiers priced here")


class AzureBilling:
    """Disks by the tier, static public IPs by the hour; the expiry deletes the pool's resource
    group, and the disks and public IPs with it."""

    keeps = "disks and public IPs"
    address_per_hour = STATIC_IP_PER_HOUR
    snapshot_per_gb_month = 0.05  # Standard HDD snapshots
    not_priced: tuple[str, ...] = (
        "OS and storage disks (billed by tier, not by GB: see the disks note)",
        "Standard public IPs (about $0.005/h each)",
        "traffic out of Azure",
        "the image's snapshot while kept (see oa-vm image-list)",
    )
    bills_after_expiry: tuple[str, ...] = (
        "nothing of the workers: the expiry's deleter removes the pool's resource group, with "
        "its VMs, disks and public IPs",
        "the image's snapshot stays until oa-vm image-delete",
    )

    def disk_type(self, size: str) -> str:
        """Premium SSD for sizes that take it, else Standard SSD."""
        return azure_disk_type(size)

    def disk_per_month(self, size_gb: int, disk_type: str) -> float:
        """By the tier the disk falls in."""
        return disk_tier(size_gb, disk_type)[2]

    def disks_detail(self, disk_type: str, os_gb: int, storage_gb: int) -> str:
        """Each disk with the tier it bills as."""
        parts = []
        for label, gb in (("OS disk", os_gb), ("storage disk", storage_gb)):
            tier, gib, usd = disk_tier(gb, disk_type)
            parts.append(f"{label} {gb} GB bills as {tier} ({gib} GiB, ${usd:.2f}/month)")
        return "; ".join(parts)


FACTS = ProviderFacts(options=frozenset({"--allow-cidr", "--egress", "--size", "--region",
                                          "--spot", "--image", "--build-image"}),
                      billing=AzureBilling(),
                      cli="az",
                      check_size=check_azure_size)
"""What the Azure provider declares (:class:`~oa_vm.clouds.declared.ProviderFacts`)."""
