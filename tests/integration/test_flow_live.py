"""``openadapt-eval-flow --live``: compiled workflows replayed on a local pool, with caps."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from infra.local import tasks_dir
from tests.support.cli import run_cli

pytestmark = pytest.mark.integration


def _bundle(folder: Path, task_id: str) -> None:
    index = json.loads((tasks_dir() / "local_all.json").read_text())
    domain = next(d for d, ids in index.items() if task_id in ids)
    task = json.loads((tasks_dir() / "examples" / domain / f"{task_id}.json").read_text())
    (folder / task_id).mkdir(parents=True)
    (folder / task_id / "workflow.json").write_text(
        json.dumps({"actions": task["reference_solution"]})
    )


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "home"
    assert run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "2", "--name", "fl",
                   "--price-per-hour", "0.5", "-y", home=home).returncode == 0
    assert run_cli("oa-vm", "pool-wait", "--name", "fl", "--timeout", "60s",
                   home=home).returncode == 0
    yield home
    run_cli("oa-vm", "pool-cleanup", "--name", "fl", "-y", home=home)


def test_live_replays_bundles_and_refuses_missing_ones(pool: Path, tmp_path: Path) -> None:
    index = json.loads((tasks_dir() / "local_small.json").read_text())
    ids = [t for ids in index.values() for t in ids][:3]
    bundles = tmp_path / "bundles"
    for task_id in ids[:2]:
        _bundle(bundles, task_id)

    refused = run_cli("openadapt-eval-flow", "--live", "--bundles", str(bundles), "--pool", "fl",
                      "--task-ids", ",".join(ids), home=pool)
    line = refused.assert_one_line_error()
    assert ids[2] in line and ids[0] not in line
    assert not (tmp_path / "results").exists()

    ran = run_cli("openadapt-eval-flow", "--live", "--bundles", str(bundles), "--pool", "fl",
                  "--run-name", "flow", "--results-dir", str(tmp_path / "results"), "--json",
                  "--max-cost-usd", "5", home=pool, timeout=300)
    assert ran.returncode == 0, ran.stderr
    summary = json.loads(ran.stdout)
    assert summary["attempts"] == 2 and summary["successes"] == 2
    metadata = json.loads((tmp_path / "results" / "flow" / "metadata.json").read_text())
    assert metadata["agent"] == "replay" and metadata["max_cost_usd"] == 5
