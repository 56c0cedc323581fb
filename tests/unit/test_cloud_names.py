"""No cloud's name is compared outside ``oa_vm/clouds/``: what a cloud does differently is a
provider method or data it declares (:class:`oa_vm.clouds.declared.ProviderFacts`, its
capabilities), so adding a cloud touches its own folder only.

Every module of ``oa_vm``, ``evals`` and ``waa_client`` outside the clouds' folder is read with
``ast``; a string literal that is a registered cloud's name may not be one side of ``==``,
``!=``, ``in`` or ``not in`` (also inside a tuple, list or set: ``cloud in ("aws", "azure")``),
nor a ``case`` of a ``match``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from oa_vm.clouds import known_clouds

ROOT = Path(__file__).resolve().parents[2]
CLOUDS = ROOT / "oa_vm" / "clouds"
NAMES = frozenset(known_clouds())


def _literals(node: ast.AST) -> list[str]:
    """The registered cloud names written as literals in ``node`` (a side of a comparison)."""
    items = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    return [i.value for i in items if isinstance(i, ast.Constant) and i.value in NAMES]


def cloud_name_comparisons(source: str) -> list[tuple[int, str]]:
    """``(line, name)`` of every comparison of a cloud's name in ``source``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            found += [(node.lineno, name) for side in sides for name in _literals(side)]
        elif isinstance(node, ast.match_case):
            found += [(sub.lineno, sub.value.value) for sub in ast.walk(node.pattern)
                      if isinstance(sub, ast.MatchValue) and isinstance(sub.value, ast.Constant)
                      and sub.value.value in NAMES]
    return found


def _modules() -> list[Path]:
    return sorted(
        path for package in ("oa_vm", "evals", "waa_client")
        for path in (ROOT / package).rglob("*.py")
        if CLOUDS not in path.parents and "__pycache__" not in path.parts
    )


def test_no_module_outside_the_clouds_compares_a_cloud_name() -> None:
    offences = [
        f"{path.relative_to(ROOT)}:{line}: compares {name!r}"
        for path in _modules()
        for line, name in cloud_name_comparisons(path.read_text(encoding="utf-8"))
    ]
    assert not offences, (
        "cloud names compared outside oa_vm/clouds/ (declare it on the provider: "
        "ProviderFacts or a capability):\n" + "\n".join(offences)
    )


@pytest.mark.parametrize("source", [
    'if cloud == "aws": pass',
    'ok = "local" != record.cloud',
    'ok = cloud in ("aws", "azure")',
    'ok = cloud not in ["local", "ssh"]',
    'match cloud:\n    case "azure":\n        pass',
    'match pool:\n    case {"cloud": "local"}:\n        pass',
])
def test_every_spelling_of_a_comparison_is_caught(source: str) -> None:
    assert cloud_name_comparisons(source)


def test_a_cloud_name_as_data_is_not_a_comparison() -> None:
    assert not cloud_name_comparisons('spec = build_spec(cloud="local")\nNAMES = ("aws",)')
    assert {"local", "aws", "azure", "ssh"} <= NAMES
