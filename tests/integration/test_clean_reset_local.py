"""Clean resets on the local pool: real worker processes, the real CLI, test-only tasks.

Task A turns dark mode on (in its setup) and task B checks that the whole Settings page is at
Windows' defaults without setting dark mode itself, so B's score depends on whether A's change
survived. With ``--reset clean`` B scores the same whether or not A ran before it on that worker;
with ``--reset stock`` (WAA's close windows and clear files) it does not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oa_vm import api
from tests.support.cli import Result, run_cli
from tests.support.pools import READY_S

pytestmark = pytest.mark.integration

DEFAULTS = {"night_light": False, "night_light_start": "09:00 PM", "night_light_end": "07:00 AM",
            "notifications": True, "do_not_disturb": False, "dark_mode": False,
            "time_zone": "UTC"}
TASK_A = "iso-dark-mode-on"
TASK_B = "iso-settings-at-defaults"


def _task(task_id: str, setup: list[dict[str, Any]], expected: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": task_id, "snapshot": "settings", "instruction": f"({task_id}) say DONE",
        "source": "test", "config": setup, "related_apps": ["settings"],
        "evaluator": {"func": "exact_match", "result": {"type": "settings"},
                      "expected": {"type": "rule", "rules": {"expected": expected}}},
    }


@pytest.fixture
def tasks_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "iso-tasks"
    (folder / "examples" / "settings").mkdir(parents=True)
    dark = {"type": "command", "parameters": {"command": "set dark_mode on"}}
    tasks = [_task(TASK_A, [dark], {**DEFAULTS, "dark_mode": True}),
             _task(TASK_B, [], DEFAULTS)]
    for task in tasks:
        (folder / "examples" / "settings" / f"{task['id']}.json").write_text(json.dumps(task))
    (folder / "iso.json").write_text(json.dumps({"settings": [TASK_A, TASK_B]}))
    return folder


def _pool(name: str, tasks_dir: Path, **faults: str) -> str:
    api.create_pool(name=name, cloud="local", workers=1, tasks_dir=str(tasks_dir),
                    faults=faults or None)
    api.wait_pool(name, timeout_s=READY_S)
    return name


def _run(home: Path, results: Path, pool: str, task: str, run_name: str, reset: str) -> Result:
    return run_cli("openadapt-evals", "run", "--pool", pool, "--tasks", task, "--agent", "noop",
                   "--run-name", run_name, "--reset", reset, "--results-dir", str(results),
                   home=home, timeout=300)


def _record(results: Path, run_name: str, task: str) -> dict[str, Any]:
    path = results / run_name / "tasks" / task / "execution.json"
    record: dict[str, Any] = json.loads(path.read_text())
    return record


def _score_of_b(home: Path, results: Path, pool: str, reset: str, *, after_a: bool) -> float:
    tag = f"{reset}-{'after' if after_a else 'alone'}"
    if after_a:
        done = _run(home, results, pool, TASK_A, f"{tag}-a", reset)
        assert done.returncode == 0, done.stderr
        assert _record(results, f"{tag}-a", TASK_A)["score"] == 1.0  # A did change the setting
    done = _run(home, results, pool, TASK_B, f"{tag}-b", reset)
    assert done.returncode == 0, done.stderr + done.stdout
    record = _record(results, f"{tag}-b", TASK_B)
    assert record["status"] in ("success", "failure"), record
    assert record["reset"] == reset
    assert isinstance(record["reset_s"], float)
    return float(record["score"])


@pytest.mark.parametrize("reset", ["clean", "stock"])
def test_b_depends_on_a_only_without_clean_resets(
    home: Path, tmp_path: Path, tasks_dir: Path, reset: str
) -> None:
    results = tmp_path / "results"
    alone = _score_of_b(home, results, _pool("fresh", tasks_dir), reset, after_a=False)
    after = _score_of_b(home, results, _pool("used", tasks_dir), reset, after_a=True)
    assert alone == 1.0
    if reset == "clean":
        assert after == alone
        fingerprint = _record(results, "clean-after-b", TASK_B)["fingerprint"]
        assert fingerprint["ok"] is True and fingerprint["marker_gone"] is True
        # the token of the snapshot taken in the run of A, read back from the guest in B's run
        first = _record(results, "clean-after-a", TASK_A)["fingerprint"]
        assert fingerprint["token"] == first["token"] == fingerprint["expected"]
    else:
        assert after != alone  # A's dark mode leaked into B
        assert _record(results, "stock-after-b", TASK_B)["fingerprint"] is None


def test_clean_on_a_worker_that_cannot_restore_fails_before_any_task(
    home: Path, tmp_path: Path, tasks_dir: Path
) -> None:
    results = tmp_path / "results"
    pool = _pool("old", tasks_dir, **{"no-snapshots": "1"})
    done = _run(home, results, pool, TASK_B, "strict", "clean")
    line = done.assert_one_line_error()
    assert "--reset clean" in line and "cannot restore" in line and "clean-or-stock" in line
    assert not (results / "strict").exists()  # nothing was created, no task ran

    done = _run(home, results, pool, TASK_B, "fallback", "clean-or-stock")
    assert done.returncode == 0, done.stderr
    assert _record(results, "fallback", TASK_B)["reset"] == "stock"
    metadata = json.loads((results / "fallback" / "metadata.json").read_text())
    assert metadata["reset"]["stock"] == ["worker-0"]
    assert "no snapshot endpoints" in metadata["reset"]["fallbacks"]["worker-0"]
    said = [line for line in done.stderr.splitlines() if "stock way" in line]
    assert len(said) == 1 and "worker-0" in said[0] and "no snapshot endpoints" in said[0], \
        done.stderr
    summary = json.loads((results / "fallback" / "summary.json").read_text())
    assert summary["resets"]["counts"] == {"stock": 1}


def test_summary_and_page_show_resets_and_a_disagreeing_fingerprint(
    home: Path, tmp_path: Path, tasks_dir: Path
) -> None:
    results = tmp_path / "results"
    pool = _pool("p", tasks_dir)
    done = _run(home, results, pool, f"{TASK_A},{TASK_B}", "both", "clean")
    assert done.returncode == 0, done.stderr
    assert "Resets: clean 2" in done.stdout
    assert "Fingerprints: all 2 clean resets showed their worker's snapshot" in done.stdout
    # A record whose guest did not show the snapshot's token: the summary must say so.
    path = results / "both" / "tasks" / TASK_B / "execution.json"
    record = json.loads(path.read_text())
    record["fingerprint"] = {**record["fingerprint"], "token": "other", "ok": False}
    path.write_text(json.dumps(record))
    shown = run_cli("openadapt-evals", "view", "both", "--results-dir", str(results), home=home)
    assert shown.returncode == 0, shown.stderr
    page = Path(shown.stdout.strip().splitlines()[-1]).read_text()
    assert "<h2>Resets</h2>" in page and "fingerprints disagree" in page
    assert "fingerprint NOT clean" in page
    from evals.run import metrics

    text = metrics.format_summary(metrics.compute_summary(results / "both"))
    assert f"WARNING: fingerprints disagree: 1 clean reset(s) did not show the clean machine " \
           f"({TASK_B})" in text
