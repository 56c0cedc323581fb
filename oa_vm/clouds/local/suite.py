"""The local task suite a local pool serves by default, for the layers above ``oa_vm``.

``evals`` reaches what ``infra`` ships only through ``oa_vm`` (the layering of
``docs/architecture.md``); this is that path for the bundled suite's folder.
"""

from __future__ import annotations

from pathlib import Path


def local_tasks_dir() -> Path:
    """The folder of the bundled local suite (WAA's task format: index files and examples/)."""
    from infra.local.taskstore import tasks_dir  # light: infra.local loads its worker lazily

    return tasks_dir()
