"""Where the stand-in keeps its "desktop": a folder named by ``$FAKE_WAA_DESKTOP``."""

from __future__ import annotations

import os
from pathlib import Path


def root() -> Path:
    """The desktop folder (created on first use)."""
    path = Path(os.environ["FAKE_WAA_DESKTOP"])
    path.mkdir(parents=True, exist_ok=True)
    return path


def resolve(path: str) -> Path:
    """A guest path like ``C:\\Users\\Docker\\a.txt`` mapped into the desktop folder."""
    name = path.replace("\\", "/").split("/")[-1]
    return root() / name
