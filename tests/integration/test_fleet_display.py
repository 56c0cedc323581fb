"""What ``pool-resume`` and ``pool-repair`` show while workers start: the live display of
``pool-wait`` on a terminal (a pseudo-terminal stands for the user's), plain lines without
control codes when piped, and JSON on stdout (progress on stderr) with ``--json``. Real local
pools, the real CLI."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_cli
from tests.support.pools import READY_TIMEOUT
from tests.support.pty_cli import run_on_terminal
from tests.support.waiting import wait_gone

pytestmark = [pytest.mark.integration, pytest.mark.pool(name="shown", workers=2, cli=True)]

ESC = "\x1b"
HEAD = re.compile(r"Pool shown: \d/2 ready \| elapsed \w+ \| time left \w+")


def _status(home: Path) -> dict[str, Any]:
    result = run_cli("oa-vm", "pool-status", "--name", "shown", "--json", home=home)
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _kill(home: Path, index: int) -> int:
    pid = int(_status(home)["workers"][index]["pid"])
    os.kill(pid, signal.SIGKILL)
    wait_gone(pid)
    return pid


def _pause(home: Path) -> None:
    paused = run_cli("oa-vm", "pool-pause", "--name", "shown", home=home)
    assert paused.returncode == 0, paused.stderr


def test_resume_and_repair_show_the_live_display_on_a_terminal(home: Path, pool: str) -> None:
    _pause(home)
    code, shown = run_on_terminal("oa-vm", "pool-resume", "--name", pool, "--timeout",
                                  READY_TIMEOUT, home=home)
    assert code == 0, shown
    assert HEAD.search(shown), shown
    assert "WORKER" in shown and "IN PHASE" in shown and ESC in shown
    assert "resumed worker-0" in shown  # the command's own progress, above the table
    assert re.search(r"Pool 'shown' resumed: 2 worker\(s\) ready after \w+\.$", shown.rstrip())
    assert _status(home)["state"] == "ready"

    _kill(home, 1)
    code, shown = run_on_terminal("oa-vm", "pool-repair", "--name", pool, "--timeout",
                                  READY_TIMEOUT, home=home)
    assert code == 0, shown
    assert HEAD.search(shown) and "WORKER" in shown and ESC in shown, shown
    display, _, summary = shown.rpartition("\x1b[?25h")  # rich shows the cursor again at the end
    assert "replaced worker-1" in display
    assert "Pool 'shown': replaced worker-1." in summary and ESC not in summary
    assert _status(home)["state"] == "ready"


def test_piped_resume_and_repair_print_plain_lines(home: Path, pool: str) -> None:
    _pause(home)
    resumed = run_cli("oa-vm", "pool-resume", "--name", pool, "--timeout", READY_TIMEOUT,
                      home=home)
    assert resumed.returncode == 0, resumed.stderr
    assert ESC not in resumed.stdout + resumed.stderr
    # the heartbeat of pool-wait: a line per worker phase, with the time in it
    assert re.search(r"^\[\s*\w+\] worker-0: ready \(\w+ in this phase\)$", resumed.stdout,
                     re.M), resumed.stdout
    assert "Pool 'shown' resumed: 2 worker(s) ready after" in resumed.stdout

    _kill(home, 0)
    repaired = run_cli("oa-vm", "pool-repair", "--name", pool, "--timeout", READY_TIMEOUT,
                       home=home)
    assert repaired.returncode == 0, repaired.stderr
    assert ESC not in repaired.stdout + repaired.stderr
    assert re.search(r"^\[\s*\w+\] worker-0: ready ", repaired.stdout, re.M), repaired.stdout
    assert "Pool 'shown': replaced worker-0." in repaired.stdout


def test_json_stays_plain_even_on_a_terminal(home: Path, pool: str) -> None:
    _kill(home, 1)
    repaired = run_cli("oa-vm", "pool-repair", "--name", pool, "--timeout", READY_TIMEOUT,
                       "--json", home=home)
    assert repaired.returncode == 0, repaired.stderr
    document = json.loads(repaired.stdout)  # nothing but the JSON on stdout
    assert document["replaced"] == ["worker-1"] and document["state"] == "ready"
    assert "replaced worker-1" in repaired.stderr and ESC not in repaired.stderr

    _pause(home)
    code, shown = run_on_terminal("oa-vm", "pool-resume", "--name", pool, "--timeout",
                                  READY_TIMEOUT, "--json", home=home)
    assert code == 0, shown
    assert ESC not in shown
    text = shown.replace("\r\n", "\n")
    document = json.loads(text[text.index("\n{") + 1:])  # progress lines come first
    assert document["state"] == "ready"
    assert [w["state"] for w in document["workers"]] == ["ready", "ready"]
    assert re.search(r"^\[\s*\w+\] worker-1: ready ", text, re.M), text
