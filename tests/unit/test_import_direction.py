"""Imports point ``evals -> oa_vm -> waa_client`` and ``oa_vm -> infra``: read from the code.

``oa-vm smoke`` needs a sweep's task run but runs it as a child process (``python -m evals``)
instead of importing ``evals``; this keeps it, and everything else, that way round.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

FORBIDDEN = {
    "oa_vm": ("evals",),
    "waa_client": ("evals", "oa_vm", "infra"),
    "infra": ("evals", "oa_vm", "waa_client"),
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_import_against_the_direction(package: str) -> None:
    wrong = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in sorted((ROOT / package).rglob("*.py"))
        for name in sorted(_imports(path) & set(FORBIDDEN[package]))
    ]
    assert wrong == []
