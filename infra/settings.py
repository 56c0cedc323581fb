"""What a cloud pool program needs to know, in one validated value.

The Pulumi programs in :mod:`infra.aws` and :mod:`infra.azure` read nothing else: no Pulumi
config, no environment. That keeps them callable from the Automation API (inline programs), from
Pulumi's mocks in tests, and from the offline plan renderer alike.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from infra import egress_rules

DEFAULT_WORKERS = 1
MAX_WORKERS_PER_HOST = 32
"""The most workers one host runs (:data:`infra.worker.slots.MAX_SLOTS`)."""
DEFAULT_DISK_GB = 160
DEFAULT_STORAGE_GB = 96
DEFAULT_WAA_IMAGE = "windowsarena/winarena:latest"
DEFAULT_BASE_IMAGE = "dockurr/windows:latest"
MODES = ("pool", "build")
_DIGEST = re.compile(r"[a-z0-9][a-z0-9._/:-]*@sha256:[0-9a-f]{64}")


def is_digest(ref: str) -> bool:
    """``ref`` names an image by its content (``name@sha256:<64 hex>``), not by a tag."""
    return _DIGEST.fullmatch(ref) is not None
DEFAULT_WINDOWS_VERSION = "11e"
DEFAULT_RAM_SIZE = "8G"
DEFAULT_CPU_CORES = 4
DEFAULT_DISK_SIZE = "64G"
DEFAULT_EGRESS = "web"
"""The cloud workers' default egress mode: HTTP(S) to public addresses. Not ``allowlist``: WAA's
browser tasks have the agent open live sites (news, shops, video) whose pages load from hosts no
list of setup hosts names; not ``open``: nothing of WAA needs more than the web, and every other
port is a way out (docs/security.md)."""

CALLER_CIDR_PLACEHOLDER = "caller-ip/32"
"""Stands for "the caller's public address" in an offline plan, before it is detected.

Only :meth:`PoolSettings.validate` with ``allow_placeholders=True`` (plans) accepts it; a create
always runs with real CIDRs.
"""

SSH_KEY_PLACEHOLDER = "ssh-ed25519 AAAA-generated-at-create oa-vm"
"""Stands for the pool's own public key in an offline plan (the key is made at create)."""

IMAGE_PLACEHOLDER = "newest-ready-image-of-the-region"
"""Stands for "the image picked at create" in an offline plan made without ``--image``."""

_NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,38}[a-z0-9]$|^[a-z]$")


def expiry_minute(expires_at: datetime) -> datetime:
    """The expiry in UTC rounded up to the whole minute: when the cloud's kill switches fire
    (AWS's schedule, Azure's shutdown time and deleter), so a pool never ends before the time it
    was promised."""
    utc = expires_at.astimezone(UTC)
    whole = utc.replace(second=0, microsecond=0)
    return whole + timedelta(minutes=1) if utc > whole else whole


class SettingsError(ValueError):
    """A pool setting is unusable; the message says which and what to give instead."""


@dataclass(frozen=True)
class PoolSettings:
    """Everything one pool program declares.

    Attributes:
        name: pool name; lower-case letters, digits and dashes (it ends up in resource names).
        owner: who the pool belongs to (tag ``oa-vm:owner``).
        workers: number of worker hosts, at least 1.
        size: instance size (AWS instance type or Azure VM size); must nest (see
            :mod:`infra.sizes`).
        region: AWS region or Azure location.
        spot: ask for spot capacity (AWS one-time spot, Azure Spot with eviction Deallocate).
        allowed_cidrs: the only sources allowed to reach SSH (22). ``0.0.0.0/0`` only when the
            caller passed it explicitly.
        expires_at: timezone-aware instant at which the cloud itself stops the pool (the AWS
            schedule, the Azure daily shutdown time) and that the tags name: the pool's
            current expiry, which ``pool-extend``, a pause and a resume move.
        ssh_public_key: OpenSSH public key line installed for the SSH user.
        disk_gb: OS disk size (Ubuntu, Docker and the WAA container image). 160 GB by default:
            128 GB was tight for the images plus a Windows disk.
        storage_gb: size of the storage volume holding the Windows disk (a separate data
            volume, never Azure's wiped /mnt). Pools create it from ``image_id``; an image build
            creates it empty.
        image_id: the prepared image each worker's storage volume is created from (an EBS
            snapshot ID on AWS, a managed snapshot's resource ID on Azure); None only for an
            image builder.
        mode: ``pool`` (start WAA from the prepared disk) or ``build`` (install Windows once, shut
            down, exit: an image builder).
        waa_image: the WAA container image the worker's image is built from.
        base_image: the dockur/windows image it is built on (a current one downloads the ISO).
        windows_version, ram_size, cpu_cores, disk_size: the WAA container's environment
            (``VERSION``, ``RAM_SIZE``, ``CPU_CORES``, ``DISK_SIZE``).
        egress: what the guest may reach (``none``, ``allowlist``, ``web``, ``open``; never the
            metadata service, the host or another worker): see ``infra/egress_rules.py``.
        egress_allowlist: the ``allowlist`` mode's entries, one ``host:port`` a line.
        workers_per_host: WAA workers on each host (``workers`` counts hosts), each in its own
            slot (:mod:`infra.worker.slots`): its container, storage volume, ports, QMP socket,
            guest address and snapshot. 1: the one-worker host of before.
        iso_bytes: an image builder only: the size of the user's own Windows ISO, which
            ``image-create`` uploads over SSH and the bootstrap waits for (``await_iso``) up to
            ``iso_timeout_s``; 0: dockur's ``VERSION`` decides what it installs.
    """

    name: str
    owner: str
    workers: int
    size: str
    region: str
    expires_at: datetime
    ssh_public_key: str
    allowed_cidrs: tuple[str, ...] = field(default_factory=tuple)
    spot: bool = False
    disk_gb: int = DEFAULT_DISK_GB
    storage_gb: int = DEFAULT_STORAGE_GB
    image_id: str | None = None
    mode: str = "pool"
    waa_image: str = DEFAULT_WAA_IMAGE
    base_image: str = DEFAULT_BASE_IMAGE
    windows_version: str = DEFAULT_WINDOWS_VERSION
    ram_size: str = DEFAULT_RAM_SIZE
    cpu_cores: int = DEFAULT_CPU_CORES
    disk_size: str = DEFAULT_DISK_SIZE
    egress: str = DEFAULT_EGRESS
    egress_allowlist: str = ""
    iso_bytes: int = 0
    iso_timeout_s: int = 0
    indexes: tuple[int, ...] | None = None
    """The workers' numbers when they are not ``0..workers-1``: a repair that replaces a
    draining worker adds a new number before the old one is retired (:mod:`oa_vm.fleet`)."""
    workers_per_host: int = 1
    ami_id: str | None = None
    """AWS: the host's Ubuntu AMI. None at create (the program looks up Canonical's newest);
    every later update passes the one the create used (:data:`PINNED`), so a newer AMI published
    in between replaces nothing."""
    paused: bool = False
    """The pool is paused (``pool-pause``): its machines are stopped, so ``expires_at`` is the
    paused pool's, which only the cloud's deleter keeps (a running pool's limits, Azure's
    24 hours, do not apply to it)."""

    def validate(self, *, allow_placeholders: bool = False) -> PoolSettings:
        """Check every field; return ``self`` so calls chain.

        Args:
            allow_placeholders: accept :data:`CALLER_CIDR_PLACEHOLDER` and
                :data:`SSH_KEY_PLACEHOLDER` (offline plans only).

        Raises:
            SettingsError: the first unusable field, with what to give instead.
        """
        if not _NAME_RE.match(self.name):
            raise SettingsError(
                f"invalid pool name {self.name!r}: use 1-40 lower-case letters, digits and dashes"
            )
        if self.workers < 1:
            raise SettingsError(f"workers must be at least 1, not {self.workers}")
        if not 1 <= self.workers_per_host <= MAX_WORKERS_PER_HOST:
            raise SettingsError(f"workers_per_host must be from 1 to {MAX_WORKERS_PER_HOST}, "
                                f"not {self.workers_per_host}")
        if self.workers_per_host > 1 and self.mode != "pool":
            raise SettingsError("an image builder runs one worker (workers_per_host 1)")
        if self.indexes is not None and (
            not self.indexes or len(set(self.indexes)) != len(self.indexes)
            or min(self.indexes) < 0
        ):
            raise SettingsError(f"worker numbers must be distinct and >= 0, not {self.indexes}")
        if self.expires_at.tzinfo is None:
            raise SettingsError("expires_at must be timezone-aware (e.g. UTC)")
        if not self.owner.strip():
            raise SettingsError("owner must not be empty")
        if not self.region.strip():
            raise SettingsError("region must not be empty")
        if not self.allowed_cidrs:
            raise SettingsError("no CIDR allowed to reach SSH: pass --allow-cidr CIDR")
        for cidr in self.allowed_cidrs:
            if allow_placeholders and cidr == CALLER_CIDR_PLACEHOLDER:
                continue
            try:
                ipaddress.ip_network(cidr, strict=False)
            except ValueError:
                raise SettingsError(
                    f"invalid CIDR {cidr!r}: give an address block such as 203.0.113.7/32"
                ) from None
        key = self.ssh_public_key.strip()
        if not (allow_placeholders and key == SSH_KEY_PLACEHOLDER) and not key.startswith(
            ("ssh-ed25519 ", "ssh-rsa ", "ecdsa-sha2-")
        ):
            raise SettingsError("ssh_public_key must be an OpenSSH public key line")
        if self.disk_gb < 64:
            raise SettingsError(
                f"disk_gb must be at least 64 (the Windows disk), not {self.disk_gb}"
            )
        if self.mode not in MODES:
            raise SettingsError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.egress not in egress_rules.MODES:
            raise SettingsError(
                f"egress must be one of {', '.join(egress_rules.MODES)}, not {self.egress!r}"
            )
        if (self.egress == "allowlist") != bool(self.egress_allowlist.strip()):
            raise SettingsError("an allow-list goes with egress 'allowlist', and only with it")
        try:
            egress_rules.parse_allowlist(self.egress_allowlist)
        except egress_rules.PolicyError as exc:
            raise SettingsError(str(exc)) from None
        if self.storage_gb < 80:
            raise SettingsError(
                f"storage_gb must be at least 80 (a {self.disk_size} Windows disk and the saved "
                f"container image), not {self.storage_gb}"
            )
        if self.iso_bytes < 0 or (self.iso_bytes and self.mode != "build"):
            raise SettingsError("iso_bytes is for an image builder's own ISO (mode 'build')")
        if self.mode == "pool" and not self.image_id and not allow_placeholders:
            raise SettingsError(
                "a pool needs a prepared image (image_id); build one with 'oa-vm image-create'"
            )
        return self

    def normalized_cidrs(self) -> list[str]:
        """Allowed CIDRs in canonical form (host bits cleared), placeholders kept as they are."""
        return [cidr if cidr == CALLER_CIDR_PLACEHOLDER
                else str(ipaddress.ip_network(cidr, strict=False)) for cidr in self.allowed_cidrs]

    def worker_indexes(self) -> list[int]:
        """The workers' numbers: ``indexes`` if given, else ``0..workers-1``."""
        return list(self.indexes) if self.indexes is not None else list(range(self.workers))

    def worker_names(self) -> list[str]:
        """``<pool>-w0``, ``<pool>-w1``, ...: stable names that resource names derive from (the
        hosts' names; with one worker per host, the workers' too)."""
        return [f"{self.name}-w{i}" for i in self.worker_indexes()]

    def slot_names(self, host: str) -> list[str]:
        """The workers of ``host`` (one of :meth:`worker_names`): the host's own name with one
        worker per host, else ``<host>-s0``, ``<host>-s1``, ... (one per slot)."""
        if self.workers_per_host == 1:
            return [host]
        return [f"{host}-s{i}" for i in range(self.workers_per_host)]


PINNED_EXPORT = "pinned"
"""The stack output naming the inputs a program resolved at create and that must never change
after (:func:`pinned_values`); the driver keeps them in the stack's config."""

PINNED = ("ami", "image", "size", "disk_gb", "storage_gb")
"""What is pinned: the host OS image (AWS AMI), the prepared image, the size and both disks.
Any of them changing would replace every instance of the stack."""


def pinned_values(settings: PoolSettings, ami: str | None) -> dict[str, str]:
    """The values a program exports under :data:`PINNED_EXPORT` (``ami`` as resolved)."""
    values = {
        "ami": ami or "",
        "image": settings.image_id or "",
        "size": settings.size,
        "disk_gb": str(settings.disk_gb),
        "storage_gb": str(settings.storage_gb),
    }
    return {key: value for key, value in values.items() if value}


def with_pinned(settings: PoolSettings, pinned: Mapping[str, str]) -> PoolSettings:
    """``settings`` with every value the stack pinned at create put back (a later default, a
    newer AMI or another image never reaches an existing stack)."""
    changes: dict[str, object] = {
        field_name: pinned[key]
        for key, field_name in (("ami", "ami_id"), ("image", "image_id"), ("size", "size"))
        if pinned.get(key)
    }
    for key in ("disk_gb", "storage_gb"):
        if str(pinned.get(key, "")).isdigit():
            changes[key] = int(pinned[key])
    return replace(settings, **changes)  # type: ignore[arg-type]


LICENCE_DAYS = 90
"""Windows evaluation editions run 90 days from install; an image is refused after that."""


@dataclass(frozen=True)
class ImageSettings:
    """One prepared image: what its builder is, and what the image is tagged with.

    Attributes:
        name: the image's ID in oa-vm (``waa-<region>-<yyyymmdd-hhmm>``); the builder and every
            resource of the image are named after it.
        builder: the builder host, as a one-worker pool in ``build`` mode (its ``expires_at`` is
            the builder's own kill switch).
        created_at: when the build started (Windows is installed then).
        waa_digest, base_digest: the digests of the WAA and dockur/windows images the builder
            really used (from its image info); empty until it reported them. Only the
            snapshot's tags read them: the builder's own inputs never change.
    """

    name: str
    builder: PoolSettings
    created_at: datetime
    waa_digest: str = ""
    base_digest: str = ""

    def built_from(self, stage: str) -> tuple[str, str]:
        """The WAA and dockur/windows images the image's tags name at ``stage``: while the
        builder builds (``build``), the requested WAA image and no base; from the snapshot on,
        the two digests the builder reported, never a tag name in their place.

        Raises:
            SettingsError: past ``build``, an image is missing or not a digest
                (``name@sha256:<64 hex>``).
        """
        if stage == "build" and not self.waa_digest and not self.base_digest:
            return self.builder.waa_image, ""
        for what, ref in (("WAA", self.waa_digest), ("dockur/windows", self.base_digest)):
            if not is_digest(ref):
                raise SettingsError(
                    f"the builder reported {ref!r} for the {what} image, not a digest "
                    "(name@sha256:...); an image is tagged only with the digests it was built from"
                )
        return self.waa_digest, self.base_digest

    @property
    def licence_expires(self) -> datetime:
        """When the Windows evaluation licence inside the image runs out."""
        return self.created_at + timedelta(days=LICENCE_DAYS)

    def validate(self, *, allow_placeholders: bool = False) -> ImageSettings:
        """Check the builder's settings; return ``self``.

        Raises:
            SettingsError: a builder setting is unusable.
        """
        if self.builder.mode != "build" or self.builder.workers != 1:
            raise SettingsError("an image has exactly one builder, in build mode")
        self.builder.validate(allow_placeholders=allow_placeholders)
        return self
