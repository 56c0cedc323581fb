"""Devices and pipes a test may point code at: always made in the test's own folder.

A test that gives the code under test ``/dev/null`` (or any other real device) risks the
machine when the code regresses: a write lands on the device, and an atomic rename replaces
the device node with a plain file. These stand-ins sit in ``tmp_path``, so whatever the code
does, it only touches the test's folder.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

NULL_DEVICE = os.makedev(1, 3)
"""The numbers of the null device: a node with them swallows what is written (harmless)."""


def device_node(folder: Path, name: str = "device") -> Path:
    """A character device in ``folder`` (a null device: writes go nowhere). Needs root; a test
    run without it is skipped."""
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    path = folder / name
    os.mknod(path, 0o600 | stat.S_IFCHR, NULL_DEVICE)
    return path


def fifo(folder: Path, name: str = "pipe") -> Path:
    """A named pipe in ``folder``."""
    path = folder / name
    os.mkfifo(path, 0o600)
    return path


def special_file(folder: Path, name: str = "device") -> Path:
    """A device node in ``folder`` as root, else a named pipe: something that is not a regular
    file, for tests that must run either way."""
    if os.geteuid() == 0:
        return device_node(folder, name)
    return fifo(folder, name)
