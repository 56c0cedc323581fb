"""WAA's pyautogui action format on the simulated desktop: the whitelist and the geometry."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.local import gui
from infra.local.actions import run_action, source_of
from infra.local.commands import CommandSyntaxError
from infra.local.desktop import Desktop
from infra.local.pysource import ForbiddenSource, parse_source, python_c_source
from tests.support.controls import find_control

DESKTOP = "C:\\Users\\Docker\\Desktop"


@pytest.mark.parametrize(
    ("source", "named"),
    [
        ("import os", "import os"),
        ("import pyautogui\nimport subprocess", "import subprocess"),
        ("from os import system", "from os import"),
        ("open('/etc/passwd')", "call open(...)"),
        ("__import__('os').system('id')", "call __import__('os').system(...)"),
        ("__import__('os')", "call __import__(...)"),
        ("exec('print(1)')", "call exec(...)"),
        ("eval('1')", "call eval(...)"),
        ("import pyautogui\npyautogui.click(x, 10)", "name x"),
        ("import pyautogui\npyautogui.os.system('id')", "call pyautogui.os.system(...)"),
        ("import pyautogui\npyautogui.click(pyautogui.size)", "attribute chain pyautogui.size"),
        ("import pyautogui\n[pyautogui.click(1, i) for i in range(3)]", "list comprehension"),
        ("import pyautogui\npyautogui.typewrite(f'{1+1}')", "f-string with an expression"),
        ("import pyautogui\nfor i in (1, 2):\n    pyautogui.click(1, 1)", "for loop"),
        ("import pyautogui\nx = 3", "assignment"),
        ("import pyautogui as p", "aliases"),
        ("pyautogui.click(1, 1)", "before import pyautogui"),
        ("import pyautogui\npyautogui.click(1 + 1, 2)", "arithmetic expression"),
        ("import pyautogui\nprint(open('x').read())", "print"),
        ("import pyautogui\npyautogui.click(**{'x': 1})", "**kwargs"),
        ("def f(:", "not valid Python"),
    ],
)
def test_forbidden_constructs_are_named(source: str, named: str) -> None:
    with pytest.raises(ForbiddenSource) as info:
        parse_source(source)
    assert named in str(info.value)
    assert "line " in str(info.value) or "not valid" in str(info.value)


def test_nothing_runs_when_any_line_is_forbidden(desktop: Desktop, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    source = (
        "import pyautogui\n"
        "pyautogui.hotkey('win', 'r')\n"
        "pyautogui.typewrite('notepad\\n')\n"
        f"open({str(marker)!r}, 'w').write('x')\n"
    )
    before = desktop.version
    with pytest.raises(ForbiddenSource):
        run_action(desktop, source)
    assert desktop.version == before and desktop.windows == []
    assert not marker.exists()


def test_waa_prefix_and_python_c_form_are_accepted(desktop: Desktop) -> None:
    prefix = "import pyautogui; import time; pyautogui.FAILSAFE = False; "
    command = ["python", "-c", prefix + "pyautogui.hotkey('win', 'r'); time.sleep(0)"]
    assert python_c_source(command) == command[2]
    assert run_action(desktop, command).returncode == 0
    assert desktop.active is not None and desktop.active.title == "Run"
    assert python_c_source('python -c "import pyautogui"') == "import pyautogui"
    platform = run_action(desktop, ["python", "-c", prefix + "import platform; "
                                    "print(platform.system())"])
    assert platform.output == "Windows\n"


def test_the_command_language_still_works(desktop: Desktop) -> None:
    assert run_action(desktop, "open notepad").output == "Untitled - Notepad"
    with pytest.raises(Exception, match="unknown verb 'frobnicate'"):
        run_action(desktop, "frobnicate now")


@pytest.mark.parametrize("command", ["notepad.exe", "notepad", "calc.exe"])
def test_a_programs_bare_name_is_a_command_not_python(desktop: Desktop, command: str) -> None:
    # as Python a bare (dotted) name does nothing: it is a program run as a shell command, and
    # the command language names the verb that does it, not the Python whitelist's rules
    with pytest.raises(CommandSyntaxError) as refused:
        run_action(desktop, command)
    assert "to open it: open " in str(refused.value)
    assert "attribute chain" not in str(refused.value)
    assert source_of(command) is None
    assert source_of("import pyautogui\npyautogui.size") is not None  # Python stays Python


def _control(desktop: Desktop, name: str) -> gui.Control:
    control = find_control(desktop, name)
    assert control is not None, f"{name} not on screen"
    return control


def test_a_click_lands_on_what_the_layout_shows_there(desktop: Desktop) -> None:
    run_action(desktop, "open clock")
    add = _control(desktop, "Add timer")
    x, y = add.center
    run_action(desktop, f"import pyautogui\npyautogui.click({x}, {y})")
    assert desktop.active is not None and desktop.active.title == "Add new timer"
    run_action(desktop, "import pyautogui\npyautogui.typewrite('25m')\npyautogui.press('tab')\n"
                        "pyautogui.typewrite('Tea\\n')")
    assert [(t.label, t.seconds) for t in desktop.clock.timers] == [("Tea", 1500)]
    # a click one pixel outside the button hits nothing that acts
    left, top, right, bottom = _control(desktop, "Add timer").rect
    run_action(desktop, f"import pyautogui\npyautogui.click({right}, {top - 1})")
    assert desktop.active is not None and desktop.active.title == "Clock"


def test_normalized_coordinates_of_navi_helpers(desktop: Desktop) -> None:
    run_action(desktop, "open settings")
    toggle = _control(desktop, "Dark mode")
    x, y = toggle.center
    source = (f"computer.mouse.move_abs({x / gui.WIDTH}, {y / gui.HEIGHT})\n"
              "computer.mouse.single_click()")
    assert run_action(desktop, source).returncode == 0
    assert desktop.settings.dark_mode is True


def test_keyboard_file_operations_in_explorer(desktop: Desktop) -> None:
    desktop.write_file(f"{DESKTOP}\\a.txt", "a")
    run_action(desktop, f'open explorer "{DESKTOP}"')
    item = _control(desktop, "a.txt")
    run_action(desktop, f"import pyautogui\npyautogui.click{item.center}\npyautogui.press('f2')\n"
                        "pyautogui.typewrite('b.txt\\n')")
    assert desktop.list_names(DESKTOP) == ["b.txt"]
    run_action(desktop, "import pyautogui\npyautogui.hotkey('ctrl', 'shift', 'n')\n"
                        "pyautogui.typewrite('Box\\n')")
    assert desktop.list_names(DESKTOP) == ["Box", "b.txt"]
    box, doc = _control(desktop, "Box"), _control(desktop, "b.txt")
    run_action(desktop, f"import pyautogui\npyautogui.moveTo{doc.center}\n"
                        f"pyautogui.dragTo({box.center[0]}, {box.center[1]})")
    assert desktop.list_names(f"{DESKTOP}\\Box") == ["b.txt"]


def test_refused_input_is_a_failed_action_not_a_crash(desktop: Desktop) -> None:
    bad_point = run_action(desktop, "import pyautogui\npyautogui.click('here', 10)")
    assert bad_point.returncode == 1 and "'here' is not a number" in bad_point.error
    # beyond the screen is no error, as on Windows: the click lands on the edge
    edge = run_action(desktop, "import pyautogui\npyautogui.click(5000, 10)")
    assert edge.returncode == 0 and desktop.pointer == (1279, 10)
    run_action(desktop, "open clock")
    x, y = _control(desktop, "Add alarm").center
    bad = run_action(desktop, f"import pyautogui\npyautogui.click({x}, {y})\n"
                              "pyautogui.typewrite('25:99\\n')")
    assert bad.returncode == 1 and "line 3" in bad.error and "not a valid time" in bad.error
    assert desktop.clock.alarms == []


def test_accessibility_rects_match_the_hit_test(desktop: Desktop) -> None:
    from xml.etree import ElementTree as ET

    from infra.local.render import accessibility_xml

    run_action(desktop, "open calc")
    root = ET.fromstring(accessibility_xml(desktop))
    buttons = {b.get("name"): b.get("rect") for b in root.iter("Button")}
    for name in ("7", "Multiply", "8", "Equals"):
        left, top, right, bottom = (int(v) for v in str(buttons[name]).split(","))
        run_action(desktop, f"import pyautogui\npyautogui.click({(left + right) // 2}, "
                            f"{(top + bottom) // 2})")
    assert desktop.active is not None and desktop.active.display == "56"
    # The History pane lists the calculation (newest first) in the accessibility tree.
    root = ET.fromstring(accessibility_xml(desktop))
    assert [i.get("name") for i in root.iter("ListItem")] == ["7*8 = 56"]


def test_only_a_calculation_enters_the_calculators_history(desktop: Desktop) -> None:
    run_action(desktop, "open calc")
    window = desktop.active
    assert window is not None and window.app == "calc"
    # Digits typed onto the display, even with = pressed, compute nothing: no entry.
    run_action(desktop, 'import pyautogui\npyautogui.typewrite("7006652")\n'
                        'pyautogui.press("enter")')
    run_action(desktop, 'type "42"')
    assert window.history == []
    run_action(desktop, 'import pyautogui\npyautogui.typewrite("1234 x 5678=")')
    run_action(desktop, "calc 2+2")
    assert window.history == ["1234*5678 = 7006652", "2+2 = 4"]
    # The date page recomputes as a date is typed: one entry for the difference shown.
    x, y = _control(desktop, "Date calculation").center
    run_action(desktop, f"import pyautogui\npyautogui.click({x}, {y})\n"
                        'pyautogui.typewrite("2024-08-20")\npyautogui.press("tab")\n'
                        'pyautogui.typewrite("2024-01-03")')
    assert window.history[-1] == "2024-01-03 to 2024-08-20 = 230 days"
    assert len(window.history) == 3
    run_action(desktop, "close Calculator")
    run_action(desktop, "open calc")
    assert desktop.active is not None and desktop.active.history == []


def test_the_screenshot_shows_what_a_click_there_changes(desktop: Desktop) -> None:
    import datetime as dt

    from infra.local.render import draw

    run_action(desktop, "open settings")
    x, y = _control(desktop, "Dark mode").center
    when = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    before = draw(desktop, when).getpixel((x, y))
    run_action(desktop, f"import pyautogui\npyautogui.click({x}, {y})")
    after = draw(desktop, when).getpixel((x, y))
    assert before == (230, 230, 230) and after == (0, 120, 212)  # the switch, off then on
    assert desktop.settings.dark_mode is True


def test_a_runaway_program_is_bounded(desktop: Desktop) -> None:
    with pytest.raises(ForbiddenSource, match="more than 500 calls"):
        parse_source("import pyautogui\n" + "pyautogui.press('a')\n" * 501)
    from infra.local.inputs import Player

    player = Player(desktop, sleep_cap=0.2)
    player.play(parse_source("import time\ntime.sleep(0.15)\ntime.sleep(0.15)\ntime.sleep(5)"))
    assert player.sleep_cap == 0.0  # all the sleeps together waited 0.2 s, not 5.3 s


def test_odd_arguments_fail_the_action_not_the_worker(desktop: Desktop) -> None:
    """Every whitelisted call with awkward literal arguments ends as a refused action (400) or
    a failed one (returncode 1), never as an unexpected exception (a 500)."""
    import itertools

    from infra.local.pysource import COMPUTER_CALLS, PYAUTOGUI_CALLS

    odd = ["1e999", "-1e999", "-5", "0.5", "'x'", "None", "True", "[1, 2, 3]", "[]", "''",
           "'\\n'", "(1, 2)", "10**10"]
    functions = [f"pyautogui.{f}" for f in sorted(PYAUTOGUI_CALLS - {"sleep"})]
    functions += [f"computer.{f}" for f in sorted(COMPUTER_CALLS)]
    run_action(desktop, "open notepad")
    for function, (a, b) in itertools.product(functions, itertools.combinations(odd, 2)):
        for args in (f"{a}", f"{a}, {b}", f"x={a}, y={b}", f"{a}, presses={b}",
                     f"{a}, clicks={b}"):
            source = f"import pyautogui\n{function}({args})"
            try:
                result = run_action(desktop, source)
            except ForbiddenSource:
                continue
            assert result.returncode in (0, 1), source
