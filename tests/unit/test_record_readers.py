"""A run's record files are read and written in their record modules only: a scan of the code
for their names. Everything else gets typed records from those modules (or, within a run, from
the runner that holds them), so no second reader drifts from the first, and no record is read
back from disk to make what the run already had."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECORD_FILES = ("execution.json", "summary.json", "metadata.json")
RECORD_MODULES = {
    "evals/results/records.py",  # the writers (RunFolder) and the files' names
    "evals/results/run_reader.py",  # the reader of a run folder
    # oa_vm sits below evals and may not import it: its smoke runs a task through the evals
    # command (a child process) and reads that task's record as a user's script would, and
    # its doctor counts the run folders of the results folder
    "oa_vm/cli/smoke_run.py",
    "oa_vm/cli/doctor.py",
}
PACKAGES = ("evals", "oa_vm")


def _docstrings(tree: ast.AST) -> set[int]:
    """The ``id`` of every docstring constant (prose naming a file reads nothing)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def record_paths(source: str) -> list[tuple[int, str]]:
    """Where ``source`` spells a record file's path: a string without spaces (a path or a glob,
    not a sentence) that ends with one of :data:`RECORD_FILES`, outside docstrings."""
    tree = ast.parse(source)
    prose = _docstrings(tree)
    return [
        (node.lineno, node.value) for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose
        and not any(c.isspace() for c in node.value) and node.value.endswith(RECORD_FILES)
    ]


def test_the_scan_finds_a_raw_read() -> None:
    raw = ('import json\n'
           'def f(d):\n    return json.loads((d / "tasks" / "execution.json").read_text())\n')
    globbed = 'def g(d):\n    return list(d.glob("*/trial-*/summary.json"))\n'
    said = ('def h(d):\n    """Reads ``execution.json``."""\n'
            '    return f"see {d}/execution.json in the run"\n')
    assert record_paths(raw) == [(3, "execution.json")]
    assert record_paths(globbed) == [(2, "*/trial-*/summary.json")]
    assert record_paths(said) == []


def test_record_files_are_read_only_by_their_record_modules() -> None:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if name in RECORD_MODULES:
                continue
            found += [f"{name}:{line}: {text!r}"
                      for line, text in record_paths(path.read_text(encoding="utf-8"))]
    assert not found, ("record files named outside their record modules (read them through "
                       "evals.results.run_reader):\n" + "\n".join(found))


FIXTURE = ROOT / "tests" / "fixtures" / "run_folders" / "two-pools"


def _keys(typed: type) -> set[str]:
    return set(typed.__required_keys__) | set(typed.__optional_keys__)


def test_metadata_and_summary_travel_as_their_typed_records(tmp_path: Path) -> None:
    """Their one writer takes, and their one reader (or maker) gives, the typed record, so mypy
    checks every key a consumer reads; the documents hold no key the records do not declare."""
    import shutil
    from typing import get_type_hints

    from evals.results.records import Resets, RunFolder, RunMetadata, Summary
    from evals.results.run_reader import METADATA_SCHEMA, read_metadata, read_started
    from evals.run.metrics import compute_summary, summarize
    from evals.run.reset import reset_summary

    assert get_type_hints(RunFolder.write_metadata)["data"] is RunMetadata
    assert get_type_hints(RunFolder.update_metadata)["return"] is RunMetadata
    assert get_type_hints(read_metadata)["return"] is RunMetadata
    assert get_type_hints(read_started)["return"] == RunMetadata | None
    assert get_type_hints(RunFolder.write_summary)["summary"] is Summary
    assert get_type_hints(summarize)["return"] is Summary
    assert get_type_hints(summarize)["metadata"] is RunMetadata
    assert get_type_hints(compute_summary)["return"] is Summary
    assert get_type_hints(reset_summary)["return"] is get_type_hints(Summary)["resets"] is Resets
    assert not hasattr(RunFolder, "read_metadata")  # no second, lenient reader
    assert set(METADATA_SCHEMA) == _keys(RunMetadata)  # the schema is the record's types
    run = tmp_path / FIXTURE.name  # a run folder of the previous release
    shutil.copytree(FIXTURE, run)
    assert set(read_metadata(run)) <= _keys(RunMetadata)
    summary = compute_summary(run)
    assert set(Summary.__required_keys__) <= set(summary) <= _keys(Summary)
