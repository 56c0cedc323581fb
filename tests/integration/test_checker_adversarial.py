"""Wrong runs a reviewer would try, played for real on a local worker: each must score 0.

The audit-verifier's edit operators only produce wrong runs that are edits of the reference
solution. These are the others: the right file in the wrong folder, the right name with the
wrong content, extra or duplicated content, case and whitespace tricks, the goal met with
collateral damage (other files renamed or rewritten, other settings flipped, extra timers), the
answer typed (or computed another way) where it should have been computed, DONE on an
infeasible task, FAIL on a feasible one. Each run starts from the task's setup on a real worker
process, is sent through the worker's HTTP API (``/execute``: the command language;
``/execute_windows``: pyautogui source), and is graded by the worker's ``/evaluate`` with the
task's shipped checker, as a sweep does.

Beside them, the reference solution and correct runs by another route must still score 1, and
an agent that does nothing must score 0 on every task.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evals.verifier_audit.local import replay
from tests.support.worker_proc import WorkerProcess
from waa_client.scoring import ScoringClient
from waa_client.waa import WaaClient

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "infra" / "local" / "tasks" / "examples"
H = "C:\\Users\\Docker"

TASKS = {
    "alarm": "c388208a-401c-5748-83d8-c4062ce2d1bb-WOS",
    "worldclock": "cd42b1b1-5323-5028-b63e-ec1cbc9d9f2a-WOS",
    "timer-bake": "d885a6b3-2fc8-5db1-b589-d7414f12e122-WOS",
    "timer-30m": "f05e6509-a999-56d1-9936-388eefb9618f-WOS",
    "delete-tmp": "12499638-c3db-5533-a99b-3855d677c533-WOS",
    "rename": "190a2655-b68a-5095-a33d-4584cf3fbb32-WOS",
    "archive": "1ea6a9af-3a80-521e-a6ba-f392a618d1b0-WOS",
    "png-list": "29064fad-01a2-5b69-8087-dd9a1f7c6ce2-WOS",
    "copy-photo": "330dc107-d320-5ef4-bbff-0b43af4721ab-WOS",
    "inf-share": "INF-17d76082-72d2-55ca-bc51-d4f0ea6cc095-WOS",
    "buy-eggs": "344d1278-e15c-5d2a-a48e-9193d441d1dd-WOS",
    "count": "62f753b2-5fda-5130-8ddb-733e3df8bec3-WOS",
    "status": "9df67e70-b315-56d9-a0fb-b467fa4ccc62-WOS",
    "inf-print": "INF-1bb8ebca-1e3c-5c23-a572-85bc724fe5df-WOS",
    "draft": "c499b229-110c-5fc8-9895-f2f879ac1512-WOS",
    "night-light": "5d0c082b-d2bd-5da5-8f10-d8d4b51e7239-WOS",
    "time-zone": "689e1e24-7f5d-5e66-8fe8-2cd1c53569d7-WOS",
    "night-schedule": "8a183604-e19e-5ecb-842b-1d842f4cb592-WOS",
    "dnd-or": "9ac83043-9fff-539f-b150-a6ecab0bf0e0-WOS",
    "inf-480hz": "INF-7e9ab77f-7158-5a5b-a587-a5287988b6f0-WOS",
    "notifications": "d999d632-3d7d-5774-9c6f-ccc79bea22ec-WOS",
    "dark-mode": "e112363f-4a10-536e-89c0-53e0fb3afa05-WOS",
    "calc-product": "2c82e242-3aa1-5fd4-b0ce-53a678d42149-WOS",
    "calc-days": "96f46cd3-9572-592e-b6d8-d0b0c4609e33-WOS",
}

# The correct end state of some tasks, in the command language, to build wrong runs on.
_RENAME = f'rename "{H}\\Desktop\\report_draft.txt" report_final.txt'
_DEL_TMP = [f'delete "{H}\\Downloads\\cache1.tmp"', f'delete "{H}\\Downloads\\cache2.tmp"']
_ARCHIVE = [f'mkdir "{H}\\Documents\\Archive"',
            f'move "{H}\\Documents\\Doc01.docx" "{H}\\Documents\\Archive\\Doc01.docx"',
            f'move "{H}\\Documents\\Doc02.docx" "{H}\\Documents\\Archive\\Doc02.docx"']
_PNGS = f"{H}\\Pictures\\png_files.txt"
_COPY = f'copy "{H}\\Pictures\\photo.png" "{H}\\Desktop\\photo.png"'
_NOTES = f"{H}\\Documents\\notes.txt"
_COUNT = f'write "{H}\\Documents\\example_count.txt" "7"'
_STATUS = f"{H}\\Desktop\\status.txt"
_PY = "import pyautogui\n"
_RESULT = f'write "{H}\\Desktop\\result.txt" "7006652"'
_DAYS = f'write "{H}\\Desktop\\numdays.txt" "230 days"'

WRONG: dict[str, dict[str, list[str]]] = {
    "alarm": {
        "7:30 PM, not AM": ['alarm add "7:30 PM" Gym', "DONE"],
        "label in lower case": ["alarm add 7:30 gym", "DONE"],
        "no label": ["alarm add 7:30", "DONE"],
        "label with a trailing blank": ['alarm add 7:30 "Gym "', "DONE"],
        "right alarm, switched off": ["alarm add 7:30 Gym", "alarm off Gym", "DONE"],
        "right alarm plus another": ["alarm add 7:30 Gym", "alarm add 8:00 Work", "DONE"],
        "right alarm twice": ["alarm add 7:30 Gym", "alarm add 7:30 Gym", "DONE"],
        "right alarm plus a timer": ["alarm add 7:30 Gym", "timer add 5m", "DONE"],
        "7:30 PM typed in the app": [
            _PY + "pyautogui.click(438, 112)",
            _PY + 'pyautogui.typewrite("7:30 PM")\npyautogui.press("tab")\n'
                  'pyautogui.typewrite("Gym")\npyautogui.press("enter")', "DONE"],
    },
    "worldclock": {
        "lower case": ["worldclock add tokyo", "DONE"],
        "another city": ["worldclock add Kyoto", "DONE"],
        "Tokyo plus another city": ["worldclock add Tokyo", "worldclock add London", "DONE"],
        "Tokyo with a trailing blank": ['worldclock add "Tokyo "', "DONE"],
        "Tokyo plus an alarm": ["worldclock add Tokyo", "alarm add 7:00", "DONE"],
    },
    "timer-bake": {
        "right timer, paused": ["timer add 3h Bake", "timer pause Bake", "DONE"],
        "2 hours": ["timer add 2h Bake", "DONE"],
        "label in lower case": ["timer add 3h bake", "DONE"],
        "right timer plus another": ["timer add 3h Bake", "timer add 5m Tea", "DONE"],
        "wrong timer running, right one paused": [
            "timer add 2h Bake", "timer add 3h Bake2", "timer pause Bake2", "DONE"],
        "right timer plus a world clock": ["timer add 3h Bake", "worldclock add Paris", "DONE"],
    },
    "timer-30m": {
        "wrong timer plus a paused right one": [
            "timer add 29m Wrong", "timer add 30m Right", "timer pause Right", "DONE"],
        "30 seconds": ["timer add 30s", "DONE"],
        "two 30 minute timers": ["timer add 30m", "timer add 30m", "DONE"],
        "right timer, paused": ["timer add 30m T", "timer pause T", "DONE"],
        "right timer plus an alarm": ["timer add 30m", "alarm add 9:00", "DONE"],
    },
    "delete-tmp": {
        "only one .tmp deleted": [_DEL_TMP[0], "DONE"],
        ".tmp files renamed, not deleted": [
            f'rename "{H}\\Downloads\\cache1.tmp" cache1.bak',
            f'rename "{H}\\Downloads\\cache2.tmp" cache2.bak', "DONE"],
        "invoice.txt renamed too": [
            *_DEL_TMP, f'rename "{H}\\Downloads\\invoice.txt" invoice.txt.bak', "DONE"],
        "invoice.txt overwritten": [*_DEL_TMP, f'write "{H}\\Downloads\\invoice.txt" "x"',
                                    "DONE"],
        "everything deleted, a look-alike written": [
            *_DEL_TMP, f'delete "{H}\\Downloads\\invoice.txt"',
            f'write "{H}\\Downloads\\old_invoice.txt" "keep"', "DONE"],
        "a new file left in Downloads": [*_DEL_TMP, f'write "{H}\\Downloads\\x.txt" "x"',
                                         "DONE"],
        ".tmp files moved to Documents, not deleted": [
            f'move "{H}\\Downloads\\cache1.tmp" "{H}\\Documents\\cache1.tmp"',
            f'move "{H}\\Downloads\\cache2.tmp" "{H}\\Documents\\cache2.tmp"', "DONE"],
        ".tmp files moved to a new folder in Downloads": [
            f'mkdir "{H}\\Downloads\\old"',
            f'move "{H}\\Downloads\\cache1.tmp" "{H}\\Downloads\\old\\cache1.tmp"',
            f'move "{H}\\Downloads\\cache2.tmp" "{H}\\Downloads\\old\\cache2.tmp"', "DONE"],
        ".tmp files moved out of the user folders": [
            f'move "{H}\\Downloads\\cache1.tmp" "C:\\Windows\\Temp\\cache1.tmp"',
            f'move "{H}\\Downloads\\cache2.tmp" "C:\\Windows\\Temp\\cache2.tmp"', "DONE"],
        ".tmp files moved to the drive's root under other names": [
            f'move "{H}\\Downloads\\cache1.tmp" "C:\\cache1.bak"',
            f'move "{H}\\Downloads\\cache2.tmp" "C:\\cache2.bak"', "DONE"],
        "everything selected and deleted in the app": [
            _PY + "pyautogui.click(400, 142)\npyautogui.hotkey(\"ctrl\", \"a\")",
            _PY + 'pyautogui.press("delete")', "DONE"],
    },
    "rename": {
        "deleted, new file with garbage": [
            f'delete "{H}\\Desktop\\report_draft.txt"',
            f'write "{H}\\Desktop\\report_final.txt" "garbage"', "DONE"],
        "copied, original kept": [
            f'copy "{H}\\Desktop\\report_draft.txt" "{H}\\Desktop\\report_final.txt"', "DONE"],
        "renamed, text appended": [_RENAME, f'append "{H}\\Desktop\\report_final.txt" " more"',
                                   "DONE"],
        "double extension": [
            f'rename "{H}\\Desktop\\report_draft.txt" report_final.txt.txt', "DONE"],
        "renamed plus a duplicate": [
            _RENAME, f'copy "{H}\\Desktop\\report_final.txt" '
                     f'"{H}\\Desktop\\report_final - Copy.txt"', "DONE"],
        "renamed into another folder": [
            f'move "{H}\\Desktop\\report_draft.txt" "{H}\\Documents\\report_final.txt"', "DONE"],
        "renamed, a copy left in Documents": [
            f'copy "{H}\\Desktop\\report_draft.txt" "{H}\\Documents\\report_draft.txt"',
            _RENAME, "DONE"],
        "double extension typed in the app": [
            _PY + "pyautogui.click(400, 142)",
            _PY + 'pyautogui.press("f2")\npyautogui.typewrite("report_final.txt.txt\\n")', "DONE"],
    },
    "archive": {
        "copied, not moved": [
            f'mkdir "{H}\\Documents\\Archive"',
            f'copy "{H}\\Documents\\Doc01.docx" "{H}\\Documents\\Archive\\Doc01.docx"',
            f'copy "{H}\\Documents\\Doc02.docx" "{H}\\Documents\\Archive\\Doc02.docx"', "DONE"],
        "originals deleted, garbage written in Archive": [
            f'mkdir "{H}\\Documents\\Archive"', f'delete "{H}\\Documents\\Doc01.docx"',
            f'delete "{H}\\Documents\\Doc02.docx"',
            f'write "{H}\\Documents\\Archive\\Doc01.docx" "garbage"',
            f'write "{H}\\Documents\\Archive\\Doc02.docx" "garbage"', "DONE"],
        "moved, notes.txt renamed": [
            *_ARCHIVE, f'rename "{_NOTES}" notes.txt.bak', "DONE"],
        "moved, notes.txt overwritten": [*_ARCHIVE, f'write "{_NOTES}" "gone"', "DONE"],
        "notes.txt moved too": [
            *_ARCHIVE, f'move "{_NOTES}" "{H}\\Documents\\Archive\\notes.txt"', "DONE"],
        "Archive on the Desktop": [
            f'mkdir "{H}\\Desktop\\Archive"',
            f'move "{H}\\Documents\\Doc01.docx" "{H}\\Desktop\\Archive\\Doc01.docx"',
            f'move "{H}\\Documents\\Doc02.docx" "{H}\\Desktop\\Archive\\Doc02.docx"', "DONE"],
        "moved, a new file left in Documents": [
            *_ARCHIVE, f'write "{H}\\Documents\\Doc03.txt" "x"', "DONE"],
    },
    "png-list": {
        "both names on one line": [f'write "{_PNGS}" "cs-black-000.png cs-gray-7f7f7f.png"',
                                   "DONE"],
        "tab between the names": [f'write "{_PNGS}" "cs-black-000.png\tcs-gray-7f7f7f.png"',
                                  "DONE"],
        "readme.txt listed too": [
            f'write "{_PNGS}" "cs-black-000.png\ncs-gray-7f7f7f.png\nreadme.txt"', "DONE"],
        "names without extension": [f'write "{_PNGS}" "cs-black-000\ncs-gray-7f7f7f"', "DONE"],
        "a name twice": [
            f'write "{_PNGS}" "cs-black-000.png\ncs-gray-7f7f7f.png\ncs-gray-7f7f7f.png"',
            "DONE"],
        "list on the Desktop": [
            f'write "{H}\\Desktop\\png_files.txt" "cs-black-000.png\ncs-gray-7f7f7f.png"', "DONE"],
        "list right, pictures deleted": [
            f'write "{_PNGS}" "cs-black-000.png\ncs-gray-7f7f7f.png"',
            f'delete "{H}\\Pictures\\cs-black-000.png"',
            f'delete "{H}\\Pictures\\cs-gray-7f7f7f.png"', "DONE"],
        "one line typed in Notepad": [
            _PY + 'pyautogui.hotkey("win", "r")\npyautogui.typewrite('
                  '"notepad C:\\\\Users\\\\Docker\\\\Pictures\\\\png_files.txt\\n")',
            _PY + 'pyautogui.typewrite("cs-black-000.png cs-gray-7f7f7f.png")\n'
                  'pyautogui.hotkey("ctrl", "s")', "DONE"],
    },
    "copy-photo": {
        "a text file named photo.png": [f'write "{H}\\Desktop\\photo.png" "not a picture"',
                                        "DONE"],
        "moved, not copied": [
            f'move "{H}\\Pictures\\photo.png" "{H}\\Desktop\\photo.png"', "DONE"],
        "copied under another name": [
            f'copy "{H}\\Pictures\\photo.png" "{H}\\Desktop\\photo - Copy.png"', "DONE"],
        "copied twice": [_COPY, f'copy "{H}\\Pictures\\photo.png" "{H}\\Desktop\\photo (2).png"',
                         "DONE"],
        "copied, original renamed": [_COPY, f'rename "{H}\\Pictures\\photo.png" old.png',
                                     "DONE"],
        "copied to Documents": [
            f'copy "{H}\\Pictures\\photo.png" "{H}\\Documents\\photo.png"', "DONE"],
        "copied to the Desktop and to Documents": [
            _COPY, f'copy "{H}\\Pictures\\photo.png" "{H}\\Documents\\photo.png"', "DONE"],
    },
    "inf-share": {
        "DONE on an infeasible task": ["DONE"],
        "something done, then DONE": ["open explorer", "DONE"],
    },
    "buy-eggs": {
        "typed, not saved": ["key enter", 'type "Buy eggs"', "DONE"],
        "on the same line": ['type " Buy eggs"', "key ctrl+s", "DONE"],
        "before Buy milk": ["key ctrl+a", 'type "Buy eggs\nBuy milk"', "key ctrl+s", "DONE"],
        "twice": ["key enter", 'type "Buy eggs\nBuy eggs"', "key ctrl+s", "DONE"],
        "lower case": ["key enter", 'type "buy eggs"', "key ctrl+s", "DONE"],
        "saved as another file": ["key enter", 'type "Buy eggs"', f'save "{H}\\Documents\\n2.txt"',
                                  "DONE"],
        "done, then FAIL": ["key enter", 'type "Buy eggs"', "key ctrl+s", "FAIL"],
    },
    "count": {
        "wrong count": [f'write "{H}\\Documents\\example_count.txt" "8"', "DONE"],
        "number with words": [f'write "{H}\\Documents\\example_count.txt" "7 times"', "DONE"],
        "in words": [f'write "{H}\\Documents\\example_count.txt" "seven"', "DONE"],
        "in the wrong folder": [f'write "{H}\\Desktop\\example_count.txt" "7"', "DONE"],
        "right count, largefile.txt deleted": [
            _COUNT, f'delete "{H}\\Documents\\largefile.txt"', "DONE"],
        "right count, largefile.txt rewritten": [
            _COUNT, f'write "{H}\\Documents\\largefile.txt" "example"', "DONE"],
    },
    "status": {
        "capitalised": ["key ctrl+a", 'type "Final"', "key ctrl+s", "DONE"],
        "appended, not replaced": ['type " final"', "key ctrl+s", "DONE"],
        "with a full stop": ["key ctrl+a", 'type "final."', "key ctrl+s", "DONE"],
        "typed, not saved": ["key ctrl+a", 'type "final"', "DONE"],
        "saved as another file": ["key ctrl+a", 'type "final"',
                                  f'save "{H}\\Desktop\\status2.txt"', "DONE"],
        "emptied": ["key ctrl+a", "key backspace", "key ctrl+s", "DONE"],
    },
    "inf-print": {
        "DONE on an infeasible task": ["DONE"],
        "something done, then DONE": [f'write "{H}\\Documents\\printed.txt" "x"', "DONE"],
    },
    "draft": {
        "saved on the Desktop": ['type "This is a draft."', f'save "{H}\\Desktop\\draft.txt"',
                                 "DONE"],
        "lower case": ['type "this is a draft."', f'save "{H}\\Documents\\draft.txt"', "DONE"],
        "text added": ['type "This is a draft. More."', f'save "{H}\\Documents\\draft.txt"',
                       "DONE"],
        "double extension": ['type "This is a draft."',
                             f'save "{H}\\Documents\\draft.txt.txt"', "DONE"],
        "typed, not saved": ['type "This is a draft."', "DONE"],
        "saved empty": [f'save "{H}\\Documents\\draft.txt"', "DONE"],
    },
    "night-light": {
        "on, dark mode switched on too": ["set night_light on", "set dark_mode on", "DONE"],
        "on, notifications switched off": ["set night_light on", "set notifications off",
                                           "DONE"],
        "toggled twice": ["set night_light on", "set night_light off", "DONE"],
        "done, then FAIL": ["set night_light on", "FAIL"],
    },
    "time-zone": {
        "lower case": ['set time_zone "pacific standard time"', "DONE"],
        "abbreviation": ["set time_zone PST", "DONE"],
        "another zone": ['set time_zone "Mountain Standard Time"', "DONE"],
        "right zone, dark mode switched on": [
            'set time_zone "Pacific Standard Time"', "set dark_mode on", "DONE"],
    },
    "night-schedule": {
        "on, schedule not changed": ["set night_light on", "DONE"],
        "on, times swapped": ["set night_light on", 'set night_light_start "7:00 AM"',
                              'set night_light_end "7:00 PM"', "DONE"],
        "schedule right, left off": ['set night_light_start "7:00 PM"',
                                     'set night_light_end "7:00 AM"', "DONE"],
        "right, dark mode switched on": [
            "set night_light on", 'set night_light_start "7:00 PM"',
            'set night_light_end "7:00 AM"', "set dark_mode on", "DONE"],
    },
    "dnd-or": {
        "neither, dark mode instead": ["set dark_mode on", "DONE"],
        "do not disturb on, night light switched on": [
            "set do_not_disturb on", "set night_light on", "DONE"],
        "notifications off, time zone changed": [
            "set notifications off", 'set time_zone "Pacific Standard Time"', "DONE"],
    },
    "inf-480hz": {
        "DONE on an infeasible task": ["DONE"],
        "a setting changed, then DONE": ["set dark_mode on", "DONE"],
    },
    "notifications": {
        "do not disturb instead": ["set do_not_disturb on", "DONE"],
        "off, dark mode switched on": ["set notifications off", "set dark_mode on", "DONE"],
        "toggled twice": ["set notifications off", "set notifications on", "DONE"],
    },
    "dark-mode": {
        "dark mode and night light": ["set dark_mode on", "set night_light on", "DONE"],
        "toggled twice": ["set dark_mode on", "set dark_mode off", "DONE"],
        "night light instead": ["set night_light on", "DONE"],
    },
    "calc-product": {
        "wrong number in the file": ["calc 1234*5678",
                                     f'write "{H}\\Desktop\\result.txt" "7006625"', "DONE"],
        "number with separators": ["calc 1234*5678",
                                   f'write "{H}\\Desktop\\result.txt" "7,006,652"', "DONE"],
        "the sum written out": ["calc 1234*5678",
                                f'write "{H}\\Desktop\\result.txt" "1234*5678=7006652"', "DONE"],
        "file right, calculator shows another result": ["calc 1234*5679", _RESULT, "DONE"],
        "file right, calculator closed": [_RESULT, "close Calculator", "DONE"],
        "file in Documents": ["calc 1234*5678", f'write "{H}\\Documents\\result.txt" "7006652"',
                              "DONE"],
        "done, then FAIL": ["calc 1234*5678", _RESULT, "FAIL"],
        "the answer typed on the calculator, not computed": ['type "7006652"', _RESULT, "DONE"],
        "the answer entered with = , not computed": [
            _PY + 'pyautogui.typewrite("7006652")\npyautogui.press("enter")', _RESULT, "DONE"],
        "the answer sent as a calc command": ["calc 7006652", _RESULT, "DONE"],
        "the answer computed another way": ["calc 7006650+2", _RESULT, "DONE"],
    },
    "calc-days": {
        "number only": ["calc days 2024-01-03 2024-08-20",
                        f'write "{H}\\Desktop\\numdays.txt" "230"', "DONE"],
        "one day off": ["calc days 2024-01-03 2024-08-20",
                        f'write "{H}\\Desktop\\numdays.txt" "231 days"', "DONE"],
        "file right, calculator on other dates": ["calc days 2024-01-03 2024-08-21", _DAYS,
                                                  "DONE"],
        "file right, calculator not used": [_DAYS, "DONE"],
        "the answer typed on the calculator, not computed": ['type "230"', _DAYS, "DONE"],
        "the answer computed as arithmetic": ["calc 229+1", _DAYS, "DONE"],
    },
}
"""Per task (by short name): wrong runs, each a list of actions ending in the final answer."""

RIGHT: dict[str, dict[str, list[str]]] = {
    "alarm": {"by command": ["alarm add 7:30 Gym", "DONE"],
              "Clock closed afterwards": ["alarm add 7:30 Gym", "close Clock", "DONE"],
              "24 h time": ["alarm add 07:30 Gym", "DONE"]},
    "worldclock": {"by command": ["worldclock add Tokyo", "DONE"]},
    "timer-bake": {"in minutes": ["timer add 180m Bake", "DONE"]},
    "timer-30m": {"with a label": ["timer add 30m Wrap-up", "DONE"],
                  "Clock closed afterwards": ["timer add 30m", "close Clock", "DONE"],
                  "in seconds": ["timer add 1800", "DONE"]},
    "delete-tmp": {"by command": [*_DEL_TMP, "DONE"]},
    "rename": {"copy then delete": [
        f'copy "{H}\\Desktop\\report_draft.txt" "{H}\\Desktop\\report_final.txt"',
        f'delete "{H}\\Desktop\\report_draft.txt"', "DONE"],
        "by command": [_RENAME, "DONE"]},
    "archive": {"by command": [*_ARCHIVE, "DONE"],
                "Explorer closed afterwards": [*_ARCHIVE, "close", "DONE"],
                "Archive opened afterwards": [*_ARCHIVE, f'open "{H}\\Documents\\Archive"',
                                              "DONE"]},
    "png-list": {"trailing newline": [
        f'write "{_PNGS}" "cs-black-000.png\ncs-gray-7f7f7f.png\n"', "DONE"],
        "blank line between": [f'write "{_PNGS}" "cs-black-000.png\n\ncs-gray-7f7f7f.png"',
                               "DONE"]},
    "copy-photo": {"by command": [_COPY, "DONE"]},
    "buy-eggs": {"by command": ["key enter", 'type "Buy eggs"', "key ctrl+s", "DONE"]},
    "count": {"with a newline": [f'write "{H}\\Documents\\example_count.txt" "7\n"', "DONE"]},
    "status": {"with a newline": ["key ctrl+a", 'type "final\n"', "key ctrl+s", "DONE"]},
    "draft": {"by command": ['type "This is a draft."', f'save "{H}\\Documents\\draft.txt"',
                            "DONE"]},
    "night-light": {"by command": ["set night_light on", "DONE"]},
    "time-zone": {"by command": ['set time_zone "Pacific Standard Time"', "DONE"]},
    "night-schedule": {"by command": ["set night_light on", 'set night_light_start "19:00"',
                                      'set night_light_end "07:00"', "DONE"]},
    "dnd-or": {"do not disturb": ["set do_not_disturb on", "DONE"],
               "notifications off": ["set notifications off", "DONE"],
               "both": ["set do_not_disturb on", "set notifications off", "DONE"]},
    "notifications": {"by command": ["set notifications off", "DONE"]},
    "dark-mode": {"by command": ["set dark_mode on", "DONE"]},
    "calc-product": {"by command": ["calc 1234*5678", _RESULT, "DONE"],
                     "with blanks and x": ["calc 1234 x 5678", _RESULT, "DONE"],
                     "typed on the calculator's keys": [
                         _PY + 'pyautogui.typewrite("1234*5678=")', _RESULT, "DONE"],
                     "after another calculation": ["calc 2+2", "calc 1234*5678", _RESULT,
                                                   "DONE"]},
    "calc-days": {"by command": ["calc days 2024-01-03 2024-08-20", _DAYS, "DONE"],
                  "dates in the other order": ["calc days 2024-08-20 2024-01-03", _DAYS, "DONE"],
                  "upper case": ["calc days 2024-01-03 2024-08-20",
                                 f'write "{H}\\Desktop\\numdays.txt" "230 DAYS"', "DONE"]},
    "inf-share": {"FAIL": ["FAIL"]},
    "inf-print": {"FAIL": ["FAIL"]},
    "inf-480hz": {"FAIL": ["FAIL"]},
}
"""Per task: correct runs by another route than the reference solution; each must score 1."""


def load_task(short: str) -> dict[str, Any]:
    """The shipped task JSON (evaluator, setup and reference solution) for a short name."""
    path = next(EXAMPLES.glob(f"*/{TASKS[short]}.json"))
    task: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return task


def _cases(table: dict[str, dict[str, list[str]]]) -> list[Any]:
    return [pytest.param(short, name, actions, id=f"{short}:{name}")
            for short, runs in table.items() for name, actions in runs.items()]


def _scoring(worker: WorkerProcess) -> ScoringClient:
    return ScoringClient(worker.scoring_url, read_timeout=60.0)


def _play(worker: WorkerProcess, short: str, actions: list[str]) -> tuple[float, str]:
    waa = WaaClient(worker.waa_url, read_timeout=60.0)
    run = replay(waa, _scoring(worker), load_task(short), TASKS[short], actions)
    assert run.error is None, run.error
    assert run.score is not None
    return run.score, run.reason


@pytest.mark.parametrize(("short", "name", "actions"), _cases(WRONG))
def test_a_wrong_run_scores_0(
    shared_worker: WorkerProcess, short: str, name: str, actions: list[str]
) -> None:
    score, reason = _play(shared_worker, short, actions)
    assert score == 0.0, f"{short}: the wrong run '{name}' was accepted ({reason})"


@pytest.mark.parametrize(("short", "name", "actions"), _cases(RIGHT))
def test_a_correct_run_by_another_route_scores_1(
    shared_worker: WorkerProcess, short: str, name: str, actions: list[str]
) -> None:
    score, reason = _play(shared_worker, short, actions)
    assert score == 1.0, f"{short}: the correct run '{name}' was refused ({reason})"


@pytest.mark.parametrize("short", ["inf-share", "inf-print", "inf-480hz"])
@pytest.mark.parametrize("answer", ["fail", "FAIL ", "Fail", "DONE", ""])
def test_an_infeasible_task_takes_exactly_fail(
    shared_worker: WorkerProcess, short: str, answer: str
) -> None:
    # Sent to /evaluate as is (an agent loop would normalise it): WAA compares exactly.
    verdict = _scoring(shared_worker).evaluate(load_task(short), answer)
    assert verdict["score"] == 0.0, verdict
    assert _scoring(shared_worker).evaluate(load_task(short), "FAIL")["score"] == 1.0


@pytest.mark.parametrize("short", list(TASKS))
def test_the_reference_solution_scores_1_and_doing_nothing_0(
    shared_worker: WorkerProcess, short: str
) -> None:
    task = load_task(short)
    score, reason = _play(shared_worker, short, list(task["reference_solution"]))
    assert score == 1.0, f"{short}: the reference solution was refused ({reason})"
    score, reason = _play(shared_worker, short, ["DONE"])
    assert score == 0.0, f"{short}: doing nothing was accepted ({reason})"


def test_every_local_task_is_covered() -> None:
    shipped = {p.stem for p in EXAMPLES.glob("*/*.json")}
    assert shipped == set(TASKS.values())
    assert all(WRONG.get(short) for short in TASKS)
