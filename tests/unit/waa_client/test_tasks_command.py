"""The ``tasks`` command function, called directly (the CLI is tested as a subprocess too)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.cli.commands.tasks import format_table, shorten, tasks
from evals.errors import InvalidRunInputError
from waa_client import TaskRef, UnknownTaskError
from waa_client.catalog import Catalog


def test_json_listing(waa_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks(source=waa_data, pool=None, tasks_sel="domain:windows_calc", json_out=True)
    listing = json.loads(capsys.readouterr().out)
    expected = Catalog.from_folder(waa_data).resolve("domain:windows_calc", live=False)
    assert [t["task_id"] for t in listing["tasks"]] == expected
    assert listing["counts"] == {"windows_calc": len(expected)}


def test_errors_propagate_for_the_cli_to_print(waa_data: Path) -> None:
    with pytest.raises(UnknownTaskError):
        tasks(source=waa_data, pool=None, tasks_sel="nope-WOS", json_out=False)


def test_not_both_sources() -> None:
    with pytest.raises(InvalidRunInputError, match="not both"):
        tasks(source=Path("x"), pool="p", tasks_sel="all", json_out=False)


def test_no_source_lists_the_bundled_local_suite(capsys: pytest.CaptureFixture[str]) -> None:
    from infra.local.taskstore import tasks_dir

    tasks(source=None, pool=None, tasks_sel="all", json_out=True)
    captured = capsys.readouterr()
    listing = json.loads(captured.out)
    expected = Catalog.from_folder(tasks_dir()).resolve("all", live=False)
    assert [t["task_id"] for t in listing["tasks"]] == expected and expected
    assert "bundled local suite" in captured.err


def test_table() -> None:
    refs = [TaskRef("a-WOS", "notepad", False, "Write\n  hello"),
            TaskRef("INF-b-WOS", "vlc", True, "x" * 100)]
    table = format_table(refs, {"notepad": 1, "vlc": 1}).splitlines()
    assert table[0] == "TASK ID    DOMAIN   INF  INSTRUCTION"
    assert table[1] == "a-WOS      notepad  no   Write hello"
    assert table[2].startswith("INF-b-WOS  vlc      yes  xxx") and table[2].endswith("...")
    assert table[-3:] == ["notepad: 1", "vlc: 1", "total: 2 task(s) in 2 domain(s)"]


def test_shorten() -> None:
    assert shorten("a  b\nc") == "a b c"
    assert len(shorten("word " * 50, 20)) == 20


NOTE_MODULE = '''
import cua_bench as cb

@cb.tasks_config
def load():
    return [cb.Task(description="Leave a note.")]

@cb.evaluate_task
async def evaluate(task_cfg, session):
    await session.screenshot()  # session.launch_window() in a comment is no call
    return [1.0 if await session.file_exists("C:\\\\note.txt") else 0.0]
'''


def test_a_cua_bench_listing_names_the_modules_that_use_the_browser(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    examples = Path(__file__).resolve().parents[3] / "docs" / "examples" / "cua_bench"
    shutil.copytree(examples / "submit", tmp_path / "submit")
    (tmp_path / "note").mkdir()
    (tmp_path / "note" / "main.py").write_text(NOTE_MODULE, encoding="utf-8")
    tasks(selection=f"cua-bench:{tmp_path}", source=None, pool=None, tasks_sel=None,
          json_out=False)
    lines = capsys.readouterr().out.splitlines()
    assert lines[-3:] == [
        "note: 1",
        "submit: 1 (uses the worker's browser: launch_window, click_element, "
        "execute_javascript; local pools only)",
        "total: 2 task(s) in 2 domain(s)"]
    tasks(selection=f"cua-bench:{tmp_path}", source=None, pool=None, tasks_sel=None,
          json_out=True)
    assert json.loads(capsys.readouterr().out)["browser_operations"] == {
        "submit": ["launch_window", "click_element", "execute_javascript"]}
