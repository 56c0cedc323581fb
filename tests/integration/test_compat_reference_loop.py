"""The reference tool's evaluation behaviours (step limit, ``on_step``, ``_run_single_task``),
against a real simulated worker process."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from evals import (
    BenchmarkAction,
    BenchmarkAgent,
    BenchmarkObservation,
    BenchmarkTask,
    EvaluationConfig,
    ScriptedAgent,
    WAALiveAdapter,
    WAALiveConfig,
    evaluate_agent_on_benchmark,
)
from evals.benchmarks.runner import _run_single_task
from tests.support.http_servers import Reply, ScriptedServer
from tests.support.sshd import free_port
from tests.support.worker_proc import running_worker
from waa_client.errors import WaaError, WorkerUnreachableError

pytestmark = pytest.mark.integration

CLOCK_TASK = "cd42b1b1-5323-5028-b63e-ec1cbc9d9f2a-WOS"  # add Tokyo to the world clock
ESCAPE = BenchmarkAction(type="key", key="escape")


@pytest.fixture(scope="module")
def worker_urls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    with running_worker(tmp_path_factory.mktemp("worker")) as worker:
        yield worker.waa_url, worker.scoring_url


def _adapter(urls: tuple[str, str], **options: Any) -> WAALiveAdapter:
    waa_url, scoring_url = urls
    return WAALiveAdapter(WAALiveConfig(server_url=waa_url, evaluate_url=scoring_url,
                                        action_delay=0.0, timeout=30.0, **options))


def test_step_says_done_at_the_step_limit(worker_urls: tuple[str, str]) -> None:
    with _adapter(worker_urls, max_steps=3) as adapter:
        task = adapter.load_task(CLOCK_TASK)
        assert task.time_limit_steps == 3
        adapter.reset(task)
        done_flags = [adapter.step(ESCAPE)[1] for _ in range(3)]
        assert done_flags == [False, False, True]
        # the task's own limit wins, as in the reference
        short = BenchmarkTask(task_id=CLOCK_TASK, domain="clock", instruction="x",
                              time_limit_steps=1)
        adapter.reset(short)
        assert adapter.step(ESCAPE)[1] is True


def test_on_step_sees_every_chosen_action(worker_urls: tuple[str, str],
                                          tmp_path: Path) -> None:
    calls: list[tuple[int, str]] = []

    def on_step(obs: BenchmarkObservation, action: BenchmarkAction, index: int) -> None:
        assert isinstance(obs, BenchmarkObservation)
        calls.append((index, action.type))

    config = EvaluationConfig(on_step=on_step, output_dir=str(tmp_path), run_name="r1",
                              verbose=False)
    with _adapter(worker_urls) as adapter:
        agent = ScriptedAgent([ESCAPE, ESCAPE])
        results = evaluate_agent_on_benchmark(agent, adapter, [CLOCK_TASK], config=config)
    assert calls == [(0, "key"), (1, "key"), (2, "done")]
    assert results[0].status == "failure"
    # save_execution_traces is on by default, as in the reference: a run folder is written
    assert (tmp_path / "r1" / "summary.json").is_file()
    assert "ScriptedAgent" in (tmp_path / "r1" / "metadata.json").read_text()


class _Broken(BenchmarkAgent):
    def act(self, observation: BenchmarkObservation, task: BenchmarkTask,
            history: Sequence[BenchmarkAction] | None = None) -> BenchmarkAction:
        raise ValueError("model returned nothing")


def test_run_single_task_keeps_agent_errors_apart(worker_urls: tuple[str, str]) -> None:
    config = EvaluationConfig(save_execution_traces=False)
    with _adapter(worker_urls) as adapter:
        task = adapter.load_task(CLOCK_TASK)
        broken = _run_single_task(_Broken(), adapter, task, config)
        assert (broken.success, broken.status, broken.error_type) == (False, "error", "agent")
        assert "model returned nothing" in (broken.error or "")
        # the task's time_limit_steps caps the steps, as the reference reads it
        task.time_limit_steps = 2
        capped = _run_single_task(ScriptedAgent([ESCAPE] * 10), adapter, task, config)
        assert capped.status == "failure" and capped.num_steps == 2


def test_observations_carry_a_screenshot_file_and_its_size(
        worker_urls: tuple[str, str]) -> None:
    with _adapter(worker_urls) as adapter:
        task = adapter.load_task(CLOCK_TASK)
        first = adapter.reset(task)
        second, _, _ = adapter.step(ESCAPE)
        paths = [first.screenshot_path, second.screenshot_path]
        assert all(paths) and paths[0] != paths[1]
        assert Path(str(paths[0])).read_bytes() == first.screenshot
        assert first.viewport == (1280, 720)  # read from the PNG the worker sent


def test_a_hung_worker_costs_reset_and_step_one_timeout_per_read(
        worker_urls: tuple[str, str], caplog: pytest.LogCaptureFixture) -> None:
    """As the reference's adapter: each read sent once with config.timeout, a failed one
    logged and its part of the observation left empty (a caller's time budget holds)."""
    _, scoring_url = worker_urls
    timeout = 2.0
    routes = {
        "/setup/close_all": Reply.json({}),
        "/setup/clear_task_files": Reply.json({}),
        "/execute_windows": Reply.json({"status": "success", "returncode": 0}),
        "/obs_winagent": Reply(delay_s=120.0),  # hung: answers only when the server closes
        "/accessibility": Reply.json({"message": "busy"}, status=503),  # would be retried
    }
    with ScriptedServer(routes) as waa, caplog.at_level(logging.ERROR):
        with WAALiveAdapter(WAALiveConfig(server_url=waa.url, evaluate_url=scoring_url,
                                          action_delay=0.0, timeout=timeout)) as adapter:
            first = adapter.reset(adapter.load_task(CLOCK_TASK))
            assert (waa.hits["/obs_winagent"], waa.hits["/accessibility"]) == (1, 1)
            began = time.monotonic()
            obs, done, info = adapter.step(ESCAPE)
            took = time.monotonic() - began
        assert (waa.hits["/obs_winagent"], waa.hits["/accessibility"]) == (2, 2)
    for observation in (first, obs):
        assert observation.screenshot is None and observation.accessibility_tree is None
    assert not done and info["error"] is None and info["result"] == {
        "status": "success", "returncode": 0}
    assert sum("screenshot request error" in r.getMessage() for r in caplog.records) == 2
    assert sum("accessibility tree request error" in r.getMessage() for r in caplog.records) == 2
    # one timeout for the step's hung read: retries took four of them, and their waits
    assert took < 4 * timeout


def test_an_unreachable_worker_raises_runtime_error_as_the_reference(
        worker_urls: tuple[str, str], tmp_path: Path) -> None:
    """Code written for the reference (``except RuntimeError``) and for this project
    (``except WaaError``) both catch a worker that cannot be reached in reset() and step()."""
    _, scoring_url = worker_urls
    closed = f"http://127.0.0.1:{free_port()}"
    with WAALiveAdapter(WAALiveConfig(server_url=closed, evaluate_url=scoring_url,
                                      action_delay=0.0, timeout=10.0)) as adapter:
        task = adapter.load_task(CLOCK_TASK)  # the catalog is the scoring server's
        with pytest.raises(RuntimeError) as caught:
            adapter.reset(task)
    error = caught.value
    assert isinstance(error, WaaError) and isinstance(error, WorkerUnreachableError)
    assert error.is_infrastructure
    assert isinstance(error.__cause__, WorkerUnreachableError)
    message = str(error)
    assert "\n" not in message and closed in message and "call reset(task) again" in message
    # a worker that answered the reset and is gone at the next step: step() raises the same
    with running_worker(tmp_path) as worker:
        adapter = WAALiveAdapter(WAALiveConfig(server_url=worker.waa_url,
                                               evaluate_url=worker.scoring_url,
                                               action_delay=0.0, timeout=10.0))
        first = adapter.reset(adapter.load_task(CLOCK_TASK))
        assert first.screenshot  # the good path: a reachable worker resets as before
    try:
        with pytest.raises(RuntimeError) as caught:
            adapter.step(ESCAPE)
    finally:
        adapter.close()
    assert isinstance(caught.value, WaaError) and caught.value.is_infrastructure
    assert worker.waa_url in str(caught.value) and "step(action)" in str(caught.value)
