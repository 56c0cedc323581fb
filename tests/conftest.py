"""Fixtures shared by every test: an isolated oa-vm home, the WAA data path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WAA_DATA = ROOT.parent / "shared" / "waa"


@pytest.fixture
def oa_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point ``OA_VM_HOME`` at a fresh folder for the test."""
    home = tmp_path / "oa-home"
    monkeypatch.setenv("OA_VM_HOME", str(home))
    yield home


@pytest.fixture
def waa_data() -> Path:
    """WAA's real task data (``../shared/waa``); skips the test when it is absent."""
    if not (WAA_DATA / "test_all.json").is_file():
        pytest.skip(f"WAA task data not found at ../shared/waa (looked for {WAA_DATA.name})")
    return WAA_DATA
