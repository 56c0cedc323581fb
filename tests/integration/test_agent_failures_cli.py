"""An agent that raises, run by the real CLI on a local pool: its traceback is kept in the task's
record, shown on the run page and with ``--debug``; the summary and the closing line name the
agent, never the pool, and no worker is quarantined for what the agent did."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import BIN
from tests.support.run_records import read_records

pytestmark = pytest.mark.integration

AGENT = textwrap.dedent("""\
    from evals import BenchmarkAction, BenchmarkAgent


    class Flaky(BenchmarkAgent):
        def __init__(self, only=""):
            self.only = only

        def act(self, observation, task, history=None):
            if not self.only or task.domain == self.only:
                return self._plan(task)
            return BenchmarkAction(type="done")

        def _plan(self, task):
            raise RuntimeError(f"no plan for <b>{task.domain}</b>")
""")
SPEC = "failing_agent:Flaky"


def _evals(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OA_VM_HOME": str(home), "PYTHONPATH": str(cwd)}
    env.pop("OA_VM_DEBUG", None)
    return subprocess.run(  # a fixed argv, no shell
        [str(BIN / "openadapt-evals"), *args], capture_output=True, text=True, timeout=300,
        env=env, cwd=cwd, stdin=subprocess.DEVNULL, check=False,
    )


def test_a_raising_agent_is_named_and_its_traceback_kept(
    home: Path, local_pool: Callable[..., str], tmp_path: Path
) -> None:
    local_pool()  # one worker: a quarantine would show
    (tmp_path / "failing_agent.py").write_text(AGENT, encoding="utf-8")
    results = tmp_path / "results"
    done = _evals(home, tmp_path, "run", "--pool", "p", "--tasks", "local_small",
                  "--agent", SPEC, "--run-name", "boom", "--results-dir", str(results),
                  "--debug")

    assert done.returncode == 4, done.stderr  # not a result, as an unhealthy run
    closing = done.stderr.strip().splitlines()[-1]
    assert "6 task(s): the agent (failing_agent:Flaky) raised RuntimeError" in closing
    assert "execution.json" in closing and "openadapt-evals view boom" in closing
    assert "fix the agent, then run it again" in closing
    for blame in ("unhealthy", "workers' logs", "healthy pool"):
        assert blame not in done.stderr + done.stdout
    assert "the agent (failing_agent:Flaky) raised RuntimeError" in done.stdout  # the summary
    # --debug: the agent's traceback once (one kind of exception), from the agent's frame on
    assert done.stderr.count("The agent's traceback in task") == 1
    assert 'failing_agent.py", line 14, in _plan' in done.stderr

    records = read_records(results / "boom")
    assert len(records) == 6
    for record in records.values():
        assert (record["status"], record["error_type"]) == ("error", "agent")
        trace = record["agent_traceback"]
        assert trace.startswith("Traceback (most recent call last):")
        assert "in act" in trace and "in _plan" in trace
        assert trace.rstrip().endswith(f"RuntimeError: no plan for <b>{record['domain']}</b>")
        assert "agent_loop.py" not in trace  # the loop's own frame is left out
    metadata = json.loads((results / "boom" / "metadata.json").read_text(encoding="utf-8"))
    assert metadata["quarantined_workers"] == []  # the agent's errors are not the worker's
    assert metadata["warning_cause"] == "agent"

    shown = _evals(home, tmp_path, "view", "boom", "--results-dir", str(results))
    assert shown.returncode == 0, shown.stderr
    page = (results / "boom" / "view.html").read_text(encoding="utf-8")
    assert page.count('<details class="traceback">') == 6
    assert "RuntimeError: no plan for &lt;b&gt;notepad&lt;/b&gt;" in page
    assert "<b>notepad</b>" not in page
    assert "The agent failed: " in page and "Unhealthy run" not in page


def test_one_raising_task_is_named_in_the_summary(
    home: Path, local_pool: Callable[..., str], tmp_path: Path
) -> None:
    local_pool()  # one worker: a quarantine would show
    (tmp_path / "failing_agent.py").write_text(AGENT, encoding="utf-8")
    results = tmp_path / "results"
    done = _evals(home, tmp_path, "run", "--pool", "p", "--tasks", "local_small",
                  "--agent", SPEC, "--agent-arg", "only=notepad", "--run-name", "one",
                  "--results-dir", str(results))

    assert done.returncode == 0, done.stderr  # 1 error of 6 tasks: still a result
    assert ("1 task(s): the agent (failing_agent:Flaky) raised RuntimeError; see its traceback "
            in done.stdout)
    assert "The agent's traceback" not in done.stderr  # only with --debug
    errors = [r for r in read_records(results / "one").values() if r["status"] == "error"]
    assert [r["domain"] for r in errors] == ["notepad"]
    assert "in _plan" in errors[0]["agent_traceback"]
