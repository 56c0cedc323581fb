"""A Cua-Bench module's shell operations as its user meets them through the real CLI: a module
for a shell no worker has is refused in one line whether a pool exists yet or not (a plan's
refusal names no placeholder pool), and a Windows program run with ``session.run_command`` on a
local worker is refused with the verb of the worker's command language that does it, not with
the Python whitelist's rules. No browser is used: these modules run on any local pool.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.integration.test_sweep_local import evals
from tests.integration.test_unknown_task_ids import _made_nothing, _offline
from tests.support.cli import run_cli

pytestmark = pytest.mark.integration


def _source(description: str, os_type: str, setup_call: str) -> str:
    """A Cua-Bench module whose setup makes one session call and whose reward is always 1."""
    return f"""
import cua_bench as cb

@cb.tasks_config(split="train")
def load():
    return [cb.Task(description="{description}",
                    computer={{"setup_config": {{"os_type": "{os_type}"}}}})]

@cb.setup_task(split="train")
async def setup(task_cfg, session):
    await session.{setup_call}

@cb.evaluate_task(split="train")
async def evaluate(task_cfg, session):
    return [1.0]
"""


LINUX_MODULE = _source("List a folder.", "linux", 'run_command("ls /tmp")')
NOTEPAD_MODULE = _source("Open Notepad.", "windows", 'run_command("notepad.exe")')


def _module(folder: Path, source: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "main.py").write_text(source, encoding="utf-8")
    return folder


@pytest.mark.parametrize("cloud", ["local", "aws"])
def test_a_module_for_a_shell_no_worker_has_is_refused_by_a_plan_naming_no_placeholder(
    home: Path, tmp_path: Path, cloud: str
) -> None:
    module = _module(tmp_path / "linux", LINUX_MODULE)
    results = tmp_path / "results"
    plan = run_cli("openadapt-evals", "sweep", "--plan", "--cloud", cloud, "--workers", "1",
                   "--agent", "noop", "--tasks", f"cua-bench:{module}", "--results-dir",
                   str(results), home=home, env=_offline(tmp_path))  # a cloud plan asks no network
    line = plan.assert_one_line_error()
    assert plan.returncode == 2
    assert "(any)" not in line, line
    assert line.endswith(
        f"cua-bench module {module / 'main.py'}: it runs shell and file operations for os_type "
        "'linux', and every pool's workers have a windows shell only (1 variant(s)); set "
        "os_type to 'windows' and use Windows paths"), line
    _made_nothing(home, results)


def test_a_windows_program_run_as_a_command_is_refused_naming_the_verb_that_opens_it(
    home: Path, tmp_path: Path
) -> None:
    module = _module(tmp_path / "np", NOTEPAD_MODULE)
    results = tmp_path / "results"
    done = evals("sweep", "--cloud", "local", "--workers", "1", "--agent", "noop",
                 "--tasks", f"cua-bench:{module}", "--run-name", "np",
                 home=home, results=results)
    assert done.returncode != 0 and "Run folder:" in done.stdout, done.stdout + done.stderr
    [execution] = (results / "np" / "tasks").glob("*/execution.json")
    record = json.loads(execution.read_text(encoding="utf-8"))
    assert (record["status"], record["error_type"]) == ("error", "task"), record
    said = record["error_message"]
    assert "attribute chain" not in said and "whitelisted" not in said, said
    # the shell command reached /execute, which answers in its own command language
    assert "/execute:" in said and "/execute_windows" not in said, said
    assert ("'notepad.exe' runs a program; the simulated worker runs no programs or code: it "
            "takes one command of its own language, a verb and its arguments") in said, said
    assert said.endswith("; to open it: open notepad"), said


WAITING_MODULE = """
import cua_bench as cb

@cb.tasks_config(split="train")
def load():
    return [cb.Task(description="Wait for the report.",
                    computer={"setup_config": {"os_type": "windows"}})]

@cb.solve_task(split="train")
async def solve(task_cfg, session):
    %s
    await session.run_command("mkdir C:/late")

@cb.evaluate_task(split="train")
async def evaluate(task_cfg, session):
    return [1.0]
"""


def test_a_module_waiting_past_the_task_time_ends_as_a_timeout_at_that_time(
    home: Path, tmp_path: Path
) -> None:
    # a 600 s WaitAction with a few seconds per task: awaited, and played through env.step
    # (which waits in the module's own loop thread), each cut where the task's time ends
    dataset = tmp_path / "dataset"
    _module(dataset / "awaited",
            WAITING_MODULE % "await session.execute_action(cb.WaitAction(seconds=600))")
    _module(dataset / "stepped", WAITING_MODULE % "session.env.step(cb.WaitAction(600))")
    results = tmp_path / "results"
    began = time.monotonic()
    done = evals("sweep", "--cloud", "local", "--workers", "1", "--agent", "oracle",
                 "--tasks", f"cua-bench:{dataset}", "--task-timeout", "4s",
                 "--max-attempts", "1", "--run-name", "waits", home=home, results=results)
    took = time.monotonic() - began
    assert "Run folder:" in done.stdout, done.stdout + done.stderr
    records = {}
    for execution in (results / "waits" / "tasks").glob("*/execution.json"):
        record = json.loads(execution.read_text(encoding="utf-8"))
        records[record["task_id"]] = record
    assert set(records) == {"awaited/0", "stepped/0"}, records
    for record in records.values():
        # the task's time ran out: a timeout, as any attempt past its time, not the module's
        assert (record["status"], record["error_type"]) == ("error", "timeout"), record
        assert record["error_message"].startswith("the task ran out of time"), record
        assert "\n" not in record["error_message"]
    assert took < 120, took  # the waits would have taken 1200 s
