"""The one answer to "which task catalog will a pool of this spec have, known here"
(:func:`oa_vm.pool_catalog`): the index files recorded with the prepared image the pool would
start from, in every region its create may take it to; nothing when that is not known."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import oa_vm
from oa_vm.model import image_records, state
from waa_client.errors import CatalogError, UnknownTaskError

INDEXES = {"test_all": {"chrome": ["a-1", "b-2"], "vlc": ["c-3"]}, "test_small": {"vlc": ["c-3"]}}


def _image(image_id: str, region: str, indexes: Any = INDEXES) -> None:
    created = state.utcnow() - timedelta(days=1)
    image_records.save(image_records.ImageRecord(
        id=image_id, cloud="aws", region=region, state=image_records.READY, size_gb=96,
        created_at=created, licence_expires=created + timedelta(days=90),
        waa_image="w@sha256:1", builder_size="m8i.2xlarge", project="oa-vm-aws-images",
        stack=image_id, cloud_id=f"snap-{image_id[-4:]}", task_indexes=indexes,
    ))


def _catalog(**spec: Any) -> Any:
    return oa_vm.pool_catalog(oa_vm.build_spec(name="p", cloud="aws", **spec))


def test_the_images_catalog_resolves_as_a_workers_would(oa_home: Path) -> None:
    _image("waa-us-east-1-0001", "us-east-1")
    catalog = _catalog()
    assert catalog is not None
    assert catalog.source == "the task catalog of image waa-us-east-1-0001"
    assert catalog.resolve("domain:chrome", live=True) == ["a-1", "b-2"]
    assert catalog.resolve("test_small", live=True) == ["c-3"]
    assert catalog.resolve("2", live=True) == ["a-1", "b-2"]
    with pytest.raises(UnknownTaskError, match=r"'a-1x' \(did you mean 'a-1'\?\)"):
        catalog.resolve("a-1x", live=True)
    with pytest.raises(CatalogError, match="is on the workers"):
        catalog.load("a-1")  # IDs and indexes only: the task files stay on the workers
    assert _catalog(image="waa-us-east-1-0001").source.endswith("waa-us-east-1-0001")


@pytest.mark.parametrize("case", ["no image", "no indexes", "a raw snapshot", "regions differ",
                                  "a region's image without them", "local"])
def test_what_is_not_known_here_is_none(case: str, oa_home: Path) -> None:
    _image("waa-us-east-1-0001", "us-east-1", None if case == "no indexes" else INDEXES)
    spec: dict[str, Any] = {"regions": ["us-east-1", "us-west-2"]}
    if case == "no image":
        spec = {"regions": ["eu-west-1"]}
    elif case == "a raw snapshot":
        spec = {"image": "snap-0123456789abcdef0"}
    elif case == "regions differ":
        _image("waa-us-west-2-0002", "us-west-2", {"test_all": {"vlc": ["c-3"]}})
    elif case == "a region's image without them":
        _image("waa-us-west-2-0002", "us-west-2", None)
    if case == "local":
        assert oa_vm.pool_catalog(oa_vm.build_spec(name="p", cloud="local")) is None
    else:
        assert _catalog(**spec) is None


def test_regions_whose_images_agree_share_the_catalog(oa_home: Path) -> None:
    _image("waa-us-east-1-0001", "us-east-1")
    _image("waa-us-west-2-0002", "us-west-2")
    catalog = _catalog(regions=["us-west-2", "us-east-1"])
    assert catalog is not None and catalog.source.endswith("waa-us-west-2-0002")
