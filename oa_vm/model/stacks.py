"""Where oa-vm's Pulumi state is, and which stacks it holds, read without the engine.

The state is a file backend (``file://$OA_VM_HOME/pulumi``). Pulumi's project-scoped layout
keeps each stack in one file, ``.pulumi/stacks/<project>/<stack>.json`` (``.json.gz`` or
``.json.zst`` when compressed; a ``.bak`` beside it is a backup, not a stack), so listing the
stacks is a directory read: milliseconds, where asking the engine takes seconds, which
``pool-list`` must not spend (:func:`oa_vm.clouds.every_pool`). Kept with the records, not the
clouds, so that ``pool-status``'s fast path can tell there is no cloud state at all without
loading the clouds' package.
"""

from __future__ import annotations

from pathlib import Path

from oa_vm.model import state

SUFFIXES = (".json", ".json.gz", ".json.zst")
"""A stack file's suffixes (Pulumi's ``encoding``: JSON, compressed or not)."""


def backend_dir() -> Path:
    """``$OA_VM_HOME/pulumi``: the file backend holding every pool's stack."""
    return state.home() / "pulumi"


def pool_project(cloud: str) -> str:
    """The Pulumi project of ``cloud``'s pools (``oa-vm-aws``); each pool is one stack of it."""
    return f"oa-vm-{cloud}"


def stacks_of(project: str) -> dict[str, Path]:
    """Each stack of ``project`` the backend holds: its name and its file."""
    folder = backend_dir() / ".pulumi" / "stacks" / project
    try:
        paths = sorted(folder.iterdir()) if folder.is_dir() else []
    except OSError:  # unreadable: a listing goes on without it (the engine still finds a stack)
        return {}
    found: dict[str, Path] = {}
    for path in paths:
        for suffix in SUFFIXES:
            if path.name.endswith(suffix) and path.is_file():
                found[path.name[: -len(suffix)]] = path
    return found
