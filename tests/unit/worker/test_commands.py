"""The command language: splitting, checking and running each verb on a desktop."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.local import commands
from infra.local.commands import CommandSyntaxError, run, split_command
from infra.local.desktop import Desktop
from infra.local.sandbox import SandboxError

DESK = "C:\\Users\\Docker\\Desktop"


def ok(desktop: Desktop, command: str | list[str]) -> str:
    result = run(desktop, command)
    assert result.returncode == 0, result.error
    return result.output


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ('save "C:\\Users\\Docker\\a b.txt"', ["save", "C:\\Users\\Docker\\a b.txt"]),
        ("read C:\\Users\\Docker\\a.txt", ["read", "C:\\Users\\Docker\\a.txt"]),
        ("type 'He said \"hi\"'", ["type", 'He said "hi"']),
        ('write "C:\\x.txt" "two\nlines"', ["write", "C:\\x.txt", "two\nlines"]),
        ("echo a#b", ["echo", "a#b"]),
        (["type", "kept as is"], ["type", "kept as is"]),
    ],
)
def test_split(command: str | list[str], words: list[str]) -> None:
    assert split_command(command) == words


@pytest.mark.parametrize(
    ("command", "needle"),
    [
        ("", "empty command"),
        ('type "unclosed', "cannot split"),
        ("explode", "unknown verb 'explode'"),
        ("python -c \"import pyautogui; pyautogui.click()\"", "does not run Python"),
        ("powershell -Command Get-Item", "does not run Python"),
        ("move only-one", "usage: move"),
        ("sleep 31", "usage: sleep"),
        ("sleep -1", "usage: sleep"),
        ("sleep soon", "usage: sleep"),
        ("set night_light maybe", "usage: set"),
        ("set volume 11", "unknown setting"),
        ("timer add forever", "usage: timer"),
        ("timer explode", "usage: timer"),
        ("alarm add 25:00", "usage: alarm"),
        ("key f13", "usage: key"),
        ("rename C:\\a.txt b\\c.txt", "usage: rename"),
    ],
)
def test_bad_commands_are_syntax_errors(desktop: Desktop, command: str, needle: str) -> None:
    with pytest.raises(CommandSyntaxError) as info:
        run(desktop, command)
    assert needle in str(info.value)


@pytest.mark.parametrize(
    ("command", "verb"),
    [
        ("notepad.exe", "open notepad"),
        ("start notepad.exe", "open notepad"),
        ("CALC.EXE", "open calc"),
        ("explorer.exe C:\\Users\\Docker", 'open explorer "C:\\Users\\Docker"'),
        ("start ms-settings:nightlight", "open ms-settings:nightlight"),
        (["notepad.exe", "C:\\a b.txt"], 'open notepad "C:\\a b.txt"'),
    ],
)
def test_a_program_of_the_desktop_is_refused_naming_the_verb_that_opens_it(
    desktop: Desktop, command: str | list[str], verb: str
) -> None:
    with pytest.raises(CommandSyntaxError) as refused:
        run(desktop, command)
    said = str(refused.value)
    assert said.endswith(f"; to open it: {verb}"), said
    assert "runs no programs or code: it takes one command of its own language" in said
    assert ok(desktop, verb)  # and the verb named does it
    assert "\n" not in said


def test_an_unknown_verb_is_refused_with_the_language_and_its_verbs(desktop: Desktop) -> None:
    with pytest.raises(CommandSyntaxError) as refused:
        run(desktop, "frobnicate now")
    said = str(refused.value)
    assert said.startswith("unknown verb 'frobnicate'; the simulated worker runs no programs")
    assert "a verb and its arguments" in said and "verbs: activate, alarm" in said
    assert "to open it" not in said


def test_non_string_list_is_refused(desktop: Desktop) -> None:
    with pytest.raises(CommandSyntaxError):
        run(desktop, ["type", 3])  # type: ignore[list-item]


def test_notepad_type_save_and_reopen(desktop: Desktop) -> None:
    assert ok(desktop, "open notepad") == "Untitled - Notepad"
    ok(desktop, 'type "Hello"')
    ok(desktop, "key enter")
    ok(desktop, 'type "World"')
    failed = run(desktop, "save")
    assert failed.returncode == 1 and "no file name" in failed.error
    assert ok(desktop, f'save "{DESK}\\hello.txt"') == f"{DESK}\\hello.txt"
    assert ok(desktop, f'read "{DESK}\\hello.txt"') == "Hello\nWorld"
    ok(desktop, "close")
    assert ok(desktop, f'open "{DESK}\\hello.txt"') == "hello.txt - Notepad"
    ok(desktop, "key backspace 5")
    ok(desktop, "paste")
    ok(desktop, "key ctrl+s")
    assert ok(desktop, f'read "{DESK}\\hello.txt"') == "Hello\n"
    ok(desktop, "key ctrl+a")
    ok(desktop, 'clipboard "copied"')
    ok(desktop, "paste")
    ok(desktop, "key ctrl+s")
    assert ok(desktop, f'read "{DESK}\\hello.txt"') == "copied"


def test_type_needs_a_notepad(desktop: Desktop) -> None:
    result = run(desktop, 'type "lost"')
    assert result.returncode == 1 and "not notepad" in result.error


def test_windows_activate_and_close(desktop: Desktop) -> None:
    ok(desktop, "open settings")
    ok(desktop, f'open explorer "{DESK}"')
    assert ok(desktop, "windows") == "Desktop\nSettings"
    assert ok(desktop, "activate settings") == "Settings"
    assert ok(desktop, "windows") == "Settings\nDesktop"
    assert run(desktop, "activate Paint").returncode == 1
    ok(desktop, "close Desktop")
    ok(desktop, "close")
    assert run(desktop, "close").returncode == 1


def test_file_verbs(desktop: Desktop) -> None:
    ok(desktop, f'mkdir "{DESK}\\A\\B"')
    ok(desktop, f'write "{DESK}\\A\\one.txt" "1"')
    ok(desktop, f'append "{DESK}\\A\\one.txt" "2"')
    assert ok(desktop, f'read "{DESK}\\A\\one.txt"') == "12"
    assert ok(desktop, f'ls "{DESK}\\A"') == "B\none.txt"
    assert ok(desktop, f'copy "{DESK}\\A\\one.txt" "{DESK}\\A\\B"') == f"{DESK}\\A\\B\\one.txt"
    assert ok(desktop, f'rename "{DESK}\\A\\one.txt" two.txt') == f"{DESK}\\A\\two.txt"
    ok(desktop, f'move "{DESK}\\A\\two.txt" "{DESK}"')
    assert ok(desktop, f'exists "{DESK}\\two.txt"') == "True"
    assert ok(desktop, f'exists "{DESK}\\A\\two.txt"') == "False"
    ok(desktop, f'delete "{DESK}\\A"')
    assert ok(desktop, f'ls "{DESK}"') == "two.txt"
    assert run(desktop, f'move "{DESK}\\nope" "{DESK}\\x"').returncode == 1
    assert run(desktop, f'write "{DESK}\\no\\such\\f.txt" x').returncode == 1
    protected = run(desktop, f'delete "{DESK}"')
    assert protected.returncode == 1 and "system folder" in protected.error
    assert run(desktop, 'delete "C:\\"').returncode == 1


def test_file_verbs_refuse_escapes(desktop: Desktop, tmp_path: Path) -> None:
    # a host path of the test's own folder (never /etc: a regression would write there)
    escape = tmp_path / "escaped.txt"
    for command in (["read", "C:\\..\\x"], ["write", str(escape), "y"], ["ls", "D:\\"],
                    ["move", f"{DESK}\\a", "C:\\..\\..\\b"], ["open", "\\\\srv\\s\\a.txt"]):
        with pytest.raises(SandboxError):
            run(desktop, command)
    assert not escape.exists()


def test_settings_clock_and_calc(desktop: Desktop) -> None:
    assert ok(desktop, "set night_light on") == "on"
    assert ok(desktop, "set night_light_start 7:00 PM") == "07:00 PM"
    assert ok(desktop, 'set time_zone "Pacific Standard Time"') == "Pacific Standard Time"
    assert ok(desktop, "get night_light") == "on"
    assert desktop.settings.night_light is True
    assert ok(desktop, 'timer add 1h30m "Bread"') == "Bread"
    assert ok(desktop, "timer add 90s") == "Timer (00:01:30)"
    ok(desktop, "timer pause Bread")
    assert ok(desktop, "timer list").splitlines() == [
        "Bread\t01:30:00\tpaused",
        "Timer (00:01:30)\t00:01:30\trunning",
    ]
    assert ok(desktop, 'alarm add "7:30 AM" Gym') == "07:30"
    ok(desktop, "alarm off gym")
    assert ok(desktop, "alarm list") == "07:30\tGym\toff"
    ok(desktop, "worldclock add Tokyo")
    assert ok(desktop, "worldclock list") == "Tokyo"
    assert run(desktop, "calc 2+2").returncode == 1  # the calculator is not open
    ok(desktop, "open calc")
    assert ok(desktop, "calc (1+2)*3") == "9"
    assert ok(desktop, "calc 7 / 2") == "3.5"
    assert ok(desktop, "calc days 2024-01-03 2024-08-20") == "230"
    for bad in ("calc __import__('os')", "calc 1/0", "calc 9**999999"):
        assert run(desktop, bad).returncode == 1


def test_calc_history_lists_the_calculations_performed(desktop: Desktop) -> None:
    assert run(desktop, "calc history").returncode == 1  # closed: no history to read
    ok(desktop, "open calc")
    assert ok(desktop, "calc history") == ""
    ok(desktop, "calc 7006652")  # a number alone computes nothing
    ok(desktop, "calc 1234 * 5678")
    ok(desktop, "calc days 2024-08-20 2024-01-03")
    ok(desktop, "calc -(2)")
    ok(desktop, "open notepad")  # read whichever window is active, and read-only
    version = desktop.version
    assert ok(desktop, "calc history").splitlines() == [
        "1234*5678 = 7006652", "2024-01-03 to 2024-08-20 = 230 days"]
    assert desktop.version == version


def test_special_actions_are_no_ops(desktop: Desktop) -> None:
    for action in ("DONE", "FAIL", "WAIT", "wait"):
        assert run(desktop, action).returncode == 0


def test_sleep_really_sleeps_within_bounds(desktop: Desktop) -> None:
    verb, args = commands.parse("sleep 0.01")
    assert verb is commands.VERBS["sleep"] and args == ["0.01"]
    assert ok(desktop, "sleep 0") == ""


def test_every_verb_has_a_usage() -> None:
    for name, verb in commands.VERBS.items():
        assert verb.usage and 0 <= verb.min_args <= verb.max_args, name
