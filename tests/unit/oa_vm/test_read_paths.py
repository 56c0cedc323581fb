"""The one rule of a path given to read (:func:`oa_vm.kit.validate.read_problem`) and of the
results folder the run readers take (:func:`oa_vm.kit.results_dir.results_read_problem`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from oa_vm.kit.results_dir import RESULTS_ENV, results_read_problem
from oa_vm.kit.validate import read_problem

FIX = "give the thing"


@pytest.fixture
def paths(tmp_path: Path) -> dict[str, Path]:
    folder, afile, fifo = tmp_path / "folder", tmp_path / "afile", tmp_path / "fifo"
    folder.mkdir()
    afile.write_text("x\n")
    os.mkfifo(fifo)
    return {"missing": tmp_path / "nope", "under a file": afile / "x", "folder": folder,
            "file": afile, "fifo": fifo}


@pytest.mark.parametrize(
    ("case", "kind", "said"),
    [
        ("missing", "folder", "does not exist"),
        ("missing", "file", "does not exist"),
        ("missing", "file or folder", "does not exist"),
        ("under a file", "folder", "does not exist"),
        ("file", "folder", "is a file, not a folder"),
        ("folder", "file", "is a folder, not a file"),
        ("fifo", "file", "is not a regular file (a device or a pipe)"),
        ("fifo", "file or folder", "is not a regular file (a device or a pipe)"),
        ("fifo", "folder", "is a file, not a folder"),
    ],
)
def test_a_path_that_cannot_be_read_is_one_sentence_naming_it_and_the_fix(
    paths: dict[str, Path], case: str, kind: str, said: str
) -> None:
    problem = read_problem("--opt", paths[case], kind=kind, fix=FIX)  # type: ignore[arg-type]
    assert problem == f"--opt {paths[case]} {said}; {FIX}"


def test_a_path_the_system_refuses_says_why(tmp_path: Path) -> None:
    """What root cannot open either (a chmod 000 does not stop it): a symlink loop here."""
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    problem = read_problem("--opt", loop, kind="folder", fix=FIX)
    assert problem == f"--opt {loop} cannot be read (Too many levels of symbolic links); {FIX}"


@pytest.mark.parametrize(("case", "kind"), [("folder", "folder"), ("file", "file"),
                                            ("folder", "file or folder"),
                                            ("file", "file or folder")])
def test_what_is_there_of_the_kind_asked_for_passes(
    paths: dict[str, Path], case: str, kind: str
) -> None:
    assert read_problem("--opt", paths[case], kind=kind, fix=FIX) is None  # type: ignore[arg-type]


def test_a_named_results_folder_must_exist_the_configured_one_may_not_yet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(RESULTS_ENV, raising=False)
    assert results_read_problem(None) is None  # ./benchmark_results not made yet: no runs
    assert results_read_problem(tmp_path) is None
    missing = tmp_path / "typo"
    assert results_read_problem(missing) == (
        f"--results-dir {missing} does not exist; give --results-dir the folder holding the "
        "run folders")
    monkeypatch.setenv(RESULTS_ENV, str(missing))
    assert results_read_problem(None) is None  # where runs go, none made yet
    (tmp_path / "typo").write_text("x")
    assert results_read_problem(None) == (
        f"${RESULTS_ENV} {missing} is a file, not a folder; point ${RESULTS_ENV} at the folder "
        "holding the run folders")
    monkeypatch.delenv(RESULTS_ENV)
    (tmp_path / "benchmark_results").write_text("x")
    assert "benchmark_results is a file, not a folder" in str(results_read_problem(None))
