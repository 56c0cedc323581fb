"""Prepared images on disk: one versioned JSON record per image.

``$OA_VM_HOME/images/<id>.json``, written atomically like pool records (:mod:`oa_vm.model.state`): a
crash leaves the old record or the new one, and a record written by a newer oa-vm is refused
rather than misread. The cloud stays the source of truth (the snapshot is tagged ``oa-vm:image``);
the record is how oa-vm finds the newest ready image of a region without asking the cloud.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any

from oa_vm.errors import InvalidInputError, OaVmError, listing
from oa_vm.model import state

IMAGE_SCHEMA_VERSION = 1
BUILDING = "building"
READY = "ready"
FAILED = "failed"


class ImageNotFoundError(InvalidInputError):
    """No record for the named image: a name that names nothing is bad input (exit 2), as a
    ``--pool`` or a run that names nothing is."""


class CorruptImageRecordError(OaVmError):
    """An image record exists but cannot be read; nothing is deleted."""


@dataclass
class ImageRecord:
    """Everything oa-vm knows about one prepared image.

    Attributes:
        id: oa-vm's name for it (``waa-<region>-<yyyymmdd-hhmm>``), also its stack's name.
        cloud, region: where it lives (a pool can only use an image of its own region).
        state: ``building``, ``ready`` or ``failed``.
        cloud_id: the EBS snapshot ID or the Azure snapshot's resource ID (once snapshotted).
        size_gb: the storage volume's size (what the snapshot can hold and bills for at most).
        created_at: when the build started.
        licence_expires: when the Windows evaluation licence inside runs out (90 days).
        waa_image: the WAA image it was built from (with its digest once the build reports it).
        builder_size: the size that built it.
        project, stack: the image's Pulumi stack.
        volume_id: the builder volume the snapshot was taken of (the snapshot's fixed input).
        storage_usd_per_month: what keeping the image costs (estimate), or None.
        base_image: the dockur/windows image the worker image was built on (its digest once
            the build reports it).
        task_indexes: WAA's index files (name -> ``{domain: [task_id]}``) as ``waa_image``
            holds them, so its pools' task IDs are checked before a pool exists; None when the
            build could not read them (or predates them: an optional field, so the schema
            version stays, and an older oa-vm ignores it).
    """

    id: str
    cloud: str
    region: str
    state: str
    size_gb: int
    created_at: datetime
    licence_expires: datetime
    waa_image: str
    builder_size: str
    project: str
    stack: str
    owner: str = ""
    cloud_id: str | None = None
    volume_id: str | None = None
    storage_usd_per_month: float | None = None
    detail: str | None = None
    base_image: str = ""
    task_indexes: dict[str, dict[str, list[str]]] | None = None
    version: int = IMAGE_SCHEMA_VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (``version`` first)."""
        data = asdict(self)
        data["created_at"] = state.format_time(self.created_at)
        data["licence_expires"] = state.format_time(self.licence_expires)
        return {"version": self.version, **{k: v for k, v in data.items() if k != "version"}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ImageRecord:
        """Inverse of :meth:`to_json`; raises ``ValueError``, ``KeyError`` or ``TypeError``."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        for key in ("created_at", "licence_expires"):
            parsed = state.parse_time(values[key])
            if parsed is None:
                raise ValueError(f"{key} is missing")
            values[key] = parsed
        indexes = values.get("task_indexes")
        if indexes is not None:
            from waa_client.catalog import index_from_json
            from waa_client.errors import CatalogError

            if not isinstance(indexes, dict):
                raise ValueError("task_indexes must be an object {name: {domain: [task_id]}}")
            try:
                values["task_indexes"] = {name: index_from_json(index, f"task index {name!r}")
                                          for name, index in indexes.items()}
            except CatalogError as exc:
                raise ValueError(str(exc)) from exc
        return cls(**values)

    def is_expired(self, now: datetime | None = None) -> bool:
        """True once the Windows evaluation licence inside has run out."""
        return (now or state.utcnow()) >= self.licence_expires


def project(cloud: str) -> str:
    """The Pulumi project of ``cloud``'s images (every image is one stack of it)."""
    return f"oa-vm-{cloud}-images"


def images_dir() -> Path:
    """``$OA_VM_HOME/images``."""
    return state.home() / "images"


def record_path(image_id: str) -> Path:
    """The image's JSON record."""
    return images_dir() / f"{image_id}.json"


def save(record: ImageRecord) -> Path:
    """Write the record atomically; returns its path."""
    path = record_path(record.id)
    state.atomic_write_json(path, record.to_json())
    return path


def _parse(path: Path, text: str) -> ImageRecord:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CorruptImageRecordError(
            f"image record {path} is not valid JSON ({exc.msg}); fix or move it by hand"
        ) from exc
    version = data.get("version") if isinstance(data, dict) else None
    if not isinstance(version, int):
        raise CorruptImageRecordError(f"image record {path} has no schema version; fix or move it")
    if version > IMAGE_SCHEMA_VERSION:
        raise CorruptImageRecordError(
            f"image record {path} was written by a newer oa-vm (schema {version}); upgrade oa-vm"
        )
    try:
        return ImageRecord.from_json(data)
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise CorruptImageRecordError(
            f"image record {path} is malformed ({exc}); fix or move it by hand"
        ) from exc


def load(image_id: str) -> ImageRecord:
    """Read one image's record.

    Raises:
        ImageNotFoundError: no such image (the message lists the known ones).
        CorruptImageRecordError: the file cannot be read as an image record.
    """
    path = record_path(image_id)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        known = [r.id for r in list_records()]
        hint = f"known images: {listing(known)}" if known else (
            "there are no images; build one with 'oa-vm image-create'"
        )
        raise ImageNotFoundError(f"no image named {image_id!r} ({hint})") from None
    return _parse(path, text)


def list_records() -> list[ImageRecord]:
    """Every readable image record, newest first (unreadable ones are skipped: see
    :func:`scan_records` to report them)."""
    return scan_records()[0]


def scan_records() -> tuple[list[ImageRecord], list[CorruptImageRecordError]]:
    """Every readable image record, newest first, and an error naming each unreadable one
    (an image forgotten because its record is damaged may still be billing)."""
    root = images_dir()
    out: list[ImageRecord] = []
    bad: list[CorruptImageRecordError] = []
    if not root.is_dir():
        return out, bad
    for path in sorted(root.glob("*.json")):
        try:
            out.append(_parse(path, path.read_text(encoding="utf-8")))
        except CorruptImageRecordError as exc:
            bad.append(exc)
        except (OSError, UnicodeDecodeError) as exc:
            bad.append(CorruptImageRecordError(
                f"image record {path} cannot be read ({exc}); fix or move it by hand"
            ))
    return sorted(out, key=lambda r: r.created_at, reverse=True), bad


def delete(image_id: str) -> None:
    """Remove an image's record."""
    record_path(image_id).unlink(missing_ok=True)


def newest_ready(cloud: str, region: str, now: datetime | None = None) -> ImageRecord | None:
    """The newest ready, unexpired image of ``cloud``/``region``, or None."""
    for record in list_records():
        if (record.cloud, record.region, record.state) == (cloud, region, READY) and not (
            record.is_expired(now)
        ):
            return record
    return None


def check_image_id(value: str) -> str:
    """An image ID as typed by a user: lower-case letters, digits and dashes."""
    if not state.POOL_NAME_RE.match(value):
        raise InvalidInputError(
            f"invalid image ID {value!r}: see 'oa-vm image-list' for the IDs of your images"
        )
    return value
