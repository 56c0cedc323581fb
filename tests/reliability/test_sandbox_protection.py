"""One agent action must not break a worker for good (issue item 4).

Moving or renaming ``C:\\Users`` or the profile used to be allowed; every later reset then failed
and the broken worker kept taking tasks. The profile root and the system folders are protected,
and a reset rebuilds the layout before it clears anything.
"""

from __future__ import annotations

import shutil

import pytest

from infra.local.commands import run
from infra.local.desktop import Desktop


@pytest.mark.parametrize(
    "command",
    [
        'move "C:\\Users" "C:\\Elsewhere"',
        'move "C:\\Users\\Docker" "C:\\Temp2"',
        'move "C:\\users\\docker\\desktop" "C:\\Program Files"',
        'rename "C:\\Users" Gone',
        'rename "C:\\Users\\Docker" Other',
        'rename "C:\\Windows" Win',
        'move "C:\\Windows\\Temp" "C:\\Users\\Docker\\Desktop"',
        'delete "C:\\Windows"',
        'delete "C:\\Program Files"',
    ],
)
def test_system_folders_cannot_be_moved_renamed_or_deleted(
    desktop: Desktop, command: str
) -> None:
    result = run(desktop, command)
    assert result.returncode != 0
    assert "system folder" in result.error
    drive = desktop.sandbox.drive
    for folder in ("Users/Docker/Desktop", "Windows/Temp", "Program Files"):
        assert (drive / folder).is_dir()


def test_ordinary_files_can_still_be_moved_and_renamed(desktop: Desktop) -> None:
    assert run(desktop, 'write "C:\\Users\\Docker\\Desktop\\a.txt" "x"').returncode == 0
    assert run(desktop, 'rename "C:\\Users\\Docker\\Desktop\\a.txt" b.txt').returncode == 0
    moved = run(desktop, 'move "C:\\Users\\Docker\\Desktop\\b.txt" "C:\\Users\\Docker\\Documents"')
    assert moved.returncode == 0, moved.error
    assert (desktop.sandbox.drive / "Users/Docker/Documents/b.txt").is_file()


def test_reset_rebuilds_a_missing_profile(desktop: Desktop) -> None:
    # A profile lost some other way (an older worker, a manual edit) must not break resets.
    shutil.rmtree(desktop.sandbox.drive / "Users")
    desktop.clear_task_files()
    for folder in ("Desktop", "Documents", "Downloads"):
        assert (desktop.sandbox.drive / "Users/Docker" / folder).is_dir()
