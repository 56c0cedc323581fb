"""Images a team shares: found in the cloud account by their ``oa-vm:image`` tags.

An image's record lives on the laptop that built it (:mod:`oa_vm.model.image_records`), but its
snapshot is tagged (:func:`infra.tags.image_tags`): its oa-vm ID, owner, creation date, the WAA
and dockur/windows digests and the Windows licence's expiry. So a teammate's ``image-list
--cloud aws --region R`` asks the account for snapshots carrying ``oa-vm:image`` (with the same
``aws``/``az`` CLIs the leftover checks use, :mod:`oa_vm.clouds.aws.provider`/``azure``) and lists
them
beside the local records; ``pool-create --image ID`` accepts one after checking its tags.

Pure parts (:func:`record_from_tags`, :func:`merge`) decide; the CLI runners only fetch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from oa_vm.model import image_records, state
from oa_vm.model.image_records import ImageRecord

ImageLister = Callable[[str | None], list[ImageRecord]]
"""Asks the account for tagged images (of one region, or every region: None)."""

LOCAL = "local"
ACCOUNT = "account"
BOTH = "local+account"

def record_from_tags(
    cloud: str, region: str, cloud_id: str, tags: Mapping[str, str], *, size_gb: int,
    cloud_state: str, ready: bool,
) -> ImageRecord | None:
    """An image record made from a snapshot's tags, or None when they do not describe an
    oa-vm image (no ``oa-vm:image``, no creation date or licence expiry, a bad ID).

    The record's state is ``ready`` only for a snapshot the cloud reports complete (``ready``:
    ``cloud_state`` is the one that means "usable" in the cloud's own words).
    """
    from infra import tags as tag_keys

    image_id = tags.get(tag_keys.IMAGE, "")
    created = state.parse_time(tags.get(tag_keys.IMAGE_CREATED))
    expires = state.parse_time(tags.get(tag_keys.IMAGE_LICENCE_EXPIRES))
    if not image_id or created is None or expires is None:
        return None
    if not state.POOL_NAME_RE.match(image_id):
        return None
    return ImageRecord(
        id=image_id, cloud=cloud, region=region,
        state=image_records.READY if ready else image_records.BUILDING,
        size_gb=size_gb, created_at=created, licence_expires=expires,
        waa_image=tags.get(tag_keys.IMAGE_WAA_DIGEST, ""),
        base_image=tags.get(tag_keys.IMAGE_BASE_DIGEST, ""),
        builder_size="", project=image_records.project(cloud), stack=image_id,
        owner=tags.get(tag_keys.OWNER, ""), cloud_id=cloud_id,
        detail=None if ready else f"the snapshot is {cloud_state}",
        extra={"found": ACCOUNT},
    )


def aws_snapshots(data: Mapping[str, Any], region: str) -> list[ImageRecord]:
    """Images in ``aws ec2 describe-snapshots`` output (``{"Snapshots": [...]}``)."""
    out: list[ImageRecord] = []
    for snap in data.get("Snapshots") or []:
        tags = {str(t.get("Key")): str(t.get("Value")) for t in snap.get("Tags") or []}
        record = record_from_tags(
            "aws", region, str(snap.get("SnapshotId")), tags,
            size_gb=int(snap.get("VolumeSize") or 0), cloud_state=str(snap.get("State")),
            ready=snap.get("State") == "completed",
        )
        if record is not None:
            out.append(record)
    return out


def azure_snapshots(items: list[Mapping[str, Any]], region: str | None) -> list[ImageRecord]:
    """Images in ``az snapshot list`` output (a list), of ``region`` (None: every region)."""
    out: list[ImageRecord] = []
    for snap in items:
        location = str(snap.get("location") or "")
        if region and location.lower() != region.lower():
            continue
        record = record_from_tags(
            "azure", location, str(snap.get("id")), dict(snap.get("tags") or {}),
            size_gb=int(snap.get("diskSizeGb") or snap.get("diskSizeGB") or 0),
            cloud_state=str(snap.get("provisioningState")),
            ready=snap.get("provisioningState") == "Succeeded",
        )
        if record is not None:
            out.append(record)
    return out


@dataclass
class ListedImage:
    """One image as ``image-list --cloud`` shows it: the record, and where it was found."""

    record: ImageRecord
    found: str


def merge(local: list[ImageRecord], account: list[ImageRecord]) -> list[ListedImage]:
    """Local records and account images together, newest first: an image in both is listed
    once, from its local record (which knows more: the stack, the builder's size), marked
    ``local+account``; one found only in the account keeps what its tags say."""
    in_account = {r.id: r for r in account}
    out = [ListedImage(r, BOTH if r.id in in_account else LOCAL) for r in local]
    known = {r.id for r in local}
    out += [ListedImage(r, ACCOUNT) for r in account if r.id not in known]
    return sorted(out, key=lambda item: item.record.created_at, reverse=True)


def find(lister: ImageLister, image_id: str, region: str) -> ImageRecord | None:
    """The account's image ``image_id`` in ``region``, or None."""
    for record in lister(region):
        if record.id == image_id and record.region == region:
            return record
    return None
