"""The run page renders from an installed copy of the package: its templates are package data
(``pyproject.toml``), not files found beside the source tree."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.run_folder import RunFolder

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

RENDER = """
import sys
from pathlib import Path
import evals, evals.report.viewer
print(evals.__file__)
Path(sys.argv[2]).write_text(evals.report.viewer.render_run(sys.argv[1]), encoding="utf-8")
"""


def test_an_installed_copy_finds_its_templates(tmp_path: Path) -> None:
    lib, source = tmp_path / "lib", tmp_path / "source"
    # A copy without the checkout's egg-info: setuptools would otherwise take the file list an
    # earlier build wrote there, and find templates that pyproject.toml no longer ships.
    skip = shutil.ignore_patterns("*.egg-info", "__pycache__", ".venv")
    for name in ("infra", "oa_vm", "waa_client", "evals"):
        shutil.copytree(ROOT / name, source / name, ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    # setuptools' build_py copies what an install copies: the packages and their package data
    built = subprocess.run(  # a fixed argv, no shell
        [sys.executable, "-c", "import setuptools; setuptools.setup()", "-q",
         "build_py", "-d", str(lib)],
        cwd=source, capture_output=True, text=True, timeout=300, check=False,
    )
    assert built.returncode == 0, built.stderr
    run = RunFolder(tmp_path, "installed-run")
    run.add_task("t1", domain="notepad", status="success", steps=1, reason="text matches")
    folder = run.finish()
    out = tmp_path / "page.html"
    env = {**os.environ, "PYTHONPATH": str(lib)}  # the copy first, before the source tree
    done = subprocess.run(  # a fixed argv, no shell
        [sys.executable, "-c", RENDER, str(folder), str(out)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).is_relative_to(lib)  # rendered by the installed copy
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert "checker: text matches" in page and 'id="task-t1"' in page
    assert ".card.hero" in page  # the included style sheet
