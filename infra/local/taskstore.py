"""The task suite a worker holds, read from a folder in WAA's own layout.

``DIR/examples/<domain>/<task_id>.json`` plus an index ``{domain: [task_id]}``: ``local_all.json``
for the bundled suite, or WAA's ``test_all.json`` when pointed at WAA's data. Task files are
found through the index only, so a task ID can never name a path outside the folder.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

INDEX_NAMES = ("local_all.json", "test_all.json")
TEXT = "utf-8-sig"
"""Task files are UTF-8, a leading byte-order mark dropped (as the controller's reader,
``waa_client.inputs.read_text``: a file saved by Notepad lists and runs the same)."""


def tasks_dir() -> Path:
    """The bundled local task suite."""
    return Path(__file__).resolve().parent / "tasks"


def _read_index(path: Path) -> dict[str, list[str]] | None:
    """A ``{domain: [task_id]}`` index file, or None when the file is not one."""
    try:
        index = json.loads(path.read_text(encoding=TEXT))
    except (OSError, ValueError) as exc:
        raise TaskStoreError(f"cannot read task index {path}: {exc}") from None
    if not isinstance(index, dict) or not all(
        isinstance(ids, list) and all(isinstance(i, str) for i in ids) for ids in index.values()
    ):
        return None
    return index


class TaskStoreError(ValueError):
    """The task folder has no readable index."""


class TaskStore:
    """An index of tasks and their JSON files; shared by all workers of one process."""

    _cache: dict[Path, TaskStore] = {}
    _cache_lock = threading.Lock()

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        candidates = [folder / n for n in INDEX_NAMES if (folder / n).is_file()]
        candidates += sorted(p for p in folder.glob("*.json") if p not in candidates)
        if not candidates:
            raise TaskStoreError(f"no {' or '.join(INDEX_NAMES)} in task folder {folder}")
        index_path = candidates[0]
        index = _read_index(index_path)
        if index is None:
            raise TaskStoreError(f"task index {index_path} is not {{domain: [task_id]}}")
        self.index: dict[str, list[str]] = index
        self._domain_of = {task_id: domain for domain, ids in index.items() for task_id in ids}
        # Every other index file of the folder whose tasks the main index holds (e.g.
        # local_small), served by name so catalogs on pools know the same names as on disk.
        self.indexes: dict[str, dict[str, list[str]]] = {index_path.stem: index}
        for path in candidates[1:]:
            other = _read_index(path)
            if other is not None and all(
                t in self._domain_of for ids in other.values() for t in ids
            ):
                self.indexes[path.stem] = other

    @classmethod
    def load(cls, folder: Path | None = None) -> TaskStore:
        """The store for a folder (default: the bundled suite), read once per process.

        Raises:
            TaskStoreError: no readable index in the folder.
        """
        key = (folder or tasks_dir()).resolve()
        with cls._cache_lock:
            if key not in cls._cache:
                cls._cache[key] = cls(key)
            return cls._cache[key]

    def task(self, task_id: str) -> dict[str, Any] | None:
        """A task's JSON, or ``None`` when the index does not list it or its file is missing."""
        domain = self._domain_of.get(task_id)
        if domain is None:
            return None
        path = self.folder / "examples" / domain / f"{task_id}.json"
        try:
            data = json.loads(path.read_text(encoding=TEXT))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None
