"""Fixtures shared by the integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import run_cli


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """An oa-vm home whose pools are removed afterwards, even if the test failed half-way.

    The removal is forced: a failed test may have left a process holding a pool's lease.
    """
    home = tmp_path / "home"
    yield home
    for record in (home / "pools").glob("*/pool.json"):
        run_cli("oa-vm", "pool-cleanup", "--name", record.parent.name, "-y", "--force", home=home)
