"""Policy tests for the Azure pool program, run under Pulumi's mocks (no engine, no cloud)."""

from __future__ import annotations

import base64
import gzip
import inspect
import re
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]
from pulumi_azure_native import compute

from infra import azure as infra_azure
from infra.sizes import UnsupportedSizeError
from infra.tags import ALL_KEYS
from tests.support.pool_programs import AZURE_IMAGE, make_settings, of_type, taggable
from tests.unit.infra.conftest import RunAzure

VM = "azure-native:compute:VirtualMachine"
NSG = "azure-native:network:NetworkSecurityGroup"
IP = "azure-native:network:PublicIPAddress"
SCHEDULE = "azure-native:devtestlab:GlobalSchedule"


@pytest.mark.parametrize("workers", [1, 3])
def test_one_vm_ip_nic_and_schedule_per_worker_with_outputs(
    run_azure: RunAzure, workers: int
) -> None:
    run = run_azure(make_settings("azure", workers=workers))
    names = [f"waa-eval-w{i}" for i in range(workers)]
    assert sorted(r.inputs["vmName"] for r in of_type(run, VM)) == names
    assert len(of_type(run, IP)) == workers
    assert len(of_type(run, "azure-native:network:NetworkInterface")) == workers
    assert len(of_type(run, SCHEDULE)) == workers
    assert len(of_type(run, "azure-native:resources:ResourceGroup")) == 1
    assert [w["name"] for w in run.result] == names
    for worker in run.result:
        assert set(worker) == {"name", "public_ip", "instance_id", "ssh_user"}
        assert worker["ssh_user"] == "azureuser"
        assert worker["public_ip"] and worker["instance_id"]


@pytest.mark.parametrize("workers", [1, 3])
def test_vms_are_ssh_key_only_premium_160_standard_security(
    run_azure: RunAzure, workers: int
) -> None:
    run = run_azure(make_settings("azure", workers=workers))
    for vm in of_type(run, VM):
        inputs = vm.inputs
        assert inputs["hardwareProfile"]["vmSize"] == "Standard_D8s_v5"
        linux = inputs["osProfile"]["linuxConfiguration"]
        assert linux["disablePasswordAuthentication"] is True
        (key,) = linux["ssh"]["publicKeys"]
        assert key["path"] == "/home/azureuser/.ssh/authorized_keys"
        assert key["keyData"].startswith("ssh-ed25519 ")
        assert "adminPassword" not in inputs["osProfile"]
        disk = inputs["storageProfile"]["osDisk"]
        assert disk["diskSizeGB"] == 160
        assert disk["managedDisk"]["storageAccountType"] == "Premium_LRS"
        image = inputs["storageProfile"]["imageReference"]
        assert (image["publisher"], image["sku"]) == ("Canonical", "server")
        assert "lts" in image["offer"]
        # Security type Standard: no securityProfile at the pinned API version (see the test
        # below); never Trusted Launch or Confidential, never UEFI settings.
        profile = inputs.get("securityProfile") or {}
        assert profile.get("securityType", "Standard") == "Standard"
        assert "uefiSettings" not in profile


def test_the_pinned_compute_api_makes_standard_the_default_security_type() -> None:
    """From API 2025-11-01 on, gen2 images default to Trusted Launch (which blocks nesting).

    If this fails, the SDK moved to a newer API: set ``securityType: "Standard"`` explicitly and
    document the ``UseStandardSecurityType`` feature registration it then needs.
    """
    source = inspect.getsource(inspect.getmodule(compute.VirtualMachine))  # type: ignore[arg-type]
    versions = set(re.findall(r"Uses Azure REST API version (\S+?)\.", source))
    assert versions == {"2024-11-01"}


@pytest.mark.parametrize("workers", [1, 3])
def test_every_resource_carries_the_three_tags(run_azure: RunAzure, workers: int) -> None:
    run = run_azure(make_settings("azure", workers=workers))
    resources = taggable(run)
    assert len(resources) == 4 + 5 * workers  # the group, NSG, network, deleter; per worker
    for res in resources:
        tags = res.inputs.get("tags") or {}
        assert {k: tags.get(k) for k in ALL_KEYS} == {
            "oa-vm:pool": "waa-eval",
            "oa-vm:owner": "alice@example.com",
            "oa-vm:expires-at": "2026-03-01T18:30:05Z",
        }, res.name


def test_an_ipv6_only_allow_list_opens_no_ipv4_at_all(run_azure: RunAzure) -> None:
    run = run_azure(make_settings("azure", allowed_cidrs=("2001:db8:1234::/48",)))
    (rule,) = of_type(run, NSG)[0].inputs["securityRules"]
    assert rule["sourceAddressPrefixes"] == ["2001:db8:1234::/48"]
    assert "0.0.0.0/0" not in str(rule) and "*" not in rule["sourceAddressPrefixes"]


@pytest.mark.parametrize("workers", [1, 3])
def test_only_ssh_from_the_allowed_cidrs(run_azure: RunAzure, workers: int) -> None:
    run = run_azure(make_settings("azure", workers=workers, allowed_cidrs=("198.51.100.0/28",)))
    (nsg,) = of_type(run, NSG)
    (rule,) = nsg.inputs["securityRules"]
    assert (rule["direction"], rule["access"], rule["protocol"]) == ("Inbound", "Allow", "Tcp")
    assert rule["destinationPortRange"] == "22"
    assert "destinationPortRanges" not in rule
    assert rule["sourceAddressPrefixes"] == ["198.51.100.0/28"]
    assert "0.0.0.0/0" not in str(nsg.inputs) and "Internet" not in str(nsg.inputs)
    for nic in of_type(run, "azure-native:network:NetworkInterface"):
        assert nic.inputs["networkSecurityGroup"]["id"] == f"{nsg.name}-id"
    (vnet,) = of_type(run, "azure-native:network:VirtualNetwork")
    assert vnet.inputs["subnets"][0]["networkSecurityGroup"]["id"] == f"{nsg.name}-id"


def test_the_whole_internet_only_when_explicitly_allowed(run_azure: RunAzure) -> None:
    run = run_azure(make_settings("azure", allowed_cidrs=("0.0.0.0/0",)))
    assert of_type(run, NSG)[0].inputs["securityRules"][0]["sourceAddressPrefixes"] == ["0.0.0.0/0"]


def test_public_ips_are_static_standard(run_azure: RunAzure) -> None:
    run = run_azure(make_settings("azure", workers=2))
    for ip in of_type(run, IP):
        assert ip.inputs["publicIPAllocationMethod"] == "Static"
        assert ip.inputs["sku"]["name"] == "Standard"


def test_each_vm_has_a_deallocating_schedule_at_the_expiry(run_azure: RunAzure) -> None:
    run = run_azure(make_settings("azure", workers=2))
    schedules = {s.inputs["name"]: s.inputs for s in of_type(run, SCHEDULE)}
    assert set(schedules) == {"shutdown-computevm-waa-eval-w0", "shutdown-computevm-waa-eval-w1"}
    for name, inputs in schedules.items():
        assert inputs["taskType"] == "ComputeVmShutdownTask"
        assert inputs["status"] == "Enabled"
        assert inputs["timeZoneId"] == "UTC"
        # expiry 18:30:05 -> 18:31, never before the promised time
        assert inputs["dailyRecurrence"]["time"] == "1831"
        vm = name.removeprefix("shutdown-computevm-")
        assert inputs["targetResourceId"] == f"{vm}-id"


@pytest.mark.parametrize(
    ("expires", "expected"),
    [
        (datetime(2026, 1, 1, 9, 5, tzinfo=UTC), "0905"),
        (datetime(2026, 1, 1, 23, 59, 30, tzinfo=UTC), "0000"),
        (datetime.fromisoformat("2026-01-01T12:00:00+02:00"), "1000"),
    ],
)
def test_shutdown_time_is_utc_rounded_up(expires: datetime, expected: str) -> None:
    assert infra_azure.shutdown_time(expires) == expected


def test_spot_only_when_asked(run_azure: RunAzure) -> None:
    regular = of_type(run_azure(make_settings("azure")), VM)[0].inputs
    assert "priority" not in regular and "evictionPolicy" not in regular
    spot = of_type(run_azure(make_settings("azure", spot=True)), VM)[0].inputs
    assert (spot["priority"], spot["evictionPolicy"]) == ("Spot", "Deallocate")
    assert spot["billingProfile"]["maxPrice"] == -1


def test_custom_data_is_the_workers_cloud_init(run_azure: RunAzure) -> None:
    run = run_azure(make_settings("azure"))
    encoded = of_type(run, VM)[0].inputs["osProfile"]["customData"]
    text = gzip.decompress(base64.b64decode(encoded)).decode("utf-8")
    assert text.startswith("#cloud-config\n")
    doc: dict[str, Any] = yaml.safe_load(text)
    env = next(f for f in doc["write_files"] if f["path"] == "/etc/oa-vm/worker.env")["content"]
    assert "OA_VM_STORAGE_DEVICES='/dev/disk/azure/data/by-lun/0 /dev/disk/azure/scsi1/lun0'" in env
    assert "/mnt" not in str(doc)
    # No power-off from the guest on Azure: it would stop the VM without deallocating it.
    assert "oa-vm-expiry" not in str(doc) and "poweroff" not in str(doc)


def _custom_data(run: Any) -> tuple[int, dict[str, Any]]:
    encoded = of_type(run, VM)[0].inputs["osProfile"]["customData"]
    raw = base64.b64decode(encoded)
    return len(encoded), yaml.safe_load(gzip.decompress(raw).decode("utf-8"))


def test_spot_workers_watch_for_evictions_and_regular_ones_do_not(run_azure: RunAzure) -> None:
    size, doc = _custom_data(run_azure(make_settings("azure", spot=True)))
    assert size <= 64 * 1024  # Azure's cap on custom data (base64-encoded)
    files = {f["path"]: f for f in doc["write_files"]}
    script = files["/opt/oa-vm/spot_watch_azure.sh"]
    assert script["permissions"] == "0755" and "scheduledevents" in script["content"]
    unit = files["/etc/systemd/system/oa-vm-spot-watch-azure.service"]["content"]
    assert "ExecStart=/opt/oa-vm/spot_watch_azure.sh" in unit
    assert ["systemctl", "enable", "--now", "oa-vm-spot-watch-azure.service"] in doc["runcmd"]
    assert "/opt/oa-vm/lib.sh" in files  # what the watcher sources
    assert "/opt/oa-vm/spot_watch.sh" not in files  # AWS's watcher stays on AWS

    _, regular = _custom_data(run_azure(make_settings("azure")))
    assert "spot_watch" not in str(regular) and "spot-watch" not in str(regular)


def test_sizes_that_cannot_nest_are_refused_with_the_good_ones(run_azure: RunAzure) -> None:
    with pytest.raises(UnsupportedSizeError, match="Standard_D8s_v5"):
        run_azure(make_settings("azure", size="Standard_B2s"))


def test_resource_group_is_per_pool(run_azure: RunAzure) -> None:
    (group,) = of_type(run_azure(make_settings("azure")), "azure-native:resources:ResourceGroup")
    assert group.inputs["resourceGroupName"] == "oa-vm-waa-eval"
    assert group.inputs["location"] == "eastus"


def test_each_workers_storage_disk_is_copied_from_the_image(run_azure: RunAzure) -> None:
    run = run_azure(make_settings("azure", workers=2))
    disks = of_type(run, "azure-native:compute:Disk")
    assert sorted(d.name for d in disks) == ["waa-eval-w0-storage", "waa-eval-w1-storage"]
    for disk in disks:
        assert disk.inputs["creationData"] == {
            "createOption": "Copy", "sourceResourceId": AZURE_IMAGE
        }
        assert disk.inputs["sku"] == {"name": "Premium_LRS"}
    for vm in of_type(run, VM):
        (data,) = vm.inputs["storageProfile"]["dataDisks"]
        assert (data["lun"], data["createOption"]) == (0, "Attach")


def test_a_size_without_premium_storage_gets_standard_ssd(run_azure: RunAzure) -> None:
    run = run_azure(make_settings("azure", size="Standard_D8_v5"))
    (vm,) = of_type(run, VM)
    assert vm.inputs["storageProfile"]["osDisk"]["managedDisk"]["storageAccountType"] == (
        "StandardSSD_LRS"
    )
    (disk,) = of_type(run, "azure-native:compute:Disk")
    assert disk.inputs["sku"] == {"name": "StandardSSD_LRS"}


@pytest.mark.parametrize("size", ["Standard_D8a_v5", "Standard_D3s_v5", "Standard_D8s_v4"])
def test_sizes_azure_does_not_sell_are_refused(size: str) -> None:
    from infra import sizes

    with pytest.raises(UnsupportedSizeError, match="does not exist"):
        sizes.check_azure_size(size)


def test_a_ttl_over_a_day_is_refused() -> None:
    from datetime import timedelta

    from infra.azure import check_ttl
    from infra.settings import SettingsError

    now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    check_ttl(now + timedelta(hours=24), now)
    with pytest.raises(SettingsError, match="at most 24 hours"):
        check_ttl(now + timedelta(hours=25), now)


def test_a_later_expiry_moves_the_daily_time_tags_and_a_new_vms_custom_data(
    run_azure: RunAzure
) -> None:
    """A later expiry (``pool-extend``, a resume) moves each VM's shutdown time and the tags;
    the custom data renders it too, for a VM created from now on (an existing VM keeps its
    own: test_first_boot)."""
    from dataclasses import replace
    from datetime import timedelta

    from tests.support.pool_programs import EXPIRES

    created = make_settings("azure", workers=2)
    extended = replace(created, expires_at=EXPIRES + timedelta(hours=5, minutes=10))
    after = run_azure(extended)
    assert {s.inputs["dailyRecurrence"]["time"] for s in of_type(after, SCHEDULE)} == {"2341"}
    for vm in of_type(after, VM):
        assert "osProfile.customData" in vm.ignore_changes
    for res in taggable(after):
        assert (res.inputs.get("tags") or {})["oa-vm:expires-at"] == "2026-03-01T23:40:05Z"
    text = gzip.decompress(base64.b64decode(of_type(after, VM)[0].inputs["osProfile"][
        "customData"]))
    assert b"OA_VM_EXPIRES_AT=2026-03-01T23:40:05Z" in text


WORKFLOW = "azure-native:logic:Workflow"
ROLE = "azure-native:authorization:RoleAssignment"


def test_a_deleter_removes_the_pools_group_at_its_expiry_and_nothing_bills_before_it(
    run_azure: RunAzure
) -> None:
    run = run_azure(make_settings("azure", workers=2))
    (group,) = of_type(run, "azure-native:resources:ResourceGroup")
    # the mocks' stand-in for the group's ID, shaped as Azure's
    group_id = f"/subscriptions/offline/resourceGroups/{group.inputs['resourceGroupName']}"
    (workflow,) = of_type(run, WORKFLOW)
    assert workflow.inputs["identity"] == {"type": "SystemAssigned"}
    assert workflow.inputs["state"] == "Enabled"
    assert workflow.inputs["tags"]["oa-vm:pool"] == "waa-eval"
    definition = workflow.inputs["definition"]
    (trigger,) = definition["triggers"].values()
    # the expiry 18:30:05 UTC, rounded up to the minute; hourly, so a failed delete is retried
    # within the hour rather than the next day
    assert trigger == {"type": "Recurrence", "recurrence": {
        "frequency": "Hour", "interval": 1, "startTime": "2026-03-01T18:31:00Z"}}
    (action,) = definition["actions"].values()
    assert action["type"] == "Http"
    assert action["inputs"] == {
        "method": "DELETE",
        "uri": f"https://management.azure.com{group_id}?api-version=2021-04-01",
        "authentication": {"type": "ManagedServiceIdentity",
                           "audience": "https://management.azure.com/"},
    }
    (role,) = of_type(run, ROLE)
    assert role.inputs["scope"] == group_id  # the pool's group, nothing wider
    assert role.inputs["roleDefinitionId"] == (
        "/subscriptions/subscription-of-the-login/providers/Microsoft.Authorization/"
        "roleDefinitions/b24988ac-6182-4e91-a2ae-9b9bac6c4d3c")
    assert role.inputs["principalId"] == f"{workflow.name}-principal"
    assert role.inputs["principalType"] == "ServicePrincipal"
    vms = of_type(run, VM)
    assert len(vms) == 2
    for vm in vms:
        assert any(urn.endswith(f"{ROLE}::{role.name}") for urn in vm.depends_on), vm.name


def test_a_later_expiry_moves_the_deleters_trigger_in_place(run_azure: RunAzure) -> None:
    """Same resources (type and name: same URN), only the definition and tags change (updated
    in place by Azure); the role assignment, which a new principal would replace, stays."""
    from dataclasses import replace
    from datetime import timedelta

    from tests.support.pool_programs import EXPIRES

    created = run_azure(make_settings("azure"))
    moved = run_azure(replace(make_settings("azure"),
                              expires_at=EXPIRES + timedelta(days=6, seconds=30)))
    (before,), (after,) = of_type(created, WORKFLOW), of_type(moved, WORKFLOW)
    assert after.name == before.name
    changed = {k for k in {*before.inputs, *after.inputs}
               if before.inputs.get(k) != after.inputs.get(k)}
    assert changed == {"definition", "tags"}
    (trigger,) = after.inputs["definition"]["triggers"].values()
    assert trigger["recurrence"]["startTime"] == "2026-03-07T18:31:00Z"
    assert [r.inputs for r in of_type(moved, ROLE)] == [r.inputs for r in of_type(created, ROLE)]


def test_a_paused_pools_expiry_may_be_days_ahead_a_running_pools_not(
    run_azure: RunAzure
) -> None:
    """The 24-hour rule is the daily shutdown's: a paused pool's VMs are deallocated, so only
    its deleter keeps its (paused) expiry."""
    from dataclasses import replace
    from datetime import timedelta

    from infra.settings import SettingsError

    week = replace(make_settings("azure"), expires_at=datetime.now(UTC) + timedelta(days=7))
    with pytest.raises(SettingsError, match="at most 24 hours"):
        run_azure(week)
    (workflow,) = of_type(run_azure(replace(week, paused=True)), WORKFLOW)
    (trigger,) = workflow.inputs["definition"]["triggers"].values()
    assert trigger["recurrence"]["startTime"] == infra_azure.expiry_minute(
        week.expires_at).strftime("%Y-%m-%dT%H:%M:%SZ")
