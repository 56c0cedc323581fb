"""Prepared images through the driver against ``FakePulumiEngine``: build, snapshot, builder
deleted, a pool from the image, pool cleanup that keeps the image, image-delete.

The engine is the only stand-in (the image and pool programs are the real ones, run under
Pulumi's mocks by the fake engine); the builder's own report (``wait_built``) stands for the
SSH follow-up, which ``tests/integration/test_cloud_wait.py`` runs over a real SSH session.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from oa_vm import images
from oa_vm.clouds.aws.provider import AwsProvider
from oa_vm.clouds.azure.provider import AzureProvider
from oa_vm.clouds.base import PoolSpec
from oa_vm.errors import InvalidInputError, ProvisioningError
from oa_vm.kit import timings
from oa_vm.model import image_records, state
from oa_vm.model.image_records import ImageRecord
from oa_vm.model.state import WorkerState
from tests.support.fake_pulumi_engine import FakePulumiEngine
from tests.support.pool_programs import AwsLookups

INSTANCE = "aws:ec2/instance:Instance"
SNAPSHOT = "aws:ebs/snapshot:Snapshot"
DIGEST = "windowsarena/winarena@sha256:" + "0123abcd" * 8
BASE_DIGEST = "dockurr/windows@sha256:" + "4567ef01" * 8


class Lines(list[str]):
    def __call__(self, line: str) -> None:
        self.append(line)


@pytest.fixture
def engine() -> FakePulumiEngine:
    return FakePulumiEngine(AwsLookups())


@pytest.fixture
def aws(engine: FakePulumiEngine, oa_home: Path) -> AwsProvider:
    return AwsProvider(engine=engine, lister=lambda pool: [])


def pool_spec(cloud: str = "aws", **changes: Any) -> PoolSpec:
    values: dict[str, Any] = {
        "name": "waa-eval", "cloud": cloud, "workers": 2, "owner": "alice",
        "expires_at": state.utcnow() + timedelta(hours=4),
        "regions": ["us-east-1"] if cloud == "aws" else ["eastus"],
        "allow_cidrs": ["198.51.100.7/32"],
    }
    values.update(changes)
    return PoolSpec(**values)


INDEXES = {"test_all": {"chrome": ["a-1", "b-2"]}, "test_small": {"chrome": ["a-1"]}}
"""WAA's index files as the builder read them out of the WAA image."""


def build(provider: Any, engine: FakePulumiEngine, region: str = "us-east-1") -> ImageRecord:
    def wait_built(
        record: ImageRecord, outputs: Mapping[str, Any], progress: Any
    ) -> dict[str, Any]:
        # The builder runs now: an instance with an empty volume of its own, no snapshot yet.
        live = engine.live_types(record.stack)
        if provider.name == "aws":
            assert INSTANCE in live and SNAPSHOT not in live
            (builder,) = [r for r in engine.live_resources(record.stack)
                          if r["type"] == INSTANCE]
            (storage,) = builder["inputs"]["ebsBlockDevices"]
            assert "snapshotId" not in storage and storage["deleteOnTermination"] is True
        assert outputs["workers"][0]["ssh_user"] in ("ubuntu", "azureuser")
        return {"waa_image": DIGEST, "base_image": BASE_DIGEST, "built": "2026-03-01T12:00:00Z",
                "task_indexes": INDEXES}

    return images.create_image(provider, region, allow_cidrs=["198.51.100.7/32"],
                               owner="alice", wait_built=wait_built, progress=Lines())


def test_build_snapshots_deletes_the_builder_and_keeps_the_image(
    aws: AwsProvider, engine: FakePulumiEngine, oa_home: Path
) -> None:
    record = build(aws, engine)
    assert record.state == image_records.READY
    assert engine.live_types(record.stack) == [SNAPSHOT], "only the image is left"
    (snapshot,) = [r for r in engine.live_resources(record.stack) if r["type"] == SNAPSHOT]
    assert record.cloud_id == snapshot["id"]
    # The snapshot's input never changed (the builder volume's ID), so it was kept, not remade.
    assert snapshot["inputs"]["volumeId"] == record.volume_id
    tags = snapshot["inputs"]["tags"]
    assert tags["oa-vm:image"] == record.id and "oa-vm:pool" not in tags
    assert tags["oa-vm:created"] == record.created_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert record.licence_expires - record.created_at == timedelta(days=90)
    assert tags["oa-vm:licence-expires"] == record.licence_expires.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert record.waa_image == DIGEST
    # Recorded under $OA_VM_HOME like the pools: versioned JSON.
    saved = json.loads((oa_home / "images" / f"{record.id}.json").read_text())
    assert saved["version"] == 1 and saved["state"] == "ready" and saved["region"] == "us-east-1"
    # with WAA's index files, so its pools' task IDs are checked before a pool exists
    assert saved["task_indexes"] == INDEXES
    assert image_records.load(record.id).task_indexes == INDEXES
    assert image_records.load(record.id) == record
    # The builder's key is gone with the builder.
    assert not state.pool_dir(record.id).exists()
    ups = [c for c in engine.calls if c[0] == "up"]
    assert len(ups) == 3  # build, snapshot, keep


def test_a_pool_starts_from_the_image_and_its_cleanup_keeps_the_image(
    aws: AwsProvider, engine: FakePulumiEngine, oa_home: Path
) -> None:
    image = build(aws, engine)
    pool = aws.create(pool_spec(), Lines())  # no --image: the newest ready one of the region
    instances = [r for r in engine.live_resources("waa-eval") if r["type"] == INSTANCE]
    assert len(instances) == 2
    for inst in instances:
        (storage,) = inst["inputs"]["ebsBlockDevices"]
        assert storage["snapshotId"] == image.cloud_id
    assert pool.settings["image"]["id"] == image.id
    assert pool.settings["wait_timeout_s"] == timings.FIRST_POOL_WAIT_S  # the host's own budget
    report = aws.destroy(pool, Lines())
    assert not report.left and not engine.live_resources("waa-eval")
    assert engine.live_types(image.stack) == [SNAPSHOT], "pool cleanup keeps the image"
    assert image_records.load(image.id).state == image_records.READY

    report = images.delete_image(image.id, aws, Lines())
    assert not report.left
    assert image.stack not in engine.stacks
    assert not image_records.record_path(image.id).exists()
    assert any("removed the record of image" in line for line in report.removed)


def test_a_failed_build_removes_everything_and_names_the_step(
    aws: AwsProvider, engine: FakePulumiEngine, oa_home: Path
) -> None:
    def fails(record: ImageRecord, outputs: Mapping[str, Any], progress: Any) -> dict[str, str]:
        raise ProvisioningError("builder failed at kvm: nested virtualization is not enabled")

    with pytest.raises(ProvisioningError) as info:
        images.create_image(aws, "us-east-1", allow_cidrs=["198.51.100.7/32"], owner="alice",
                            wait_built=fails)
    assert "failed at the wait step" in str(info.value) and "kvm" in str(info.value)
    assert not engine.stacks, "builder and stack removed"
    assert image_records.list_records() == []


@pytest.mark.parametrize("info", [
    {"waa_image": "windowsarena/winarena:latest", "base_image": BASE_DIGEST},
    {"waa_image": DIGEST},
])
def test_a_build_that_reports_no_digests_is_not_snapshotted(
    aws: AwsProvider, engine: FakePulumiEngine, oa_home: Path, info: dict[str, str]
) -> None:
    """The image's tags name the digests it was built from, never a tag name in their place."""
    def reports(record: ImageRecord, outputs: Mapping[str, Any], progress: Any
                ) -> dict[str, str]:
        return info

    with pytest.raises(ProvisioningError) as raised:
        images.create_image(aws, "us-east-1", allow_cidrs=["198.51.100.7/32"], owner="alice",
                            wait_built=reports)
    assert "failed at the wait step" in str(raised.value)
    assert "not a digest" in str(raised.value)
    assert not engine.stacks and image_records.list_records() == []


def test_the_build_plan_prices_the_snapshot_stage_and_outlives_it(
    aws: AwsProvider, oa_home: Path
) -> None:
    from oa_vm.cost import cloud_plan

    plan = images.plan_image(aws, "us-east-1", allow_cidrs=["198.51.100.7/32"], owner="alice")
    hours = (cloud_plan.BUILD_READY_S + cloud_plan.SNAPSHOT_READY_S) / 3600
    assert plan.price_per_hour is not None
    note = next(n for n in plan.notes if n.startswith("the builder runs about"))
    assert f"about {hours:.1f} h with the snapshot stage (${plan.price_per_hour * hours:.2f}" \
        in note
    ttl_h = images.BUILDER_TTL.total_seconds() / 3600
    assert ttl_h * 3600 >= images.BUILD_WAIT_S + cloud_plan.SNAPSHOT_MAX_S
    assert f"it ends itself after {ttl_h:g} h" in note


def test_the_build_plan_names_each_image_only_a_tag_pins(
    aws: AwsProvider, oa_home: Path
) -> None:
    from infra import settings

    plan = images.plan_image(aws, "us-east-1", allow_cidrs=["198.51.100.7/32"], owner="alice")
    unpinned = [n for n in plan.notes if "is a tag, not pinned" in n]
    expected = [ref for ref in (settings.DEFAULT_WAA_IMAGE, settings.DEFAULT_BASE_IMAGE)
                if not settings.is_digest(ref)]
    assert [n.split(" ", 1)[0] for n in unpinned] == expected
    assert images.unpinned_notes("dockurr/windows@sha256:" + "ab" * 32) == []


def test_a_real_create_without_an_image_refuses_before_anything(
    aws: AwsProvider, engine: FakePulumiEngine, oa_home: Path
) -> None:
    with pytest.raises(InvalidInputError) as info:
        aws.create(pool_spec(), Lines())
    message = str(info.value)
    assert "\n" not in message
    assert "oa-vm image-create --cloud aws --region us-east-1" in message
    assert engine.calls == []
    assert not (oa_home / "pools").exists()


def test_expired_and_foreign_images_are_refused(
    aws: AwsProvider, engine: FakePulumiEngine, oa_home: Path
) -> None:
    image = build(aws, engine)
    image.licence_expires = state.utcnow() - timedelta(days=1)
    image_records.save(image)
    with pytest.raises(InvalidInputError, match="expired on .*oa-vm image-create"):
        aws.preflight(pool_spec(image=image.id))
    with pytest.raises(InvalidInputError, match="oa-vm image-create"):
        aws.preflight(pool_spec())  # the only image is expired: none usable
    with pytest.raises(InvalidInputError, match="in aws us-east-1, not aws us-west-2"):
        aws.choose_image(pool_spec(image=image.id), "us-west-2")


def test_azure_image_lifecycle_keeps_the_group_and_snapshot(oa_home: Path) -> None:
    from infra import azure as infra_azure

    engine = FakePulumiEngine(infra_azure.offline_lookup)
    azure = AzureProvider(engine=engine, lister=lambda pool: [])
    image = build(azure, engine, region="eastus")
    assert engine.live_types(image.stack) == [
        "azure-native:compute:Snapshot", "azure-native:resources:ResourceGroup"
    ]
    pool = azure.create(pool_spec("azure"), Lines())
    disks = [r for r in engine.live_resources("waa-eval")
             if r["type"] == "azure-native:compute:Disk"]
    assert {d["inputs"]["creationData"]["sourceResourceId"] for d in disks} == {image.cloud_id}
    assert pool.workers[0].state == WorkerState.BOOTING


def test_a_newer_ami_between_the_builds_updates_replaces_nothing(
    aws: AwsProvider, engine: FakePulumiEngine, oa_home: Path
) -> None:
    """Canonical publishes a newer AMI while Windows installs (1-3 h): the snapshot update keeps
    the builder's AMI (a replaced builder would lose its disk, and the attachment fail)."""
    lookups = engine.lookup
    assert isinstance(lookups, AwsLookups)
    seen: dict[str, Any] = {}

    def wait_built(record: ImageRecord, outputs: Mapping[str, Any], progress: Any
                   ) -> dict[str, str]:
        (builder,) = [r for r in engine.live_resources(record.stack) if r["type"] == INSTANCE]
        seen["builder"] = builder
        lookups.ami = "ami-0fffffffffffffff1"
        lookups.calls.clear()
        return {"waa_image": DIGEST, "base_image": BASE_DIGEST}

    record = images.create_image(aws, "us-east-1", allow_cidrs=["198.51.100.7/32"],
                                 owner="alice", wait_built=wait_built)
    assert not [call for call in lookups.calls if call[0] == "aws:ec2/getAmi:getAmi"]
    assert record.state == image_records.READY
    # The snapshot stage's builder is the build stage's, input for input; only the snapshot's
    # tags learnt the digests the builder reported.
    ups = [c for c in engine.calls if c[0] == "up"]
    assert len(ups) == 3
    assert seen["builder"]["inputs"]["ami"] == "ami-0123456789abcdef0"
    (snapshot,) = [r for r in engine.live_resources(record.stack) if r["type"] == SNAPSHOT]
    assert snapshot["inputs"]["tags"]["oa-vm:waa-image"] == DIGEST
    assert snapshot["inputs"]["tags"]["oa-vm:base-image"] == BASE_DIGEST
    assert (record.waa_image, record.base_image) == (DIGEST, BASE_DIGEST)


def test_the_snapshot_update_changes_no_builder_input(
    aws: AwsProvider, engine: FakePulumiEngine, oa_home: Path
) -> None:
    lookups = engine.lookup
    assert isinstance(lookups, AwsLookups)
    replaced: list[list[str]] = []
    real_update = aws.driver.update

    def update(ref: Any, program: Any, config: Any, progress: Any) -> dict[str, Any]:
        outputs = real_update(ref, program, config, progress)
        replaced.append(engine.replaced(ref.stack))
        return outputs

    aws.driver.update = update  # type: ignore[method-assign]

    def wait_built(record: ImageRecord, outputs: Mapping[str, Any], progress: Any
                   ) -> dict[str, str]:
        lookups.ami = "ami-0fffffffffffffff1"
        return {"waa_image": DIGEST, "base_image": BASE_DIGEST}

    images.create_image(aws, "us-east-1", allow_cidrs=["198.51.100.7/32"], owner="alice",
                        wait_built=wait_built)
    assert replaced[1] == [], "the snapshot stage changed the builder"


def test_an_image_delete_that_leaves_the_snapshot_keeps_the_record(
    aws: AwsProvider, engine: FakePulumiEngine, oa_home: Path
) -> None:
    image = build(aws, engine)
    engine.destroy_leaves = {SNAPSHOT}
    report = images.delete_image(image.id, aws, Lines())
    assert report.left and report.left[0].startswith(SNAPSHOT)
    kept = image_records.load(image.id)
    assert kept.detail is not None and kept.detail.startswith("left: ")
    assert image.stack in engine.stacks


def test_a_failed_build_whose_rollback_leaves_resources_keeps_a_failed_record(
    aws: AwsProvider, engine: FakePulumiEngine, oa_home: Path
) -> None:
    def fails(record: ImageRecord, outputs: Mapping[str, Any], progress: Any) -> dict[str, str]:
        engine.destroy_leaves = {INSTANCE}  # the builder survives the rollback's destroy
        raise ProvisioningError("builder failed at guest: Windows never answered")

    with pytest.raises(ProvisioningError, match="removing what was made failed too") as info:
        images.create_image(aws, "us-east-1", allow_cidrs=["198.51.100.7/32"], owner="alice",
                            wait_built=fails)
    assert "oa-vm image-delete" in str(info.value)
    (record,) = image_records.list_records()
    assert record.state == image_records.FAILED
    assert record.detail is not None and INSTANCE in record.detail
    assert record.stack in engine.stacks, "the stack that still holds the builder is kept"


# --- a user's own ISO (--iso) ------------------------------------------------------------------

BLOB_ISO = "https://acct.blob.core.windows.net/isos/win11.iso?sv=2024-01-01&sig=SECRET"


def _builder_user_data(engine: FakePulumiEngine, stack: str) -> str:
    import base64
    import gzip

    (builder,) = [r for r in engine.live_resources(stack) if r["type"] == INSTANCE]
    return gzip.decompress(base64.b64decode(builder["inputs"]["userDataBase64"])).decode()


def test_an_iso_url_becomes_dockurs_version_on_the_builder(
    aws: AwsProvider, engine: FakePulumiEngine
) -> None:
    """dockur downloads a URL given as VERSION (windows/src/mido.sh, downloadImage's isURL):
    the builder's environment carries the user's URL instead of the Microsoft edition."""
    seen: dict[str, str] = {}

    def wait_built(record: ImageRecord, outputs: Mapping[str, Any], progress: Any
                   ) -> dict[str, str]:
        seen["user_data"] = _builder_user_data(engine, record.stack)
        return {"waa_image": DIGEST, "base_image": BASE_DIGEST, "built": "2026-03-01T12:00:00Z"}

    images.create_image(aws, "us-east-1", allow_cidrs=["198.51.100.7/32"], owner="alice",
                        wait_built=wait_built, progress=Lines(), iso=BLOB_ISO)
    assert f"VERSION='{BLOB_ISO}'" in seen["user_data"]
    assert "VERSION=11e" not in seen["user_data"]


def test_an_iso_the_build_cannot_use_is_refused_before_anything_is_made(
    aws: AwsProvider, engine: FakePulumiEngine, tmp_path: Path
) -> None:
    not_iso = tmp_path / "win11.iso"  # a zip, a text file, a truncated download...
    not_iso.write_bytes(b"PK\x03\x04" + bytes(40_000) + b"CD001")
    short = tmp_path / "short.iso"
    short.write_bytes(bytes(16 * 2048))  # the system area and no descriptor
    for iso, words in [
        (str(tmp_path / "missing.iso"), "does not exist"),
        ("ftp://host/win.iso", "use an https:// URL"),
        ("s3://bucket-only", "needs a bucket and a key"),
        (str(not_iso), "not an ISO image (no ISO 9660 or UDF volume descriptor)"),
        (str(short), "not an ISO image"),
        (str(tmp_path), "is a folder, not a file"),
    ]:
        with pytest.raises(InvalidInputError, match="^--iso ") as info:
            images.create_image(aws, "us-east-1", allow_cidrs=["198.51.100.7/32"],
                                owner="alice", progress=Lines(), iso=iso)
        assert words in str(info.value) and "\n" not in str(info.value)
    assert engine.calls == [] and image_records.list_records() == []


def test_the_plan_names_the_isos_source_without_its_signature(aws: AwsProvider) -> None:
    plan = images.plan_image(aws, "us-east-1", iso=BLOB_ISO)
    text = plan.describe()
    assert "Windows: your ISO at https://acct.blob.core.windows.net/isos/win11.iso" in text
    assert "SECRET" not in text
    default = images.plan_image(aws, "us-east-1").describe()
    assert "Windows: downloaded by dockur from Microsoft" in default


def test_an_s3_iso_is_presigned_for_the_builders_life(
    aws: AwsProvider, engine: FakePulumiEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from tests.support import fake_cloud_identity_cli as fake

    signed = ("https://isos.s3.us-east-1.amazonaws.com/win11.iso?X-Amz-Algorithm=AWS4-HMAC-SHA256"
              "&X-Amz-Expires=21600&X-Amz-Signature=abc")
    cli = fake.install(tmp_path / "bin", "aws", {"s3 presign": {"stdout": signed + "\n"}})
    monkeypatch.setenv("PATH", f"{cli.parent}{os.pathsep}{os.environ['PATH']}")
    seen: dict[str, str] = {}

    def wait_built(record: ImageRecord, outputs: Mapping[str, Any], progress: Any
                   ) -> dict[str, str]:
        seen["user_data"] = _builder_user_data(engine, record.stack)
        return {"waa_image": DIGEST, "base_image": BASE_DIGEST, "built": "2026-03-01T12:00:00Z"}

    images.create_image(aws, "us-east-1", allow_cidrs=["198.51.100.7/32"], owner="alice",
                        wait_built=wait_built, progress=Lines(), iso="s3://isos/win11.iso")
    (asked,) = fake.calls(cli.parent)
    assert asked[:3] == ["s3", "presign", "s3://isos/win11.iso"]
    assert asked[asked.index("--expires-in") + 1] == str(int(images.BUILDER_TTL.total_seconds()))
    assert f"VERSION='{signed}'" in seen["user_data"]


def _iso_file(path: Path, descriptor: bytes = b"CD001", at_sector: int = 16) -> Path:
    """A file carrying a volume descriptor's identifier where ISO 9660 and UDF put them."""
    path.write_bytes(bytes(at_sector * 2048) + b"\x01" + descriptor + bytes(2042) + b"x" * 5000)
    return path


@pytest.mark.parametrize("descriptor,at_sector", [(b"CD001", 16), (b"BEA01", 16),
                                                  (b"NSR02", 17), (b"NSR03", 18)])
def test_an_iso_9660_or_udf_file_is_taken(tmp_path: Path, descriptor: bytes,
                                          at_sector: int) -> None:
    from oa_vm.clouds import iso_source

    iso_source.check(str(_iso_file(tmp_path / "win.iso", descriptor, at_sector)))


def test_a_local_iso_is_uploaded_to_the_builder_before_the_wait_and_dockur_binds_it(
    aws: AwsProvider, engine: FakePulumiEngine, tmp_path: Path
) -> None:
    """``--iso PATH``: the builder waits for the file (its size in the builder's settings, the
    upload's budget added to its life) and no VERSION URL is made; the upload runs once the
    builder exists and before the wait for ``built``."""
    iso = _iso_file(tmp_path / "Win11.iso")
    order: list[str] = []

    def upload(record: ImageRecord, outputs: Mapping[str, Any], path: Path, progress: Any
               ) -> None:
        order.append("upload")
        assert path == iso and outputs["workers"], "the builder exists"
        assert engine.live_resources(record.stack)

    def wait_built(record: ImageRecord, outputs: Mapping[str, Any], progress: Any
                   ) -> dict[str, str]:
        order.append("wait")
        user_data = _builder_user_data(engine, record.stack)
        assert f"OA_VM_ISO_BYTES={iso.stat().st_size}\n" in user_data
        assert "OA_VM_ISO_TIMEOUT_S=" in user_data
        assert "VERSION=11e" in user_data  # dockur ignores VERSION when /custom.iso is bound
        return {"waa_image": DIGEST, "base_image": BASE_DIGEST, "built": "2026-03-01T12:00:00Z"}

    images.create_image(aws, "us-east-1", allow_cidrs=["198.51.100.7/32"], owner="alice",
                        wait_built=wait_built, progress=Lines(), iso=str(iso), upload=upload)
    assert order == ["upload", "wait"]
    assert images.builder_ttl(iso.stat().st_size) > images.BUILDER_TTL


def test_a_failed_upload_removes_the_builder_and_names_the_step(
    aws: AwsProvider, engine: FakePulumiEngine, tmp_path: Path
) -> None:
    def upload(record: ImageRecord, outputs: Mapping[str, Any], path: Path, progress: Any
               ) -> None:
        raise ProvisioningError("img-builder: your ISO was not uploaded within 1h 0m")

    with pytest.raises(ProvisioningError, match="failed at the upload step: img-builder: your "
                       "ISO was not uploaded"):
        images.create_image(aws, "us-east-1", allow_cidrs=["198.51.100.7/32"], owner="alice",
                            progress=Lines(), iso=str(_iso_file(tmp_path / "w.iso")),
                            upload=upload)
    assert image_records.list_records() == [] and not engine.stacks


def test_the_plan_prices_a_local_isos_upload(aws: AwsProvider, tmp_path: Path) -> None:
    iso = tmp_path / "Win11.iso"
    with iso.open("wb") as handle:  # a 6 GB ISO, sparse: only its descriptor is written
        handle.seek(16 * 2048)
        handle.write(b"\x01CD001\x01")
        handle.truncate(6_000_000_000)
    text = images.plan_image(aws, "us-east-1", iso=str(iso)).describe()
    assert f"Windows: your ISO {iso}, uploaded to the builder over SSH" in text
    assert ("uploading your ISO (6.0 GB) over SSH takes about 10 min at 80 Mbit/s (estimated, "
            "about $") in text
    assert "the build waits up to 115 min for it" in text
    default = images.plan_image(aws, "us-east-1").describe()
    assert "uploading your ISO" not in default
