"""Every Python parse in ``infra`` goes through ``infra.pyast``'s lock.

CPython 3.11 can fail two concurrent AST constructions with a spurious ``SystemError`` (see
``infra/pyast.py``); the simulated worker parses on its request threads, so a parse that skips
the lock brings the failure back, rarely and on a busy machine only. This test finds any.
"""

from __future__ import annotations

import re

from tests.conftest import ROOT

_DIRECT = re.compile(r"\bast\.parse\(|\bcompile\([^)]*ast\.PyCF_ONLY_AST")


def test_no_module_parses_python_outside_the_lock() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "infra").rglob("*.py"))
        if path.name != "pyast.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _DIRECT.search(line)
    ]
    assert not offenders, f"parse through infra.pyast: {offenders}"

