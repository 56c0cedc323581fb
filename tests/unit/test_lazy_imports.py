"""Start-up laziness lives in one place: :mod:`oa_vm.kit.lazy`.

A third-party module imported inside a function (to keep start-up cheap) is the pattern the
stand-ins replace: the scan fails on any such import in ``oa_vm`` or ``evals`` outside
``oa_vm/kit/lazy.py``, and checks that the stand-ins and what the type checker sees agree.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from oa_vm.kit import lazy

ROOT = Path(__file__).resolve().parents[2]
LAZY = ROOT / "oa_vm" / "kit" / "lazy.py"
PROJECT = {"oa_vm", "evals", "waa_client", "infra"}


def _third_party(module: str) -> bool:
    top = module.split(".")[0]
    return bool(top) and top not in PROJECT and top not in sys.stdlib_module_names


def function_level_third_party(path: Path, root: Path = ROOT) -> list[str]:
    """``path:line module`` for every third-party import inside a function of ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[tuple[int, str]] = set()
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            found.update((node.lineno, name) for name in names if _third_party(name))
    return [f"{path.relative_to(root)}:{line} {name}" for line, name in sorted(found)]


def test_no_third_party_import_inside_a_function_outside_the_lazy_place() -> None:
    offenders = [
        hit
        for package in ("oa_vm", "evals")
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != LAZY
        for hit in function_level_third_party(path)
    ]
    assert offenders == [], (
        "import these through oa_vm.kit.lazy (a stand-in at the module's top) instead:\n"
        + "\n".join(offenders)
    )


def test_the_scan_sees_each_form(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import json\n"
        "def f():\n    import requests\n    from PIL import Image\n    import os\n"
        "    from oa_vm import errors\n    from . import sibling\n"
        "async def g():\n    from rich.text import Text\n"
        "class C:\n    def m(self):\n        import typer.core\n",
        encoding="utf-8",
    )
    hits = [hit.split(" ", 1)[1] for hit in function_level_third_party(sample, tmp_path)]
    assert hits == ["requests", "PIL", "rich.text", "typer.core"]


def _lazy_tables() -> tuple[dict[str, str], dict[str, str]]:
    """(name -> module the type checker imports, name -> module the stand-in loads)."""
    tree = ast.parse(LAZY.read_text(encoding="utf-8"))
    typed: dict[str, str] = {}
    runtime: dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, ast.If):
            continue
        if isinstance(node.test, ast.Name):  # if TYPE_CHECKING:
            for item in node.body:
                if isinstance(item, ast.Import):
                    for alias in item.names:
                        typed[alias.asname or alias.name] = alias.name
                elif isinstance(item, ast.ImportFrom) and _third_party(item.module or ""):
                    for alias in item.names:
                        typed[alias.asname or alias.name] = f"{item.module}.{alias.name}"
        else:  # if not TYPE_CHECKING:
            for item in node.body:
                assert isinstance(item, ast.Assign) and isinstance(item.value, ast.Call)
                target, arg = item.targets[0], item.value.args[0]
                assert isinstance(target, ast.Name) and isinstance(arg, ast.Constant)
                runtime[target.id] = str(arg.value)
    typed = {name: module for name, module in typed.items() if _third_party(module)}
    return typed, runtime


def test_every_stand_in_is_the_module_the_type_checker_sees() -> None:
    typed, runtime = _lazy_tables()
    assert runtime, "no stand-in found in oa_vm/kit/lazy.py"
    assert typed == runtime
    assert set(runtime) <= set(lazy.__all__)


def test_importing_the_stand_ins_loads_none_of_them() -> None:
    _, runtime = _lazy_tables()
    code = "import sys, oa_vm.kit.lazy; print(' '.join(sys.modules))"
    loaded = subprocess.run(  # fixed argv, no shell
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    ).stdout.split()
    assert sorted({m.split(".")[0] for m in runtime.values()} & set(loaded)) == []


def test_a_stand_in_reads_sys_modules_at_each_use(monkeypatch: pytest.MonkeyPatch) -> None:
    stand_in = lazy.LazyModule("oa_vm_lazy_probe")
    with pytest.raises(ModuleNotFoundError):
        lazy.load(stand_in)
    first = types.ModuleType("oa_vm_lazy_probe")
    first.value = 1  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "oa_vm_lazy_probe", first)
    assert stand_in.value == 1 and lazy.load(stand_in) is first
    second = types.ModuleType("oa_vm_lazy_probe")
    second.value = 2  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "oa_vm_lazy_probe", second)
    assert stand_in.value == 2
    assert lazy.load(first) is first
