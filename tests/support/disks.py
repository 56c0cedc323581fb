"""Disks that refuse writes, for drills: a small tmpfs of the test's own that fills up, and a
folder made read-only in place. Both are real mounts (root only; a test run without root is
skipped) under the test's own folder, removed when the test ends."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

MOUNT_TIMEOUT_S = 60.0


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # fixed argv, no shell
        ["mount", *args], capture_output=True, text=True, timeout=MOUNT_TIMEOUT_S, check=False
    )


def _unmount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=MOUNT_TIMEOUT_S,
                   check=False)


@contextlib.contextmanager
def tmpfs(mount: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (``mount``'s syntax: ``256k``, ``16m``) mounted at ``mount`` (made);
    skips the test when it cannot be mounted (not root)."""
    mount.mkdir(parents=True, exist_ok=True)
    made = _mount("-t", "tmpfs", "-o", f"size={size}", f"oa-vm-test-{uuid.uuid4().hex[:6]}",
                  str(mount))
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {made.stderr.strip()}")
    try:
        yield mount
    finally:
        _unmount(mount)


def fill(mount: Path, name: str = "filler") -> Path:
    """Fill the file system of ``mount`` to its last byte with the file ``name``; returns it
    (remove it to free the space)."""
    path = mount / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        # a write that does not fit writes what fits: the next one finds no byte left
        while os.write(fd, b"\0" * 65536):
            pass
    except OSError as exc:
        assert exc.errno == errno.ENOSPC, exc
    finally:
        os.close(fd)
    return path


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[Path]:
    """``folder`` made read-only in place (bound onto itself, then remounted read-only: even
    root's writes fail with EROFS) until the block ends; skips the test when it cannot be."""
    bound = _mount("--bind", str(folder), str(folder))
    if bound.returncode != 0:
        pytest.skip(f"cannot bind-mount here (needs root): {bound.stderr.strip()}")
    try:
        frozen = _mount("-o", "remount,bind,ro", str(folder))
        assert frozen.returncode == 0, frozen.stderr
        yield folder
    finally:
        _unmount(folder)
