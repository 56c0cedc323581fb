"""What a cloud pool program needs to know, in one validated value.

The Pulumi programs in :mod:`infra.aws` and :mod:`infra.azure` read nothing else: no Pulumi
config, no environment. That keeps them callable from the Automation API (inline programs), from
Pulumi's mocks in tests, and from the offline plan renderer alike.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from datetime import datetime

DEFAULT_WORKERS = 1
DEFAULT_DISK_GB = 128
DEFAULT_WAA_IMAGE = "windowsarena/winarena:latest"
DEFAULT_WINDOWS_VERSION = "11e"
DEFAULT_RAM_SIZE = "8G"
DEFAULT_CPU_CORES = 4
DEFAULT_DISK_SIZE = "64G"

CALLER_CIDR_PLACEHOLDER = "caller-ip/32"
"""Stands for "the caller's public address" in an offline plan, before it is detected.

Only :meth:`PoolSettings.validate` with ``allow_placeholders=True`` (plans) accepts it; a create
always runs with real CIDRs.
"""

SSH_KEY_PLACEHOLDER = "ssh-ed25519 AAAA-generated-at-create oa-vm"
"""Stands for the pool's own public key in an offline plan (the key is made at create)."""

_NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,38}[a-z0-9]$|^[a-z]$")


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
        expires_at: timezone-aware instant at which the cloud itself stops the pool.
        ssh_public_key: OpenSSH public key line installed for the SSH user.
        disk_gb: OS disk size; the Windows disk lives on it (never on Azure's wiped /mnt).
        waa_image: the WAA container image.
        windows_version, ram_size, cpu_cores, disk_size: the WAA container's environment
            (``VERSION``, ``RAM_SIZE``, ``CPU_CORES``, ``DISK_SIZE``).
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
    waa_image: str = DEFAULT_WAA_IMAGE
    windows_version: str = DEFAULT_WINDOWS_VERSION
    ram_size: str = DEFAULT_RAM_SIZE
    cpu_cores: int = DEFAULT_CPU_CORES
    disk_size: str = DEFAULT_DISK_SIZE

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
        return self

    def normalized_cidrs(self) -> list[str]:
        """Allowed CIDRs in canonical form (host bits cleared), placeholders kept as they are."""
        out: list[str] = []
        for cidr in self.allowed_cidrs:
            if cidr == CALLER_CIDR_PLACEHOLDER:
                out.append(cidr)
            else:
                out.append(str(ipaddress.ip_network(cidr, strict=False)))
        return out

    def worker_names(self) -> list[str]:
        """``<pool>-w0``, ``<pool>-w1``, ...: stable names that resource names derive from."""
        return [f"{self.name}-w{i}" for i in range(self.workers)]
