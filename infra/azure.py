"""A pool of WAA workers on Azure, as a Pulumi component, and its thin program entry point.

What one pool is (every resource tagged with :func:`infra.tags.pool_tags`):

- a resource group of its own (``oa-vm-<pool>``), so nothing of the pool can hide elsewhere;
- a virtual network with one subnet, and a network security group allowing 22 only from the
  allowed CIDRs (Azure's default rules deny every other inbound connection);
- per worker: a static Standard public IP, a NIC and an Ubuntu 24.04 LTS (gen2) VM of a nesting
  size, a 160 GB OS disk of the type the size can take (Premium SSD for ``s`` sizes, Standard SSD
  otherwise), a storage data disk (LUN 0) copied from the prepared image's snapshot (an image
  builder gets an empty one), SSH key only, cloud-init as custom data, optionally Spot (eviction
  Deallocate; ``spot_watch_azure.sh`` marks the worker draining on the eviction notice); and a
  DevTest Labs schedule ``shutdown-computevm-<vm>`` that deallocates the VM at the pool's expiry
  time (UTC). The schedule is daily, so a running pool may run at most 24 hours at a time
  (longer TTLs are refused: the schedule would fire early); a paused pool's VMs are already
  deallocated, so its expiry (``PoolSettings.paused``) may be days ahead;
- the cloud-side kill switch: a Logic App (Consumption) workflow ``<pool>-expiry`` with a
  system-assigned identity, which from the expiry on (hourly until it succeeds) deletes the
  pool's resource group, and with it everything that bills (disks, addresses, VMs, the workflow
  itself); its identity holds Contributor on that group only, and every VM depends on that role
  assignment, so nothing that bills starts unless the deleter may delete it (creating the
  assignment needs ``Microsoft.Authorization/roleAssignments/write``, which Contributor alone
  lacks: :mod:`oa_vm.clouds.permissions`).

The schedules, the deleter and the tags take the pool's current expiry (moved in place by a
later update: ``pool-extend``, a pause, a resume); a VM keeps the custom data it was created
with (:mod:`infra.first_boot`), so no later update, an upgrade of oa-vm included, replaces it,
and a new VM gets the current one. Nothing in the guest powers the VM off: that would stop it
without deallocating it, and a stopped VM still bills. The ``Microsoft.DevTestLab`` resource
provider must be registered on the subscription (``oa-vm doctor`` checks it).

An image builder (:mod:`infra.image_azure`) lives in its image's group, which holds the snapshot
and outlives it: it gets no deleter.

Security type: nesting needs security type Standard (Trusted Launch has been reported to block
it). The compute API this SDK pins (2024-11-01) creates a Standard VM when ``securityProfile`` is
left out, whereas sending ``securityType: "Standard"`` explicitly is refused unless the
subscription registers the ``Microsoft.Compute/UseStandardSecurityType`` feature. So the program
leaves it out; ``tests/unit/infra`` guards the pinned API version, because from API 2025-11-01 on
eligible gen2 images default to Trusted Launch.
"""

from __future__ import annotations

import base64
import gzip
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pulumi
from pulumi_azure_native import authorization, compute, devtestlab, logic, network, resources

from infra import first_boot, sizes
from infra.settings import (
    PINNED_EXPORT,
    PoolSettings,
    SettingsError,
    expiry_minute,
    pinned_values,
)
from infra.tags import pool_tags
from infra.worker import cloud_init, slots, units

SSH_USER = "azureuser"
COMPONENT_TYPE = "oa-vm:azure:WorkerPool"
VNET_CIDR = "10.78.0.0/16"
SUBNET_CIDR = "10.78.0.0/24"
SUBNET_NAME = "workers"
MAX_TTL = timedelta(hours=24)
STORAGE_LUN = 0
HOST_FACTS = cloud_init.HostFacts(
    ssh_user=SSH_USER,
    # azure-vm-utils' names first, then the older waagent udev rules'.
    storage_devices=("/dev/disk/azure/data/by-lun/0", "/dev/disk/azure/scsi1/lun0"),
    slot_storage_devices=lambda i: (f"/dev/disk/azure/data/by-lun/{STORAGE_LUN + i}",
                                    f"/dev/disk/azure/scsi1/lun{STORAGE_LUN + i}"),
    size_hint="a D-series v3/v5 size such as Standard_D8s_v5 (security type Standard)",
    guest_poweroff=False,
    # Spot pools watch Scheduled Events for an eviction (Preempt) and mark the worker draining.
    spot_notices=True,
    spot_watch=(units.AZURE_SPOT_WATCH_SCRIPT, units.AZURE_SPOT_WATCH_UNIT),
)
ARM = "https://management.azure.com"
GROUP_API_VERSION = "2021-04-01"
CONTRIBUTOR_ROLE = "b24988ac-6182-4e91-a2ae-9b9bac6c4d3c"
"""Azure's built-in Contributor role: what the deleter's identity holds on the pool's group."""
WORKFLOW_SCHEMA = ("https://schema.management.azure.com/providers/Microsoft.Logic/schemas/"
                   "2016-06-01/workflowdefinition.json#")
CLIENT_CONFIG = "azure-native:authorization:getClientConfig"
UBUNTU_IMAGE: compute.ImageReferenceArgsDict = {
    "publisher": "Canonical",
    "offer": "ubuntu-24_04-lts",
    "sku": "server",  # the gen2 image ("server-gen1" is gen1)
    "version": "latest",
}


def resource_group_name(pool: str) -> str:
    """``oa-vm-<pool>``: one resource group per pool."""
    return f"oa-vm-{pool}"


def shutdown_time(expires_at: datetime) -> str:
    """The schedule's daily time (``HHMM``, UTC) for an expiry, rounded up to the minute so
    the pool never ends before the time it was promised."""
    return expiry_minute(expires_at).strftime("%H%M")


def deleter_definition(group_id: str, expires_at: datetime) -> dict[str, Any]:
    """The deleter's Logic App workflow: a recurrence from the expiry (UTC, rounded up to the
    minute as the shutdown time is) and one request deleting the resource group ``group_id``
    as the workflow's own managed identity. Hourly, so a failed delete (a transient error past
    the action's own retries, a lock since removed) bills an hour more, not a day; a delete that
    succeeded took the workflow with the group, and a run costs a fraction of a cent."""
    return {
        "$schema": WORKFLOW_SCHEMA,
        "contentVersion": "1.0.0.0",
        "triggers": {"at_expiry": {"type": "Recurrence", "recurrence": {
            "frequency": "Hour", "interval": 1,
            "startTime": expiry_minute(expires_at).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }}},
        "actions": {"delete_the_pool": {"type": "Http", "runAfter": {}, "inputs": {
            "method": "DELETE",
            "uri": f"{ARM}{group_id}?api-version={GROUP_API_VERSION}",
            "authentication": {"type": "ManagedServiceIdentity", "audience": f"{ARM}/"},
        }}},
        "outputs": {},
    }


def contributor_role(subscription_id: str) -> str:
    """The built-in Contributor role's definition ID in the subscription."""
    return (f"/subscriptions/{subscription_id}/providers/Microsoft.Authorization/"
            f"roleDefinitions/{CONTRIBUTOR_ROLE}")


TTL_SLACK = timedelta(minutes=5)
"""What an expiry may pass :data:`MAX_TTL` by (the time a create takes to get here)."""
TTL_RULE = "Azure pools run at most 24 hours at a time (their shutdown schedule is daily)"


def latest_expiry(now: datetime) -> datetime:
    """The latest expiry a running Azure pool can have at ``now``: the shutdown schedule is
    daily, so a later one would deallocate the VMs at that time of day on an earlier day. The
    one rule behind :func:`check_ttl` and the checks of ``pool-extend`` and ``pool-resume``."""
    return now + MAX_TTL + TTL_SLACK


def check_ttl(expires_at: datetime, now: datetime | None = None,
              fix: str = "pass --ttl 24h or less, and extend the pool later if needed") -> None:
    """Refuse an expiry past :func:`latest_expiry`; ``fix`` says what to do instead.

    Raises:
        SettingsError: the expiry is too far.
    """
    if expires_at > latest_expiry(now or datetime.now(UTC)):
        raise SettingsError(f"{TTL_RULE}; {fix}")


def ssh_rule(cidrs: list[str]) -> network.SecurityRuleArgsDict:
    """The NSG's one inbound rule: TCP 22 from ``cidrs``."""
    return {
        "name": "ssh-from-owner",
        "priority": 100,
        "direction": "Inbound",
        "access": "Allow",
        "protocol": "Tcp",
        "source_port_range": "*",
        "source_address_prefixes": list(cidrs),
        "destination_address_prefix": "*",
        "destination_port_range": "22",
        "description": "SSH from the pool owner",
    }


def custom_data(settings: PoolSettings) -> str:
    """Cloud-init, gzip-compressed (cloud-init recognises gzip by its magic bytes) and
    base64-encoded as Azure's custom data must be (at most 64 KB)."""
    raw = gzip.compress(cloud_init.render(settings, HOST_FACTS).encode("utf-8"), mtime=0)
    return base64.b64encode(raw).decode("ascii")


def spot_settings(
    spot: bool,
) -> tuple[str | None, str | None, compute.BillingProfileArgsDict | None]:
    """``(priority, eviction_policy, billing_profile)`` of a VM: Spot pays at most the on-demand
    price (``max_price=-1``) and deallocates on eviction; all None for regular capacity."""
    if not spot:
        return None, None, None
    return "Spot", "Deallocate", {"max_price": -1}


class AzureWorkerPool(pulumi.ComponentResource):
    """All resources of one pool in one Azure location.

    Attributes:
        workers: ``Output[list[{"name", "public_ip", "instance_id", "ssh_user"}]]``.
        resource_group: the pool's resource group name.
    """

    workers: pulumi.Output[list[dict[str, str]]]
    storage_disks: list[compute.Disk]
    """The workers' storage data disks (an image builder's is snapshotted once built)."""

    def __init__(
        self,
        name: str,
        settings: PoolSettings,
        opts: pulumi.ResourceOptions | None = None,
        *,
        group: resources.ResourceGroup | None = None,
    ) -> None:
        super().__init__(COMPONENT_TYPE, name, None, opts)
        # Placeholders are allowed so offline plans can render; a create validates strictly
        # before it gets here (and the cloud would refuse a placeholder anyway).
        settings.validate(allow_placeholders=True)
        sizes.check_azure_size(settings.size)
        if not settings.paused:  # a paused pool's VMs are deallocated: only the deleter counts
            check_ttl(settings.expires_at)
        disk_type = sizes.azure_disk_type(settings.size)
        self.storage_disks = []
        tags = pool_tags(settings)
        child = pulumi.ResourceOptions(parent=self)
        location = settings.region

        # An image builder lives in its image's group, which outlives it (with the snapshot):
        # no deleter for that group; only a pool's own group ends at its expiry.
        vm_opts = first_boot.created_with(child, first_boot.AZURE_VM)
        if group is None:
            group = resources.ResourceGroup(
                f"{name}-rg",
                resource_group_name=resource_group_name(settings.name),
                location=location,
                tags=tags,
                opts=child,
            )
            # nothing that bills starts unless the deleter may delete it
            vm_opts = pulumi.ResourceOptions.merge(vm_opts, pulumi.ResourceOptions(
                depends_on=[self._deleter(name, settings, group, tags, child)]))
        nsg = network.NetworkSecurityGroup(
            f"{name}-nsg",
            network_security_group_name=f"{settings.name}-nsg",
            resource_group_name=group.name,
            location=location,
            security_rules=[ssh_rule(settings.normalized_cidrs())],
            tags=tags,
            opts=child,
        )
        vnet = network.VirtualNetwork(
            f"{name}-vnet",
            virtual_network_name=f"{settings.name}-vnet",
            resource_group_name=group.name,
            location=location,
            address_space={"address_prefixes": [VNET_CIDR]},
            subnets=[
                {
                    "name": SUBNET_NAME,
                    "address_prefix": SUBNET_CIDR,
                    "network_security_group": {"id": nsg.id},
                }
            ],
            tags=tags,
            opts=child,
        )
        # Azure IDs are paths: the inline subnet's ID follows from the network's.
        subnet_id = vnet.id.apply(lambda vnet_id: f"{vnet_id}/subnets/{SUBNET_NAME}")
        data = custom_data(settings)
        daily = shutdown_time(settings.expires_at)
        priority, eviction_policy, billing_profile = spot_settings(settings.spot)
        outputs: list[pulumi.Output[list[dict[str, Any]]]] = []
        for worker in settings.worker_names():
            ip = network.PublicIPAddress(
                f"{worker}-ip",
                public_ip_address_name=f"{worker}-ip",
                resource_group_name=group.name,
                location=location,
                sku={"name": "Standard", "tier": "Regional"},
                public_ip_allocation_method="Static",
                public_ip_address_version="IPv4",
                tags=tags,
                opts=child,
            )
            nic = network.NetworkInterface(
                f"{worker}-nic",
                network_interface_name=f"{worker}-nic",
                resource_group_name=group.name,
                location=location,
                network_security_group={"id": nsg.id},
                ip_configurations=[
                    {
                        "name": "primary",
                        "subnet": {"id": subnet_id},
                        "public_ip_address": {"id": ip.id},
                        "private_ip_allocation_method": "Dynamic",
                        "primary": True,
                    }
                ],
                tags=tags,
                opts=child,
            )
            # one storage disk per worker of the host (slot i at LUN i), each from the image
            storages = [self._storage_disk(worker if slot == 0 else f"{worker}-s{slot}",
                                           settings, group.name, disk_type, tags, child)
                        for slot in range(settings.workers_per_host)]
            os_profile: compute.OSProfileArgsDict = {
                "computer_name": worker,
                "admin_username": SSH_USER,
                "custom_data": data,
                "linux_configuration": {
                    "disable_password_authentication": True,
                    "ssh": {
                        "public_keys": [
                            {
                                "path": f"/home/{SSH_USER}/.ssh/authorized_keys",
                                "key_data": settings.ssh_public_key,
                            }
                        ]
                    },
                },
            }
            storage_profile: compute.StorageProfileArgsDict = {
                "image_reference": UBUNTU_IMAGE,
                "os_disk": {
                    "name": f"{worker}-os",
                    "create_option": "FromImage",
                    "disk_size_gb": settings.disk_gb,
                    "managed_disk": {"storage_account_type": disk_type},
                    "delete_option": "Delete",
                    "caching": compute.CachingTypes.READ_WRITE,
                },
                "data_disks": [{
                    "lun": STORAGE_LUN + slot,
                    "name": storage.name,
                    "create_option": "Attach",
                    "managed_disk": {"id": storage.id},
                    "caching": compute.CachingTypes.READ_ONLY
                    if settings.mode == "pool" else compute.CachingTypes.NONE,
                } for slot, storage in enumerate(storages)],
            }
            network_profile: compute.NetworkProfileArgsDict = {
                "network_interfaces": [{"id": nic.id, "primary": True, "delete_option": "Delete"}]
            }
            vm = compute.VirtualMachine(
                worker,
                vm_name=worker,
                resource_group_name=group.name,
                location=location,
                hardware_profile={"vm_size": settings.size},
                os_profile=os_profile,
                storage_profile=storage_profile,
                network_profile=network_profile,
                priority=priority,
                eviction_policy=eviction_policy,
                billing_profile=billing_profile,
                tags=tags,
                # the custom data is read at first boot only: kept as made (first_boot)
                opts=vm_opts,
            )
            devtestlab.GlobalSchedule(
                f"{worker}-shutdown",
                name=f"shutdown-computevm-{worker}",
                resource_group_name=group.name,
                location=location,
                status="Enabled",
                task_type="ComputeVmShutdownTask",
                daily_recurrence={"time": daily},
                time_zone_id="UTC",
                target_resource_id=vm.id,
                notification_settings={"status": "Disabled", "time_in_minutes": 30},
                tags=tags,
                opts=child,
            )
            outputs.append(slots.host_output(pulumi.Output.all(ip.ip_address, vm.id), worker,
                                             settings.slot_names(worker), SSH_USER))
        self.workers = pulumi.Output.all(*outputs).apply(
            lambda hosts: [w for host in hosts for w in host])
        self.resource_group = group.name
        self.location = location
        self.register_outputs({"workers": self.workers, "resource_group": group.name})

    def _deleter(
        self,
        name: str,
        settings: PoolSettings,
        group: resources.ResourceGroup,
        tags: dict[str, str],
        child: pulumi.ResourceOptions,
    ) -> authorization.RoleAssignment:
        """The pool's cloud-side end: a workflow deleting its resource group at the expiry
        (:func:`deleter_definition`), and its identity's Contributor role on that group only.
        Returns the role assignment, which every VM depends on."""
        workflow = logic.Workflow(
            f"{name}-expiry",
            workflow_name=f"{settings.name}-expiry",
            resource_group_name=group.name,
            location=settings.region,
            identity={"type": "SystemAssigned"},
            state="Enabled",
            definition=group.id.apply(
                lambda group_id: deleter_definition(group_id, settings.expires_at)),
            tags=tags,
            opts=child,
        )
        client = authorization.get_client_config(opts=pulumi.InvokeOptions(parent=self))
        return authorization.RoleAssignment(
            f"{name}-expiry",
            scope=group.id,
            role_definition_id=contributor_role(client.subscription_id),
            principal_id=workflow.identity.apply(
                lambda identity: identity.principal_id if identity else ""),
            principal_type="ServicePrincipal",
            description=f"oa-vm pool {settings.name}: delete its resource group at the expiry",
            opts=child,
        )

    def _storage_disk(
        self,
        worker: str,
        settings: PoolSettings,
        group: pulumi.Input[str],
        disk_type: str,
        tags: dict[str, str],
        child: pulumi.ResourceOptions,
    ) -> compute.Disk:
        """The worker's storage data disk: a copy of the image's snapshot, or empty (builder)."""
        creation: compute.CreationDataArgsDict = (
            {"create_option": "Empty"} if settings.mode == "build"
            else {"create_option": "Copy", "source_resource_id": str(settings.image_id)}
        )
        disk = compute.Disk(
            f"{worker}-storage",
            disk_name=f"{worker}-storage",
            resource_group_name=group,
            location=settings.region,
            creation_data=creation,
            disk_size_gb=settings.storage_gb,
            sku={"name": disk_type},
            tags=tags,
            opts=child,
        )
        self.storage_disks.append(disk)
        return disk


def offline_lookup(token: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """Answers for the program's one lookup in an offline plan (no credentials, no network):
    the signed-in client's subscription, a placeholder until the create."""
    if token == CLIENT_CONFIG:
        return {"subscriptionId": "subscription-of-the-login", "tenantId": "tenant-of-the-login",
                "clientId": "client-of-the-login", "objectId": "object-of-the-login"}
    raise LookupError(f"no offline answer for {token}")


def pool_program(settings: PoolSettings) -> AzureWorkerPool:
    """The program entry point: the pool and its outputs (the location is on every resource)."""
    pool = AzureWorkerPool(settings.name, settings)
    pulumi.export("cloud", "azure")
    pulumi.export("region", settings.region)
    pulumi.export("resource_group", pool.resource_group)
    pulumi.export("workers", pool.workers)
    pulumi.export(PINNED_EXPORT, pinned_values(settings, None))
    return pool

