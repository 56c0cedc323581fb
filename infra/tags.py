"""The tag set every pool resource carries, on both clouds.

Tags are how a pool is found again when local notes are lost: cleanup asks the cloud for
everything tagged ``oa-vm:pool=<name>`` (see ``docs/runbook.md``).

Key choice: the same three keys on AWS and Azure, colon included. AWS reserves only the ``aws:``
prefix. Azure forbids ``<``, ``>``, ``%``, ``&``, ``\\``, ``?`` and ``/`` in tag names and reserves
the ``microsoft``, ``azure`` and ``windows`` prefixes; ``:`` is refused only by a few services
(Traffic Manager, Front Door, DNS zones), none of which a pool creates. One spelling on both
clouds keeps the cleanup commands identical (``--tag oa-vm:pool=NAME``). An AWS host reads its
own ``oa-vm:expires-at`` from the instance metadata (``infra/worker/expiry_arm.sh``), which
AWS allows only when every key of the instance's tags is made of letters, digits and
``+ - = . , _ : @`` (no space, no ``/``) and is not ``.``, ``..`` or ``_index``: an instance
with another key fails to launch. :func:`check_key` enforces all of these rules, so a new tag
cannot break one of them silently; every key the pools set goes through it, ``Name``
(:func:`named`) too.

Values are kept to the characters every AWS service accepts in tag values
(letters, digits, spaces and ``_ . : / = + - @``), at most 256 of them.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from infra.settings import PoolSettings

POOL = "oa-vm:pool"
OWNER = "oa-vm:owner"
EXPIRES_AT = "oa-vm:expires-at"
ALL_KEYS = (POOL, OWNER, EXPIRES_AT)
NAME = "Name"
"""AWS's display name of a resource (:func:`named`)."""

IMAGE = "oa-vm:image"
IMAGE_CREATED = "oa-vm:created"
IMAGE_WAA_DIGEST = "oa-vm:waa-image"
IMAGE_LICENCE_EXPIRES = "oa-vm:licence-expires"
IMAGE_BASE_DIGEST = "oa-vm:base-image"
IMAGE_KEYS = (IMAGE, OWNER, IMAGE_CREATED, IMAGE_WAA_DIGEST, IMAGE_LICENCE_EXPIRES)
"""The tags every image carries (``oa-vm:base-image`` too once the builder reported it)."""

_AZURE_FORBIDDEN = set('<>%&\\?/')
_METADATA_KEY = re.compile(r"[A-Za-z0-9+\-=.,_:@]+")
_METADATA_RESERVED = (".", "..", "_index")
_RESERVED_PREFIXES = ("aws:", "microsoft", "azure", "windows")
_VALUE_BAD = re.compile(r"[^\w .:/=+\-@]", re.UNICODE)
MAX_VALUE = 256


def check_key(key: str) -> str:
    """Return ``key`` if both AWS and Azure accept it as a tag name.

    Raises:
        ValueError: the key breaks one cloud's rules (the message says which).
    """
    if not key or len(key) > 128:
        raise ValueError(f"tag key {key!r} must have 1-128 characters")
    if _AZURE_FORBIDDEN & set(key):
        raise ValueError(f"tag key {key!r} has a character Azure refuses (< > % & \\ ? /)")
    if key.lower().startswith(_RESERVED_PREFIXES):
        raise ValueError(f"tag key {key!r} uses a prefix reserved by the cloud")
    if not _METADATA_KEY.fullmatch(key) or key in _METADATA_RESERVED:
        raise ValueError(f"tag key {key!r} is not allowed in AWS's instance metadata (letters, "
                         "digits and + - = . , _ : @ only; not '.', '..' or '_index')")
    return key


def named(tags: dict[str, str], name: str) -> dict[str, str]:
    """``tags`` and AWS's display name ``Name``: the tags of every AWS resource of a pool or
    an image."""
    return {**tags, check_key(NAME): name}


def clean_value(value: str) -> str:
    """A tag value every AWS service and Azure accept: odd characters become ``-``."""
    return _VALUE_BAD.sub("-", value.strip())[:MAX_VALUE]


def format_expiry(expires_at: datetime) -> str:
    """``2026-03-01T18:30:00Z``: UTC, second precision, sortable as text."""
    return expires_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pool_tags(settings: PoolSettings) -> dict[str, str]:
    """The three tags for every resource of the pool described by ``settings``."""
    tags = {
        POOL: clean_value(settings.name),
        OWNER: clean_value(settings.owner) or "unknown",
        EXPIRES_AT: format_expiry(settings.expires_at),
    }
    for key in tags:
        check_key(key)
    return tags


def image_tags(
    image: str, owner: str, created: datetime, waa_image: str, licence_expires: datetime,
    base_image: str = "",
) -> dict[str, str]:
    """Tags of a prepared image (the snapshot a pool's storage volumes are made from).

    ``waa_image`` is the WAA image reference the image was built from (a digest once the build
    reports it); ``licence_expires`` is when the Windows evaluation licence installed in the
    image runs out (90 days after install); ``base_image`` the dockur/windows digest the worker
    image was built on (left out when unknown).
    """
    tags = {
        IMAGE: clean_value(image),
        OWNER: clean_value(owner) or "unknown",
        IMAGE_CREATED: format_expiry(created),
        IMAGE_WAA_DIGEST: clean_value(waa_image),
        IMAGE_LICENCE_EXPIRES: format_expiry(licence_expires),
    }
    if base_image:
        tags[IMAGE_BASE_DIGEST] = clean_value(base_image)
    for key in tags:
        check_key(key)
    return tags
