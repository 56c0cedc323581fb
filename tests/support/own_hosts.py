"""A rehearsal host of ``--cloud ssh``: a private root holding what the shipped probe reads
(``dev/kvm``, ``proc/cpuinfo``, ``proc/meminfo``, ``proc/net/tcp``, the pool marker) and what a
real host has before oa-vm touches it (``opt``, ``etc/systemd/system``), and optionally a
prepared image in its image cache."""

from __future__ import annotations

import hashlib
from pathlib import Path

GIB_KIB = 1024 * 1024


def make_root(root: Path, *, kvm: bool = True, cpus: int = 16, mem_gib: int = 64,
              pool: str = "", listening: tuple[int, ...] = (), image_cache: bool = False) -> Path:
    """Write the host's root; returns it."""
    (root / "dev").mkdir(parents=True)
    if kvm:
        (root / "dev/kvm").touch()
    (root / "proc/net").mkdir(parents=True)
    (root / "proc/cpuinfo").write_text(
        "".join(f"processor\t: {i}\nmodel name\t: rehearsal\n\n" for i in range(cpus)))
    kib = mem_gib * GIB_KIB
    (root / "proc/meminfo").write_text(
        f"MemTotal:       {kib} kB\nMemFree:        {kib - GIB_KIB} kB\n"
        f"MemAvailable:   {kib - GIB_KIB} kB\n")
    header = "  sl  local_address rem_address   st tx_queue rx_queue\n"
    rows = "".join(f"   {i}: 0100007F:{port:04X} 00000000:0000 0A 00000000:00000000\n"
                   for i, port in enumerate(listening))
    (root / "proc/net/tcp").write_text(header + rows)
    (root / "var/lib").mkdir(parents=True)
    (root / "opt").mkdir()
    (root / "etc/systemd/system").mkdir(parents=True)
    if pool:
        (root / "var/lib/oa-vm").mkdir()
        (root / "var/lib/oa-vm/pool").write_text(pool + "\n")
    if image_cache:  # what an image build on the host leaves: the worker image and the disk
        cache = root / "var/lib/oa-vm/image-cache"
        cache.mkdir(parents=True)
        (cache / "oa-vm-image.ready").write_text("waa_image=w@sha256:1\n")
        (cache / "oa-vm-waa-image.tar").write_text("image")
        (cache / "windows.boot").touch()
        (cache / "data.img").write_bytes(b"EFI PART" + bytes(4096))
    return root


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` with its digest (to prove what changed)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}
