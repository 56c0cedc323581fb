"""Writing an agent: a module in the current folder named as ``module:Class``, options from
``--agent-arg``, GUI actions aimed by element name, the previous action's error in the
observation, and refused actions counted in the progress and the summary (real CLI, real pool).
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.support.cli import BIN
from tests.support.run_records import read_records

pytestmark = pytest.mark.integration

DARK_MODE = "e112363f-4a10-536e-89c0-53e0fb3afa05-WOS"
AGENT = textwrap.dedent("""\
    from evals import BenchmarkAgent, BenchmarkAction


    class Toggler(BenchmarkAgent):
        def __init__(self, setting="Notifications", probe=False):
            self.setting = setting
            self.probe = probe

        def act(self, observation, task, history=None):
            step = len(history or [])
            if self.probe and step == 0:
                return BenchmarkAction(type="execute_windows", code="import os")
            if self.probe and step == 1:
                assert "import os" in (observation.last_error or ""), observation.last_error
            if step == int(self.probe):
                return BenchmarkAction(type="hotkey", key="win+i")
            if step == int(self.probe) + 1:
                return BenchmarkAction(type="click", target_name=self.setting)
            return BenchmarkAction(type="done")
""")


def _run(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OA_VM_HOME": str(home)}
    env.pop("PYTHONPATH", None)
    return subprocess.run(  # a fixed argv, no shell
        [str(BIN / "openadapt-evals"), "run", "--pool", "p", "--tasks", DARK_MODE,
         "--results-dir", str(cwd / "results"), *args],
        capture_output=True, text=True, timeout=240, env=env, cwd=cwd,
        stdin=subprocess.DEVNULL, check=False,
    )


def test_a_local_agent_with_options_and_a_refused_action(pooled: Path, tmp_path: Path) -> None:
    (tmp_path / "my_agent.py").write_text(AGENT, encoding="utf-8")
    done = _run(pooled, tmp_path, "--agent", "my_agent:Toggler", "--run-name", "mine",
                "--agent-arg", "setting=Dark mode", "--agent-arg", "probe=true")
    assert done.returncode == 0, done.stderr
    record = read_records(tmp_path / "results" / "mine")[DARK_MODE]
    assert record["status"] == "success", record
    first = record["steps"][0]
    assert first["rejected"] is True and "import os" in first["error"]
    assert [s["action"]["type"] for s in record["steps"]] == [
        "execute_windows", "hotkey", "click", "done"]
    assert "[1 action(s) rejected by the worker]" in done.stderr
    assert "Actions rejected by workers: 1" in done.stdout
    summary = json.loads((tmp_path / "results" / "mine" / "summary.json").read_text())
    assert summary["rejected_actions"] == 1


def test_an_agent_module_that_is_not_there_says_where_to_look(pooled: Path,
                                                              tmp_path: Path) -> None:
    done = _run(pooled, tmp_path, "--agent", "nowhere_agent:Toggler")
    assert done.returncode != 0
    assert "PYTHONPATH" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_bad_agent_arg_is_one_line(pooled: Path, tmp_path: Path) -> None:
    (tmp_path / "my_agent.py").write_text(AGENT, encoding="utf-8")
    done = _run(pooled, tmp_path, "--agent", "my_agent:Toggler", "--agent-arg", "colour=blue")
    assert done.returncode != 0
    assert "colour" in done.stderr and len(done.stderr.strip().splitlines()) == 1
