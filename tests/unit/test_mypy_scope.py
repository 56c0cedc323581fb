"""mypy follows every cloud SDK module the project's code uses (pyproject's overrides).

The SDKs are skipped by default (following all their services made mypy take minutes), so a
service that the code starts using without adding it to the list would be typed ``Any`` and its
calls left unchecked. This test reads the code's imports and attribute uses of the SDKs and says
which module to add.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT

SDKS = ("pulumi_aws", "pulumi_azure_native")
CODE_DIRS = ("infra", "oa_vm", "evals", "waa_client")


def _overrides() -> list[tuple[str, str]]:
    """``(module pattern, follow_imports)`` of pyproject's mypy overrides, in file order."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    pairs = []
    for override in config["tool"]["mypy"].get("overrides", []):
        if "follow_imports" in override:
            modules = override["module"]
            for pattern in [modules] if isinstance(modules, str) else modules:
                pairs.append((pattern, override["follow_imports"]))
    return pairs


def follow_mode(module: str, overrides: list[tuple[str, str]]) -> str:
    """mypy's ``follow_imports`` for ``module``: exact names beat patterns, longer beat shorter."""
    best, best_rank = "normal", (-1, -1)
    for pattern, mode in overrides:
        if pattern.endswith(".*"):
            prefix = pattern[:-2]
            matches = module == prefix or module.startswith(prefix + ".")
            rank = (0, prefix.count(".") + 1)
        else:
            matches, rank = module == pattern, (1, 0)
        if matches and rank >= best_rank:
            best, best_rank = mode, rank
    return best


def test_follow_mode_precedence() -> None:
    rules = [("sdk.*", "skip"), ("sdk", "normal"), ("sdk.ec2.*", "normal")]
    assert follow_mode("sdk", rules) == "normal"
    assert follow_mode("sdk.s3", rules) == "skip"
    assert follow_mode("sdk.ec2", rules) == "normal"
    assert follow_mode("sdk.ec2.instance", rules) == "normal"
    assert follow_mode("other", rules) == "normal"


def _package_dir(sdk: str) -> Path:
    spec = importlib.util.find_spec(sdk)
    if spec is None or spec.origin is None:
        pytest.skip(f"{sdk} not installed (pip install -e '.[dev]')")
    return Path(spec.origin).parent


def _defining_module(sdk: str, name: str) -> str:
    """The SDK module that ``sdk.name`` comes from: a subpackage, or a top-level module."""
    folder = _package_dir(sdk)
    if (folder / name / "__init__.py").is_file() or (folder / f"{name}.py").is_file():
        return f"{sdk}.{name}"
    definition = re.compile(rf"^(class|def) {re.escape(name)}\b", re.MULTILINE)
    for path in sorted(folder.glob("*.py")):
        if definition.search(path.read_text(encoding="utf-8")):
            return f"{sdk}.{path.stem}"
    raise AssertionError(f"cannot tell which {sdk} module defines {name!r}")


def _sdk_uses(tree: ast.AST) -> Iterator[tuple[str, str]]:
    """``(sdk, name)`` for each ``sdk.name`` the module uses, however it imported the SDK."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top, _, rest = alias.name.partition(".")
                if top in SDKS:
                    if rest:
                        yield top, rest.split(".")[0]
                    if alias.asname or not rest:
                        aliases[alias.asname or top] = top
        elif isinstance(node, ast.ImportFrom) and node.module:
            top, _, rest = node.module.partition(".")
            if top in SDKS:
                if rest:
                    yield top, rest.split(".")[0]
                else:
                    for alias in node.names:
                        yield top, alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases):
            yield aliases[node.value.id], node.attr


def test_every_sdk_module_the_code_uses_is_type_checked() -> None:
    overrides = _overrides()
    unchecked: set[str] = set()
    seen = 0
    for folder in CODE_DIRS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for sdk, name in _sdk_uses(ast.parse(path.read_text(encoding="utf-8"))):
                seen += 1
                module = _defining_module(sdk, name)
                if follow_mode(module, overrides) != "normal":
                    unchecked.add(f"{module} (used in {path.relative_to(ROOT)})")
    assert seen, "found no use of the cloud SDKs: has infra/ moved?"
    assert not unchecked, (
        "mypy skips these SDK modules, so their calls go unchecked; add them to the "
        "follow_imports = \"normal\" list in pyproject.toml: " + ", ".join(sorted(unchecked))
    )
