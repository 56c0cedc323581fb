"""The live progress display of ``run``, ``sweep`` and ``pool-wait`` on a terminal (a
pseudo-terminal stands for the user's), and plain lines without control codes when piped."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evals.report.progress import eta_text, totals_line
from evals.run.runner import Snapshot
from tests.support.cli import run_cli
from tests.support.pty_cli import run_on_terminal

pytestmark = [
    pytest.mark.integration,
    # with a price, so that the cost so far is not zero
    pytest.mark.pool(name="live", workers=2, cli=True, wait=False, price_per_hour=3),
]

ESC = "\x1b"
TOTALS = re.compile(r"(\d+)/5 done: \d+ success, \d+ failure, \d+ error, \d+ not run \| "
                    r"elapsed \w+ \| ETA [\w?]+ \| cost (\$[\d.]+)")


def _run_args(pool: str, results: Path, *extra: str) -> list[str]:
    return ["run", "--pool", pool, "--tasks", "domain:notepad", "--agent", "oracle",
            "--results-dir", str(results), *extra]


def test_pool_wait_and_run_show_a_live_display_on_a_terminal(
    home: Path, pool: str, tmp_path: Path
) -> None:
    code, shown = run_on_terminal("oa-vm", "pool-wait", "--name", pool, home=home)
    assert code == 0, shown
    assert re.search(r"Pool live: \d/2 ready \| elapsed \w+ \| time left \w+", shown), shown
    assert "WORKER" in shown and "IN PHASE" in shown and ESC in shown
    assert shown.rstrip().endswith("Pool 'live' is ready: 2 worker(s).")

    code, shown = run_on_terminal("openadapt-evals", *_run_args(pool, tmp_path / "r"),
                                  home=home)
    assert code == 0, shown
    display, _, summary = shown.rpartition("\x1b[?25h")  # rich shows the cursor again at the end
    assert display, f"no live display: {shown!r}"
    frames = TOTALS.findall(display)
    assert frames and frames[-1][0] == "5", frames  # the last frame counts every task
    assert float(frames[-1][1].lstrip("$")) > 0  # priced pool: the cost so far is shown
    assert "WORKER" in display and "ON IT" in display and "running" in display
    assert "\x1b[1A" in display  # redrawn in place (cursor moved up), not printed line by line
    # the final summary is still printed, after the display and without control codes
    assert "Success rate: 100.0%" in summary and "Run folder:" in summary
    assert ESC not in summary


def test_piped_run_and_wait_print_plain_lines_with_an_eta(
    home: Path, pool: str, tmp_path: Path
) -> None:
    waited = run_cli("oa-vm", "pool-wait", "--name", pool, home=home)
    assert waited.returncode == 0, waited.stderr
    assert ESC not in waited.stdout + waited.stderr
    assert "Pool 'live' is ready" in waited.stdout

    ran = run_cli("openadapt-evals", *_run_args(pool, tmp_path / "r"), home=home)
    assert ran.returncode == 0, ran.stderr
    assert ESC not in ran.stdout + ran.stderr
    finished = [line for line in ran.stderr.splitlines() if re.match(r"\[\d/5\] ", line)]
    assert len(finished) == 5, ran.stderr
    assert all(re.search(r" - ETA \w+$", line) for line in finished), finished
    assert finished[-1].endswith(" - ETA 0s")
    assert "Success rate: 100.0%" in ran.stdout


def test_json_on_a_terminal_stays_plain(home: Path, pool: str, tmp_path: Path) -> None:
    assert run_cli("oa-vm", "pool-wait", "--name", pool, home=home).returncode == 0
    code, shown = run_on_terminal("openadapt-evals", *_run_args(pool, tmp_path / "r", "--json"),
                                  home=home)
    assert code == 0, shown
    assert ESC not in shown
    text = shown.replace("\r\n", "\n")
    document = text[text.index("{"):]  # the progress lines come first, on the same terminal
    assert Path(json.loads(document)["run_dir"]).is_dir()
    assert re.search(r"^\[5/5\] success .* - ETA 0s$", text[:text.index("{")], re.M), text


def test_sweep_shows_the_live_display_too(home: Path, tmp_path: Path) -> None:
    code, shown = run_on_terminal(
        "openadapt-evals", "sweep", "--tasks", "domain:notepad", "--agent", "oracle",
        "--workers", "2", "--results-dir", str(tmp_path / "r"), home=home,
    )
    assert code == 0, shown
    display, _, summary = shown.rpartition("\x1b[?25h")
    assert TOTALS.search(display) and "WORKER" in display, shown
    assert "Success rate: 100.0%" in summary


def _snapshot(done: int, session: int, elapsed: float, spent: float | None) -> Snapshot:
    return Snapshot(total=10, done=done, successes=done, failures=0, errors=0, not_run=0,
                    running={}, quarantined=[], elapsed_s=elapsed, done_this_session=session,
                    spent_usd=spent)


def test_eta_and_totals() -> None:
    assert eta_text(_snapshot(0, 0, 5.0, None)) == "?"  # nothing finished yet: no pace
    assert eta_text(_snapshot(4, 2, 20.0, None)) == "1m"  # 10 s a task this session, 6 left
    assert eta_text(_snapshot(10, 10, 20.0, None)) == "0s"
    line = totals_line(_snapshot(4, 4, 20.0, 0.0125))
    assert line == ("4/10 done: 4 success, 0 failure, 0 error, 0 not run | elapsed 20s | "
                    "ETA 30s | cost $0.0125")
    assert totals_line(_snapshot(4, 4, 20.0, None)).endswith("cost -")
