"""The UI-change study on a real local pool, its records app in the worker's real Chromium:
every success is confirmed by reading the app's store back from the page, and a study whose
readback is broken refuses to count; the whole study through the real CLI (slow)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from evals.tasks.ui_change import ReadbackError, Worker, read_store, run_study
from infra.local.browser import find_chromium
from oa_vm import api
from oa_vm.model import state
from tests.support.cli import run_cli

pytestmark = [
    pytest.mark.pool(name="st"),
    pytest.mark.integration,
    pytest.mark.timeout(600),
    pytest.mark.skipif(find_chromium() is None, reason="needs Chromium (Debian's chromium)"),
]


@pytest.fixture(scope="module")
def study_worker(pooled: Path) -> Iterator[Worker]:
    """The shared pool's one worker (its browser started on first use), as the study drives it."""
    with api.connect("st", read_timeout=60.0) as connections:
        yield Worker(connections[0].waa)


def test_a_success_needs_the_store_readback(study_worker: Worker) -> None:
    cells = run_study(study_worker, ["by-role", "by-name"], 1, conditions=["rename"])
    # the store confirms what each arm did: by-role saved, by-name stopped at "View"
    assert (cells["rename"]["by-role"].successes, cells["rename"]["by-name"].successes) == (1, 0)
    assert cells["rename"]["by-name"].stopped == 1

    def broken(w: Worker, window: str) -> list[dict[str, str]]:
        return read_store(w, "no-such-window")  # the page it reads is gone

    with pytest.raises(ReadbackError, match="reading the store failed"):
        run_study(study_worker, ["by-role"], 1, conditions=["clean"], readback=broken)

    def empty(w: Worker, window: str) -> list[dict[str, str]]:
        read_store(w, window)
        return []  # the arm clicked Save and the banner says so; the store holds nothing

    cells = run_study(study_worker, ["by-role"], 1, conditions=["clean"], readback=empty)
    assert cells["clean"]["by-role"].successes == 0


def test_unknown_arms_are_refused_in_one_line_before_any_pool(tmp_path: Path) -> None:
    ran = run_cli("openadapt-evals", "study", "ui-change", "--agents", "by-role,by-smell",
                  home=tmp_path / "home")
    assert "unknown arm 'by-smell'" in ran.assert_one_line_error()
    assert not (tmp_path / "home").exists() or state.list_names() == []


@pytest.mark.slow  # 27 runs in a real browser on a temporary pool
def test_the_study_through_the_cli(tmp_path: Path) -> None:
    ran = run_cli("openadapt-evals", "study", "ui-change", "--agents",
                  "by-role,by-position,by-name", "--runs", "3", "--json",
                  home=tmp_path / "home", timeout=500)
    assert ran.returncode == 0, ran.stderr
    cells = json.loads(ran.stdout)
    shown = {c: {a: (v["successes"], v["runs"]) for a, v in row.items()}
             for c, row in cells.items()}
    assert shown == {
        "clean": {"by-role": (3, 3), "by-position": (3, 3), "by-name": (3, 3)},
        "theme": {"by-role": (3, 3), "by-position": (3, 3), "by-name": (3, 3)},
        "rename": {"by-role": (3, 3), "by-position": (3, 3), "by-name": (0, 3)},
    }
    assert ran.stderr.count("confirmed by the store") == 24


def test_a_broken_readback_ends_the_cli_by_the_one_error_rule(
    pooled: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # In process, so the readback can be broken: the command's error goes through the one rule
    # every error of the script takes (one line, exit 1, the JSON error under --json).
    import evals.tasks.ui_change as ui_change
    from evals.cli.app import main

    def unreadable(*args: object, **kwargs: object) -> None:
        raise ReadbackError("reading the store failed: the page is gone")

    monkeypatch.setattr(ui_change, "run_study", unreadable)
    monkeypatch.setattr("sys.argv", ["openadapt-evals", "study", "ui-change", "--pool", "st",
                                     "--agents", "by-role", "--runs", "1", "--json"])
    with pytest.raises(SystemExit) as ended:
        main()
    out, err = capsys.readouterr()
    assert ended.value.code == 1
    line = ("openadapt-evals: error: reading the store failed: the page is gone; no run is "
            "counted without its store readback")
    assert err.strip().splitlines()[-1] == line
    assert json.loads(out) == {"error": line.removeprefix("openadapt-evals: error: "),
                               "exit_code": 1}
