"""A pool of WAA workers on AWS, as a Pulumi component, and its thin program entry point.

What one pool is (every resource tagged with :func:`infra.tags.pool_tags`):

- networking: the region's default VPC and its default subnets in zones that offer the size;
  without a default VPC, a small VPC of the pool's own (VPC, internet gateway, route table,
  one public subnet). AWS allows 5 VPCs per region by default.
- a security group opening 22 only to the allowed CIDRs (nothing else comes in);
- a key pair from the pool's own ed25519 key;
- per worker, an Ubuntu LTS instance (C8i/M8i/R8i with nested virtualization, or ``.metal``),
  160 GB encrypted gp3 root volume, a storage volume (``/dev/sdf``) created from the prepared
  image's EBS snapshot (an image builder gets an empty one instead, snapshotted once built; both
  are deleted on termination, so the expiry ends them too), shutdown behaviour ``terminate``
  and cloud-init (which arms a power-off at the pool's expiry), optionally spot;
- the cloud-side kill switch: an EventBridge Scheduler one-shot schedule at the expiry that calls
  ``ec2:TerminateInstances`` on the pool's instances, with an IAM role allowed to terminate those
  instances and nothing else. It ends the pool even when a guest hangs and never powers off.

The schedule and the tags take ``expires_at``, the pool's current expiry, so a later update
moves them in place. The user data renders it too, but an instance keeps the user data it was
created with (:mod:`infra.first_boot`): no later update, an upgrade of oa-vm included, replaces
an instance for it, and a new instance gets the current one.

Pure builders (:func:`ssh_ingress`, :func:`ami_filters`, :func:`terminate_policy`) decide; the
component only wires them to resources.
"""

from __future__ import annotations

import base64
import gzip
import ipaddress
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import pulumi
import pulumi_aws as aws

from infra import first_boot, sizes
from infra.settings import (
    CALLER_CIDR_PLACEHOLDER,
    PINNED_EXPORT,
    PoolSettings,
    expiry_minute,
    pinned_values,
)
from infra.tags import named, pool_tags
from infra.worker import cloud_init, slots

CANONICAL_OWNER = "099720109477"
UBUNTU_AMI_NAME = "ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-*"
SSH_USER = "ubuntu"
OWN_VPC_CIDR = "10.77.0.0/16"
OWN_SUBNET_CIDR = "10.77.0.0/24"
COMPONENT_TYPE = "oa-vm:aws:WorkerPool"
STORAGE_DEVICE = "/dev/sdf"
# Where the storage volume shows up: /dev/sdf on Xen (or a udev link to it), else on Nitro
# (C8i/M8i/R8i) an NVMe device in any order: "ebs" finds it by its serial, the EBS volume id
# (bootstrap.sh's ebs_volume), never by its NVMe name.
STORAGE_DEVICES = (STORAGE_DEVICE, "/dev/xvdf", "ebs")
TERMINATE_TARGET = "arn:aws:scheduler:::aws-sdk:ec2:terminateInstances"


def slot_device(index: int) -> str:
    """The device name slot ``index``'s storage volume is attached as: ``/dev/sdf``,
    ``/dev/sdg``, ... (slot 0 is the one-worker host's)."""
    return f"/dev/sd{chr(ord(STORAGE_DEVICE[-1]) + index)}"


def slot_storage_devices(index: int) -> tuple[str, ...]:
    """Where slot ``index``'s volume appears: its name, Xen's, or on Nitro the EBS volume
    attached under that name (``ebs:sdg``, bootstrap.sh's ``ebs_named``)."""
    name = slot_device(index).removeprefix("/dev/")
    return (f"/dev/{name}", f"/dev/xvd{name[2:]}", f"ebs:{name}")


HOST_FACTS = cloud_init.HostFacts(
    ssh_user=SSH_USER,
    storage_devices=STORAGE_DEVICES,
    size_hint="a C8i/M8i/R8i size (e.g. m8i.2xlarge) or a .metal size",
    guest_poweroff=True,
    spot_notices=True,
    slot_storage_devices=slot_storage_devices,
)


class CapacityError(RuntimeError):
    """The size is not offered in the region: region failover should try the next one."""


def ami_filters() -> list[aws.ec2.GetAmiFilterArgsDict]:
    """Filters selecting Canonical's current Ubuntu 24.04 LTS server AMI (amd64, hvm, gp3)."""
    return [
        {"name": "name", "values": [UBUNTU_AMI_NAME]},
        {"name": "virtualization-type", "values": ["hvm"]},
        {"name": "architecture", "values": ["x86_64"]},
        {"name": "root-device-type", "values": ["ebs"]},
    ]


def ssh_ingress(cidrs: list[str]) -> list[aws.ec2.SecurityGroupIngressArgsDict]:
    """Security group ingress: TCP 22 from ``cidrs`` only (IPv4 and IPv6 kept apart)."""
    v6 = [c for c in cidrs if c != CALLER_CIDR_PLACEHOLDER
          and ipaddress.ip_network(c, strict=False).version == 6]
    v4 = [c for c in cidrs if c not in v6]
    rule: aws.ec2.SecurityGroupIngressArgsDict = {
        "description": "SSH from the pool owner",
        "protocol": "tcp",
        "from_port": 22,
        "to_port": 22,
    }
    if v4:
        rule["cidr_blocks"] = v4
    if v6:
        rule["ipv6_cidr_blocks"] = v6
    return [rule]


def user_data_base64(settings: PoolSettings) -> str:
    """The worker's cloud-init, gzip-compressed and base64-encoded (AWS caps user data at 16 KiB;
    cloud-init recognises gzip by its magic bytes)."""
    raw = gzip.compress(cloud_init.render(settings, HOST_FACTS).encode("utf-8"), mtime=0)
    if len(raw) > cloud_init.MAX_USER_DATA:
        raise ValueError(f"worker user data is {len(raw)} bytes, over AWS's 16 KiB limit")
    return base64.b64encode(raw).decode("ascii")


def schedule_expression(expires_at: datetime) -> str:
    """EventBridge Scheduler's one-shot ``at(...)`` expression (UTC), rounded up to the minute so
    the pool never ends before the time it was promised."""
    return f"at({expiry_minute(expires_at).strftime('%Y-%m-%dT%H:%M:%S')})"


def scheduler_trust_policy() -> str:
    """Who may take the expiry role: EventBridge Scheduler only."""
    return json.dumps({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": {"Service": "scheduler.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }],
    })


def terminate_policy(instance_arns: list[str]) -> str:
    """The expiry role's only permission: terminate the pool's own instances."""
    return json.dumps({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Action": "ec2:TerminateInstances",
            "Resource": sorted(instance_arns),
        }],
    })


def storage_block_device(
    settings: PoolSettings, tags: dict[str, str], slot: int = 0
) -> aws.ec2.InstanceEbsBlockDeviceArgsDict:
    """A pool worker's storage volume, made from the prepared image's snapshot (slot ``slot``'s
    on a host with several workers: each has its own); otherwise as :func:`builder_block_device`."""
    return {**builder_block_device(settings, tags), "device_name": slot_device(slot),
            "snapshot_id": str(settings.image_id)}


def builder_block_device(
    settings: PoolSettings, tags: dict[str, str]
) -> aws.ec2.InstanceEbsBlockDeviceArgsDict:
    """An image builder's empty storage volume, part of the instance so that it ends with it:
    if the build is abandoned (the laptop gone), the expiry's termination deletes it too. The
    snapshot is taken while the builder still runs."""
    return {
        "device_name": STORAGE_DEVICE,
        "volume_size": settings.storage_gb,
        "volume_type": "gp3",
        "encrypted": True,
        "delete_on_termination": True,
        "tags": tags,
    }


def _storage_volume_id(devices: Sequence[aws.ec2.outputs.InstanceEbsBlockDevice]) -> str:
    """The builder's storage volume ID from the instance's ``ebs_block_devices`` output."""
    for device in devices or []:
        if device.device_name == STORAGE_DEVICE:
            return str(device.volume_id)
    raise ValueError(f"the builder has no storage volume at {STORAGE_DEVICE}")


class AwsWorkerPool(pulumi.ComponentResource):
    """All resources of one pool in one region.

    Attributes:
        workers: ``Output[list[{"name", "public_ip", "instance_id", "ssh_user"}]]``.
        security_group_id: the pool's security group.
    """

    workers: pulumi.Output[list[dict[str, str]]]
    storage_volume_ids: list[pulumi.Output[str]]
    """Image builders only: the IDs of the empty storage volumes snapshotted once built."""
    ami_id: str
    """The Ubuntu AMI the instances run (the pinned one, or the one looked up at create)."""

    def __init__(
        self, name: str, settings: PoolSettings, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(COMPONENT_TYPE, name, None, opts)
        self.storage_volume_ids = []
        # Placeholders are allowed so offline plans can render; a create validates strictly
        # before it gets here (and the cloud would refuse a placeholder anyway).
        settings.validate(allow_placeholders=True)
        sizes.check_aws_size(settings.size)
        self._settings = settings
        self._tags = pool_tags(settings)
        child = pulumi.ResourceOptions(parent=self)
        invoke = pulumi.InvokeOptions(parent=self)

        subnet_ids, vpc_id = self._network(invoke, child)
        sg = aws.ec2.SecurityGroup(
            f"{name}-ssh",
            description=f"oa-vm pool {settings.name}: SSH from the owner only",
            vpc_id=vpc_id,
            ingress=ssh_ingress(settings.normalized_cidrs()),
            egress=[
                {
                    "description": "downloads (packages, images, Windows ISO)",
                    "protocol": "-1",
                    "from_port": 0,
                    "to_port": 0,
                    "cidr_blocks": ["0.0.0.0/0"],
                }
            ],
            tags=self._named(f"{name}-ssh"),
            opts=child,
        )
        key = aws.ec2.KeyPair(
            f"{name}-key",
            key_name=f"oa-vm-{settings.name}",
            public_key=settings.ssh_public_key,
            tags=self._named(f"{name}-key"),
            opts=child,
        )
        # Looked up once, at create; every later update gets the same one from the stack's
        # config (a newer AMI would replace every instance).
        self.ami_id = settings.ami_id or str(aws.ec2.get_ami(
            owners=[CANONICAL_OWNER], most_recent=True, filters=ami_filters(), opts=invoke
        ).id)
        user_data = user_data_base64(settings)
        outputs: list[pulumi.Output[list[dict[str, Any]]]] = []
        nests = sizes.aws_nests_natively(settings.size)
        cpu_options: aws.ec2.InstanceCpuOptionsArgsDict | None = (
            {"nested_virtualization": "enabled"} if nests else None
        )
        instances: list[aws.ec2.Instance] = []
        building = settings.mode == "build"
        # Each worker's own number picks its subnet: a worker added by a repair moves no other.
        for index, worker in zip(settings.worker_indexes(), settings.worker_names(), strict=True):
            instance = aws.ec2.Instance(
                worker,
                ami=self.ami_id,
                instance_type=settings.size,
                subnet_id=subnet_ids[index % len(subnet_ids)],
                vpc_security_group_ids=[sg.id],
                key_name=key.key_name,
                associate_public_ip_address=True,
                cpu_options=cpu_options,
                instance_initiated_shutdown_behavior="terminate",
                instance_market_options=self._market_options(),
                root_block_device={
                    "volume_size": settings.disk_gb,
                    "volume_type": "gp3",
                    "encrypted": True,
                    "delete_on_termination": True,
                    "tags": self._named(f"{worker}-root"),
                },
                ebs_block_devices=[builder_block_device(settings, self._named(f"{worker}-storage"))]
                if building else [
                    # one storage volume per worker of the host, each from the image
                    storage_block_device(settings, self._named(
                        f"{worker}-storage" if slot == 0 else f"{worker}-s{slot}-storage"), slot)
                    for slot in range(settings.workers_per_host)
                ],
                # IMDSv2 only, and its answers die after one hop: the host reaches the metadata
                # service (spot notices, its expiry tag at boot: expiry_arm.sh), a container or
                # the Windows guest behind it never does (docs/security.md).
                metadata_options={"http_tokens": "required", "http_endpoint": "enabled",
                                  "http_put_response_hop_limit": 1,
                                  "instance_metadata_tags": "enabled"},
                # Read at first boot only: an existing instance keeps the one it was made with
                # (first_boot), so the flag below matters for no existing instance; it stays so
                # that the instances' recorded inputs stay as they were.
                user_data_base64=user_data,
                user_data_replace_on_change=True,
                tags=self._named(worker),
                opts=first_boot.created_with(child, first_boot.AWS_INSTANCE),
            )
            if building:
                self.storage_volume_ids.append(
                    instance.ebs_block_devices.apply(_storage_volume_id)
                )
            instances.append(instance)
            outputs.append(slots.host_output(pulumi.Output.all(instance.public_ip, instance.id),
                                             worker, settings.slot_names(worker), SSH_USER))
        self._expiry_schedule(name, instances, child)
        self.workers = pulumi.Output.all(*outputs).apply(
            lambda hosts: [w for host in hosts for w in host])
        self.security_group_id = sg.id
        self.register_outputs({"workers": self.workers, "security_group_id": sg.id})

    def _expiry_schedule(
        self, name: str, instances: list[aws.ec2.Instance], child: pulumi.ResourceOptions
    ) -> None:
        """The cloud-side kill switch: terminate the instances at the expiry, whatever the
        guests do."""
        settings = self._settings
        # Names are left to Pulumi's auto-naming (a random suffix): IAM roles are global to the
        # account, and two people may both call their pool "waa-pool".
        role = aws.iam.Role(
            f"{name}-expiry",
            description=f"oa-vm pool {settings.name}: terminate its instances at the expiry",
            assume_role_policy=scheduler_trust_policy(),
            tags=self._named(f"{name}-expiry"),
            opts=child,
        )
        aws.iam.RolePolicy(
            f"{name}-expiry",
            role=role.id,
            policy=pulumi.Output.all(*[i.arn for i in instances]).apply(
                lambda arns: terminate_policy([str(a) for a in arns])
            ),
            opts=child,
        )
        aws.scheduler.Schedule(
            f"{name}-expiry",
            description=f"oa-vm pool {settings.name}: expires {self._tags['oa-vm:expires-at']}",
            schedule_expression=schedule_expression(settings.expires_at),
            schedule_expression_timezone="UTC",
            flexible_time_window={"mode": "OFF"},
            target={
                "arn": TERMINATE_TARGET,
                "role_arn": role.arn,
                "input": pulumi.Output.all(*[i.id for i in instances]).apply(
                    lambda ids: json.dumps({"InstanceIds": [str(i) for i in ids]})
                ),
                "retry_policy": {"maximum_retry_attempts": 20,
                                 "maximum_event_age_in_seconds": 86400},
            },
            opts=child,
        )

    def _named(self, name: str) -> dict[str, str]:
        return named(self._tags, name)

    def _market_options(self) -> aws.ec2.InstanceInstanceMarketOptionsArgsDict | None:
        if not self._settings.spot:
            return None
        # One-time spot that terminates on interruption: a stopped spot worker would keep its
        # volume billing, and a pool never needs a worker back in the same state.
        return {
            "market_type": "spot",
            "spot_options": {
                "spot_instance_type": "one-time",
                "instance_interruption_behavior": "terminate",
            },
        }

    def _network(
        self, invoke: pulumi.InvokeOptions, child: pulumi.ResourceOptions
    ) -> tuple[list[Any], Any]:
        """Subnets (in zones offering the size) and the VPC they belong to."""
        settings = self._settings
        offered = aws.ec2.get_instance_type_offerings(
            filters=[{"name": "instance-type", "values": [settings.size]}],
            location_type="availability-zone",
            region=settings.region,
            opts=invoke,
        )
        zones = sorted(set(offered.locations))
        if not zones:
            raise CapacityError(
                f"InstanceTypeNotOffered: {settings.size} is not offered in {settings.region}"
            )
        default_vpcs = aws.ec2.get_vpcs(
            filters=[{"name": "is-default", "values": ["true"]}], opts=invoke
        )
        if default_vpcs.ids:
            vpc_id = default_vpcs.ids[0]
            subnets = aws.ec2.get_subnets(
                filters=[
                    {"name": "vpc-id", "values": [vpc_id]},
                    {"name": "default-for-az", "values": ["true"]},
                    {"name": "availability-zone", "values": zones},
                ],
                opts=invoke,
            )
            if subnets.ids:
                return sorted(subnets.ids), vpc_id
        return self._own_network(zones[0], child)

    def _own_network(self, zone: str, child: pulumi.ResourceOptions) -> tuple[list[Any], Any]:
        name = self._settings.name
        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=OWN_VPC_CIDR,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags=self._named(f"{name}-vpc"),
            opts=child,
        )
        gateway = aws.ec2.InternetGateway(
            f"{name}-igw", vpc_id=vpc.id, tags=self._named(f"{name}-igw"), opts=child
        )
        table = aws.ec2.RouteTable(
            f"{name}-routes",
            vpc_id=vpc.id,
            routes=[{"cidr_block": "0.0.0.0/0", "gateway_id": gateway.id}],
            tags=self._named(f"{name}-routes"),
            opts=child,
        )
        subnet = aws.ec2.Subnet(
            f"{name}-subnet",
            vpc_id=vpc.id,
            cidr_block=OWN_SUBNET_CIDR,
            availability_zone=zone,
            map_public_ip_on_launch=True,
            tags=self._named(f"{name}-subnet"),
            opts=child,
        )
        aws.ec2.RouteTableAssociation(
            f"{name}-subnet-routes", subnet_id=subnet.id, route_table_id=table.id, opts=child
        )
        return [subnet.id], vpc.id


def offline_lookup(token: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """Answers for the program's lookups in an offline plan (no credentials, no network).

    The plan shows the default-VPC layout with placeholder IDs; the real AMI, VPC and subnets are
    looked up at create.
    """
    if token == "aws:ec2/getAmi:getAmi":
        return {"id": "ami-looked-up-at-create", "name": UBUNTU_AMI_NAME, "imageId": "ami-0"}
    if token == "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings":
        region = str(args.get("region") or "region")
        return {"locations": [f"{region}a", f"{region}b"], "instanceTypes": [], "id": "offer"}
    if token == "aws:ec2/getVpcs:getVpcs":
        return {"ids": ["vpc-default"], "id": "vpcs"}
    if token == "aws:ec2/getSubnets:getSubnets":
        return {"ids": ["subnet-default-a", "subnet-default-b"], "id": "subnets"}
    raise LookupError(f"no offline answer for {token}")


def pool_program(settings: PoolSettings) -> AwsWorkerPool:
    """The program entry point: an explicit provider for the region, the pool, its outputs.

    An explicit provider keeps the region the pool was planned for, whatever ``AWS_REGION`` or
    the user's profile says.
    """
    provider = aws.Provider(
        f"aws-{settings.region}", region=settings.region, default_tags={"tags": pool_tags(settings)}
    )
    pool = AwsWorkerPool(
        settings.name, settings, opts=pulumi.ResourceOptions(providers=[provider])
    )
    pulumi.export("cloud", "aws")
    pulumi.export("region", settings.region)
    pulumi.export("workers", pool.workers)
    pulumi.export(PINNED_EXPORT, pinned_values(settings, pool.ami_id))
    return pool
