"""Images a team shares, found in the account by their ``oa-vm:image`` tags.

The real ``oa-vm`` CLI and the real providers run the real ``aws``/``az`` command lines; only the
cloud's answer is recorded (:mod:`tests.support.cli_standins`, shapes as ``aws ec2
describe-snapshots`` and ``az snapshot list`` print them). Pool creation runs against
``FakePulumiEngine`` (the real pool program under Pulumi's mocks).
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from oa_vm.clouds.aws.provider import AwsProvider
from oa_vm.clouds.azure.provider import AzureProvider
from oa_vm.clouds.base import PoolSpec
from oa_vm.errors import InvalidInputError
from oa_vm.model import image_records, state
from oa_vm.model.image_records import ImageNotFoundError
from tests.support.cli import run_cli
from tests.support.cli_standins import standin
from tests.support.fake_pulumi_engine import FakePulumiEngine
from tests.support.pool_programs import AwsLookups

pytestmark = pytest.mark.integration

TEAMMATE = "waa-us-east-1-20261120-1201"
MINE = "waa-us-east-1-20261118-0900"
SUB = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups"


def _stamp(days: float) -> str:
    return state.format_time(state.utcnow() + timedelta(days=days)) or ""


def _aws_tags(image: str, created_days: float, owner: str = "bob@example.com") -> list[Any]:
    tags = {
        "oa-vm:image": image, "oa-vm:owner": owner, "oa-vm:created": _stamp(created_days),
        "oa-vm:waa-image": "windowsarena/winarena@sha256:" + "ab" * 32,
        "oa-vm:base-image": "dockurr/windows@sha256:" + "cd" * 32,
        "oa-vm:licence-expires": _stamp(created_days + 90), "Name": image,
    }
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def _snapshot(snap_id: str, tags: list[Any], state_: str = "completed") -> dict[str, Any]:
    """One entry of ``aws ec2 describe-snapshots`` as the service returns it."""
    return {
        "Description": "oa-vm WAA image (Windows installed, worker image saved)",
        "Encrypted": True, "OwnerId": "123456789012", "Progress": "100%",
        "SnapshotId": snap_id, "StartTime": "2026-11-20T12:40:11.512000+00:00",
        "State": state_, "VolumeId": "vol-0f0e0d0c0b0a09080", "VolumeSize": 96,
        "StorageTier": "standard", "Tags": tags,
    }


def _describe(*snapshots: dict[str, Any]) -> dict[str, Any]:
    return {"Snapshots": list(snapshots)}


def _az_snapshot(image: str, location: str, created_days: float) -> dict[str, Any]:
    """One entry of ``az snapshot list`` as the CLI prints it."""
    return {
        "creationData": {"createOption": "Copy",
                         "sourceResourceId": f"{SUB}/oa-vm-image-{image}/providers/"
                                             f"Microsoft.Compute/disks/{image}-builder-w0-storage"},
        "diskSizeBytes": 103079215104, "diskSizeGB": 96, "diskState": "Unattached",
        "id": f"{SUB}/oa-vm-image-{image}/providers/Microsoft.Compute/snapshots/{image}",
        "incremental": False, "location": location, "name": image,
        "provisioningState": "Succeeded", "resourceGroup": f"oa-vm-image-{image}".upper(),
        "sku": {"name": "Standard_LRS", "tier": "Standard"},
        "tags": {
            "oa-vm:image": image, "oa-vm:owner": "carol@example.com",
            "oa-vm:created": _stamp(created_days),
            "oa-vm:waa-image": "windowsarena/winarena:latest",
            "oa-vm:licence-expires": _stamp(created_days + 90),
        },
        "timeCreated": "2026-11-20T12:40:11.5120000+00:00",
        "type": "Microsoft.Compute/snapshots",
    }


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    return folder


def _env(bin_dir: Path) -> dict[str, str]:
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "OA_VM_IP_ECHO_URL": "http://127.0.0.1:9/"}


def _record_mine(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OA_VM_HOME", str(home))
    created = state.utcnow() - timedelta(days=3)
    image_records.save(image_records.ImageRecord(
        id=MINE, cloud="aws", region="us-east-1", state=image_records.READY, size_gb=96,
        created_at=created, licence_expires=created + timedelta(days=90),
        waa_image="windowsarena/winarena@sha256:0123", builder_size="m8i.2xlarge",
        project="oa-vm-aws-images", stack=MINE, owner="alice", cloud_id="snap-0mine000000000001",
        storage_usd_per_month=4.8,
    ))


def test_image_list_shows_a_teammates_image_found_by_its_tags(
    tmp_path: Path, bin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    _record_mine(home, monkeypatch)
    standin(bin_dir, "aws", {"ec2 describe-snapshots": _describe(
        _snapshot("snap-0a1b2c3d4e5f60718", _aws_tags(TEAMMATE, -1)),
        _snapshot("snap-0mine000000000001", _aws_tags(MINE, -3, owner="alice")),
        # Someone's own snapshot with an unrelated tag: not an oa-vm image.
        _snapshot("snap-0other00000000001", [{"Key": "oa-vm:image", "Value": ""}]),
    )})
    listed = run_cli("oa-vm", "image-list", "--cloud", "aws", "--region", "us-east-1",
                     home=home, env=_env(bin_dir))
    assert listed.returncode == 0, listed.stderr
    lines = {line.split()[2]: line for line in listed.stdout.splitlines()[1:] if line.strip()}
    assert set(lines) == {TEAMMATE, MINE}
    assert "FOUND" in listed.stdout.splitlines()[0]
    assert lines[TEAMMATE].rstrip().endswith("ready  account")
    assert lines[MINE].rstrip().endswith("local+account")
    assert "96 GB" in lines[TEAMMATE]
    calls = (bin_dir / "aws.calls").read_text().splitlines()
    assert calls == ["ec2 describe-snapshots --owner-ids self --filters "
                     "Name=tag-key,Values=oa-vm:image --region us-east-1 --output json"]

    data = json.loads(run_cli("oa-vm", "image-list", "--cloud", "aws", "--region", "us-east-1",
                              "--json", home=home, env=_env(bin_dir)).stdout)
    shared = next(d for d in data if d["id"] == TEAMMATE)
    assert shared["found"] == "account" and shared["cloud_id"] == "snap-0a1b2c3d4e5f60718"
    assert shared["owner"] == "bob@example.com" and shared["expired"] is False
    assert shared["waa_image"].startswith("windowsarena/winarena@sha256:abab")
    assert shared["base_image"].startswith("dockurr/windows@sha256:cdcd")
    # Without --cloud, only this machine's records (no CLI call).
    local = run_cli("oa-vm", "image-list", "--json", home=home, env=_env(bin_dir))
    assert [d["id"] for d in json.loads(local.stdout)] == [MINE]
    assert len((bin_dir / "aws.calls").read_text().splitlines()) == 2


def test_image_list_on_azure_reads_az_snapshot_list(tmp_path: Path, bin_dir: Path) -> None:
    standin(bin_dir, "az", {"snapshot list": [
        _az_snapshot("waa-eastus-20261120-1201", "eastus", -1),
        _az_snapshot("waa-westeurope-20261119-0800", "westeurope", -2),
    ]})
    listed = run_cli("oa-vm", "image-list", "--cloud", "azure", "--region", "eastus", "--json",
                     home=tmp_path / "home", env=_env(bin_dir))
    assert listed.returncode == 0, listed.stderr
    (entry,) = json.loads(listed.stdout)
    assert entry["id"] == "waa-eastus-20261120-1201" and entry["region"] == "eastus"
    assert entry["cloud_id"].endswith("/snapshots/waa-eastus-20261120-1201")
    assert (entry["found"], entry["state"], entry["size_gb"]) == ("account", "ready", 96)


def test_image_list_without_the_cli_or_with_a_failing_one_says_so_in_one_line(
    tmp_path: Path, bin_dir: Path
) -> None:
    missing = run_cli("oa-vm", "image-list", "--cloud", "aws", home=tmp_path / "h",
                      env=_env(bin_dir))
    assert "needs the 'aws' CLI" in missing.assert_one_line_error()
    script = bin_dir / "aws"
    script.write_text("#!/bin/sh\necho 'An error occurred (AuthFailure) when calling the "
                      "DescribeSnapshots operation: AWS was not able to validate the provided "
                      "access credentials' >&2\nexit 254\n")
    script.chmod(0o755)
    failed = run_cli("oa-vm", "image-list", "--cloud", "aws", home=tmp_path / "h",
                     env=_env(bin_dir))
    assert "AuthFailure" in failed.assert_one_line_error()


def test_pool_create_with_an_image_the_cli_cannot_look_for_says_why_in_one_line(
    tmp_path: Path, bin_dir: Path
) -> None:
    script = bin_dir / "aws"
    script.write_text("#!/bin/sh\necho >&2\necho 'Unable to locate credentials. You can "
                      "configure credentials by running \"aws configure\".' >&2\nexit 253\n")
    script.chmod(0o755)
    done = run_cli("oa-vm", "pool-create", "--cloud", "aws", "--workers", "1", "--image",
                   TEAMMATE, "--allow-cidr", "203.0.113.7/32", "-y", home=tmp_path / "h",
                   env=_env(bin_dir))
    line = done.assert_one_line_error()
    assert "asking aws for a shared image failed too (Unable to locate credentials." in line
    assert "Command '" not in line and not (tmp_path / "h" / "pools").exists()


# -- pool-create --image <a teammate's image> ----------------------------------------------------


def _spec(image: str, region: str = "us-east-1") -> PoolSpec:
    return PoolSpec(
        name="waa-eval", cloud="aws", workers=2, owner="alice",
        expires_at=state.utcnow() + timedelta(hours=4), regions=[region],
        allow_cidrs=["198.51.100.7/32"], image=image,
    )


@pytest.fixture
def aws_cli(bin_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return bin_dir


def test_pool_create_accepts_a_teammates_image_after_checking_its_tags(
    oa_home: Path, aws_cli: Path
) -> None:
    standin(aws_cli, "aws", {"ec2 describe-snapshots": _describe(
        _snapshot("snap-0a1b2c3d4e5f60718", _aws_tags(TEAMMATE, -1)),
    )})
    engine = FakePulumiEngine(AwsLookups())
    provider = AwsProvider(engine=engine, lister=lambda pool: [])  # the CLI finds the images
    record = provider.create(_spec(TEAMMATE), lambda line: None)
    instances = [r for r in engine.live_resources("waa-eval")
                 if r["type"] == "aws:ec2/instance:Instance"]
    assert {i["inputs"]["ebsBlockDevices"][0]["snapshotId"] for i in instances} == {
        "snap-0a1b2c3d4e5f60718"
    }
    assert record.settings["image"]["id"] == TEAMMATE
    assert record.settings["image"]["cloud_id"] == "snap-0a1b2c3d4e5f60718"
    # The teammate's image is used, not copied into this machine's records.
    assert image_records.list_records() == []


@pytest.mark.parametrize(
    ("snapshot", "message"),
    [
        (_snapshot("snap-0old", _aws_tags(TEAMMATE, -95)), "expired on"),
        (_snapshot("snap-0pending", _aws_tags(TEAMMATE, -1), "pending"), "not ready"),
    ],
)
def test_a_teammates_expired_or_unfinished_image_is_refused_before_anything(
    oa_home: Path, aws_cli: Path, snapshot: dict[str, Any], message: str
) -> None:
    standin(aws_cli, "aws", {"ec2 describe-snapshots": _describe(snapshot)})
    engine = FakePulumiEngine(AwsLookups())
    provider = AwsProvider(engine=engine, lister=lambda pool: [])
    with pytest.raises(InvalidInputError, match=message) as info:
        provider.create(_spec(TEAMMATE), lambda line: None)
    assert "\n" not in str(info.value)
    assert not [c for c in engine.calls if c[0] == "up"]
    assert not (oa_home / "pools").exists()


def test_an_image_neither_here_nor_in_the_account_is_not_found(
    oa_home: Path, aws_cli: Path
) -> None:
    standin(aws_cli, "aws", {"ec2 describe-snapshots": _describe()})
    provider = AwsProvider(engine=FakePulumiEngine(AwsLookups()), lister=lambda pool: [])
    with pytest.raises(ImageNotFoundError, match="nor does the aws account hold") as info:
        provider.create(_spec(TEAMMATE), lambda line: None)
    assert "oa-vm image-list --cloud aws --region us-east-1" in str(info.value)


def test_the_plan_of_a_pool_from_a_teammates_image_stays_offline(
    tmp_path: Path, bin_dir: Path
) -> None:
    standin(bin_dir, "aws", {})  # any call fails the test below
    plan = run_cli("oa-vm", "pool-create", "--cloud", "aws", "--image", TEAMMATE, "--plan",
                   "--json", "--allow-cidr", "203.0.113.7/32", home=tmp_path / "home",
                   env=_env(bin_dir))
    assert plan.returncode == 0, plan.stderr
    assert json.loads(plan.stdout)["image"]["id"] == TEAMMATE
    assert not (bin_dir / "aws.calls").exists()


def test_azure_pool_create_finds_the_image_in_its_location(
    oa_home: Path, bin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from infra import azure as infra_azure

    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    image = "waa-eastus-20261120-1201"
    standin(bin_dir, "az", {
        "snapshot list": [_az_snapshot(image, "eastus", -1)],
        "provider show --namespace Microsoft.DevTestLab": "Registered",
        "provider show --namespace Microsoft.Logic": "Registered",
    })
    engine = FakePulumiEngine(infra_azure.offline_lookup)
    provider = AzureProvider(engine=engine, lister=lambda pool: [])
    spec = PoolSpec(name="waa-eval", cloud="azure", workers=1, owner="alice",
                    expires_at=state.utcnow() + timedelta(hours=4), regions=["eastus"],
                    allow_cidrs=["198.51.100.7/32"], image=image)
    provider.create(spec, lambda line: None)
    (disk,) = [r for r in engine.live_resources("waa-eval")
               if r["type"] == "azure-native:compute:Disk"]
    assert disk["inputs"]["creationData"]["sourceResourceId"].endswith(f"/snapshots/{image}")
