"""A prepared WAA image on AWS, as a Pulumi program in three stages.

An image is an EBS snapshot of a storage volume on which Windows was installed once (with WAA's
apps) and the worker image saved; every pool worker's storage volume is created from it.

The image's stack goes through three updates (``oa_vm.images`` drives them):

1. ``build``: a builder host (one worker of the pool program in ``build`` mode, nested
   virtualization on) with an empty storage volume of its own; its bootstrap installs Windows,
   shuts it down, saves the worker image on the volume and unmounts it;
2. ``snapshot``: the same, plus an ``aws.ebs.Snapshot`` of the volume;
3. ``keep``: the snapshot alone, its inputs unchanged (the volume's ID as a plain value): the
   engine deletes the builder, its volume and network pieces and keeps the snapshot.

The snapshot is tagged ``oa-vm:image`` with its creation date, the WAA image it was built from and
the Windows evaluation licence's expiry.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_aws as aws

from infra import aws as aws_pool
from infra.settings import PINNED_EXPORT, ImageSettings, pinned_values
from infra.tags import image_tags, named

STAGES = ("build", "snapshot", "keep")

SNAPSHOT_TIMEOUTS = pulumi.CustomTimeouts(create="3h", update="3h", delete="1h")
"""The provider waits 10 minutes for a snapshot by default; a first full snapshot of a 40-60 GB
Windows disk plus the saved worker image takes far longer (its blocks are copied to S3)."""


def snapshot_options(provider: pulumi.ProviderResource) -> pulumi.ResourceOptions:
    """The snapshot's resource options: the region's provider and :data:`SNAPSHOT_TIMEOUTS`."""
    return pulumi.ResourceOptions(provider=provider, custom_timeouts=SNAPSHOT_TIMEOUTS)


def snapshot_tags(image: ImageSettings) -> dict[str, str]:
    """The image's tags (no ``oa-vm:pool``: pool cleanup never touches an image)."""
    waa_image, base_image = image.built_from("snapshot")
    tags = image_tags(
        image.name, image.builder.owner, image.created_at, waa_image, image.licence_expires,
        base_image=base_image,
    )
    return named(tags, image.name)


def image_program(
    image: ImageSettings, stage: str, kept_volume_id: str | None = None
) -> dict[str, Any]:
    """Declare the image's resources for ``stage``; returns what it exports.

    Args:
        image: the image and its builder.
        stage: ``build``, ``snapshot`` or ``keep``.
        kept_volume_id: the builder volume's ID (``keep`` only: the snapshot's unchanged input).

    Raises:
        ValueError: an unknown stage, or ``keep`` without the volume's ID.
    """
    if stage not in STAGES:
        raise ValueError(f"unknown image stage {stage!r}")
    image.validate(allow_placeholders=True)
    builder = image.builder
    provider = aws.Provider(f"aws-{builder.region}", region=builder.region)
    opts = pulumi.ResourceOptions(providers=[provider])
    exports: dict[str, Any] = {"cloud": "aws", "region": builder.region, "image": image.name}
    source: Any
    if stage in ("build", "snapshot"):
        pool = aws_pool.AwsWorkerPool(f"{image.name}-builder", builder, opts=opts)
        source = pool.storage_volume_ids[0]
        exports["workers"] = pool.workers
        exports["volume_id"] = source
        exports[PINNED_EXPORT] = pinned_values(builder, pool.ami_id)
    else:
        if not kept_volume_id:
            raise ValueError("the keep stage needs the builder volume's ID")
        source = kept_volume_id
        exports["volume_id"] = kept_volume_id
    if stage in ("snapshot", "keep"):
        snapshot = aws.ebs.Snapshot(
            f"{image.name}-image",
            volume_id=source,
            description=f"oa-vm WAA image {image.name} (Windows installed, worker image saved)",
            tags=snapshot_tags(image),
            opts=snapshot_options(provider),
        )
        exports["image_id"] = snapshot.id
    for key, value in exports.items():
        pulumi.export(key, value)
    return exports
