"""The guest's RAM, as dockur sizes it on a worker, is what the plan says whatever the host has
free at the container's start.

dockur's ``memory.sh`` (run here for real, with the environment ``bootstrap.sh`` gives the
container) shrinks ``RAM_SIZE`` to what is free when less than it and a margin is, unless
``RAM_CHECK`` is off. A worker's clean snapshot holds the guest's RAM at the size it was taken
with, and QEMU loads it into no other size: a container started again on a host with less
free (a pause on one's own host, the restart policy, a reboot) would fail every reset.
``tests/integration/test_dockur_qemu_reset.py`` restores such a snapshot in QEMU.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support import dockur_qemu

pytestmark = pytest.mark.skipif(
    dockur_qemu.available() is not None or shutil.which("qemu-img") is None,
    reason=f"dockur's scripts or qemu-img: {dockur_qemu.available() or 'no qemu-img'}")

GIB = 2**30


def _ram(tmp_path: Path, ram: str, free: int | None) -> str:
    args = dockur_qemu.dockur_args(tmp_path / "storage", tmp_path / "qmp.sock", ram=ram,
                                   available_bytes=free)
    return args[args.index("-m") + 1]


@pytest.mark.parametrize("free", [None, 64 * GIB, 8 * GIB, 6 * GIB])
def test_the_guest_gets_the_planned_ram_whatever_is_free(tmp_path: Path, free: int | None
                                                         ) -> None:
    assert _ram(tmp_path, "8G", free) == "8G"


def test_without_the_workers_setting_dockur_would_shrink_the_guest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The case above is real: with dockur's default, 6 GiB free gives a smaller guest."""
    monkeypatch.setattr(dockur_qemu, "bootstrap_fixed_env", lambda: {})
    assert _ram(tmp_path, "8G", 6 * GIB) not in ("8G", "8192M")
