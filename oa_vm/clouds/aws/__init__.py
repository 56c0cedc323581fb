"""AWS: the provider (Pulumi program in ``infra/aws.py``) and what the provider declares as data
(:data:`FACTS`): how its volumes bill, what a plan leaves unpriced.

EBS gp3 bills by the GB: $0.08 per GB-month (us-east-1, list price checked November 2026),
https://aws.amazon.com/ebs/pricing/. A stopped instance keeps its volumes and releases its
automatic public IPv4 address, which is then not billed (https://aws.amazon.com/vpc/pricing/:
$0.005 per hour only while in use).
"""

from __future__ import annotations

from infra.sizes import check_aws_size
from oa_vm.clouds.declared import ProviderFacts

GP3_PER_GB_MONTH = 0.08


class AwsBilling:
    """EBS gp3 by the GB; the expiry terminates the instances and their volumes go with them."""

    keeps = "volumes"
    address_per_hour = 0.0
    snapshot_per_gb_month = 0.05  # EBS snapshots, standard tier
    not_priced: tuple[str, ...] = (
        "root and storage volumes (gp3, about $0.08/GB-month)",
        "public IPv4 addresses ($0.005/h each)",
        "traffic out of AWS",
        "the image's snapshot while kept (see oa-vm image-list)",
    )
    bills_after_expiry: tuple[str, ...] = (
        "nothing of the workers: the expiry schedule terminates the instances and their volumes "
        "are deleted with them",
        "the security group and key pair (free) stay until oa-vm pool-cleanup",
        "the image's snapshot stays until oa-vm image-delete",
    )

    def disk_type(self, size: str) -> str:
        """Every volume is gp3."""
        return "gp3"

    def disk_per_month(self, size_gb: int, disk_type: str) -> float:
        """By the GB."""
        return size_gb * GP3_PER_GB_MONTH

    def disks_detail(self, disk_type: str, os_gb: int, storage_gb: int) -> str:
        """``160 + 96 GB gp3 at $0.08/GB``."""
        return f"{os_gb} + {storage_gb} GB gp3 at ${GP3_PER_GB_MONTH:.2f}/GB"


FACTS = ProviderFacts(options=frozenset({"--allow-cidr", "--egress", "--size", "--region",
                                          "--spot", "--image", "--build-image"}),
                      billing=AwsBilling(),
                      cli="aws",
                      slow_first_pool=True, check_size=check_aws_size)
"""What the AWS provider declares (:class:`~oa_vm.clouds.declared.ProviderFacts`)."""
