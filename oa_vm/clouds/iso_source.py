"""A user's own Windows ISO for an image build (``image-create --iso``), in the form dockur takes.

dockur downloads Windows from Microsoft inside the cloud, and Microsoft refuses or throttles
cloud addresses (dockur/windows issues 142, 1423, 1629, 2128). dockur also takes a URL as its
``VERSION`` (``windows/src/mido.sh``, ``downloadImage``: ``isURL "$version"`` then one download
of that URL, failing with "Failed to download the Windows image from the specified URL!"). So
every accepted form ends as an HTTPS URL the builder fetches itself, in the builder's ``VERSION``
setting, rather than bytes carried over SSH: the late delivery (``host_status.delivery_command``)
puts its payload on one shell command line, made for kilobytes, not a 5 GB ISO; and the builder
downloads inside the cloud's own network, next to the object.

- ``https://...`` (an Azure ``https://<account>.blob.core.windows.net/...`` URL with its SAS, or
  any HTTPS server): used as is.
- ``s3://bucket/key``: presigned at create with ``aws s3 presign`` for the builder's life, so
  the bucket stays private.
- A local PATH: checked (missing or unreadable is refused in one line before anything is
  made), then refused with the command that uploads it, since nothing carries gigabytes to the
  builder over SSH.

The plan names the source (:func:`describe`); the presigned URL, which is a credential, is
never printed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path

from oa_vm.errors import InvalidInputError

PRESIGN_TIMEOUT_S = 60.0


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
            PATH (missing, unreadable, or present: it must be uploaded first; the line says how).
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
        path = Path(iso).expanduser()
        if not path.is_file():
            raise InvalidInputError(f"--iso {iso}: no such file; pass the path of your Windows "
                                    "ISO, an s3:// address or an https:// URL")
        if not os.access(path, os.R_OK):
            raise InvalidInputError(f"--iso {iso}: the file is not readable (chmod u+r {iso})")
        raise InvalidInputError(
            f"--iso {iso}: the builder fetches the ISO itself; upload it first ('aws s3 cp "
            f"{iso} s3://BUCKET/{path.name}' or 'az storage blob upload --file {iso} ...') "
            "and pass --iso s3://BUCKET/... or the blob's https:// URL with its SAS")


def describe(iso: str | None) -> str:
    """The plan's phrase for the ISO's source (never a presigned URL's signature)."""
    if not iso:
        return ("downloaded by dockur from Microsoft (which may refuse cloud addresses; "
                "see --iso)")
    kind = _kind(iso)
    shown = iso.split("?", 1)[0]  # a SAS or signature is a credential: not in a plan
    if kind == "s3":
        return f"your ISO at {shown} (presigned for the builder at create)"
    return f"your ISO at {shown}"


def builder_url(iso: str, region: str, lifetime: timedelta) -> str:
    """The HTTPS URL the builder downloads (dockur's ``VERSION``): an ``https://`` ISO as is, an
    ``s3://`` one presigned for ``lifetime`` with the ``aws`` CLI.

    Raises:
        InvalidInputError: :func:`check` refuses it, or presigning failed (one line).
    """
    check(iso)
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
        raise InvalidInputError(f"--iso {iso}: could not run aws s3 presign: {exc}") from exc
    url = done.stdout.strip()
    if done.returncode != 0 or not url.startswith("https://"):
        why = (done.stderr.strip().splitlines() or ["no URL printed"])[-1][:200]
        raise InvalidInputError(f"--iso {iso}: aws s3 presign failed: {why}")
    return url
