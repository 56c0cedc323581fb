"""The local suite's reference solutions: WAA's action format, clicks an agent could aim.

Each solution is replayed on a fresh desktop. Before each program, every point it clicks or
drags to must be inside a control (not just a window) of the accessibility tree the agent sees
at that moment (so the coordinates can be read off the tree or the screenshot, which draws the
same layout), and the checker must score the result 1.0.
"""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from infra.local import tasks_dir
from infra.local.actions import run_action
from infra.local.checker import evaluate_task
from infra.local.desktop import Desktop
from infra.local.pysource import parse_source
from infra.local.render import accessibility_xml
from infra.local.setup_steps import run_steps

TASKS = sorted((tasks_dir() / "examples").glob("*/*.json"))
POINTER = {"pyautogui.click", "pyautogui.doubleClick", "pyautogui.rightClick",
           "pyautogui.moveTo", "pyautogui.dragTo"}


def _named_rects(tree: str) -> list[tuple[str, tuple[int, int, int, int]]]:
    found = []
    for element in ET.fromstring(tree).iter():
        rect, name = element.get("rect"), element.get("name")
        if rect and name and element.tag not in ("Desktop", "Window", "Pane"):  # controls only
            left, top, right, bottom = (int(v) for v in rect.split(","))
            found.append((name, (left, top, right, bottom)))
    return found


@pytest.mark.parametrize("path", TASKS, ids=[p.stem[:13] for p in TASKS])
def test_reference_solution_aims_at_visible_elements_and_solves(path: Path,
                                                                tmp_path: Path) -> None:
    task = json.loads(path.read_text(encoding="utf-8"))
    desktop = Desktop(tmp_path / "root")
    assert all(r.ok for r in run_steps(desktop, task["config"]))
    *programs, last = task["reference_solution"]
    for program in programs:
        assert program.startswith("import pyautogui\n")
        rects = _named_rects(accessibility_xml(desktop))
        for call in parse_source(program).calls:
            if call.function in POINTER and len(call.args) >= 2:
                x, y = call.args[0], call.args[1]
                hits = [name for name, (left, top, right, bottom) in rects
                        if left <= x < right and top <= y < bottom]
                assert hits, f"{call.function}({x}, {y}) aims at nothing in the tree"
        result = run_action(desktop, program)
        assert result.returncode == 0, result.error
    verdict = evaluate_task(desktop, task, last)
    assert verdict.score == 1.0, verdict


def test_a_third_of_the_tasks_need_a_click() -> None:
    clicking = [p for p in TASKS if any(
        "pyautogui.click(" in a or "pyautogui.dragTo(" in a
        for a in json.loads(p.read_text(encoding="utf-8"))["reference_solution"])]
    assert len(clicking) * 3 >= len(TASKS)
