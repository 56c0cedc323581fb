"""``WAAMockAdapter``: the reference tool's synthetic in-process mock, as this project provides it.

Pins what code and tests written against the reference read from the mock (task generation,
the form it shows, its scoring rules, its counters, the loop's step count) and what this project
adds around it (no process, no network, no run folder, IDs live workers refuse)."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil
import pytest
from PIL import Image

from evals import (
    BenchmarkAction,
    BenchmarkAgent,
    BenchmarkObservation,
    BenchmarkTask,
    EvaluationConfig,
    SmartMockAgent,
    WAAMockAdapter,
    WAASimulatedAdapter,
    compute_metrics,
    evaluate_agent_on_benchmark,
)
from evals.adapters import WAA_DOMAINS, is_synthetic_task_id
from evals.benchmarks.runner import _run_single_task
from waa_client.catalog import Catalog
from waa_client.errors import SyntheticTaskError, UnknownTaskError

PROJECT_ROOT = Path(__file__).resolve().parents[3]


def _click(**where: Any) -> BenchmarkAction:
    return BenchmarkAction(type="click", **where)


def _played(adapter: WAAMockAdapter, actions: Sequence[BenchmarkAction]) -> tuple[bool, float]:
    task = adapter.list_tasks()[0]
    adapter.reset(task)
    for action in actions:
        adapter.step(action)
    result = adapter.evaluate(task)
    return result.success, result.score


class _SaysDone(BenchmarkAgent):
    def act(self, observation: BenchmarkObservation, task: BenchmarkTask,
            history: Sequence[BenchmarkAction] | None = None) -> BenchmarkAction:
        return BenchmarkAction(type="done")


class _ClicksNothingForever(BenchmarkAgent):
    def act(self, observation: BenchmarkObservation, task: BenchmarkTask,
            history: Sequence[BenchmarkAction] | None = None) -> BenchmarkAction:
        return _click(x=1500, y=900)  # empty screen area


class _Crashes(BenchmarkAgent):
    def act(self, observation: BenchmarkObservation, task: BenchmarkTask,
            history: Sequence[BenchmarkAction] | None = None) -> BenchmarkAction:
        if task.task_id.endswith("_002"):
            raise RuntimeError("model timed out")
        return _click(target_node_id="4")


# -- tasks ----------------------------------------------------------------------------------------

def test_default_tasks_spread_over_the_first_three_waa_domains() -> None:
    tasks = WAAMockAdapter().list_tasks()
    assert len(tasks) == 20
    counts = {d: sum(t.domain == d for t in tasks) for d in WAA_DOMAINS[:3]}
    assert counts == {"chrome": 7, "clock": 7, "file_explorer": 6}
    first = tasks[0]
    assert (first.task_id, first.instruction) == ("mock_chrome_001", "Mock task 1 in chrome domain")
    assert tasks[-1].task_id == "mock_file_explorer_006"
    assert all(t.time_limit_steps == 15 for t in tasks)
    assert all(t.raw_config == {"mock": True, "synthetic": True} for t in tasks)
    assert all(is_synthetic_task_id(t.task_id) for t in tasks)


def test_any_domain_names_and_lookup() -> None:
    adapter = WAAMockAdapter(num_tasks=5, domains=["browser", "office"])
    assert [t.task_id for t in adapter.list_tasks(domain="office")] == [
        "mock_office_001", "mock_office_002"]
    assert adapter.load_task("mock_browser_003").instruction == "Mock task 3 in browser domain"
    with pytest.raises(KeyError, match="mock_browser_004"):
        adapter.load_task("mock_browser_004")


@pytest.mark.parametrize(("num_tasks", "domains"),
                         [(0, None), (True, None), (2.5, None), (3, []), (3, [""]), (3, ["a,b"])])
def test_bad_arguments_are_refused(num_tasks: Any, domains: Any) -> None:
    with pytest.raises(ValueError):
        WAAMockAdapter(num_tasks=num_tasks, domains=domains)


def test_live_selection_refuses_mock_ids() -> None:
    catalog = Catalog.from_folder(PROJECT_ROOT / "infra" / "local" / "tasks")
    ids = [t.task_id for t in WAAMockAdapter(num_tasks=3).list_tasks()]
    with pytest.raises(SyntheticTaskError) as info:
        catalog.select(",".join(ids), live=True)
    assert info.value.task_ids == ids


# -- observation ----------------------------------------------------------------------------------

def test_observation_is_the_form_drawn_where_clicks_land() -> None:
    with WAAMockAdapter(num_tasks=1) as adapter:
        obs = adapter.reset(adapter.list_tasks()[0])
        assert (obs.viewport, obs.step) == ((1920, 1200), 0)
        assert obs.window_title and "Mock" in obs.window_title
        tree: Any = obs.accessibility_tree
        assert tree["role"] == "window"
        controls = {c["name"]: c for c in tree["children"]}
        assert [(c["id"], c["role"]) for c in controls.values()] == [
            ("1", "button"), ("2", "textfield"), ("3", "button"), ("4", "button")]
        assert obs.screenshot_path is not None
        saved = Path(obs.screenshot_path)
        assert saved.read_bytes() == obs.screenshot
        image = Image.open(io.BytesIO(obs.screenshot or b"")).convert("RGB")
        assert image.size == (1920, 1200)
        background = image.getpixel((1000, 700))
        for name in ("OK", "Cancel", "Submit"):
            left, top, right, bottom = controls[name]["bbox"]
            centre = ((left + right) // 2 - 30, (top + bottom) // 2)  # beside the label
            assert image.getpixel(centre) != background, name
        second = adapter.step(_click(x=0.9, y=0.9))[0]
        assert second.step == 1 and second.screenshot_path != obs.screenshot_path
    assert not saved.exists(), "close() removes the screenshots"


# -- step and counters ----------------------------------------------------------------------------

def test_step_counts_and_ends() -> None:
    adapter = WAAMockAdapter(num_tasks=2)
    task = adapter.list_tasks()[1]
    with pytest.raises(RuntimeError, match="reset"):
        adapter.step(_click(x=0.5, y=0.5))
    adapter.reset(task)
    assert adapter._current_task is task
    _, done, info = adapter.step(_click(x=0.5, y=0.5))
    assert (done, info) == (False, {"step": 1})
    _, done, _ = adapter.step(BenchmarkAction(type="fail"))
    assert done and adapter._step_count == 2
    assert [a.type for a in adapter._actions] == ["click", "fail"]
    adapter.reset(task)
    assert (adapter._step_count, adapter._actions) == (0, [])
    ends = [adapter.step(BenchmarkAction(type="type", text="x"))[1] for _ in range(15)]
    assert ends == [False] * 14 + [True]


# -- scoring rules --------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("actions", "success", "score"),
    [
        ([], False, 0.0),
        ([BenchmarkAction(type="done")], False, 0.0),
        ([_click(target_node_id="4")], True, 1.0),
        ([_click(x=400, y=120)], True, 1.0),  # Submit by pixels
        ([_click(x=400 / 1920, y=150 / 1200)], True, 1.0),  # by fractions, in its wider area
        ([_click(target_name="submit")], True, 1.0),
        ([_click(target_bbox=(350, 100, 450, 140))], True, 1.0),
        ([BenchmarkAction(type="type", text="hi"), _click(target_node_id="1")], True, 1.0),
        ([_click(x=150, y=120), BenchmarkAction(type="type", text="hi")], True, 1.0),
        ([_click(target_node_id="1")], False, 0.4),  # OK without text: partial credit
        ([BenchmarkAction(type="type", text="partial")], False, 0.5),
        ([_click(target_node_id="1"), _click(target_node_id="3"), _click(target_node_id="2"),
          _click(target_node_id="3")], False, 0.6),
        ([_click(x=0.5, y=0.5), BenchmarkAction(type="done")], False, 0.0),  # empty area
        ([BenchmarkAction(type="right_click", target_node_id="4")], False, 0.0),  # not a click
        ([BenchmarkAction(type="type", text="")], False, 0.0),
    ],
)
def test_scoring_rules(actions: list[BenchmarkAction], success: bool, score: float) -> None:
    got_success, got_score = _played(WAAMockAdapter(num_tasks=1), actions)
    assert got_success is success and got_score == pytest.approx(score)


def test_evaluate_reports_steps_and_a_task_not_played_has_done_nothing() -> None:
    adapter = WAAMockAdapter(num_tasks=2)
    first, second = adapter.list_tasks()
    adapter.reset(first)
    adapter.step(_click(target_node_id="4"))
    adapter.step(_click(x=5, y=5))
    result = adapter.evaluate(first)
    assert (result.task_id, result.num_steps, result.status) == (first.task_id, 2, "success")
    assert "Submit" in (result.reason or "")
    other = adapter.evaluate(second)
    assert (other.success, other.score, other.num_steps) == (False, 0.0, 0)


# -- the evaluation loop --------------------------------------------------------------------------

def test_done_at_once_scores_zero_in_zero_steps() -> None:
    results = evaluate_agent_on_benchmark(_SaysDone(), WAAMockAdapter(num_tasks=5))
    assert [r.num_steps for r in results] == [0] * 5
    assert [len(r.steps) for r in results] == [1] * 5  # the done is in the trajectory
    assert compute_metrics(results)["success_rate"] == 0.0


def test_smart_mock_agent_solves_every_mock_task() -> None:
    adapter = WAAMockAdapter(num_tasks=4, domains=["browser"])
    seen: list[int] = []
    config = EvaluationConfig(on_step=lambda obs, action, index: seen.append(index),
                              save_execution_traces=False)
    results = evaluate_agent_on_benchmark(SmartMockAgent(), adapter, config=config)
    assert [(r.success, r.num_steps, r.domain) for r in results] == [(True, 1, "browser")] * 4
    assert seen == [0, 1] * 4


def test_task_step_limit_wins_over_max_steps() -> None:
    adapter = WAAMockAdapter(num_tasks=1)
    result = evaluate_agent_on_benchmark(_ClicksNothingForever(), adapter, max_steps=50)[0]
    assert (result.num_steps, result.success, result.score) == (15, False, 0.0)
    single = _run_single_task(_ClicksNothingForever(), adapter, adapter.list_tasks()[0],
                              EvaluationConfig(max_steps=3, save_execution_traces=False))
    assert single.num_steps == 15


def test_an_agent_error_is_an_error_not_a_zero() -> None:
    results = evaluate_agent_on_benchmark(_Crashes(), WAAMockAdapter(num_tasks=3, domains=["d"]))
    assert [r.status for r in results] == ["success", "error", "success"]
    assert results[1].error_type == "agent" and "model timed out" in (results[1].error or "")
    metrics = compute_metrics(results)
    # listed as an error, and counted against the agent (docs/results.md): never a better rate
    assert (metrics["success_rate"], metrics["error_count"]) == (pytest.approx(2 / 3), 1)


def test_unknown_ids_are_all_listed_before_anything_runs() -> None:
    adapter = WAAMockAdapter(num_tasks=2)
    with pytest.raises(UnknownTaskError) as info:
        evaluate_agent_on_benchmark(_SaysDone(), adapter, ["mock_chrome_001", "x", "y"])
    assert info.value.task_ids == ["x", "y"]
    assert adapter._current_task is None


def test_no_run_folder_no_process_no_network(tmp_path: Path, oa_home: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the synthetic mock opened a connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with WAAMockAdapter(num_tasks=2) as adapter:
        # The reference's default config asks for traces: dropped for the mock.
        results = evaluate_agent_on_benchmark(SmartMockAgent(), adapter,
                                              config=EvaluationConfig())
        assert all(r.success for r in results)
        with pytest.raises(ValueError, match="synthetic mock"):
            evaluate_agent_on_benchmark(SmartMockAgent(), adapter, run_dir=tmp_path / "run")
        with pytest.raises(NotImplementedError, match="WAASimulatedAdapter"):
            adapter.clients()
    assert {p.pid for p in psutil.Process().children(recursive=True)} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    assert not oa_home.exists()


def test_readme_example_with_the_mock_prints_zero(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(textwrap.dedent("""\
        from evals import BenchmarkAction, BenchmarkAgent, WAAMockAdapter
        from evals import compute_metrics, evaluate_agent_on_benchmark

        class MyAgent(BenchmarkAgent):
            def act(self, observation, task, history=None):
                return BenchmarkAction(type="done")

        results = evaluate_agent_on_benchmark(MyAgent(), WAAMockAdapter(num_tasks=5))
        print(compute_metrics(results)["success_rate"])
    """), encoding="utf-8")
    env = {**os.environ, "OA_VM_HOME": str(tmp_path / "home")}
    done = subprocess.run(  # a fixed argv, no shell
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env,
        cwd=tmp_path, stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "0.0\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["example.py"]


def test_the_simulated_adapter_is_a_different_class() -> None:
    assert WAASimulatedAdapter.name == "waa-simulated" and WAAMockAdapter.name == "waa-mock"
    assert not issubclass(WAAMockAdapter, WAASimulatedAdapter)
    assert WAAMockAdapter.in_process and not WAASimulatedAdapter.in_process


def test_the_agents_doc_mock_example_prints_what_it_says(tmp_path: Path) -> None:
    doc = (PROJECT_ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in doc.split("```python\n")[1:]]
    example = next(b for b in blocks if "WAAMockAdapter(num_tasks=4)" in b)
    claimed = example.rsplit("# ", 1)[1].strip()
    script = tmp_path / "example.py"
    script.write_text(example, encoding="utf-8")
    done = subprocess.run(  # a fixed argv, no shell
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120,
        env={**os.environ, "OA_VM_HOME": str(tmp_path / "home")}, cwd=tmp_path,
        stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == claimed == "1.0 [1, 1, 1, 1]"
