"""A prepared WAA image on Azure, as a Pulumi program in three stages.

An image is a managed snapshot of a storage data disk on which Windows was installed once (with
WAA's apps) and the worker image saved; every pool worker's storage disk is copied from it. It
lives in a resource group of its own, ``oa-vm-image-<image>``, declared by this program (not by
the builder), so that removing the builder never removes the group holding the snapshot.

Stages (``oa_vm.images`` drives them): ``build`` (the group and a builder VM with an empty data
disk), ``snapshot`` (plus the snapshot of that disk), ``keep`` (the group and the snapshot alone,
inputs unchanged: the engine deletes the builder and keeps the image).
"""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi_azure_native import compute, resources

from infra import azure as azure_pool
from infra.settings import PINNED_EXPORT, ImageSettings, pinned_values
from infra.tags import image_tags

STAGES = ("build", "snapshot", "keep")

SNAPSHOT_TIMEOUTS = pulumi.CustomTimeouts(create="3h", update="3h", delete="1h")
"""A full copy of the builder's disk takes longer than a provider's default wait."""


def image_group_name(image: str) -> str:
    """``oa-vm-image-<image>``: the resource group holding one image."""
    return f"oa-vm-image-{image}"


def image_program(
    image: ImageSettings, stage: str, kept_disk_id: str | None = None
) -> dict[str, Any]:
    """Declare the image's resources for ``stage``; returns what it exports.

    Raises:
        ValueError: an unknown stage, or ``keep`` without the builder disk's ID.
    """
    if stage not in STAGES:
        raise ValueError(f"unknown image stage {stage!r}")
    image.validate(allow_placeholders=True)
    builder = image.builder
    waa_image, base_image = image.built_from(stage)
    tags = image_tags(
        image.name, builder.owner, image.created_at, waa_image, image.licence_expires,
        base_image=base_image,
    )
    group = resources.ResourceGroup(
        f"{image.name}-rg",
        resource_group_name=image_group_name(image.name),
        location=builder.region,
        tags=tags,
    )
    exports: dict[str, Any] = {
        "cloud": "azure", "region": builder.region, "image": image.name,
        "resource_group": group.name,
    }
    source: Any
    if stage in ("build", "snapshot"):
        pool = azure_pool.AzureWorkerPool(f"{image.name}-builder", builder, group=group)
        source = pool.storage_disks[0].id
        exports["workers"] = pool.workers
        exports["volume_id"] = source
        exports[PINNED_EXPORT] = pinned_values(builder, None)
    else:
        if not kept_disk_id:
            raise ValueError("the keep stage needs the builder disk's ID")
        source = kept_disk_id
        exports["volume_id"] = kept_disk_id
    if stage in ("snapshot", "keep"):
        snapshot = compute.Snapshot(
            f"{image.name}-image",
            snapshot_name=image.name,
            resource_group_name=group.name,
            location=builder.region,
            creation_data={"create_option": "Copy", "source_resource_id": source},
            # Standard HDD: an image is read once per worker; full (not incremental), so it
            # stands alone once the builder's disk is gone.
            sku={"name": "Standard_LRS"},
            incremental=False,
            tags=tags,
            opts=pulumi.ResourceOptions(custom_timeouts=SNAPSHOT_TIMEOUTS),
        )
        exports["image_id"] = snapshot.id
    for key, value in exports.items():
        pulumi.export(key, value)
    return exports
