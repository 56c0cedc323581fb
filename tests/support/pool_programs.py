"""Helpers for the pool program tests: settings, AWS lookup answers, which resources to tag."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from infra.offline import OfflineRun, RecordedResource
from infra.settings import PoolSettings

EXPIRES = datetime(2026, 3, 1, 18, 30, 5, tzinfo=UTC)
AWS_IMAGE = "snap-0123456789abcdef0"
AZURE_IMAGE = (
    "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/oa-vm-image-waa-eastus"
    "/providers/Microsoft.Compute/snapshots/waa-eastus-20260301-1200"
)
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOaVmTestKeyOnlyForTestsXXXXXXXXXXXXXXXXXXX oa-vm"


def make_settings(cloud: str, **changes: Any) -> PoolSettings:
    """Valid settings for ``cloud`` with ``changes`` applied."""
    base = PoolSettings(
        name="waa-eval",
        owner="alice@example.com",
        workers=1,
        size="m8i.2xlarge" if cloud == "aws" else "Standard_D8s_v5",
        region="us-east-1" if cloud == "aws" else "eastus",
        expires_at=EXPIRES,
        ssh_public_key=KEY,
        allowed_cidrs=("198.51.100.7/32",),
        image_id=AWS_IMAGE if cloud == "aws" else AZURE_IMAGE,
    )
    return replace(base, **changes)


class AwsLookups:
    """Answers the AWS program's lookups like a region would, and remembers the calls."""

    def __init__(self, *, default_vpc: bool = True, zones: tuple[str, ...] = ("a", "b", "c")):
        self.default_vpc = default_vpc
        self.zones = zones
        self.ami = "ami-0123456789abcdef0"
        """What the AMI lookup answers: set it to play Canonical publishing a newer one."""
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, token: str, args: Mapping[str, Any]) -> dict[str, Any]:
        self.calls.append((token, dict(args)))
        if token == "aws:ec2/getAmi:getAmi":
            return {"id": self.ami, "name": "ubuntu-noble-24.04"}
        if token == "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings":
            region = args.get("region", "us-east-1")
            return {"locations": [f"{region}{z}" for z in self.zones], "id": region}
        if token == "aws:ec2/getVpcs:getVpcs":
            return {"ids": ["vpc-0default"] if self.default_vpc else [], "id": "vpcs"}
        if token == "aws:ec2/getSubnets:getSubnets":
            return {"ids": [f"subnet-0{z}" for z in self.zones], "id": "subnets"}
        raise LookupError(token)


def taggable(run: OfflineRun) -> list[Any]:
    """Cloud resources (not providers, not components): each must carry the pool's tags."""
    return [
        r
        for r in run.resources
        if r.custom
        and not r.type.startswith("pulumi:providers:")
        # These types take no tags.
        and r.type not in (
            "aws:ec2/routeTableAssociation:RouteTableAssociation",
            "aws:ec2/volumeAttachment:VolumeAttachment",
            "aws:iam/rolePolicy:RolePolicy",
            "aws:scheduler/schedule:Schedule",
            "azure-native:authorization:RoleAssignment",
        )
    ]


def of_type(run: OfflineRun, type_: str) -> list[RecordedResource]:
    """The recorded resources of one type token (``aws:ec2/instance:Instance``...), by name
    (``w10`` before ``w2``), the order the callers compare against."""
    return sorted((r for r in run.resources if r.type == type_), key=lambda r: r.name)


def upgrade_worker_files(monkeypatch: Any) -> None:
    """Play an upgrade of oa-vm while a pool runs: from now on the shipped bootstrap holds one
    more line, so the user data every program renders differs from what the hosts were created
    with (``monkeypatch``: pytest's, which undoes it)."""
    from infra.worker import units

    read = units.read
    monkeypatch.setattr(units, "read", lambda name: read(name) + (
        ": oa-vm upgraded\n" if name == "bootstrap.sh" else ""))
