"""The image programs under Pulumi's mocks: the snapshot's timeouts, the builder's storage volume
(size, encryption, ends with the builder), the image's tags and what the stages export."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from infra import azure as infra_azure
from infra import image_aws, image_azure
from infra.offline import OfflineRun, run_offline
from infra.settings import ImageSettings, SettingsError
from infra.tags import IMAGE_KEYS
from tests.support.pool_programs import AwsLookups, make_settings, of_type

SNAPSHOT = {"aws": "aws:ebs/snapshot:Snapshot", "azure": "azure-native:compute:Snapshot"}
CREATED = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
WAA_DIGEST = "windowsarena/winarena@sha256:" + "ab" * 32
BASE_DIGEST = "dockurr/windows@sha256:" + "cd" * 32
# One instant for every run of this module: the builder's expiry is in its inputs (tags, the
# shutdown time), and Azure refuses one more than 24 h away.
EXPIRES = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=6)


def _image(cloud: str, **changes: Any) -> ImageSettings:
    builder = make_settings(  # one host in build mode, as oa_vm.images.image_settings makes it
        cloud, name="waa-img", storage_gb=112, expires_at=EXPIRES, workers=1, mode="build",
        image_id=None,
    )
    # As the snapshot stages see it: the builder reported its digests (oa_vm.images).
    image = ImageSettings(name="waa-img", builder=builder, created_at=CREATED,
                          waa_digest=WAA_DIGEST, base_digest=BASE_DIGEST)
    return replace(image, **changes)


def _run(cloud: str, image: ImageSettings, stage: str, kept: str | None = None) -> OfflineRun:
    if cloud == "aws":
        return run_offline(lambda: image_aws.image_program(image, stage, kept), AwsLookups())
    return run_offline(lambda: image_azure.image_program(image, stage, kept),
                       infra_azure.offline_lookup)


def _duration_s(text: str) -> float:
    """A Go duration (``3h``, ``90m``, ``1h30m``) in seconds."""
    units = {"h": 3600, "m": 60, "s": 1}
    parts = re.findall(r"(\d+(?:\.\d+)?)([hms])", text)
    assert parts and "".join(n + u for n, u in parts) == text, text
    return sum(float(n) * units[u] for n, u in parts)


@pytest.mark.parametrize("cloud", ["aws", "azure"])
@pytest.mark.parametrize("stage", ["snapshot", "keep"])
def test_the_snapshot_waits_hours_not_the_providers_ten_minutes(cloud: str, stage: str) -> None:
    run = _run(cloud, _image(cloud), stage, "vol-kept" if stage == "keep" else None)
    (snapshot,) = of_type(run, SNAPSHOT[cloud])
    timeouts = snapshot.custom_timeouts
    # What the engine receives: a first full snapshot of a 40-60 GB disk takes over an hour.
    assert _duration_s(timeouts["create"]) >= 2 * 3600
    assert _duration_s(timeouts["update"]) >= 2 * 3600


def test_the_aws_builder_gets_an_empty_encrypted_volume_that_ends_with_it() -> None:
    run = _run("aws", _image("aws"), "build")
    (builder,) = of_type(run, "aws:ec2/instance:Instance")
    (storage,) = builder.inputs["ebsBlockDevices"]
    assert storage["volumeSize"] == 112
    assert (storage["volumeType"], storage["encrypted"]) == ("gp3", True)
    assert "snapshotId" not in storage
    # Deleted with the instance: the expiry's termination ends an abandoned build's volume too.
    assert storage["deleteOnTermination"] is True
    assert builder.inputs["instanceInitiatedShutdownBehavior"] == "terminate"
    assert not of_type(run, "aws:ebs/volume:Volume"), "no volume that outlives the builder"
    assert run.exports["volume_id"] == f"vol-{builder.name}-0"


def test_the_azure_builder_disk_is_empty_and_sized() -> None:
    run = _run("azure", _image("azure"), "build")
    (disk,) = of_type(run, "azure-native:compute:Disk")
    assert disk.inputs["creationData"] == {"createOption": "Empty"}
    assert disk.inputs["diskSizeGB"] == 112
    # its group is the image's, holding the snapshot: no deleter may end that group
    assert not of_type(run, "azure-native:logic:Workflow")
    assert not of_type(run, "azure-native:authorization:RoleAssignment")


@pytest.mark.parametrize("cloud", ["aws", "azure"])
def test_the_snapshot_is_tagged_as_an_image_with_both_digests(cloud: str) -> None:
    image = _image(cloud, waa_digest=WAA_DIGEST, base_digest=BASE_DIGEST)
    run = _run(cloud, image, "snapshot")
    (snapshot,) = of_type(run, SNAPSHOT[cloud])
    tags = snapshot.inputs["tags"]
    assert set(IMAGE_KEYS) <= set(tags)
    assert tags["oa-vm:image"] == "waa-img"
    assert tags["oa-vm:waa-image"] == WAA_DIGEST
    assert tags["oa-vm:base-image"] == BASE_DIGEST
    assert tags["oa-vm:created"] == "2026-03-01T12:00:00Z"
    assert tags["oa-vm:licence-expires"] == "2026-05-30T12:00:00Z"
    assert "oa-vm:pool" not in tags, "pool cleanup must never take an image"
    # The builder's own inputs do not see the digests (its user data would change).
    plain = _run(cloud, _image(cloud, waa_digest=WAA_DIGEST.replace("ab", "ef"),
                                base_digest=BASE_DIGEST.replace("cd", "ef")), "snapshot")

    def builder_inputs(run: OfflineRun) -> dict[tuple[str, str], Any]:
        # by type and name: a schedule and its role policy share a name, and the engine
        # registers resources in parallel, so a name alone kept whichever came last
        return {(r.type, r.name): r.inputs for r in run.resources
                if r.type != SNAPSHOT[cloud] and r.type != "azure-native:resources:ResourceGroup"}

    assert builder_inputs(plain) == builder_inputs(run)


def test_the_builder_is_tagged_with_the_requested_reference_until_it_reports() -> None:
    image = _image("azure", waa_digest="", base_digest="")
    assert image.built_from("build") == ("windowsarena/winarena:latest", "")


@pytest.mark.parametrize("cloud", ["aws", "azure"])
@pytest.mark.parametrize("digests", [
    {"waa_digest": "", "base_digest": ""},
    {"waa_digest": "windowsarena/winarena:latest", "base_digest": BASE_DIGEST},
    {"waa_digest": WAA_DIGEST, "base_digest": ""},
])
def test_a_snapshot_is_never_tagged_with_a_tag_name_for_a_digest(
    cloud: str, digests: dict[str, str]
) -> None:
    with pytest.raises(SettingsError, match="digest"):
        _run(cloud, _image(cloud, **digests), "snapshot")


def test_the_build_exports_the_ami_it_used_and_a_pinned_ami_is_not_looked_up() -> None:
    lookups = AwsLookups()
    image = _image("aws")
    run = run_offline(lambda: image_aws.image_program(image, "build"), lookups)
    assert run.exports["pinned"]["ami"] == lookups.ami
    assert run.exports["pinned"]["storage_gb"] == "112"
    lookups.ami = "ami-0newer"
    pinned = replace(image, builder=replace(image.builder, ami_id="ami-0123456789abcdef0"))
    lookups.calls.clear()
    again = run_offline(lambda: image_aws.image_program(pinned, "snapshot"), lookups)
    (builder,) = of_type(again, "aws:ec2/instance:Instance")
    assert builder.inputs["ami"] == "ami-0123456789abcdef0"
    assert not [c for c in lookups.calls if c[0] == "aws:ec2/getAmi:getAmi"]


def test_the_azure_image_is_a_full_standard_hdd_snapshot() -> None:
    """Full, not incremental: the keep stage deletes the builder's disk, and an incremental
    snapshot depends on its source disk's chain; Standard HDD: read once per worker."""
    run = _run("azure", _image("azure"), "keep", "/subscriptions/0/disks/waa-img-builder-w0")
    (snapshot,) = of_type(run, SNAPSHOT["azure"])
    assert snapshot.inputs["incremental"] is False
    assert snapshot.inputs["sku"] == {"name": "Standard_LRS"}
    assert snapshot.inputs["creationData"] == {
        "createOption": "Copy", "sourceResourceId": "/subscriptions/0/disks/waa-img-builder-w0"
    }
