"""``openadapt-evals tasks`` as a real subprocess, on WAA's real data."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("openadapt-evals")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    if not CLI.is_file():
        pytest.skip(f"console script {CLI.name} not installed in this environment")
    return subprocess.run([str(CLI), "tasks", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False)


def test_test_small_as_json(waa_data: Path) -> None:
    done = run_cli("--source", str(waa_data), "--tasks", "test_small", "--json")
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    assert listing["counts"] == {"chrome": 3, "libreoffice_calc": 3}
    assert len(listing["tasks"]) == 6
    first = listing["tasks"][0]
    assert set(first) == {"task_id", "domain", "infeasible", "instruction"}
    assert first["task_id"] == "2ae9ba84-3a0d-4d4c-8338-3a1478dc5fe3-wos"


def test_table_of_a_domain(waa_data: Path) -> None:
    done = run_cli("--source", str(waa_data), "--tasks", "domain:vlc")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["TASK", "ID", "DOMAIN", "INF", "INSTRUCTION"]
    assert "vlc: 21" in lines
    assert lines[-1] == "total: 21 task(s) in 1 domain(s)"
    assert sum(line.startswith("INF-") and "  yes  " in line for line in lines) == 7


def test_unknown_ids_one_line_exit_2(waa_data: Path) -> None:
    done = run_cli("--source", str(waa_data), "--tasks", "2ae9ba84-nope-WOS,other-nope-WOS")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "2ae9ba84-nope-WOS" in done.stderr and "other-nope-WOS" in done.stderr


def test_malformed_index_one_line_exit_2(tmp_path: Path) -> None:
    (tmp_path / "examples" / "notepad").mkdir(parents=True)
    (tmp_path / "local_all.json").write_text('{"notepad": "not-a-list"}')
    done = run_cli("--source", str(tmp_path))
    assert done.returncode == 2
    assert "local_all.json" in done.stderr and "Traceback" not in done.stderr


def test_no_source_lists_the_bundled_local_suite() -> None:
    done = run_cli()
    assert done.returncode == 0, done.stderr
    assert "bundled local suite" in done.stderr
    assert "--source" in done.stderr and "--pool" in done.stderr  # how to list other tasks
    assert "c499b229-110c-5fc8-9895-f2f879ac1512-WOS" in done.stdout  # a local notepad task


@pytest.mark.pool(name="tasks-cli", cli=True)
def test_pool_catalog_from_its_scoring_server(pool: str) -> None:
    done = run_cli("--pool", pool, "--json")
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    assert listing["tasks"], "the local suite is not empty"
    assert sum(listing["counts"].values()) == len(listing["tasks"])
    first = listing["tasks"][0]["task_id"]
    picked = run_cli("--pool", pool, "--tasks", f"{first},no-such-WOS")
    assert picked.returncode == 2 and "no-such-WOS" in picked.stderr
