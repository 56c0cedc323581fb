"""``openadapt-eval-flow --live``: compiled workflows replayed on a local pool, with caps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra.local import tasks_dir
from tests.support.cli import run_cli

pytestmark = [
    pytest.mark.integration,
    pytest.mark.pool(name="fl", workers=2, cli=True, price_per_hour=0.5),
]


def _bundle(folder: Path, task_id: str) -> None:
    index = json.loads((tasks_dir() / "local_all.json").read_text())
    domain = next(d for d, ids in index.items() if task_id in ids)
    task = json.loads((tasks_dir() / "examples" / domain / f"{task_id}.json").read_text())
    (folder / task_id).mkdir(parents=True)
    (folder / task_id / "workflow.json").write_text(
        json.dumps({"actions": task["reference_solution"]})
    )


def test_live_replays_bundles_and_refuses_missing_ones(
    home: Path, pool: str, tmp_path: Path
) -> None:
    index = json.loads((tasks_dir() / "local_small.json").read_text())
    ids = [t for ids in index.values() for t in ids][:3]
    bundles = tmp_path / "bundles"
    for task_id in ids[:2]:
        _bundle(bundles, task_id)

    refused = run_cli("openadapt-eval-flow", "--live", "--bundles", str(bundles), "--pool", pool,
                      "--task-ids", ",".join(ids), home=home)
    line = refused.assert_one_line_error()
    assert ids[2] in line and ids[0] not in line
    assert not (tmp_path / "results").exists()

    ran = run_cli("openadapt-eval-flow", "--live", "--bundles", str(bundles), "--pool", pool,
                  "--run-name", "flow", "--results-dir", str(tmp_path / "results"), "--json",
                  "--max-cost-usd", "5", home=home, timeout=300)
    assert ran.returncode == 0, ran.stderr
    summary = json.loads(ran.stdout)
    assert summary["attempts"] == 2 and summary["successes"] == 2
    metadata = json.loads((tmp_path / "results" / "flow" / "metadata.json").read_text())
    assert metadata["agent"] == "replay" and metadata["max_cost_usd"] == 5
