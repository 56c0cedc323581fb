"""Every place that asks the ``aws`` or ``az`` CLI something reports its failure in the CLI's own
words (:mod:`oa_vm.kit.cli_failure`), never as Python's ``Command '[...]' returned non-zero exit
status 255.``, which names the argv and hides the reason.

Each case runs the real code path against a stand-in CLI on PATH that fails as the real one does
without credentials (:mod:`tests.support.fake_cloud_identity_cli`).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from oa_vm.kit.cli_failure import tool_said, why_it_failed
from tests.support import fake_cloud_identity_cli
from tests.support.fake_cloud_identity_cli import AWS_NO_CREDENTIALS, AZ_NOT_LOGGED_IN

AZ_AUTHORIZATION = {"exit": 1, "stderr": (
    "ERROR: (AuthorizationFailed) The client 'alice' does not have authorization to perform "
    "action 'Microsoft.Compute/virtualMachines/deallocate/action'\n"
    "Code: AuthorizationFailed\nMessage: The client 'alice' does not have authorization")}


def _image_named(region: str) -> str:
    from oa_vm.clouds.aws.provider import AwsProvider
    from oa_vm.model.image_records import ImageNotFoundError
    from tests.support.fake_pulumi_engine import FakePulumiEngine
    from tests.support.pool_programs import AwsLookups

    provider = AwsProvider(engine=FakePulumiEngine(AwsLookups()), lister=lambda pool: [])
    with pytest.raises(ImageNotFoundError) as info:
        provider._named_image("waa-us-east-1-20261120-1201", region, look_in_account=True)
    return str(info.value)


def _image_list(region: str) -> str:
    from oa_vm.clouds.aws.provider import AwsProvider
    from oa_vm.errors import ProvisioningError
    from oa_vm.images import list_images

    with pytest.raises(ProvisioningError) as info:
        list_images(AwsProvider(), region)
    return str(info.value)


def _leftover_check(region: str) -> str:
    from oa_vm.clouds.aws.provider import AwsProvider, aws_cli_lister
    from oa_vm.clouds.base import PoolSpec
    from oa_vm.model import image_records, state
    from tests.support.fake_pulumi_engine import FakePulumiEngine
    from tests.support.pool_programs import AWS_IMAGE, AwsLookups

    made = state.utcnow() - timedelta(days=1)
    image_records.save(image_records.ImageRecord(
        id=f"waa-{region}-20260301-1200", cloud="aws", region=region, state=image_records.READY,
        size_gb=96, created_at=made, licence_expires=made + timedelta(days=90), waa_image="w",
        builder_size="s", project="oa-vm-aws-images", stack=f"waa-{region}", cloud_id=AWS_IMAGE,
    ))
    provider = AwsProvider(engine=FakePulumiEngine(AwsLookups()), lister=lambda pool: [])
    record = provider.create(PoolSpec(
        name="waa-eval", cloud="aws", workers=1, owner="alice", regions=[region],
        expires_at=state.utcnow() + timedelta(hours=4), allow_cidrs=["198.51.100.7/32"],
    ), lambda line: None)
    provider.lister = aws_cli_lister(region)
    return " ".join(provider.destroy(record, lambda line: None).hints)


def _quota(region: str) -> str:
    from oa_vm.clouds.quota import read_vcpu_quota

    return read_vcpu_quota("aws", region, "m8i.2xlarge").missing


def _az_power(region: str) -> str:
    from oa_vm.clouds.pulumi.fleet import AzCliPower
    from oa_vm.errors import ProvisioningError

    with pytest.raises(ProvisioningError) as info:
        AzCliPower().deallocate(["/subscriptions/0/vm/w0"], lambda line: None)
    return str(info.value)


def _devtestlab(region: str) -> str:
    from oa_vm.kit.checks import check_resource_providers

    return check_resource_providers().detail


CASES: dict[str, tuple[str, dict[str, object], Callable[[str], str], str]] = {
    "pool-create --image, the account's shared images": (
        "aws", {"ec2 describe-snapshots": AWS_NO_CREDENTIALS}, _image_named,
        "Unable to locate credentials"),
    "image-list --cloud aws": (
        "aws", {"ec2 describe-snapshots": AWS_NO_CREDENTIALS}, _image_list,
        "Unable to locate credentials"),
    "pool-cleanup's check by tag": (
        "aws", {"resourcegroupstaggingapi": AWS_NO_CREDENTIALS}, _leftover_check,
        "Unable to locate credentials"),
    "the plans' vCPU quota": (
        "aws", {"service-quotas": AWS_NO_CREDENTIALS}, _quota, "Unable to locate credentials"),
    "pool-pause on Azure": (
        "az", {"vm deallocate": AZ_AUTHORIZATION}, _az_power,
        "ERROR: (AuthorizationFailed) The client 'alice'"),
    "doctor's devtestlab check": (
        "az", {"provider show": AZ_NOT_LOGGED_IN}, _devtestlab, "Please run 'az login'"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_failing_cloud_cli_is_reported_in_its_own_words(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, oa_home: Path
) -> None:
    cli, answers, ask, words = CASES[case]
    stand_in = fake_cloud_identity_cli.install(tmp_path / "bin", cli, answers)
    monkeypatch.setenv("PATH", f"{stand_in.parent}{os.pathsep}/usr/bin:/bin")
    said = ask("us-east-1")
    assert words in said, said
    assert "Command '" not in said and "exit status" not in said and "\n" not in said, said
    assert fake_cloud_identity_cli.calls(stand_in.parent), "the stand-in was never asked"


def test_the_line_that_says_what_went_wrong_is_picked() -> None:
    assert tool_said(AWS_NO_CREDENTIALS["stderr"], "-").startswith("Unable to locate")
    assert tool_said(str(AZ_AUTHORIZATION["stderr"]), "-").startswith(
        "ERROR: (AuthorizationFailed)")
    assert tool_said("warning: slow\nAn error occurred (AuthFailure) x\nhint", "-") == (
        "An error occurred (AuthFailure) x")
    assert tool_said(b"", "nothing said") == "nothing said"
    assert len(tool_said("x" * 1000, "-")) == 200


def test_each_kind_of_failure_is_one_phrase() -> None:
    failed = subprocess.CalledProcessError(255, ["aws", "ec2"], "", "\nUnable to locate creds\n")
    assert why_it_failed(failed) == "Unable to locate creds"
    silent = subprocess.CalledProcessError(3, ["az"], "", "")
    assert why_it_failed(silent) == "exit code 3, nothing on stderr"
    assert why_it_failed(subprocess.TimeoutExpired(["aws"], 60)) == "no answer within 60 s"
    missing = FileNotFoundError(2, "No such file or directory", "aws")
    assert why_it_failed(missing) == "[Errno 2] No such file or directory: 'aws'"
    assert why_it_failed(ValueError("Expecting value")) == "ValueError: Expecting value"
