"""What a command leaves on disk: every file under some folders, by its bytes and modification
time, and every folder, compared before and after (a refused command must leave them all as
they were)."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from pathlib import Path


def file_state(*roots: Path) -> dict[str, tuple[int, str] | str]:
    """Each path under ``roots`` (the roots included): a regular file as its modification time
    and the digest of its bytes, anything else as its kind."""
    found: dict[str, tuple[int, str] | str] = {}
    for root in roots:
        for path in [root, *sorted(root.rglob("*"))] if root.exists() else []:
            if path.is_symlink() or not path.is_file():
                found[str(path)] = "folder" if path.is_dir() else "other"
                continue
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            found[str(path)] = (path.stat().st_mtime_ns, digest)
    return found


@contextlib.contextmanager
def unchanged(*roots: Path) -> Iterator[None]:
    """Assert that the block created, removed and changed nothing under ``roots``."""
    before = file_state(*roots)
    yield
    after = file_state(*roots)
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    assert changed == [], changed
