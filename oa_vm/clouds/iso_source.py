"""A user's own Windows ISO for an image build (``image-create --iso``), in the form dockur takes.

dockur downloads Windows from Microsoft inside the cloud, and Microsoft refuses or throttles
cloud addresses (dockur/windows issues 142, 1423, 1629, 2128). dockur also takes a URL as its
``VERSION`` (``windows/src/mido.sh``, ``downloadImage``: ``isURL "$version"`` then one download
of that URL, failing with "Failed to download the Windows image from the specified URL!"), and
a file bound at ``/custom.iso`` (``windows/src/install.sh``, ``detectCustom``), which it installs
from without a download, ignoring ``VERSION``. A URL or object becomes ``VERSION`` (the builder
downloads it inside the cloud's network, next to the object); a local file becomes
``/custom.iso``, streamed to the builder over SSH (not the late delivery's one command line,
which is made for kilobytes).

- ``https://...`` (an Azure ``https://<account>.blob.core.windows.net/...`` URL with its SAS, or
  any HTTPS server): used as is.
- ``s3://bucket/key``: presigned at create with ``aws s3 presign`` for the builder's life, so
  the bucket stays private.
- A local PATH: checked before anything is made (a regular, readable file carrying an ISO 9660
  or UDF volume descriptor, read within its first 96 KiB), then uploaded by ``image-create``
  over the builder's own SSH onto its OS disk, where dockur looks first
  (:mod:`oa_vm.clouds.iso_delivery`). Why SSH rather than an object the build owns (an S3
  object or an Azure blob, presigned): the same on both clouds with no new resource, so
  nothing can be left billing or readable by URL (the copy lives and dies with the builder,
  whose expiry the cloud enforces); it goes through the builder's pinned host key; and the
  bytes cross the user's uplink once either way. Its price, the builder's time while the
  upload runs, is in the plan (:func:`upload_note`).

The plan names the source (:func:`describe`); the presigned URL, which is a credential, is
never printed.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from datetime import timedelta
from pathlib import Path

from oa_vm.errors import InvalidInputError

PRESIGN_TIMEOUT_S = 60.0
SECTOR = 2048
DESCRIPTORS_AT = 16 * SECTOR
"""An ISO 9660 or UDF image keeps its first 16 sectors for the system area; its volume
descriptors (ISO 9660's ``CD001``, UDF's recognition sequence ``BEA01``/``NSR02``/``NSR03``/
``TEA01``) start at sector 16, each with its identifier at byte 1 of its sector (ECMA-119 8.1,
ECMA-167 2/9.1)."""
DESCRIPTORS_READ = 32
"""Sectors read past :data:`DESCRIPTORS_AT` (64 KiB): a Windows ISO's descriptors (ISO 9660
bridge plus UDF) sit in the first few."""
VOLUME_IDS = (b"CD001", b"BEA01", b"NSR02", b"NSR03", b"TEA01")
PLANNED_UPLOAD_BYTES_PER_S = 10e6
"""The plan's upload estimate for a local ISO (80 Mbit/s up): an estimate, marked so."""
SLOWEST_UPLOAD_BYTES_PER_S = 1e6
"""The slowest upload the build waits for (8 Mbit/s): sizes the deadline of the upload and of
the builder's wait for it (:func:`upload_budget_s`)."""
UPLOAD_SLACK_S = 15 * 60
"""Added to the upload's deadline: the builder's boot and SSH coming up before the first byte."""


def _kind(iso: str) -> str:
    lowered = iso.lower()
    if lowered.startswith("https://"):
        return "https"
    if lowered.startswith("s3://"):
        return "s3"
    if "://" in iso:
        return "other"
    return "path"


def check(iso: str) -> None:
    """Refuse an ``--iso`` the build cannot use, in one line, before anything is made.

    Raises:
        InvalidInputError: an unsupported scheme, an ``s3://`` address without a key, or a local
            PATH that is missing, not a regular file, unreadable, or not an ISO image.
    """
    kind = _kind(iso)
    if kind == "other":
        raise InvalidInputError(
            f"--iso {iso}: use an https:// URL (an Azure blob URL with its SAS), an s3://bucket/"
            "key address, or a local path")
    if kind == "s3":
        bucket, _, key = iso[len("s3://"):].partition("/")
        if not bucket or not key:
            raise InvalidInputError(f"--iso {iso}: an S3 address needs a bucket and a key "
                                    "(s3://bucket/path/to/windows.iso)")
    if kind == "path":
        _check_file(iso)


def _check_file(iso: str) -> None:
    from oa_vm.kit.validate import read_problem

    path = Path(iso).expanduser()
    problem = read_problem("--iso", path, kind="file", fix="pass the path of your Windows ISO, "
                           "an s3:// address or an https:// URL")
    if problem is not None:
        raise InvalidInputError(problem)
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        raise InvalidInputError(f"--iso {iso}: not a regular file; pass the .iso file itself")
    if not os.access(path, os.R_OK):
        raise InvalidInputError(f"--iso {iso}: the file is not readable (chmod u+r {iso})")
    try:
        with path.open("rb") as handle:  # bounded: the descriptors' sectors only
            handle.seek(DESCRIPTORS_AT)
            head = handle.read(DESCRIPTORS_READ * SECTOR)
    except OSError as exc:
        raise InvalidInputError(f"--iso {iso}: could not read it: {exc.strerror or exc}") from exc
    ids = {head[at + 1:at + 6] for at in range(0, len(head), SECTOR)}
    if not ids & set(VOLUME_IDS):
        raise InvalidInputError(
            f"--iso {iso}: not an ISO image (no ISO 9660 or UDF volume descriptor); pass a "
            "Windows installation .iso")


def local_iso(iso: str | None) -> Path | None:
    """The local file an ``--iso`` names (uploaded to the builder over SSH), else None."""
    if not iso or _kind(iso) != "path":
        return None
    return Path(iso).expanduser()


def upload_budget_s(size: int) -> int:
    """Seconds the upload of ``size`` bytes may take, and the builder waits for it: the slowest
    uplink the build accepts, plus the builder's boot."""
    return int(size / SLOWEST_UPLOAD_BYTES_PER_S) + UPLOAD_SLACK_S


def upload_note(size: int, builder_usd_per_hour: float | None) -> str:
    """The plan's line on a local ISO's upload: size, time and what it costs (estimated)."""
    minutes = size / PLANNED_UPLOAD_BYTES_PER_S / 60
    cost = (f", about ${builder_usd_per_hour * minutes / 60:.2f} of builder time"
            if builder_usd_per_hour is not None else "")
    return (f"uploading your ISO ({size / 1e9:.1f} GB) over SSH takes about {minutes:.0f} min at "
            f"{PLANNED_UPLOAD_BYTES_PER_S * 8 / 1e6:.0f} Mbit/s (estimated{cost}; the build waits "
            f"up to {upload_budget_s(size) / 60:.0f} min for it); transfer into the cloud is "
            "free and the copy is deleted with the builder")


def describe(iso: str | None) -> str:
    """The plan's phrase for the ISO's source (never a presigned URL's signature)."""
    if not iso:
        return ("downloaded by dockur from Microsoft (which may refuse cloud addresses; "
                "see --iso)")
    kind = _kind(iso)
    shown = iso.split("?", 1)[0]  # a SAS or signature is a credential: not in a plan
    if kind == "s3":
        return f"your ISO at {shown} (presigned for the builder at create)"
    if kind == "path":
        return f"your ISO {iso}, uploaded to the builder over SSH"
    return f"your ISO at {shown}"


def builder_url(iso: str, region: str, lifetime: timedelta) -> str:
    """The HTTPS URL the builder downloads (dockur's ``VERSION``): an ``https://`` ISO as is, an
    ``s3://`` one presigned for ``lifetime`` with the ``aws`` CLI.

    Raises:
        InvalidInputError: :func:`check` refuses it, or presigning failed (one line).
    """
    check(iso)
    if _kind(iso) == "path":
        raise InvalidInputError(f"--iso {iso}: a local ISO is uploaded over SSH, not fetched")
    if _kind(iso) == "https":
        return iso
    aws = shutil.which("aws")
    if aws is None:
        raise InvalidInputError(f"--iso {iso}: presigning an S3 address needs the 'aws' CLI "
                                "on PATH, or pass an https:// URL")
    try:
        done = subprocess.run(  # fixed argv, no shell
            [aws, "s3", "presign", iso, "--expires-in", str(int(lifetime.total_seconds())),
             "--region", region, "--cli-connect-timeout", "10", "--cli-read-timeout", "30"],
            capture_output=True, text=True, timeout=PRESIGN_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        from oa_vm.kit.cli_failure import why_it_failed

        raise InvalidInputError(
            f"--iso {iso}: could not run aws s3 presign: {why_it_failed(exc)}") from exc
    url = done.stdout.strip()
    if done.returncode != 0 or not url.startswith("https://"):
        from oa_vm.kit.cli_failure import tool_said

        why = tool_said(done.stderr, "no URL printed")
        raise InvalidInputError(f"--iso {iso}: aws s3 presign failed: {why}")
    return url
