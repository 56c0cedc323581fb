"""Azure pools: the Pulumi program of :mod:`infra.azure`, driven per pool.

Nothing cloud-related is imported here at module import; ``pulumi`` and
``pulumi_azure_native`` load inside the provider's methods.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Sequence
from datetime import datetime

from infra.sizes import AZURE_DEFAULT_SIZE, check_azure_size
from oa_vm.clouds.base import PoolSpec, Progress
from oa_vm.clouds.pulumi.driver import Lister
from oa_vm.clouds.pulumi.provider import CloudInfo, PulumiCloudProvider
from oa_vm.errors import InvalidInputError
from oa_vm.model.image_records import ImageRecord
from oa_vm.model.state import PoolRecord

LIST_TIMEOUT_S = 60.0
DEALLOCATE_TIMEOUT_S = 900.0
"""Deallocating waits for Windows' shutdown on every VM at once (Azure's own limit is longer)."""
MANUAL_CHECK = "az resource list --tag oa-vm:pool={pool} -o table"


def az_cli_image_lister(region: str | None) -> list[ImageRecord]:
    """The subscription's snapshots tagged ``oa-vm:image`` (of ``region``; None: every
    location), as image records, asked with ``az snapshot list``."""
    from oa_vm.model.shared_images import azure_snapshots

    done = subprocess.run(
        ["az", "snapshot", "list", "-o", "json"],
        capture_output=True, text=True, timeout=LIST_TIMEOUT_S, check=True,
    )
    return azure_snapshots(json.loads(done.stdout or "[]"), region)


def az_cli_lister(pool: str) -> list[str]:
    """What Azure still holds tagged ``oa-vm:pool=<pool>``, asked with the ``az`` CLI."""
    done = subprocess.run(
        ["az", "resource", "list", "--tag", f"oa-vm:pool={pool}", "-o", "json"],
        capture_output=True, text=True, timeout=LIST_TIMEOUT_S, check=True,
    )
    items = json.loads(done.stdout or "[]")
    return [f"{item.get('type')} {item.get('name')} ({item.get('id')})" for item in items]


VM_TYPE = "Microsoft.Compute/virtualMachines"


def deallocate_by_tag(pool: str, progress: Progress) -> str:
    """The Azure kill switch: deallocate every VM tagged ``oa-vm:pool=<pool>`` with the ``az``
    CLI, found by the tag rather than the stack (whose rollback just failed), and return one
    phrase: what was stopped, what is left, and the exact command that removes it; or, when
    the VMs could not be stopped, the exact command that stops them. Never raises."""
    from infra.azure import resource_group_name

    group = resource_group_name(pool)
    remove = f"'oa-vm pool-cleanup --pool {pool}' (or 'az group delete --name {group} --yes')"
    find = (f"az resource list --tag oa-vm:pool={pool} --resource-type {VM_TYPE} "
            "--query [].id -o tsv")
    by_hand = (f"the VMs may still be running and billing; stop them now with 'az vm deallocate "
               f"--ids $({find})', then remove everything with {remove}")
    az = shutil.which("az")
    if az is None:
        return f"{by_hand} (no 'az' CLI here to do it)"
    try:
        listed = subprocess.run(  # fixed argv, no shell
            [az, "resource", "list", "--tag", f"oa-vm:pool={pool}", "--resource-type", VM_TYPE,
             "--query", "[].id", "-o", "json"],
            capture_output=True, text=True, timeout=LIST_TIMEOUT_S, check=True)
        ids = [str(i) for i in json.loads(listed.stdout or "[]")]
        if ids:
            progress(f"last resort: deallocating {len(ids)} VM(s) tagged oa-vm:pool={pool}")
            subprocess.run([az, "vm", "deallocate", "--ids", *ids], capture_output=True,
                           text=True, timeout=DEALLOCATE_TIMEOUT_S, check=True)
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        from oa_vm.kit.cli_failure import why_it_failed

        return f"{by_hand} (deallocating failed: {why_it_failed(exc)})"
    stopped = (f"deallocated {len(ids)} VM(s) tagged oa-vm:pool={pool}, so none bills for "
               "compute" if ids else f"Azure holds no VM tagged oa-vm:pool={pool}")
    return (f"{stopped}; left: resource group {group} (its disks and public IPs still bill); "
            f"remove it with {remove}")


class AzureProvider(PulumiCloudProvider):
    """Pools of WAA workers on Azure (Dsv5-family VMs, security type Standard)."""

    info = CloudInfo(
        name="azure",
        sdk_module="pulumi_azure_native",
        program_module="infra.azure",
        default_size=AZURE_DEFAULT_SIZE,
        default_region="eastus",
        ssh_user="azureuser",
        region_config="azure-native:location",
        check_size=check_azure_size,
        manual_check=MANUAL_CHECK,
        image_module="infra.image_azure",
        component_type="oa-vm:azure:WorkerPool",
        notes=(
            "each VM is deallocated at the expiry by a DevTest Labs shutdown schedule",
            "everything lives in the resource group {resource_group} (created with "
            "the pool, deleted at the expiry by its deleter, or by oa-vm pool-cleanup)",
        ),
    )
    cli = "az"

    def cli_images(self, region: str | None) -> list[ImageRecord]:
        """A teammate's images, found with the ``az`` CLI."""
        return az_cli_image_lister(region)

    def cli_lister(self, record: PoolRecord) -> Lister | None:
        """:func:`az_cli_lister`."""
        return az_cli_lister

    def preflight(self, spec: PoolSpec) -> None:
        """The shared checks, then Azure's own: a TTL the daily shutdown schedule can keep (24 h
        at most), and the resource providers it needs registered
        (:data:`~oa_vm.kit.checks.RESOURCE_PROVIDERS`, asked through ``az`` when it is installed
        and answers).

        Raises:
            InvalidInputError: one line saying what is wrong and what to run.
        """
        from infra.azure import check_ttl
        from infra.settings import SettingsError

        try:
            check_ttl(spec.expires_at)
        except SettingsError as exc:
            raise InvalidInputError(str(exc)) from exc
        super().preflight(spec)
        from oa_vm.kit.checks import RESOURCE_PROVIDERS, check_resource_providers

        check = check_resource_providers()
        if not check.ok and check.detail.startswith(tuple(f"{n} is " for n in RESOURCE_PROVIDERS)):
            raise InvalidInputError(
                f"{check.detail}; register it first: {check.fix}, then create again"
            )

    def latest_expiry(self, record: PoolRecord, now: datetime) -> tuple[datetime, str] | None:
        """A running pool ends within 24 hours: its shutdown schedule is daily
        (:func:`infra.azure.latest_expiry`, the rule a create's TTL is checked against)."""
        from infra.azure import TTL_RULE, latest_expiry

        return latest_expiry(now), TTL_RULE

    def last_resort(self, pool: str, progress: Progress,
                    regions: Sequence[str] = ()) -> str:
        """Azure's kill switch after a failed rollback: :func:`deallocate_by_tag` (a DevTest
        Labs shutdown schedule made in the same failed update may not exist), across the
        subscription whatever the ``regions``."""
        del regions
        return deallocate_by_tag(pool, progress)
