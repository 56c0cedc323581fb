"""Inputs that can be checked before anything exists are refused before anything exists: one
line, exit 2, no pool, no process, no folder (on a cloud each would be minutes and money)."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from tests.support.cli import run_cli

pytestmark = pytest.mark.integration


def _worker_processes(home: Path) -> list[int]:
    return [p.pid for p in psutil.process_iter(["cmdline"])
            if any(str(home) in part for part in p.info["cmdline"] or [])]


def test_audit_verifier_refuses_an_unknown_id_before_making_a_pool(oa_home: Path) -> None:
    done = run_cli("openadapt-evals", "audit-verifier", "--benchmark", "local", "--tasks",
                   "nope", home=oa_home)
    assert "unknown task(s) nope" in done.assert_one_line_error()
    assert done.returncode == 2
    assert not (oa_home / "pools").exists() or not any((oa_home / "pools").iterdir())
    assert _worker_processes(oa_home) == []


def test_pool_create_of_an_existing_name_refuses_before_the_plan(oa_home: Path) -> None:
    first = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "1", "--pool", "dup",
                    "-y", home=oa_home)
    assert first.returncode == 0, first.stderr
    try:
        again = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "1", "--pool",
                        "dup", "-y", home=oa_home)
        line = again.assert_one_line_error()
        assert "already exists" in line and "--pool" in line and "--name" not in line
        assert again.stdout == ""  # no plan, no expiry printed
    finally:
        run_cli("oa-vm", "pool-cleanup", "--pool", "dup", "-y", home=oa_home)
