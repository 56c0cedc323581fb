"""The AWS/Azure providers and the Pulumi driver, against ``FakePulumiEngine``.

The engine is the only stand-in: the pool programs are the real ones (run under Pulumi's mocks
by the fake engine), keys, passphrase and records are real files in an isolated home.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from infra import azure as infra_azure
from oa_vm.clouds.aws.provider import AwsProvider
from oa_vm.clouds.azure.provider import AzureProvider
from oa_vm.clouds.base import PoolSpec
from oa_vm.clouds.pulumi import driver as pulumi_driver
from oa_vm.clouds.pulumi.driver import PoolProvisioningError, classify_failure
from oa_vm.errors import InvalidInputError, ProviderUnavailableError, ProvisioningError
from oa_vm.model import state
from oa_vm.model.state import WorkerState
from tests.support.fake_pulumi_engine import FakePulumiEngine, dead_pid
from tests.support.pool_programs import AWS_IMAGE, AZURE_IMAGE, AwsLookups

CAPACITY = (
    "aws:ec2/instance:Instance resource 'p-w0': creating EC2 Instance: "
    "InsufficientInstanceCapacity: We currently do not have sufficient m8i.2xlarge capacity"
)
QUOTA = "creating EC2 Instance: VcpuLimitExceeded: You have requested more vCPU capacity"


def spec(cloud: str = "aws", **changes: Any) -> PoolSpec:
    values: dict[str, Any] = {
        "name": "waa-eval", "cloud": cloud, "workers": 2, "owner": "alice",
        "expires_at": state.utcnow() + timedelta(hours=4),
        "regions": ["us-east-1"] if cloud == "aws" else ["eastus"],
        "allow_cidrs": ["198.51.100.7/32"],
    }
    values.update(changes)
    return PoolSpec(**values)


@pytest.fixture
def images(oa_home: Path) -> None:
    """A ready image in every region these tests use, as image-create would record it."""
    from oa_vm.model import image_records

    created = state.utcnow() - timedelta(days=1)
    for cloud, region, cloud_id in [
        ("aws", "us-east-1", AWS_IMAGE), ("aws", "us-west-2", "snap-0west"),
        ("azure", "eastus", AZURE_IMAGE), ("azure", "westus3", AZURE_IMAGE + "-w3"),
    ]:
        image_records.save(image_records.ImageRecord(
            id=f"waa-{region}-20260301-1200", cloud=cloud, region=region,
            state=image_records.READY, size_gb=96, created_at=created,
            licence_expires=created + timedelta(days=90), waa_image="w", builder_size="s",
            project=f"oa-vm-{cloud}-images", stack=f"waa-{region}", cloud_id=cloud_id,
        ))


@pytest.fixture
def engine() -> FakePulumiEngine:
    return FakePulumiEngine(AwsLookups())


@pytest.fixture
def aws(engine: FakePulumiEngine, oa_home: Path, images: None) -> AwsProvider:
    return AwsProvider(engine=engine, lister=lambda pool: [])


class Lines(list[str]):
    def __call__(self, line: str) -> None:
        self.append(line)


# --- create -----------------------------------------------------------------------------------


def test_create_returns_every_worker_with_ssh_and_streams_progress(
    aws: AwsProvider, engine: FakePulumiEngine, oa_home: Path
) -> None:
    lines = Lines()
    record = aws.create(spec(), lines)
    assert [w.name for w in record.workers] == ["waa-eval-w0", "waa-eval-w1"]
    for worker in record.workers:
        assert worker.ssh is not None and worker.ssh.user == "ubuntu" and worker.ssh.port == 22
        assert worker.host == worker.ssh.host and worker.provider_id
        assert worker.state == WorkerState.BOOTING
        assert Path(worker.ssh.key_path) == state.pool_dir("waa-eval") / "id_ed25519"
    assert record.provider_data["region"] == "us-east-1"
    assert record.state == state.PoolState.PROVISIONING
    from oa_vm.cost.pricing import hourly_price

    assert record.price_per_hour == pytest.approx(hourly_price("aws", "us-east-1", "m8i.2xlarge"))
    assert any("aws:ec2/instance:Instance waa-eval-w1 creating" in line for line in lines)
    assert engine.live_resources("waa-eval")


def test_create_writes_a_0600_key_and_a_0600_passphrase(aws: AwsProvider, oa_home: Path) -> None:
    aws.create(spec(), Lines())
    key = state.pool_dir("waa-eval") / "id_ed25519"
    passphrase = oa_home / "pulumi" / "passphrase"
    for path in (key, passphrase):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert key.read_text().startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    before = passphrase.read_text()
    assert len(before.strip()) >= 32
    assert pulumi_driver.ensure_passphrase() == passphrase and passphrase.read_text() == before


def test_missing_engine_is_one_line_and_writes_nothing(
    engine: FakePulumiEngine, oa_home: Path
) -> None:
    engine.missing_reason = pulumi_driver.PULUMI_INSTALL_HINT
    provider = AwsProvider(engine=engine)
    with pytest.raises(ProviderUnavailableError) as info:
        provider.create(spec(), Lines())
    message = str(info.value)
    assert "\n" not in message
    assert "curl -fsSL https://get.pulumi.com | sh" in message
    assert not oa_home.exists() or not any(oa_home.rglob("*"))
    assert engine.calls == []


def test_the_real_engine_reports_a_missing_cli(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    missing = pulumi_driver.AutomationEngine().missing()
    assert missing == pulumi_driver.PULUMI_INSTALL_HINT


def test_missing_extra_names_the_pip_command(
    monkeypatch: pytest.MonkeyPatch, engine: FakePulumiEngine, oa_home: Path
) -> None:
    monkeypatch.setitem(sys.modules, "pulumi_aws", None)
    with pytest.raises(ProviderUnavailableError, match=r"pip install 'oa-vm\[aws\]'"):
        AwsProvider(engine=engine).check_available()
    monkeypatch.setitem(sys.modules, "pulumi_azure_native", None)
    with pytest.raises(ProviderUnavailableError, match=r"pip install 'oa-vm\[azure\]'"):
        AzureProvider(engine=engine).check_available()
    assert not oa_home.exists()


def test_a_size_that_cannot_nest_is_refused_before_anything_is_written(
    aws: AwsProvider, engine: FakePulumiEngine, oa_home: Path
) -> None:
    with pytest.raises(InvalidInputError, match="m8i.2xlarge"):
        aws.create(spec(size="t3.large"), Lines())
    # Only the images this test set up are in the home: no pool folder, key or passphrase.
    assert engine.calls == [] and {p.name for p in oa_home.iterdir()} == {"images"}


# --- region failover --------------------------------------------------------------------------


def test_capacity_error_moves_to_the_next_region(
    aws: AwsProvider, engine: FakePulumiEngine
) -> None:
    engine.fail_up["us-east-1"] = CAPACITY
    lines = Lines()
    record = aws.create(spec(regions=["us-east-1", "us-west-2"]), lines)
    assert record.provider_data["region"] == "us-west-2"
    assert record.settings["region"] == "us-west-2"
    assert [c for c in engine.calls if c[0] in ("up", "destroy")] == [
        ("up", "us-east-1"), ("destroy", "waa-eval"), ("up", "us-west-2")
    ]
    tried = record.provider_data["regions_tried"]
    assert tried[0]["region"] == "us-east-1"
    assert "InsufficientInstanceCapacity" in tried[0]["reason"]
    assert any("removing what was made in us-east-1" in line for line in lines)


def test_all_regions_failing_says_what_was_tried_and_why(
    aws: AwsProvider, engine: FakePulumiEngine
) -> None:
    engine.fail_up.update({"us-east-1": CAPACITY, "us-west-2": QUOTA})
    with pytest.raises(PoolProvisioningError) as info:
        aws.create(spec(regions=["us-east-1", "us-west-2"]), Lines())
    message = str(info.value)
    assert "tried 2" in message
    assert "us-east-1: " in message and "InsufficientInstanceCapacity" in message
    assert "us-west-2: " in message and "VcpuLimitExceeded" in message
    assert info.value.resources_left is False
    assert "waa-eval" not in engine.stacks  # nothing left, not even an empty stack


def test_other_errors_stop_at_once_and_roll_back(
    aws: AwsProvider, engine: FakePulumiEngine
) -> None:
    engine.fail_up["us-east-1"] = "UnauthorizedOperation: You are not authorized"
    with pytest.raises(PoolProvisioningError, match="UnauthorizedOperation") as info:
        aws.create(spec(regions=["us-east-1", "us-west-2"]), Lines())
    assert ("up", "us-west-2") not in engine.calls
    assert info.value.resources_left is False and "waa-eval" not in engine.stacks


def test_a_failed_rollback_says_resources_are_left(
    aws: AwsProvider, engine: FakePulumiEngine
) -> None:
    engine.fail_up["us-east-1"] = CAPACITY
    engine.fail_destroy = "DependencyViolation: resource has a dependent object"
    with pytest.raises(PoolProvisioningError, match="pool-cleanup --pool waa-eval") as info:
        aws.create(spec(), Lines())
    assert info.value.resources_left is True
    assert engine.live_resources("waa-eval")


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        (CAPACITY, "capacity"),
        ("Code=SkuNotAvailable Message=The requested VM size Standard_D8s_v5 is not available",
         "capacity"),
        ("Code=ZonalAllocationFailed", "capacity"),
        ("InstanceTypeNotOffered: m8i.2xlarge is not offered in ap-south-2", "capacity"),
        (QUOTA, "quota"),
        ("Code=QuotaExceeded Message=Operation could not be completed as it results in "
         "exceeding approved standardDSv5Family Cores quota", "quota"),
        ("Code=OperationNotAllowed Message=... exceeding quota limits of Core", "quota"),
        ("AuthFailure: AWS was not able to validate the provided access credentials", "other"),
    ],
)
def test_failures_are_classified(message: str, kind: str) -> None:
    failure = classify_failure(f"error: update failed\n  {message}\n")
    assert failure.kind == kind
    assert failure.reason in message or message.startswith(failure.reason[:20])


# --- recovery ---------------------------------------------------------------------------------


def test_a_stale_lock_is_removed_with_a_clear_line(
    aws: AwsProvider, engine: FakePulumiEngine
) -> None:
    engine.add_lock("waa-eval", pid=dead_pid())
    lines = Lines()
    record = aws.create(spec(), lines)
    assert record.workers
    assert any(line.startswith("recovered: removed the lock") for line in lines)
    assert engine.locks(pulumi_driver.stack_ref("oa-vm-aws", "waa-eval")) == []


def test_a_lock_held_by_a_running_process_is_respected(
    aws: AwsProvider, engine: FakePulumiEngine
) -> None:
    engine.add_lock("waa-eval", pid=os.getpid())
    with pytest.raises(ProvisioningError, match="being changed by another oa-vm command"):
        aws.create(spec(), Lines())
    assert ("up", "us-east-1") not in engine.calls


def test_a_lock_from_another_machine_names_the_file_to_delete(
    aws: AwsProvider, engine: FakePulumiEngine
) -> None:
    lock = engine.add_lock("waa-eval", pid=12345, host="some-other-laptop")
    with pytest.raises(ProvisioningError, match="some-other-laptop") as info:
        aws.create(spec(), Lines())
    assert lock.path in str(info.value)


def test_pending_operations_are_cleared_by_export_import(
    aws: AwsProvider, engine: FakePulumiEngine
) -> None:
    engine.add_pending("waa-eval")
    lines = Lines()
    aws.create(spec(), lines)
    assert ("import", "waa-eval") in engine.calls
    assert any("recovered: cleared 1 operation(s)" in line and "creating" in line
               for line in lines)


def test_a_lock_appearing_mid_way_is_recovered_once(
    aws: AwsProvider, engine: FakePulumiEngine
) -> None:
    record = aws.create(spec(), Lines())
    engine.lock_before_next = dead_pid()
    lines = Lines()
    report = aws.destroy(record, lines)
    assert report.left == [] and "waa-eval" not in engine.stacks
    assert sum(line.startswith("recovered: removed the lock") for line in lines) == 1


# --- refresh and destroy ----------------------------------------------------------------------


def test_refresh_marks_vanished_instances_lost(aws: AwsProvider, engine: FakePulumiEngine) -> None:
    record = aws.create(spec(), Lines())
    engine.vanish("waa-eval", str(record.workers[0].provider_id))
    record = aws.refresh(record)
    assert record.workers[0].state == WorkerState.LOST
    assert record.workers[1].state != WorkerState.LOST


def test_destroy_removes_everything_and_the_stack_and_is_idempotent(
    aws: AwsProvider, engine: FakePulumiEngine
) -> None:
    record = aws.create(spec(), Lines())
    lines = Lines()
    report = aws.destroy(record, lines)
    assert report.left == []
    assert any("aws:ec2/instance:Instance waa-eval-w0" in r for r in report.removed)
    assert "waa-eval" not in engine.stacks
    calls = [c[0] for c in engine.calls]
    assert calls.index("refresh") < calls.index("destroy") < calls.index("remove_stack")
    again = aws.destroy(record, Lines())
    assert again.removed == [] and again.left == []


def test_a_destroy_that_leaves_resources_in_the_state_is_not_a_success(
    aws: AwsProvider, engine: FakePulumiEngine
) -> None:
    record = aws.create(spec(), Lines())
    engine.destroy_leaves = {"aws:ec2/instance:Instance"}
    report = aws.destroy(record, Lines())
    assert sorted(item.split()[1] for item in report.left) == ["waa-eval-w0", "waa-eval-w1"]
    assert all(item.startswith("aws:ec2/instance:Instance ") for item in report.left)
    assert any("still holds 2 resource(s)" in hint and "pool-cleanup --pool waa-eval" in hint
               for hint in report.hints)
    assert "waa-eval" in engine.stacks, "a stack holding resources is never removed"
    assert ("remove_stack", "waa-eval") not in engine.calls
    assert not any("instance" in removed.lower() for removed in report.removed)
    # Once the engine gets them, the next cleanup finishes the job.
    engine.destroy_leaves = set()
    again = aws.destroy(record, Lines())
    assert again.left == [] and "waa-eval" not in engine.stacks


def test_destroy_reports_what_the_cloud_still_holds_by_tag(
    engine: FakePulumiEngine, oa_home: Path, images: None
) -> None:
    asked: list[str] = []

    def lister(pool: str) -> list[str]:
        asked.append(pool)
        return ["arn:aws:ec2:us-east-1:1:volume/vol-1"]

    provider = AwsProvider(engine=engine, lister=lister)
    record = provider.create(spec(), Lines())
    report = provider.destroy(record, Lines())
    assert asked == ["waa-eval"]
    assert report.left == ["arn:aws:ec2:us-east-1:1:volume/vol-1"]
    assert any("aws resourcegroupstaggingapi get-resources" in h
               and "Key=oa-vm:pool,Values=waa-eval" in h for h in report.hints)


def test_a_failing_leftover_check_becomes_a_hint(
    engine: FakePulumiEngine, oa_home: Path, images: None
) -> None:
    def lister(pool: str) -> list[str]:
        raise subprocess.TimeoutExpired("aws", 60)

    provider = AwsProvider(engine=engine, lister=lister)
    report = provider.destroy(provider.create(spec(), Lines()), Lines())
    assert report.left == [] and "could not ask the cloud" in report.hints[0]


def test_a_failed_destroy_lists_what_is_left(aws: AwsProvider, engine: FakePulumiEngine) -> None:
    record = aws.create(spec(), Lines())
    engine.fail_destroy = "DependencyViolation: the security group is in use"
    report = aws.destroy(record, Lines())
    assert report.left and "DependencyViolation" in report.hints[0]
    assert "waa-eval" in engine.stacks  # kept, so cleanup can be run again


# --- Azure through the same driver ------------------------------------------------------------


def test_azure_create_and_destroy(oa_home: Path, images: None) -> None:
    engine = FakePulumiEngine(infra_azure.offline_lookup)
    provider = AzureProvider(engine=engine, lister=lambda pool: [])
    record = provider.create(spec("azure", workers=1), Lines())
    (worker,) = record.workers
    assert worker.ssh is not None and worker.ssh.user == "azureuser"
    config = engine.stacks["waa-eval"].config
    assert config["azure-native:location"] == "eastus"
    # The size and disks the create used are pinned in the stack's config.
    assert config["oa-vm:pinned-size"] == "Standard_D8s_v5"
    assert provider.destroy(record, Lines()).left == []


def test_cleanup_after_the_deleter_removed_the_pools_group_ends_cleanly(
    oa_home: Path, images: None
) -> None:
    engine = FakePulumiEngine(infra_azure.offline_lookup)
    provider = AzureProvider(engine=engine, lister=lambda pool: [])
    record = provider.create(spec("azure"), Lines())
    live = [r for r in engine.live_resources("waa-eval") if r["custom"]]
    assert {"azure-native:logic:Workflow", "azure-native:authorization:RoleAssignment"} <= {
        r["type"] for r in live}
    # the deleter fired at the expiry: the group and all it held (the deleter too) are gone
    for res in live:
        engine.vanish("waa-eval", res["cloud_id"])
    assert {w.state for w in provider.refresh(record).workers} == {WorkerState.LOST}
    report = provider.destroy(record, Lines())
    assert (report.left, report.hints) == ([], [])
    assert "waa-eval" not in engine.stacks


def test_azure_all_regions_failing(oa_home: Path, images: None) -> None:
    engine = FakePulumiEngine(infra_azure.offline_lookup)
    engine.fail_up.update({"eastus": "Code=SkuNotAvailable", "westus3": "Code=QuotaExceeded"})
    with pytest.raises(PoolProvisioningError, match="eastus: .*SkuNotAvailable.*westus3: "):
        AzureProvider(engine=engine).create(spec("azure", regions=["eastus", "westus3"]), Lines())


AZ_VM_IDS = [f"/subscriptions/0000/resourceGroups/oa-vm-waa-eval/providers/"
             f"Microsoft.Compute/virtualMachines/waa-eval-w{i}" for i in range(2)]


def _failed_azure_create(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                         answers: dict[str, Any]) -> tuple[PoolProvisioningError, Path]:
    """An Azure create that fails after its VMs exist, whose rollback fails too, with a
    stand-in ``az`` on PATH playing ``answers``."""
    from tests.support import fake_cloud_identity_cli

    az = fake_cloud_identity_cli.install(tmp_path / "bin", "az", answers)
    monkeypatch.setenv("PATH", f"{az.parent}{os.pathsep}{os.environ['PATH']}")
    engine = FakePulumiEngine(infra_azure.offline_lookup)
    engine.fail_up["eastus"] = "Code=OSProvisioningTimedOut: VM has reported a failure"
    engine.fail_destroy = "Code=Conflict: the resource group is being deleted"
    with pytest.raises(PoolProvisioningError) as info:
        AzureProvider(engine=engine).create(spec("azure"), Lines())
    assert info.value.resources_left is True and "\n" not in str(info.value)
    return info.value, az.parent


def test_a_failed_azure_rollback_deallocates_the_pools_vms_by_tag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, oa_home: Path, images: None
) -> None:
    from tests.support import fake_cloud_identity_cli

    error, bin_dir = _failed_azure_create(tmp_path, monkeypatch, {
        "resource list": AZ_VM_IDS, "vm deallocate": {}})
    asked = fake_cloud_identity_cli.calls(bin_dir)
    assert asked[-2][:7] == ["resource", "list", "--tag", "oa-vm:pool=waa-eval",
                             "--resource-type", "Microsoft.Compute/virtualMachines", "--query"]
    assert asked[-1] == ["vm", "deallocate", "--ids", *AZ_VM_IDS]
    message = str(error)
    assert "deallocated 2 VM(s) tagged oa-vm:pool=waa-eval, so none bills for compute" in message
    assert message.endswith(
        "left: resource group oa-vm-waa-eval (its disks and public IPs still bill); remove it "
        "with 'oa-vm pool-cleanup --pool waa-eval' (or 'az group delete --name oa-vm-waa-eval "
        "--yes')")


def test_an_azure_kill_switch_that_fails_gives_the_exact_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, oa_home: Path, images: None
) -> None:
    error, _ = _failed_azure_create(tmp_path, monkeypatch, {
        "resource list": AZ_VM_IDS,
        "vm deallocate": {"exit": 1, "stderr": "ERROR: (AuthorizationFailed) no permission"}})
    message = str(error)
    assert ("the VMs may still be running and billing; stop them now with 'az vm deallocate "
            "--ids $(az resource list --tag oa-vm:pool=waa-eval --resource-type "
            "Microsoft.Compute/virtualMachines --query [].id -o tsv)'") in message
    assert message.endswith("(deallocating failed: ERROR: (AuthorizationFailed) no permission)")


# --- AWS's kill switch after a failed rollback ------------------------------------------------

AWS_INSTANCES = {"Reservations": [
    {"Instances": [{"InstanceId": "i-0aaa", "State": {"Name": "running"}}]},
    {"Instances": [{"InstanceId": "i-0bbb", "State": {"Name": "pending"}}]},
]}


def _failed_aws_create(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                       answers: dict[str, Any]) -> tuple[PoolProvisioningError, Path]:
    """An AWS create that fails after its instances exist, whose rollback fails too, with a
    stand-in ``aws`` on PATH playing ``answers``."""
    from tests.support import fake_cloud_identity_cli

    cli = fake_cloud_identity_cli.install(tmp_path / "bin", "aws", answers)
    monkeypatch.setenv("PATH", f"{cli.parent}{os.pathsep}{os.environ['PATH']}")
    engine = FakePulumiEngine(AwsLookups())
    engine.fail_up["us-east-1"] = "creating EC2 Instance: InsufficientInstanceCapacity"
    engine.fail_destroy = "DependencyViolation: the security group is in use"
    with pytest.raises(PoolProvisioningError) as info:
        AwsProvider(engine=engine).create(spec(), Lines())
    assert info.value.resources_left is True and "\n" not in str(info.value)
    return info.value, cli.parent


def test_a_failed_aws_rollback_terminates_the_pools_instances_by_tag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, oa_home: Path, images: None
) -> None:
    from tests.support import fake_cloud_identity_cli

    error, bin_dir = _failed_aws_create(tmp_path, monkeypatch, {
        "ec2 describe-instances": AWS_INSTANCES, "ec2 terminate-instances": {}})
    asked = fake_cloud_identity_cli.calls(bin_dir)
    assert asked[-2][:4] == ["ec2", "describe-instances", "--filters",
                             "Name=tag:oa-vm:pool,Values=waa-eval"]
    assert "Name=instance-state-name,Values=pending,running,stopping,stopped" in asked[-2]
    assert asked[-2][asked[-2].index("--region") + 1] == "us-east-1"
    assert asked[-1][:4] == ["ec2", "terminate-instances", "--instance-ids", "i-0aaa"]
    assert asked[-1][4] == "i-0bbb" and "us-east-1" in asked[-1]
    message = str(error)
    assert ("terminated 2 instance(s) tagged oa-vm:pool=waa-eval (i-0aaa, i-0bbb), so none "
            "bills for compute") in message
    assert message.endswith("remove them with 'oa-vm pool-cleanup --pool waa-eval'")


def test_an_aws_kill_switch_that_fails_gives_the_exact_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, oa_home: Path, images: None
) -> None:
    error, _ = _failed_aws_create(tmp_path, monkeypatch, {
        "ec2 describe-instances": AWS_INSTANCES,
        "ec2 terminate-instances": {"exit": 254, "stderr": "An error occurred "
                                    "(UnauthorizedOperation) when calling the TerminateInstances "
                                    "operation: You are not authorized"}})
    message = str(error)
    assert ("the instances may still be running and billing; terminate them now with 'aws ec2 "
            "terminate-instances --region us-east-1 --instance-ids $(aws ec2 describe-instances "
            "--region us-east-1 --filters Name=tag:oa-vm:pool,Values=waa-eval "
            "Name=instance-state-name,Values=pending,running,stopping,stopped --query "
            "Reservations[].Instances[].InstanceId --output text)'") in message
    assert message.endswith("(terminating failed: An error occurred (UnauthorizedOperation) "
                            "when calling the TerminateInstances operation: You are not "
                            "authorized)")
