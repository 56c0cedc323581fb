"""The public Python API against real simulated worker processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path

import psutil
import pytest

from evals import (
    BenchmarkAction,
    BenchmarkAgent,
    BenchmarkObservation,
    BenchmarkResult,
    BenchmarkTask,
    WAALiveAdapter,
    WAALiveConfig,
    WAASimulatedAdapter,
    compute_metrics,
    evaluate_agent_on_benchmark,
)
from evals.agents.oracle import OracleAgent
from evals.report.viewer import render_run
from evals.run.metrics import compute_summary
from oa_vm.model import state
from tests.support.worker_proc import running_worker
from waa_client.errors import SyntheticTaskError, UnknownTaskError

pytestmark = pytest.mark.integration

PROJECT_ROOT = Path(__file__).resolve().parents[2]

README_SNIPPET = textwrap.dedent("""\
    from evals import BenchmarkAgent, BenchmarkAction, WAASimulatedAdapter
    from evals import evaluate_agent_on_benchmark, compute_metrics

    class MyAgent(BenchmarkAgent):
        def act(self, observation, task, history=None):
            return BenchmarkAction(type="done")

    results = evaluate_agent_on_benchmark(MyAgent(), WAASimulatedAdapter(num_tasks=5))
    print(compute_metrics(results)["success_rate"])
""")


def _processes_under(path: Path) -> list[psutil.Process]:
    """Live processes whose command line mentions ``path`` (the pool's worker folders)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if any(str(path) in part for part in proc.info["cmdline"] or []):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def test_reference_snippet_prints_zero_and_cleans_up(tmp_path: Path) -> None:
    home = tmp_path / "oa-home"
    script = tmp_path / "snippet.py"
    script.write_text(README_SNIPPET, encoding="utf-8")
    env = {**os.environ, "OA_VM_HOME": str(home)}

    proc = subprocess.run(  # a fixed argv, no shell
        [sys.executable, str(script)], capture_output=True, text=True, timeout=240,
        env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, check=False,
    )

    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "0.0\n"
    # The adapter removed its pool at exit: no record, no worker process left running.
    assert list((home / "pools").glob("*/pool.json")) == []
    removed = list((home / "removed").glob("mock-*.json")) if (home / "removed").is_dir() else []
    assert len(removed) == 1, "exactly one mock pool was created and removed"
    assert _processes_under(home) == []


class _FailOnSecondTask(BenchmarkAgent):
    """Oracle on every task but the second, where it raises (an agent error)."""

    sees_answers = True  # it plays the reference solutions, so it opts in as the oracle does

    def __init__(self) -> None:
        self.oracle = OracleAgent()
        self.tasks_seen = 0

    def reset(self, task: BenchmarkTask) -> None:
        self.tasks_seen += 1
        self.oracle.reset(task)

    def act(
        self,
        observation: BenchmarkObservation,
        task: BenchmarkTask,
        history: Sequence[BenchmarkAction] | None = None,
    ) -> BenchmarkAction:
        if self.tasks_seen == 2:
            raise RuntimeError("model endpoint said no")
        return self.oracle.act(observation, task, history)


def test_mock_adapter_oracle_and_agent_error(oa_home: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "results" / "api-run"
    with WAASimulatedAdapter(num_tasks=3) as adapter:
        seen: list[BenchmarkResult] = []
        results = evaluate_agent_on_benchmark(
            _FailOnSecondTask(), adapter, max_steps=10, run_dir=run_dir, on_result=seen.append
        )
        pool = adapter.pool_name
        assert pool is not None and state.exists(pool)
        ids = adapter.catalog().task_ids()[:3]

    assert not state.exists(pool), "leaving the with block removes the pool"
    assert [r.task_id for r in results] == ids
    assert seen == results
    assert [r.status for r in results] == ["success", "error", "success"]
    second = results[1]
    assert (second.success, second.score, second.error_type) == (False, 0.0, "agent")
    assert "model endpoint said no" in (second.error or "")
    assert "RuntimeError: model endpoint said no" in (second.agent_traceback or "")
    assert results[0].agent_traceback is None
    assert all(r.domain for r in results)
    assert results[0].num_steps >= 1 and results[0].num_steps == len(results[0].steps)
    assert all(isinstance(a, BenchmarkAction) for _, a in results[0].steps)
    assert results[0].execution is not None
    assert results[0].execution.worker == "worker-0"

    metrics = compute_metrics(results)
    # the agent's own error counts as a failure (2 of 3), and is listed by type
    assert metrics["success_rate"] == pytest.approx(2 / 3)
    assert metrics["error_count"] == 1
    assert metrics["by_error_type"] == {"agent": 1}

    # The run folder is the same format as a sweep's: the summary and the page read it.
    summary = compute_summary(run_dir)
    assert (summary["successes"], summary["errors"]) == (2, 1)
    assert summary["workers"] == {"worker-0": {"tasks": 3, "errors": 1, "quarantined": False}}
    assert json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))["errors"] == 1
    assert json.loads((run_dir / "metadata.json").read_text(encoding="utf-8"))["status"] == (
        "finished")
    assert (run_dir / "tasks" / ids[0] / "step_000.png").is_file()
    assert ids[1] in render_run(run_dir)
    recorded = json.loads((run_dir / "tasks" / ids[1] / "execution.json").read_text("utf-8"))
    assert recorded["agent_traceback"] == second.agent_traceback


def test_mock_adapter_rejects_unknown_ids_before_running(oa_home: Path) -> None:
    adapter = WAASimulatedAdapter()
    try:
        with pytest.raises(UnknownTaskError) as info:
            evaluate_agent_on_benchmark(OracleAgent(), adapter, ["nope-1", "nope-2"])
        assert info.value.task_ids == ["nope-1", "nope-2"]
    finally:
        adapter.close()
        adapter.close()  # idempotent
    assert state.list_names() == []


def test_live_adapter_on_one_worker_by_url(tmp_path: Path) -> None:
    with running_worker(tmp_path) as worker:
        config = WAALiveConfig(server_url=worker.waa_url, evaluate_url=worker.scoring_url,
                               step_pause_s=0.0, read_timeout=20.0)
        with WAALiveAdapter(config) as adapter:
            ids = adapter.catalog().task_ids()[:2]
            results = evaluate_agent_on_benchmark(OracleAgent(), adapter, ids)
            with pytest.raises(SyntheticTaskError):
                evaluate_agent_on_benchmark(OracleAgent(), adapter, ["notepad_1"])

    assert [r.task_id for r in results] == ids
    assert [r.status for r in results] == ["success", "success"]
    assert all(r.score == 1.0 and r.reason for r in results)


def test_adapter_task_methods_as_the_reference_uses_them(tmp_path: Path) -> None:
    """list_tasks(domain), load_task, reset, step, evaluate: a task played by hand."""
    with running_worker(tmp_path) as worker:
        config = WAALiveConfig(server_url=worker.waa_url, evaluate_url=worker.scoring_url,
                               action_delay=0.0, timeout=20.0)
        with WAALiveAdapter(config) as adapter:
            # as the reference's live adapter: a live worker's tasks are named, never listed
            # (listed, evaluate_agent_on_benchmark without task_ids ran all 154, billed)
            assert adapter.list_tasks() == [] and adapter.list_tasks(domain="clock") == []
            assert evaluate_agent_on_benchmark(OracleAgent(), adapter) == []
            with pytest.raises(KeyError):
                adapter.load_task("nope-WOS")
            task = adapter.load_task("cd42b1b1-5323-5028-b63e-ec1cbc9d9f2a-WOS")  # Tokyo clock
            assert "Tokyo" in task.instruction
            with pytest.raises(RuntimeError, match="reset"):
                adapter.step(BenchmarkAction(type="done"))
            obs = adapter.reset(task)
            assert obs.screenshot and obs.window_title == "Clock" and obs.step == 0
            assert adapter.evaluate(task).success is False  # nothing done yet
            obs = adapter.reset(task)
            obs, done, info = adapter.step(
                BenchmarkAction(type="click", target_name="Add world clock"))
            assert not done and info["error"] is None and obs.window_title == "Add new city"
            obs, done, info = adapter.step(BenchmarkAction(type="execute_windows",
                                                           code="import os"))
            assert "import os" in info["error"] and obs.last_error == info["error"]
            adapter.step(BenchmarkAction(type="type", text="Tokyo\n"))
            obs, done, _ = adapter.step(BenchmarkAction(type="done"))
            assert done
            result = adapter.evaluate(task)
            assert (result.success, result.score, result.num_steps) == (True, 1.0, 4)
            assert result.status == "success"


def test_live_adapter_reports_an_unreachable_worker_per_task(tmp_path: Path) -> None:
    with running_worker(tmp_path) as worker:
        scoring_url, waa_url = worker.scoring_url, worker.waa_url
        adapter = WAALiveAdapter(WAALiveConfig(server_url=waa_url, evaluate_url=scoring_url,
                                               step_pause_s=0.0, connect_timeout=1.0))
        ids = adapter.catalog().task_ids()[:2]
        for task_id in ids:
            adapter.catalog().load(task_id)  # cached: the catalog outlives the worker
    try:
        results = evaluate_agent_on_benchmark(OracleAgent(), adapter, ids)
    finally:
        adapter.close()

    assert [(r.status, r.error_type) for r in results] == [("error", "infrastructure")] * 2
    assert compute_metrics(results)["num_infrastructure_failures"] == 2


def test_a_live_worker_that_cannot_be_reached_ends_each_task_as_an_error(
    refused_port: Callable[[], int],
) -> None:
    # as the reference's runner: a list of error results, not an exception before any task
    port = refused_port()
    url = f"http://127.0.0.1:{port}"
    with WAALiveAdapter(WAALiveConfig(server_url=url, evaluate_url=url)) as adapter:
        ids = ["04d9aeaf-7bed-4024-bedb-e10e6f00eb7f-WOS",
               "cd42b1b1-5323-5028-b63e-ec1cbc9d9f2a-WOS"]
        seen: list[str] = []
        results = evaluate_agent_on_benchmark(OracleAgent(), adapter, ids,
                                              on_result=lambda r: seen.append(r.task_id))
        assert [r.task_id for r in results] == ids == seen
        assert {(r.status, r.error_type) for r in results} == {("error", "infrastructure")}
        assert all(str(port) in (r.error or "") for r in results)
        # a mock ID is refused before the worker is asked, as the reference does
        with pytest.raises(SyntheticTaskError):
            adapter.load_task("notepad_1")
        with pytest.raises(SyntheticTaskError):
            evaluate_agent_on_benchmark(OracleAgent(), adapter, ["notepad_1"])
