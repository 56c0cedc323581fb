"""The leftover listers run the real ``aws``/``az`` command lines against stand-in executables
that print recorded outputs of those CLIs (shapes as the services return them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from oa_vm.clouds.aws.provider import aws_cli_lister
from oa_vm.clouds.azure.provider import az_cli_lister
from tests.support.cli_standins import standin as _standin

TAGGING = {
    "ResourceTagMappingList": [
        {"ResourceARN": "arn:aws:ec2:us-east-1:123456789012:security-group/sg-0abc",
         "Tags": [{"Key": "oa-vm:pool", "Value": "waa-eval"}]},
        # Terminated instances keep their tags here for up to an hour: asked of EC2 instead.
        {"ResourceARN": "arn:aws:ec2:us-east-1:123456789012:instance/i-0dead",
         "Tags": [{"Key": "oa-vm:pool", "Value": "waa-eval"}]},
    ]
}
INSTANCES = {
    "Reservations": [
        {"Instances": [{"InstanceId": "i-0live", "State": {"Code": 16, "Name": "running"}}]}
    ]
}
AZ_LIST = [
    {"id": "/subscriptions/0/resourceGroups/oa-vm-waa-eval/providers/Microsoft.Network/"
           "publicIPAddresses/waa-eval-w0-ip",
     "name": "waa-eval-w0-ip", "type": "Microsoft.Network/publicIPAddresses",
     "tags": {"oa-vm:pool": "waa-eval"}},
]


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "bin"
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")
    return folder


def test_aws_lister_parses_the_tagging_api_and_live_instances(bin_dir: Path) -> None:
    _standin(bin_dir, "aws", {
        "resourcegroupstaggingapi get-resources": TAGGING,
        "ec2 describe-instances": INSTANCES,
    })
    left = aws_cli_lister("us-east-1")("waa-eval")
    assert left == [
        "arn:aws:ec2:us-east-1:123456789012:security-group/sg-0abc",
        "instance i-0live (running)",
    ]
    calls = (bin_dir / "aws.calls").read_text().splitlines()
    assert calls[0] == ("resourcegroupstaggingapi get-resources --tag-filters "
                        "Key=oa-vm:pool,Values=waa-eval --region us-east-1 --output json")
    assert "Name=instance-state-name,Values=pending,running,stopping,stopped" in calls[1]


def test_aws_lister_with_nothing_left(bin_dir: Path) -> None:
    _standin(bin_dir, "aws", {
        "resourcegroupstaggingapi get-resources": {"ResourceTagMappingList": []},
        "ec2 describe-instances": {"Reservations": []},
    })
    assert aws_cli_lister("eu-west-1")("waa-eval") == []


def test_az_lister_parses_resource_list(bin_dir: Path) -> None:
    _standin(bin_dir, "az", {"resource list": AZ_LIST})
    assert az_cli_lister("waa-eval") == [
        "Microsoft.Network/publicIPAddresses waa-eval-w0-ip "
        "(/subscriptions/0/resourceGroups/oa-vm-waa-eval/providers/Microsoft.Network/"
        "publicIPAddresses/waa-eval-w0-ip)"
    ]
    assert (bin_dir / "az.calls").read_text().strip() == (
        "resource list --tag oa-vm:pool=waa-eval -o json"
    )


def test_a_failing_cli_raises_so_cleanup_turns_it_into_a_hint(bin_dir: Path) -> None:
    import subprocess

    _standin(bin_dir, "az", {})
    with pytest.raises(subprocess.CalledProcessError):
        az_cli_lister("waa-eval")
