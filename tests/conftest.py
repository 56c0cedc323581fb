"""Fixtures shared by every test: an isolated oa-vm home, the WAA data path."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WAA_DATA = ROOT.parent / "shared" / "waa"

# Some tests press Ctrl-C (SIGINT) on the CLIs they start. A suite started in the background by a
# non-interactive shell (`pytest &`, some CI runners) has SIGINT ignored, and every child inherits
# that, so those CLIs would never see the key. Restoring Python's handler here means the children
# start with the default disposition, as they would from a terminal.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


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
