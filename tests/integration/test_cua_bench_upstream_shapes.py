"""Cua-Bench modules written the way Cua-Bench's own examples and tasks are, through the real
``openadapt-evals`` CLI on a real local pool (each worker with its headless Chromium).

The module below is ours, shaped after what those modules do that the documented minimal one
does not: it keeps no window id and names its window ``1`` (Cua-Bench's simulated session
numbers a session's windows from 1), passes ``pid=`` and ``javascript=`` by name, imports an
action from ``cua_bench.types``, annotates its session ``cb.DesktopSession | cb.MobileSession``
and types through the session's shorthands (``session.type``, ``session.key``). A module that
drives Cua-Bench's native apps (``session.apps.<app>.install()``) is refused in one line
before any pool.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from infra.local.browser import find_chromium
from oa_vm.model import state
from tests.support.cli import Result, run_cli
from tests.support.run_records import read_records as read_by_folder

pytestmark = [
    pytest.mark.pool(name="cbup", workers=1),
    pytest.mark.slow,
    pytest.mark.integration,
    pytest.mark.timeout(600),
    pytest.mark.skipif(find_chromium() is None, reason="needs Chromium (Debian's chromium)"),
]

CHAT = '''
from pathlib import Path

import cua_bench as cb
from cua_bench.types import KeyAction

PAGE = """
<ul id="rooms"><li data-room="general">general</li><li data-room="random">random</li></ul>
<input id="draft" placeholder="Message">
<script>
  window.__room = "general"; window.__posted = [];
  for (const li of document.querySelectorAll("#rooms li"))
    li.onclick = () => { window.__room = li.dataset.room; };
  document.getElementById("draft").addEventListener("keydown", (e) => {
    if (e.key === "Enter") {
      window.__posted.push({room: window.__room, text: e.target.value});
      e.target.value = "";
    }
  });
</script>
"""


@cb.tasks_config(split="train")
def load():
    return [cb.Task(description=f"Post '{text}' in #{room}.",
                    metadata={"room": room, "text": text},
                    computer={"provider": "simulated", "setup_config": {"os_type": "win11"}})
            for room, text in (("random", "lunch at noon"), ("general", "build is green"))]


@cb.setup_task(split="train")
async def start(task_cfg, session: cb.DesktopSession | cb.MobileSession):
    await session.launch_window(html=PAGE, title="Chat", x=60, y=60, width=500, height=300)


@cb.solve_task(split="train")
async def solve(task_cfg, session: cb.DesktopSession | cb.MobileSession):
    room = task_cfg.metadata["room"]
    await session.click_element(1, f'#rooms li[data-room="{room}"]')
    await session.click_element("1", "#draft")
    await session.type(task_cfg.metadata["text"])
    await session.execute_action(KeyAction(key="Return"))


@cb.evaluate_task(split="train")
async def evaluate(task_cfg, session: cb.DesktopSession | cb.MobileSession):
    posted = await session.execute_javascript(pid=1, javascript="window.__posted")
    want = {"room": task_cfg.metadata["room"], "text": task_cfg.metadata["text"]}
    return [1.0 if posted == [want] else 0.0]
'''

NATIVE_APP = '''
import cua_bench as cb


@cb.tasks_config
def tasks():
    return [cb.Task(description="Open the schematic and set R2 to 1.8k.",
                    computer={"provider": "native", "setup_config": {"os_type": "linux"}})]


@cb.setup_task(split="train")
async def start(task_cfg, session: cb.DesktopSession):
    await session.apps.kicad.install(with_shortcut=True)


@cb.evaluate_task(split="train")
async def evaluate(task_cfg, session: cb.DesktopSession):
    return [0.0]
'''


def evals(*args: str, home: Path, results: Path) -> Result:
    """``openadapt-evals ARGS --results-dir RESULTS`` as a subprocess."""
    return run_cli("openadapt-evals", *args, "--results-dir", str(results), home=home,
                   timeout=400)


def module(folder: Path, source: str) -> Path:
    """A task directory holding ``main.py`` with ``source``."""
    folder.mkdir(parents=True)
    (folder / "main.py").write_text(source, encoding="utf-8")
    return folder


def records(run_dir: Path) -> dict[str, dict[str, Any]]:
    """The run's records by task ID."""
    return {r["task_id"]: r for r in read_by_folder(run_dir).values()}


def test_a_module_shaped_as_cua_benchs_own_scores_one_with_the_oracle_and_zero_with_noop(
    pool: str, home: Path, tmp_path: Path
) -> None:
    chat = module(tmp_path / "chat", CHAT)
    results = tmp_path / "results"
    for agent in ("oracle", "noop"):
        done = evals("run", "--pool", pool, "--tasks", f"cua-bench:{chat}", "--agent", agent,
                     "--max-steps", "1", "--task-timeout", "120s", "--run-name", agent,
                     home=home, results=results)
        assert done.returncode == 0, done.stderr
    oracle, noop = records(results / "oracle"), records(results / "noop")
    assert set(oracle) == set(noop) == {"chat/0", "chat/1"}
    for tid in oracle:
        assert oracle[tid]["status"] == "success", (tid, oracle[tid].get("error_message"))
        assert oracle[tid]["reward_components"] == [1.0], tid
        assert noop[tid]["status"] == "failure", (tid, noop[tid].get("error_message"))
        assert noop[tid]["reward_components"] == [0.0], tid


def test_a_module_of_cua_benchs_native_apps_is_refused_in_one_line_before_any_pool(
    home: Path, tmp_path: Path
) -> None:
    kicad = module(tmp_path / "kicad", NATIVE_APP)
    listed = run_cli("openadapt-evals", "tasks", f"cua-bench:{kicad}", "--json", home=home,
                     timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["app_operations"] == {"kicad": ["apps"]}
    results = tmp_path / "results"
    ran = evals("sweep", "--cloud", "local", "--workers", "1", "--tasks", f"cua-bench:{kicad}",
                "--agent", "noop", home=home, results=results)
    line = ran.assert_one_line_error()
    assert line.endswith(
        f"cua-bench module {kicad / 'main.py'}: it calls session.apps (Cua-Bench's native "
        "apps, installed and driven on Cua-Bench's own VMs), which oa-vm's workers do not "
        "have (1 variant(s)); no pool runs it"), line
    assert set(state.list_names()) <= {"cbup"}  # the test's own pool at most: none was made
