"""``--version`` and ``-h`` on the ``oa-vm`` and ``openadapt-evals`` console scripts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from oa_vm.kit.version import package_version
from tests.support.cli import run_cli

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("script", ["oa-vm", "openadapt-evals"])
def test_version_and_short_help(script: str, tmp_path: Path) -> None:
    version = run_cli(script, "--version", home=tmp_path)
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"{script} {package_version()}"
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", package_version())
    short, long = run_cli(script, "-h", home=tmp_path), run_cli(script, "--help", home=tmp_path)
    assert short.returncode == long.returncode == 0
    assert short.stdout == long.stdout and "--version" in long.stdout


@pytest.mark.parametrize(("script", "command"), [("oa-vm", "pool-pause"),
                                                 ("openadapt-evals", "run")])
def test_short_help_on_subcommands(script: str, command: str, tmp_path: Path) -> None:
    short = run_cli(script, command, "-h", home=tmp_path)
    assert short.returncode == 0, short.stderr
    assert short.stdout.startswith(f"Usage: {script} {command}")
    assert short.stdout == run_cli(script, command, "--help", home=tmp_path).stdout
