"""``openadapt-evals audit-verifier`` as a user runs it: real CLI, real local pool, real checker.

The whole local suite must audit clean (exit 0, no false accept); a copy of the suite whose
status.txt checker is weakened back to "includes 'final', excludes 'draft'" must make the audit
exit 1, naming the false accept.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from evals.verifier_audit.local import CLASSES, OPERATORS
from tests.support.cli import run_cli
from tests.support.pools import READY_S

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
LOCAL_TASKS = ROOT / "infra" / "local" / "tasks"
STATUS_TASK = "9df67e70-b315-56d9-a0fb-b467fa4ccc62-WOS"


def _kill_leftovers(home: Path) -> None:
    """Kill worker processes still running from this test's home (cleanup failed part-way)."""
    leftovers = [p for p in psutil.process_iter(["pid", "cmdline"])
                 if any(str(home) in part for part in p.info["cmdline"] or [])]
    for process in leftovers:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    psutil.wait_procs(leftovers, timeout=10)
    assert not leftovers, f"a pool was left behind: {[p.pid for p in leftovers]}"


def _table(stdout: str) -> dict[str, list[int]]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["operator", "killed"])
    rows: dict[str, list[int]] = {}
    for line in lines[start + 1:]:
        parts = line.split()
        if not parts or parts[0] not in (*OPERATORS, "all"):
            break
        rows[parts[0]] = [int(x) for x in parts[1:]]
    return rows


@pytest.mark.long
def test_the_local_suite_audits_clean(oa_home: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    try:
        done = run_cli("openadapt-evals", "audit-verifier", "--benchmark", "local",
                       "--out", str(report), home=oa_home, timeout=900)
    finally:
        _kill_leftovers(oa_home)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "FALSE ACCEPT" not in done.stdout
    table = _table(done.stdout)
    assert set(table) == {*OPERATORS, "all"}
    assert table["all"][CLASSES.index("false accept")] == 0
    assert table["all"][CLASSES.index("killed")] > 50  # the operators do find wrong runs
    assert table["all"][CLASSES.index("error")] == 0
    assert table["all"][CLASSES.index("unconfirmed")] == 0
    document = json.loads(report.read_text(encoding="utf-8"))
    assert document["false_accepts"] == 0
    assert set(document["references"].values()) == {"accepted"}
    per_task_lines = [line for line in done.stdout.splitlines() if "-WOS  " in line]
    assert len(per_task_lines) == len(document["rows"])
    assert "creating local pool" in done.stderr and "removing local pool" in done.stderr


@pytest.fixture
def weakened_pool(oa_home: Path, tmp_path: Path) -> Iterator[str]:
    """A local pool serving the suite with the status.txt checker weakened."""
    from oa_vm import api

    tasks = tmp_path / "tasks"
    shutil.copytree(LOCAL_TASKS, tasks)
    path = next(tasks.glob(f"examples/*/{STATUS_TASK}.json"))
    task = json.loads(path.read_text(encoding="utf-8"))
    task["evaluator"] = {
        "func": "check_include_exclude",
        "result": {"type": "vm_file_text", "path": "C:\\Users\\Docker\\Desktop\\status.txt"},
        "expected": {"type": "rule", "rules": {"include": ["final"], "exclude": ["draft"]}},
    }
    path.write_text(json.dumps(task), encoding="utf-8")
    name = "audit-weak"
    try:
        api.create_pool(name=name, cloud="local", workers=1, ttl_hours=1.0,
                        tasks_dir=str(tasks))
        api.wait_pool(name, timeout_s=READY_S)
        yield name
    finally:
        with contextlib.suppress(Exception):
            api.cleanup_pool(name)
        _kill_leftovers(oa_home)


def test_a_weakened_checker_makes_the_audit_fail(weakened_pool: str, oa_home: Path) -> None:
    done = run_cli("openadapt-evals", "audit-verifier", "--pool", weakened_pool,
                   "--tasks", STATUS_TASK, home=oa_home, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    accepted = [line for line in done.stdout.splitlines() if "FALSE ACCEPT" in line]
    assert accepted and all(STATUS_TASK in line for line in accepted)
    assert any("wrong-value" in line and '"final"' in line for line in accepted)
    assert "False accepts: " in done.stdout and "False accepts: 0" not in done.stdout


def test_an_unknown_benchmark_is_one_clear_line(oa_home: Path) -> None:
    done = run_cli("openadapt-evals", "audit-verifier", "--benchmark", "waa", home=oa_home)
    line = done.assert_one_line_error()
    assert "--benchmark 'waa'" in line and "local" in line
