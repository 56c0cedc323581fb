"""The packages' floor plan as ``docs/architecture.md`` draws it: at most 12 entries at the top
of ``oa_vm`` and of ``evals`` (the reference's import paths ``evals.adapters``,
``evals.benchmarks`` and ``evals.evaluation`` aside), and the table's counts true."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REFERENCE_PATHS = {"adapters", "benchmarks", "evaluation"}


def _entries(package: str) -> list[str]:
    """Python modules and packages at the top of ``package``."""
    here = ROOT / package
    return sorted(
        p.stem for p in here.iterdir()
        if (p.suffix == ".py" or (p / "__init__.py").is_file()) and p.name != "__pycache__"
    )


def _modules(package: str) -> int:
    return sum(1 for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts)


def test_each_package_has_at_most_twelve_entries_and_the_doc_counts_them() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for package, aside in (("oa_vm", set()), ("evals", REFERENCE_PATHS)):
        entries = [e for e in _entries(package) if e not in aside]
        assert len(entries) <= 12, entries
        row = re.search(rf"^\| `{package}` \| (\d+): [^|]*\| (\d+) \| 0 \|$", doc, re.M)
        assert row is not None, f"docs/architecture.md has no row for {package}"
        assert int(row.group(1)) == len(entries), (package, entries)
        assert int(row.group(2)) == _modules(package), package
        for entry in entries:
            assert f"`{entry}" in row.group(0), f"{package}.{entry} is not in the doc's row"


_PROJECT_FILE = re.compile(r"`((?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9_-]+\.(?:py|sh))`")
_PACKAGES = ("oa_vm/", "evals/", "waa_client/", "infra/", "tests/", "bench/")


def _project_files() -> list[str]:
    return [p.relative_to(ROOT).as_posix() for top in _PACKAGES
            for p in (ROOT / top).rglob("*") if p.suffix in (".py", ".sh")
            and "__pycache__" not in p.parts]


def test_the_files_the_docs_name_exist() -> None:
    """A doc that names a file of this project names one that is there: a file moved by a
    restructure leaves no stale path behind. A path from the project's top must exist as
    written; in the architecture page, whose tables name files by their tail inside a
    package (``ssh/pool.py``), a tail must end some file's path."""
    files = _project_files()
    stale = []
    for doc in sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]:
        for name in _PROJECT_FILE.findall(doc.read_text(encoding="utf-8")):
            if name.startswith(_PACKAGES):
                missing = not (ROOT / name).is_file()
            elif doc.name == "architecture.md":
                missing = not any(f == name or f.endswith("/" + name) for f in files)
            else:
                continue
            if missing:
                stale.append(f"{doc.name}: {name}")
    assert not stale, stale


_DOTTED = re.compile(r"`((?:oa_vm|evals|waa_client|infra)(?:\.[A-Za-z_]\w*)+)")
_LOGGERS = {"waa_client.ssh.sshtunnel"}
"""Dotted names the docs give that are loggers' names, not modules."""


def test_the_modules_and_names_the_docs_give_resolve() -> None:
    """``evals.results.run_reader.check_readable_folder`` in a doc imports as written."""
    unresolved = []
    for doc in sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]:
        for name in sorted(set(_DOTTED.findall(doc.read_text(encoding="utf-8"))) - _LOGGERS):
            parts = name.split(".")
            for cut in range(len(parts), 0, -1):
                try:
                    found: object = importlib.import_module(".".join(parts[:cut]))
                    break
                except ModuleNotFoundError:
                    continue
            for attribute in parts[cut:]:
                found = getattr(found, attribute, None)
            if found is None:
                unresolved.append(f"{doc.name}: {name}")
    assert not unresolved, unresolved
