# ruff: noqa: E501 (the pages of the modules below are kept whole, as a module author writes them)
"""Cua-Bench task modules end to end: the real ``openadapt-evals`` CLI, a real local pool whose
workers run a real headless Chromium, the modules of ``docs/examples/cua_bench/``.

Each example scores 1.0 with ``--agent oracle`` and 0.0 with ``--agent noop``; a drag computed
from ``window.screenX`` + ``getBoundingClientRect()`` lands on its target, and again after the
window moved; bad modules are refused (or recorded) in one line; trials and ``compare`` work on
a Cua-Bench selection and the run page shows each variant's reward components.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from infra.local.browser import find_chromium
from oa_vm.model import state
from tests.support.cli import Result, run_cli
from tests.support.run_records import read_records as read_by_folder

pytestmark = [
    pytest.mark.pool(name="cb", workers=2),  # one browser each, started on first use
    pytest.mark.slow,
    pytest.mark.integration,
    pytest.mark.timeout(900),  # several runs, each worker with its browser, on 2 shared cores
    pytest.mark.skipif(find_chromium() is None, reason="needs Chromium (Debian's chromium)"),
]

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "cua_bench"
EXAMPLE_VARIANTS = {"submit/0", "drag_card/0", "drag_card/1", "signup_form/0",
                    "signup_form/1", "file_report/0", "file_report/1"}


def evals(*args: str, home: Path, results: Path, timeout: float = 400.0) -> Result:
    """``openadapt-evals ARGS --results-dir RESULTS`` as a subprocess."""
    return run_cli("openadapt-evals", *args, "--results-dir", str(results), home=home,
                   timeout=timeout)


def tasks(*args: str, home: Path) -> Result:
    """``openadapt-evals tasks ARGS`` (no run folder involved)."""
    return run_cli("openadapt-evals", "tasks", *args, home=home, timeout=120)


def read_records(run_dir: Path) -> dict[str, dict[str, Any]]:
    """The run's records by task ID (a variant's folder is ``<module-dir>~<index>``)."""
    return {r["task_id"]: r for r in read_by_folder(run_dir).values()}


def module(folder: Path, source: str) -> Path:
    """A task directory holding ``main.py`` with ``source``."""
    folder.mkdir(parents=True)
    (folder / "main.py").write_text(source, encoding="utf-8")
    return folder


def test_examples_score_one_with_the_oracle_and_zero_with_noop(
    pool: str, home: Path, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    listed = tasks(f"cua-bench:{EXAMPLES}", "--json", home=home)
    assert listed.returncode == 0, listed.stderr
    assert {t["task_id"] for t in json.loads(listed.stdout)["tasks"]} == EXAMPLE_VARIANTS

    oracle = evals("run", "--pool", pool, "--tasks", f"cua-bench:{EXAMPLES}", "--agent",
                   "oracle", "--run-name", "oracle", home=home, results=results)
    assert oracle.returncode == 0, oracle.stderr
    records = read_records(results / "oracle")
    assert set(records) == EXAMPLE_VARIANTS
    for tid, record in records.items():
        assert record["status"] == "success", (tid, record.get("error_message"))
        assert record["score"] == 1.0 and set(record["reward_components"]) == {1.0}, tid
    assert len(records["signup_form/0"]["reward_components"]) == 3
    # the manifest holds every file of each module's folder, the page its rewards
    modules = json.loads((results / "oracle" / "manifest.json").read_text())["tasks"]["modules"]
    assert {"submit/main.py", "submit/gui/index.html", "drag_card/main.py"} <= set(modules)

    noop = evals("run", "--pool", pool, "--tasks", f"cua-bench:{EXAMPLES}", "--agent", "noop",
                 "--max-steps", "2", "--run-name", "noop", home=home, results=results)
    assert noop.returncode == 0, noop.stderr
    records = read_records(results / "noop")
    assert set(records) == EXAMPLE_VARIANTS
    for tid, record in records.items():
        assert record["status"] == "failure", (tid, record.get("error_message"))
        assert record["score"] == 0.0 and set(record["reward_components"]) == {0.0}, tid
        # the agent looked at the worker's screen, the module's window on it
        assert record["steps"] and record["steps"][0]["screenshot"], tid


MOVING_DRAG = '''
import cua_bench as cb

PAGE = """<html><body style="margin:0">
<div id="card" style="position:absolute;left:20px;top:30px;width:60px;height:40px;background:red"></div>
<div id="zone" style="position:absolute;left:200px;top:100px;width:80px;height:80px;border:2px solid"></div>
<script>
window.drops = []; let grab = null; const card = document.getElementById("card");
card.addEventListener("mousedown", e => { grab = [e.clientX - card.offsetLeft, e.clientY - card.offsetTop]; });
document.addEventListener("mousemove", e => { if (grab) { card.style.left = (e.clientX - grab[0]) + "px";
  card.style.top = (e.clientY - grab[1]) + "px"; } });
document.addEventListener("mouseup", e => { if (!grab) return; grab = null;
  const z = document.getElementById("zone").getBoundingClientRect();
  window.drops.push(e.clientX >= z.left && e.clientX <= z.right && e.clientY >= z.top && e.clientY <= z.bottom);
  card.style.left = "20px"; card.style.top = "30px"; });
</script></body></html>"""
CENTRE = "(() => { const r = document.querySelector(%r).getBoundingClientRect();" \\
         " return [window.screenX + r.left + r.width / 2, window.screenY + r.top + r.height / 2]; })()"
pid = None

@cb.tasks_config
def load():
    return [cb.Task(description="Drag the card into the box, twice.")]

@cb.setup_task
async def setup(task_cfg, session):
    global pid
    pid = await session.launch_window(html=PAGE, title="Drag", x=50, y=60, width=320, height=220)

async def drag(session):
    fx, fy = await session.execute_javascript(pid, CENTRE % "#card")
    tx, ty = await session.execute_javascript(pid, CENTRE % "#zone")
    await session.execute_action(cb.DragAction(from_x=round(fx), from_y=round(fy),
                                               to_x=round(tx), to_y=round(ty)))

@cb.solve_task
async def solve(task_cfg, session):
    await drag(session)
    before = await session.execute_javascript(pid, "[window.screenX, window.screenY]")
    await session.move_window(pid, 820, 400)
    after = await session.execute_javascript(pid, "[window.screenX, window.screenY]")
    assert before == [50, 60] and after == [820, 400], (before, after)
    await drag(session)
    # the old coordinates now miss: the screen really moved under the page
    await session.execute_action(cb.DragAction(from_x=50 + 50, from_y=60 + 50,
                                               to_x=50 + 240, to_y=60 + 140))

@cb.evaluate_task
async def evaluate(task_cfg, session):
    drops = await session.execute_javascript(pid, "window.drops")
    return [1.0 if drops[:2] == [True, True] else 0.0, 1.0 if drops[2:] == [] else 0.0]
'''


def test_drag_lands_on_its_target_and_again_after_the_window_moved(
    pool: str, home: Path, tmp_path: Path
) -> None:
    task = module(tmp_path / "tasks" / "moving_drag", MOVING_DRAG)
    results = tmp_path / "results"
    done = evals("run", "--pool", pool, "--tasks", f"cua-bench:{task}", "--agent", "oracle",
                 "--run-name", "drag", home=home, results=results)
    assert done.returncode == 0, done.stderr
    record = read_records(results / "drag")["moving_drag/0"]
    assert record["status"] == "success", record.get("error_message")
    # two drops on target, and the third drag (old coordinates) started off the moved card
    assert record["reward_components"] == [1.0, 1.0]


GOOD = '''
import cua_bench as cb
@cb.tasks_config("train")
def load():
    return [cb.Task(description="Nothing to do.")]
@cb.solve_task("train")
async def solve(task_cfg, session):
    pass
@cb.evaluate_task("train")
async def evaluate(task_cfg, session):
    return [1.0]
'''


@pytest.mark.parametrize(("source", "said"), [
    ("import cua_bench as cb\ndef load(:\n", "syntax error at line 2"),
    ("import cua_bench as cb\n@cb.evaluate_task\nasync def e(t, s):\n    return [1.0]\n",
     "no @cb.tasks_config for the split 'train'"),
    ("import cua_bench as cb\n@cb.tasks_config\ndef load():\n    return cb.Task('x')\n"
     "@cb.evaluate_task\nasync def e(t, s):\n    return [1.0]\n",
     "tasks_config returned Task, not a list of cb.Task"),
    (GOOD.replace('"train"', '"test"'), "no @cb.tasks_config for the split 'train'"),
])
def test_bad_modules_are_refused_in_one_line_before_any_pool(
    home: Path, tmp_path: Path, source: str, said: str
) -> None:
    task = module(tmp_path / "bad", source)
    results = tmp_path / "results"
    listed = tasks(f"cua-bench:{task}", home=home)
    line = listed.assert_one_line_error()
    assert said in line and str(task / "main.py") in line
    # refused before the pool is even looked up: this pool does not exist
    ran = evals("run", "--pool", "nowhere", "--tasks", f"cua-bench:{task}", "--agent", "noop",
                home=home, results=results)
    assert said in ran.assert_one_line_error()
    assert not results.exists() or not any(results.iterdir())


def test_oracle_is_refused_for_a_module_without_solve(home: Path, tmp_path: Path) -> None:
    task = module(tmp_path / "nosolve", GOOD.replace('@cb.solve_task("train")', ""))
    results = tmp_path / "results"
    ran = evals("sweep", "--cloud", "local", "--workers", "1", "--tasks", f"cua-bench:{task}",
                "--agent", "oracle", home=home, results=results)
    assert "no @cb.solve_task" in ran.assert_one_line_error()
    assert state.list_names() == []  # no pool was made


def test_raising_setup_and_hanging_evaluate_are_recorded_with_nothing_else_lost(
    pool: str, home: Path, tmp_path: Path
) -> None:
    dataset = tmp_path / "dataset"
    module(dataset / "good_a", GOOD)
    module(dataset / "good_b", GOOD)
    module(dataset / "raises", GOOD.replace(
        '@cb.solve_task("train")',
        '@cb.setup_task("train")\nasync def setup(task_cfg, session):\n'
        '    raise RuntimeError("no fixture here")\n@cb.solve_task("train")'))
    module(dataset / "hangs", GOOD.replace(
        "    return [1.0]", "    import time\n    while True:\n        time.sleep(1)"))
    results = tmp_path / "results"
    done = evals("run", "--pool", pool, "--tasks", f"cua-bench:{dataset}", "--agent", "oracle",
                 "--task-timeout", "20s", "--run-name", "bad", home=home, results=results)
    assert done.returncode == 0, done.stderr
    records = read_records(results / "bad")
    assert {records[t]["status"] for t in ("good_a/0", "good_b/0")} == {"success"}
    raised = records["raises/0"]
    assert raised["status"] == "error" and raised["error_type"] == "task"
    assert raised["error_message"] == (
        "raises/main.py: setup_task raised RuntimeError: no fixture here")
    assert 'raise RuntimeError("no fixture here")' in raised["task_traceback"]
    hung = records["hangs/0"]
    assert hung["status"] == "error" and hung["error_type"] == "task"
    assert "\n" not in hung["error_message"]
    assert hung["error_message"].startswith("hangs/main.py: evaluate_task did not finish within")
    assert raised["attempts"] == 1 and hung["attempts"] == 1  # the module's, never retried


def test_trials_compare_and_the_run_page_on_a_cua_bench_selection(
    pool: str, home: Path, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    form = f"cua-bench:{EXAMPLES / 'signup_form'}#1"
    for agent in ("oracle", "noop"):
        done = evals("run", "--pool", pool, "--tasks", form, "--agent", agent, "--trials", "3",
                     "--max-steps", "1", "--run-name", agent, home=home, results=results)
        assert done.returncode == 0, done.stderr
    trials = [p for p in (results / "oracle" / "tasks").rglob("execution.json")]
    assert len(trials) == 3
    assert all(json.loads(p.read_text())["reward_components"] == [1.0, 1.0, 1.0]
               for p in trials)
    compared = evals("compare", "oracle", "noop", "--json", home=home, results=results)
    assert compared.returncode == 0, compared.stderr
    report = json.loads(compared.stdout)
    assert "signup_form/1" in json.dumps(report)
    page = evals("view", "oracle", home=home, results=results)
    assert page.returncode == 0, page.stderr
    html = (results / "oracle" / "view.html").read_text(encoding="utf-8")
    assert html.count("reward components:") == 3
    shutil.rmtree(results / "noop" / "tasks", ignore_errors=True)  # nothing else to check


def test_a_users_own_agent_runs_a_users_own_module(pool: str, home: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    done = run_cli("openadapt-evals", "run", "--pool", pool, "--tasks",
                   f"cua-bench:{EXAMPLES / 'submit'}", "--agent", "first_button_agent:Agent",
                   "--max-steps", "3", "--run-name", "mine", "--results-dir", str(results),
                   home=home, timeout=400, env={"PYTHONPATH": str(EXAMPLES.parent)})
    assert done.returncode == 0, done.stderr
    record = read_records(results / "mine")["submit/0"]
    assert record["status"] == "success", record.get("error_message")
    assert record["steps"][0]["action"]["type"] == "click"
