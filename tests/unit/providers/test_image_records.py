"""Image records and user settings on disk: versioned, atomic, refused when unreadable."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from oa_vm.errors import InvalidInputError
from oa_vm.model import config, image_records, state
from oa_vm.model.image_records import CorruptImageRecordError, ImageNotFoundError, ImageRecord


def _record(image_id: str, *, region: str = "us-east-1", age_days: float = 1,
            state_: str = image_records.READY) -> ImageRecord:
    created = state.utcnow() - timedelta(days=age_days)
    return ImageRecord(
        id=image_id, cloud="aws", region=region, state=state_, size_gb=96,
        created_at=created, licence_expires=created + timedelta(days=90),
        waa_image="w@sha256:1", builder_size="m8i.2xlarge", project="oa-vm-aws-images",
        stack=image_id, cloud_id=f"snap-{image_id[-4:]}",
    )


def test_round_trip_and_newest_ready_of_a_region(oa_home: Path) -> None:
    old, new = _record("waa-a-0001", age_days=10), _record("waa-a-0002", age_days=2)
    building = _record("waa-a-0003", age_days=0.1, state_=image_records.BUILDING)
    expired = _record("waa-a-0004", age_days=91)
    elsewhere = _record("waa-b-0005", region="us-west-2", age_days=0.5)
    for record in (old, new, building, expired, elsewhere):
        image_records.save(record)
    assert image_records.load("waa-a-0002") == new
    assert image_records.newest_ready("aws", "us-east-1") == new
    assert image_records.newest_ready("aws", "eu-west-1") is None
    assert [r.id for r in image_records.list_records()][0] == "waa-a-0003"
    raw = json.loads((oa_home / "images" / "waa-a-0002.json").read_text())
    assert next(iter(raw)) == "version" and raw["version"] == 1
    assert not list((oa_home / "images").glob(".*.tmp")), "no temp file left behind"


def test_unreadable_records_are_refused_and_left_alone(oa_home: Path) -> None:
    image_records.save(_record("waa-a-0001"))
    path = oa_home / "images" / "waa-a-0001.json"
    data = json.loads(path.read_text())
    data["version"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(CorruptImageRecordError, match="newer oa-vm"):
        image_records.load("waa-a-0001")
    path.write_text("{not json")
    with pytest.raises(CorruptImageRecordError, match="not valid JSON"):
        image_records.load("waa-a-0001")
    assert path.read_text() == "{not json"
    assert image_records.list_records() == []  # listing skips it, and never deletes it
    with pytest.raises(ImageNotFoundError, match="there are no images"):
        image_records.load("waa-a-0002")
    with pytest.raises(InvalidInputError):
        image_records.check_image_id("../etc/passwd")


def test_waas_index_files_are_kept_and_checked_and_old_records_load_without_them(
    oa_home: Path
) -> None:
    indexes = {"test_all": {"chrome": ["a-1"], "vlc": ["b-2"]}, "test_custom": {}}
    record = _record("waa-a-0001")
    record.task_indexes = indexes
    image_records.save(record)
    assert image_records.load("waa-a-0001").task_indexes == indexes
    path = oa_home / "images" / "waa-a-0001.json"
    data = json.loads(path.read_text())
    del data["task_indexes"]  # a record written before they were read
    path.write_text(json.dumps(data))
    assert image_records.load("waa-a-0001").task_indexes is None
    for bad, said in (([], "must be an object"), ({"test_all": []}, "must be an object"),
                      ({"test_all": {"chrome": "a-1"}}, "must map to a list")):
        path.write_text(json.dumps({**data, "task_indexes": bad}))
        with pytest.raises(CorruptImageRecordError, match=said):
            image_records.load("waa-a-0001")


def test_config_values_are_checked_and_kept(oa_home: Path) -> None:
    assert config.default_cloud() is None and config.disk_gb() == 160
    assert config.set_value("disk-gb", "200") == 200
    assert config.disk_gb() == 200
    with pytest.raises(InvalidInputError, match="64 to 4096"):
        config.set_value("disk-gb", "10")
    with pytest.raises(InvalidInputError, match="unknown setting"):
        config.set_value("colour", "blue")
    config.unset("disk-gb")
    assert config.disk_gb() == 160
    (oa_home / "config.json").write_text("[]")
    with pytest.raises(config.CorruptConfigError):
        config.load()
