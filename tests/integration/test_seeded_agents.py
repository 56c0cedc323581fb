"""Seeded random agents repeat per task and trial, whatever the number of workers: the real
``openadapt-evals run`` CLI over real local worker processes, a one-worker pool against a
three-worker pool (whose workers take tasks in an order nobody controls)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oa_vm import api
from tests.support.cli import run_cli
from tests.support.pools import READY_S

pytestmark = pytest.mark.integration

RANDOM_GUI = "evals.agents.builtin:RandomAgent"


def _pools() -> None:
    api.create_pool(name="one", cloud="local", workers=1)
    api.create_pool(name="three", cloud="local", workers=3)
    api.wait_pool("one", timeout_s=READY_S)
    api.wait_pool("three", timeout_s=READY_S)


def _run(pool: str, name: str, *args: str, home: Path, results: Path
         ) -> dict[tuple[str, int], dict[str, Any]]:
    """One run on ``pool``; its final records by (task ID, trial)."""
    done = run_cli("openadapt-evals", "run", "--pool", pool, "--run-name", name,
                   "--results-dir", str(results), *args, home=home, timeout=600.0)
    assert done.returncode == 0, done.stderr
    records = [json.loads(p.read_text(encoding="utf-8"))
               for p in (results / name / "tasks").rglob("execution.json")]
    return {(r["task_id"], r.get("trial", 1)): r for r in records}  # trial 1: no key


def _workers(records: dict[tuple[str, int], dict[str, Any]]) -> set[str]:
    return {r["worker"] for r in records.values()}


def test_seeded_agents_draw_the_same_per_task_and_trial_on_one_worker_or_three(
        home: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    _pools()

    # the `random` agent: which task's trial is solved depends on the seed alone
    chance = ("--agent", "random", "--agent-arg", "p=0.5", "--agent-arg", "seed=7",
              "--tasks", "all", "--trials", "2")
    alone = _run("one", "chance-1", *chance, home=home, results=results)
    shared = _run("three", "chance-3", *chance, home=home, results=results)
    assert len(_workers(shared)) > 1  # the three workers did share the tasks
    solved = {key: r["status"] for key, r in alone.items()}
    assert solved == {key: r["status"] for key, r in shared.items()}
    assert set(solved.values()) == {"success", "failure"}  # p=0.5 draws both
    # the two trials of a task draw apart (some differ), not one draw per task
    assert any(solved[(task, 1)] != solved[(task, 2)] for task, _ in solved)

    # RandomAgent (random GUI actions): the same actions per task, on one worker or three
    gui = ("--agent", RANDOM_GUI, "--agent-arg", "seed=7", "--agent-arg", "max_actions=3",
           "--tasks", "12")
    alone = _run("one", "gui-1", *gui, home=home, results=results)
    shared = _run("three", "gui-3", *gui, home=home, results=results)
    assert len(_workers(shared)) > 1
    acted = {key: [s["action"] for s in r["steps"]] for key, r in alone.items()}
    assert acted == {key: [s["action"] for s in r["steps"]] for key, r in shared.items()}
    assert len(acted) == 12 and len({json.dumps(a) for a in acted.values()}) > 1
