"""The local checker reads nothing outside the worker's sandbox, keeps a cache per task, and
refuses the wrong runs a new user found paid (the bundled tasks' checkers, run for real)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests

from infra.local import commands, setup_steps
from infra.local.checker import evaluate_task
from infra.local.desktop import Desktop
from infra.scoring_rules import Unscorable
from tests.support.worker_proc import running_worker

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "infra" / "local" / "tasks" / "examples"
INSIDE = "C:\\Users\\Docker\\Documents\\a.txt"


@pytest.fixture
def host_secret(tmp_path: Path) -> Path:
    """A host file outside the sandbox holding the same text as the guest file."""
    secret = tmp_path / "host-secret.txt"
    secret.write_text("hello", encoding="utf-8")
    return secret


def _compare_with(path: str) -> dict[str, Any]:
    return {"id": "t", "evaluator": {
        "func": "compare_text_file", "result": {"type": "vm_file", "path": INSIDE},
        "expected": {"type": "rule", "rules": path}}}


def test_a_rule_path_outside_the_sandbox_is_never_read(desktop: Desktop,
                                                      host_secret: Path) -> None:
    commands.run(desktop, f'write "{INSIDE}" "hello"')
    with pytest.raises(Unscorable, match="outside the worker's sandbox"):
        evaluate_task(desktop, _compare_with(str(host_secret)), "DONE")
    exists = {"id": "t", "evaluator": {"func": "file_exists",
                                       "result": {"type": "rule", "rules": str(host_secret)}}}
    with pytest.raises(Unscorable, match="outside the worker's sandbox"):
        evaluate_task(desktop, exists, "DONE")


def test_a_path_climbing_out_of_the_drive_is_refused(desktop: Desktop, tmp_path: Path) -> None:
    commands.run(desktop, f'write "{INSIDE}" "hello"')
    climbing = str(desktop.sandbox.drive / ".." / ".." / "host-secret.txt")
    (tmp_path / "host-secret.txt").write_text("hello", encoding="utf-8")
    with pytest.raises(Unscorable, match="outside the worker's sandbox"):
        evaluate_task(desktop, _compare_with(climbing), "DONE")


def test_the_local_scoring_server_answers_422_for_a_host_path(tmp_path: Path,
                                                             host_secret: Path) -> None:
    """Issue: the local scoring server read host files through a rule path."""
    with running_worker(tmp_path / "w") as worker:
        done = requests.post(f"{worker.waa_url}/execute",
                             json={"command": f'write "{INSIDE}" "hello"', "shell": False},
                             timeout=30)
        assert done.status_code == 200, done.text
        answer = requests.post(f"{worker.scoring_url}/evaluate",
                               json={"task": _compare_with(str(host_secret)),
                                     "last_action": "DONE"}, timeout=30)
    assert answer.status_code == 422, answer.text
    assert "outside the worker's sandbox" in answer.json()["message"]


def test_each_task_has_its_own_cache_folder(desktop: Desktop) -> None:
    for task_id in ("task-a", "task-b"):
        task = {"id": task_id, "evaluator": {
            "func": "compare_text_file", "result": {"type": "vm_file", "path": INSIDE},
            "expected": {"type": "inline_file", "content": f"gold of {task_id}"}}}
        evaluate_task(desktop, task, "DONE")
    cache = desktop.sandbox.drive.parent / "cache"
    assert sorted(p.name for p in cache.iterdir()) == ["task-a", "task-b"]
    assert [p.read_text() for p in (cache / "task-a").iterdir()] == ["gold of task-a"]


def _bundled(prefix: str) -> dict[str, Any]:
    path = next(EXAMPLES.glob(f"*/{prefix}*.json"))
    task: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return task


def _play(desktop: Desktop, task: dict[str, Any], actions: list[str]) -> float:
    for result in setup_steps.run_steps(desktop, task["config"]):
        assert result.ok, result.error
    for action in actions:
        commands.run(desktop, action)
    return evaluate_task(desktop, task, "DONE").score


DESKTOP = "C:\\Users\\Docker\\Desktop"


@pytest.mark.parametrize(
    ("prefix", "wrong_run"),
    [
        # rename: delete the file, then write a new one with garbage under the new name
        ("190a2655", [f'delete "{DESKTOP}\\report_draft.txt"',
                      f'write "{DESKTOP}\\report_final.txt" "garbage"']),
        # copy the photo: a text file named photo.png instead
        ("330dc107", [f'write "{DESKTOP}\\photo.png" "not a picture"']),
        # "Bake" 3 h timer: a wrong timer called Bake plus a paused 3 h one
        ("d885a6b3", ['timer add 2h "Bake"', 'timer add 3h "Other"', 'timer pause "Other"']),
        # half an hour: a wrong timer plus a paused 30 min one
        ("f05e6509", ["timer add 20m", 'timer add 30m "later"', 'timer pause "later"']),
        # status.txt: "final" with more after it still includes "final" and not "draft"
        ("9df67e70", [f'write "{DESKTOP}\\status.txt" "final answer: unknown"']),
    ],
)
def test_wrong_runs_a_user_found_no_longer_pass(desktop: Desktop, prefix: str,
                                                wrong_run: list[str]) -> None:
    """(The reference solutions still pass: tests/integration/test_audit_verifier.py.)"""
    task = _bundled(prefix)
    assert _play(desktop, task, wrong_run) == 0.0
