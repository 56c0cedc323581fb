"""Loading Cua-Bench modules: our ``cua_bench`` namespace (decorators in both call forms, the
split rules, the types), variants and their IDs, and the one-line refusals."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from evals.errors import InvalidRunInputError
from evals.run.attempt_cua import rewards_of
from evals.tasks.cua_bench import check_selection, load_selection
from evals.tasks.cua_bench.namespace import cua_bench_module
from evals.tasks.cua_bench.session import action_source
from evals.tasks.kinds import check_runs_on

FORMS = '''
import cua_bench as cb

@cb.tasks_config
def bare():
    return [cb.Task(description="bare form, train"), cb.Task(description="second")]

@cb.tasks_config("test")
def positional():
    return [cb.Task(description="positional form, test")]

@cb.tasks_config(split="dev")
def keyword():
    return [cb.Task(description="keyword form, dev", metadata={"k": 1})]

@cb.evaluate_task
async def e_train(task_cfg, session):
    return [1.0]

@cb.evaluate_task("test")
async def e_test(task_cfg, session):
    return [1.0]

@cb.evaluate_task(split="dev")
async def e_dev(task_cfg, session):
    return [1.0]

@cb.solve_task(split="dev")
async def s_dev(task_cfg, session):
    cb.interact()
'''


def write(folder: Path, source: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "main.py").write_text(source, encoding="utf-8")
    return folder


def test_each_decorator_form_registers_for_its_split(tmp_path: Path) -> None:
    task = write(tmp_path / "forms", FORMS)
    train = load_selection(f"cua-bench:{task}")
    assert [(v.task_id, v.description) for v in train] == [
        ("forms/0", "bare form, train"), ("forms/1", "second")]
    assert [v.description for v in load_selection(f"cua-bench:{task}", "test")] == [
        "positional form, test"]
    dev = load_selection(f"cua-bench:{task}", "dev")
    assert [v.description for v in dev] == ["keyword form, dev"] and dev[0].has_solve
    assert not train[0].has_solve  # its solve_task is the dev split's
    assert [v.task_id for v in load_selection(f"cua-bench:{task}#1")] == ["forms/1"]


def test_a_dataset_directory_lists_its_modules_in_name_order(tmp_path: Path) -> None:
    write(tmp_path / "data" / "b_task", FORMS)
    write(tmp_path / "data" / "a_task", FORMS)
    (tmp_path / "data" / "notes").mkdir()  # a folder without main.py is no task
    ids = [v.task_id for v in load_selection(f"cua-bench:{tmp_path / 'data'}")]
    assert ids == ["a_task/0", "a_task/1", "b_task/0", "b_task/1"]


def test_the_namespace_is_not_a_package_and_has_the_types() -> None:
    cb = cua_bench_module()
    assert getattr(cb, "__file__", None) is None and getattr(cb, "__path__", None) is None
    drag = cb.DragAction(from_x=1, from_y=2, to_x=3, to_y=4)
    assert action_source(drag) == "pyautogui.moveTo(1, 2); pyautogui.dragTo(3, 4)"
    assert action_source(cb.TypeAction(text="a'b")) == 'pyautogui.typewrite("a\'b")'
    assert action_source(cb.HotkeyAction(keys=["ctrl", "a"])) == "pyautogui.hotkey('ctrl', 'a')"
    assert action_source(cb.ScrollAction(direction="up", amount=300)) == "pyautogui.scroll(3)"
    assert action_source(cb.WaitAction(seconds=0)) is None
    assert cb.interact() is None
    with pytest.raises(TypeError):
        cb.setup_task(3)


@pytest.mark.parametrize(("source", "said"), [
    ("import cua_bench as cb\nx = (\n", "syntax error at line 2"),
    ("import cua_bench as cb\nraise ImportError('needs numpy')\n",
     "importing it raised ImportError: needs numpy"),
    ("import cua_bench as cb\n", "no @cb.tasks_config for the split 'train'"),
    ("import cua_bench as cb\n@cb.tasks_config\ndef c():\n    return 'x'\n",
     "tasks_config returned str, not a list of cb.Task"),
    ("import cua_bench as cb\n@cb.tasks_config\ndef c():\n    return [1]\n",
     "tasks_config's item 0 is int, not a cb.Task"),
    ("import cua_bench as cb\n@cb.tasks_config\ndef c():\n    return [cb.Task('x')]\n",
     "no @cb.evaluate_task for the split 'train'"),
])
def test_bad_modules_are_refused_naming_the_file(tmp_path: Path, source: str, said: str) -> None:
    task = write(tmp_path / "bad", source)
    with pytest.raises(InvalidRunInputError) as caught:
        load_selection(f"cua-bench:{task}")
    assert str(caught.value).startswith(f"cua-bench module {task / 'main.py'}: {said}")
    assert "\n" not in str(caught.value)


def test_shell_operations_need_a_windows_os_type_and_the_oracle_a_solve(tmp_path: Path) -> None:
    posix = write(tmp_path / "posix", FORMS.replace(
        'cb.Task(description="bare form, train")',
        'cb.Task(description="x", computer={"setup_config": {"os_type": "linux"}})',
    ) + "\nasync def use(s):\n    await s.run_command('ls')\n")
    with pytest.raises(InvalidRunInputError, match="workers have a windows shell only"):
        check_selection(f"cua-bench:{posix}", agent="noop", pools=["p"])
    with pytest.raises(InvalidRunInputError, match="no @cb.solve_task"):
        check_selection(f"cua-bench:{write(tmp_path / 'f', FORMS)}", agent="oracle")


def test_a_shell_refusal_names_the_pool_given_and_every_pool_before_one_is(
    tmp_path: Path
) -> None:
    posix = write(tmp_path / "posix", FORMS.replace(
        'cb.Task(description="bare form, train")',
        'cb.Task(description="x", computer={"setup_config": {"os_type": "linux"}})',
    ) + "\nasync def use(s):\n    await s.run_command('ls')\n")
    for pools, workers in ((["p"], "pool 'p''s workers"), ([], "every pool's workers")):
        with pytest.raises(InvalidRunInputError) as refused:
            check_selection(f"cua-bench:{posix}", agent="noop", pools=pools)
        assert str(refused.value) == (
            f"cua-bench module {posix / 'main.py'}: it runs shell and file operations for "
            f"os_type 'linux', and {workers} have a windows shell only (1 variant(s)); set "
            "os_type to 'windows' and use Windows paths")


def test_rewards_are_a_list_of_numbers() -> None:
    assert rewards_of([1, 0.5]) == [1.0, 0.5] and rewards_of(0.25) == [0.25]
    for bad in ([], "1", [True], None, [float("nan")], {"a": 1}):
        assert rewards_of(bad) is None


def test_the_real_package_is_preferred_when_installed() -> None:
    # our namespace only stands in while nothing of that name can be imported
    assert "cua_bench" not in sys.modules or getattr(sys.modules["cua_bench"], "__file__",
                                                     None) is None


USES = FORMS + '''
class Helper:
    def __init__(self, session):
        self.session = session

    async def open(self):
        # session.execute_javascript(pid, "x") in a comment is no call
        note = "await session.close_all_windows() and s.run_command('x') in a string"
        await self.session.move_window(pid, 1, 2)

async def use(session, s):
    pid = await session.launch_window(html="<p>hi</p>")
    await s.click_element(pid, "#go")
    await session.launch_window(html="again")
    await session.screenshot()
'''


def test_browser_operations_are_found_by_parsing_the_module(tmp_path: Path) -> None:
    variants = load_selection(f"cua-bench:{write(tmp_path / 'uses', USES)}")
    # in source order, each once; from any receiver; none from the comment or the string
    assert {v.browser_operations for v in variants} == {
        ("move_window", "launch_window", "click_element")}
    assert not any(v.uses_shell for v in variants)  # run_command only in the string


SHELL_ONLY = FORMS + "\nasync def use(session):\n    await session.run_command('ls')\n" \
    "    await session.screenshot()\n"


def test_a_module_without_browser_operations_has_none(tmp_path: Path) -> None:
    (variant, _) = load_selection(f"cua-bench:{write(tmp_path / 'shell', SHELL_ONLY)}")
    assert variant.browser_operations == () and variant.uses_shell


@pytest.mark.parametrize("cloud", ["aws", "azure", "ssh"])
def test_what_needs_the_simulated_desktop_runs_on_local_pools_only(
    tmp_path: Path, cloud: str
) -> None:
    browser = f"cua-bench:{write(tmp_path / 'uses', USES)}"
    where = f"pool 'p' ({cloud})"
    with pytest.raises(InvalidRunInputError) as caught:
        check_runs_on(cloud, where, browser)
    assert str(caught.value) == (
        f"Cua-Bench modules that use the worker's browser run on a local pool only, not on "
        f"{where}: {tmp_path / 'uses' / 'main.py'} calls session.move_window, and only a local "
        "pool's workers have a browser; run them on a local pool (--cloud local)")
    with pytest.raises(InvalidRunInputError, match="^OpenApps-style tasks run on a local pool "
                       rf"only, not on pool 'p' \({cloud}\): their rewards read"):
        check_runs_on(cloud, where, "openapps:never-read.yaml")  # refused unread
    check_runs_on(cloud, where, f"cua-bench:{write(tmp_path / 'shell', SHELL_ONLY)}")
    check_runs_on("local", "a pool of local workers", browser)


EXAMPLE_SHAPE = '''
import cua_bench as cb
from cua_bench.types import Action, KeyAction, ScrollAction

@cb.tasks_config
def load():
    return [cb.Task(description=str(ScrollAction().direction))]

@cb.evaluate_task
async def evaluate(task_cfg, session: cb.DesktopSession | cb.MobileSession) -> list[float]:
    return [1.0 if isinstance(KeyAction(key="up"), Action) else 0.0]
'''


def test_modules_written_as_cua_benchs_examples_load(tmp_path: Path) -> None:
    # Cua-Bench's examples import actions from cua_bench.types and annotate their session
    # `cb.DesktopSession | cb.MobileSession`; a ScrollAction scrolls up unless told
    (variant,) = load_selection(f"cua-bench:{write(tmp_path / 'game', EXAMPLE_SHAPE)}")
    assert variant.description == "up"


def test_a_module_of_cua_benchs_native_apps_is_refused_for_every_pool(tmp_path: Path) -> None:
    native = write(tmp_path / "native", FORMS + "\nasync def use(session):\n"
                   "    await session.apps.kicad.launch()\n")
    (variant, _) = load_selection(f"cua-bench:{native}")
    assert variant.app_operations == ("apps",)
    with pytest.raises(InvalidRunInputError, match=r"calls session\.apps \(Cua-Bench's native "
                       r"apps, .*\), which oa-vm's workers do not have \(2 variant\(s\)\)"):
        check_selection(f"cua-bench:{native}", agent="noop")
