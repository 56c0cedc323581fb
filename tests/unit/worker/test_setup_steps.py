"""WAA setup steps on the simulated desktop."""

from __future__ import annotations

import base64

import pytest

from infra.local.desktop import Desktop
from infra.local.setup_steps import launch_words, run_steps

DOCS = "C:\\Users\\Docker\\Documents"


@pytest.mark.parametrize(
    ("command", "app", "path"),
    [
        ("notepad", "notepad", None),
        (["explorer", DOCS], "explorer", DOCS),
        (["start", "ms-clock://Timers"], "clock", "Timers"),
        ("ms-settings:nightlight", "settings", "nightlight"),
        ("calc", "calc", None),
    ],
)
def test_launch_words(command: str | list[str], app: str, path: str | None) -> None:
    assert launch_words(command) == (app, path)


def test_steps_build_a_desktop(desktop: Desktop) -> None:
    png = base64.b64encode(b"\x89PNG fake").decode()
    results = run_steps(desktop, [
        {"type": "create_folder", "parameters": {"path": f"{DOCS}\\Work"}},
        {"type": "create_file", "parameters": {"path": f"{DOCS}\\Work\\a.txt", "content": "hi"}},
        {"type": "upload_file", "parameters": {"path": f"{DOCS}\\New\\p.png",
                                               "content_base64": png}},
        {"type": "open", "parameters": {"path": f"{DOCS}\\Work\\a.txt"}},
        {"type": "launch", "parameters": {"command": ["explorer", f"{DOCS}\\Work"]}},
        {"type": "activate_window", "parameters": {"window_name": "a.txt - Notepad",
                                                   "strict": True}},
        {"type": "execute", "parameters": {"command": ["type", " there"]}},
        {"type": "command", "parameters": {"command": "key ctrl+s"}},
        {"type": "sleep", "parameters": {"seconds": 0}},
    ])
    assert [r.ok for r in results] == [True] * 9, [r.error for r in results]
    assert desktop.read_file(f"{DOCS}\\Work\\a.txt") == b"hi there"
    assert desktop.read_file(f"{DOCS}\\New\\p.png") == b"\x89PNG fake"
    assert desktop.titles() == ["a.txt - Notepad", "Work"]
    closed = run_steps(desktop, [{"type": "close_window", "parameters": {"window_name": "Work"}},
                                 {"type": "close_all"}, {"type": "clear_task_files"}])
    assert all(r.ok for r in closed)
    assert desktop.titles() == [] and desktop.list_names(DOCS) == []


def test_clear_task_files_brings_the_whole_drive_back_to_its_layout(desktop: Desktop) -> None:
    # What a run left outside the user folders must not leak into the next task, which may
    # check the whole drive (a file moved to C:\Windows\Temp instead of deleted).
    for folder in ("C:\\Program Files\\App", "C:\\Users\\Public"):
        desktop.make_folder(folder)
    for path in (f"{DOCS}\\a.txt", "C:\\Windows\\Temp\\cache1.tmp", "C:\\stray.bak",
                 "C:\\Program Files\\App\\app.exe", "C:\\Users\\Public\\x.txt"):
        desktop.write_file(path, b"x")
    desktop.make_folder("C:\\Users\\Docker\\Downloads\\old")
    assert all(r.ok for r in run_steps(desktop, [{"type": "clear_task_files"}]))
    drive = desktop.sandbox.drive
    assert sorted(p.relative_to(drive).as_posix() for p in drive.rglob("*")) == sorted(
        p.relative_to(drive).as_posix() for p in desktop.sandbox.protected() if p != drive)


@pytest.mark.parametrize(
    ("step", "needle"),
    [
        ({"type": "download", "parameters": {"files": []}}, "no internet"),
        ({"type": "teleport"}, "unknown step type"),
        ({"parameters": {}}, "'type'"),
        ({"type": "open", "parameters": {}}, "'path'"),
        ({"type": "open", "parameters": "C:\\"}, "must be an object"),
        ({"type": "launch", "parameters": {"command": "chrome"}}, "cannot launch 'chrome'"),
        ({"type": "activate_window", "parameters": {"window_name": "Ghost"}}, "no window"),
        ({"type": "sleep", "parameters": {"seconds": 99}}, "0 to 30"),
        ({"type": "execute", "parameters": {"command": "python -c 1"}}, "docs/local-worker.md"),
        ({"type": "execute", "parameters": {"command": "read C:\\none.txt"}}, "not found"),
        ({"type": "create_file", "parameters": {"path": "C:\\..\\x", "content": ""}}, "outside"),
        ({"type": "create_file", "parameters": {"path": "C:\\x", "content_base64": "@@"}},
         "base64"),
    ],
)
def test_failed_step_stops_the_list(desktop: Desktop, step: dict[str, object],
                                    needle: str) -> None:
    results = run_steps(desktop, [step, {"type": "close_all"}])
    assert len(results) == 1 and not results[0].ok
    assert needle in results[0].error
    assert results[0].to_json()["status"] == "error"
