"""One vocabulary, finished: errors name the option as the user typed it, in the user's units;
``--help`` lists the new names first and prints durations as ``10m``; a bare number is taken only
where the option's name or help gives its unit; ``--tasks`` is a selection everywhere (``N`` is
the first N). Every command here is the real console script, run as a subprocess."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.cli import Result, run_cli

pytestmark = pytest.mark.integration

NOTEPAD_TASK = "c499b229-110c-5fc8-9895-f2f879ac1512-WOS"  # in the bundled local suite
FLOW = "openadapt-eval-flow"


def _ok(result: Result) -> Result:
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def _nothing_created(home: Path) -> None:
    pools = home / "pools"
    assert not pools.exists() or not any(pools.iterdir()), list(pools.iterdir())


def _flat(text: str) -> str:
    """Help text with its line wrapping undone."""
    return " ".join(text.split())


ERRORS = [
    # (script, arguments, the one line's message after "<prog>: error: ", what it must not say)
    ("oa-vm", ["pool-create", "--cloud", "local", "--ttl", "9999d", "-y"],
     "--ttl must be at most 365d, not 9999d", ["--ttl-hours", "239976"]),
    ("oa-vm", ["pool-create", "--cloud", "local", "--ttl-hours", "9000", "-y"],
     "--ttl-hours must be at most 8760 hours (365d), not 9000", []),
    ("oa-vm", ["pool-create", "--cloud", "local", "--ttl", "8", "-y"],
     "--ttl needs a unit, e.g. 8h; --ttl-hours 8 means 8 hours", []),
    ("oa-vm", ["pool-create", "--cloud", "local", "--ttl=soon", "-y"],
     "--ttl: 'soon' is not a duration; use e.g. 90s, 30m, 2h, 1d", ["--ttl-hours", "number of"]),
    ("oa-vm", ["pool-create", "--cloud", "local", "--workers", "x", "-y"],
     "--workers must be a whole number, not 'x'", ["Input should be"]),
    ("oa-vm", ["pool-resume", "--pool", "p", "--ttl", "400d"],
     "--ttl must be at most 365d, not 400d", ["--ttl-hours"]),
    ("oa-vm", ["pool-pause", "--pool", "p", "--keep", "3"],
     "--keep needs a unit, e.g. 3d; --keep-days 3 means 3 days", []),
    ("oa-vm", ["pool-wait", "--timeout", "soon"],
     "--timeout: 'soon' is not a duration; use e.g. 90s, 30m, 2h, 1d or a number of minutes, "
     "or auto", []),
    ("oa-vm", ["pool-extend", "--by", "soon"],
     "--by: 'soon' is not a duration; use e.g. 90s, 30m, 2h, 1d or a number of hours", []),
    ("openadapt-evals", ["run", "--tasks", "all", "--agent", "noop", "--wait-for-pool", "5"],
     "--wait-for-pool needs a unit, e.g. 5s", []),
    # a bare zero where a unit is wanted: no unit mends it, so none is offered ("e.g. 0h",
    # which was then refused as zero), in every option that takes no bare number
    ("oa-vm", ["pool-create", "--cloud", "local", "--ttl", "0", "-y"],
     "--ttl: '0' must be more than zero", ["e.g. 0h", "--ttl-hours 0"]),
    ("oa-vm", ["pool-resume", "--pool", "p", "--ttl", "0"],
     "--ttl: '0' must be more than zero", ["e.g. 0h"]),
    ("oa-vm", ["pool-pause", "--pool", "p", "--keep", "0"],
     "--keep: '0' must be more than zero", ["e.g. 0d"]),
    ("openadapt-evals", ["run", "--tasks", "all", "--agent", "noop", "--wait-for-pool", "0"],
     "--wait-for-pool: '0' must be more than zero", ["e.g. 0s"]),
    ("openadapt-evals", ["run", "--tasks", "all", "--agent", "noop", "--wait-ready", "0"],
     "--wait-ready: '0' must be more than zero", ["e.g. 0s"]),
    ("openadapt-evals", ["sweep", "--tasks", "all", "--agent", "noop", "--ttl", "0.0"],
     "--ttl: '0.0' must be more than zero", ["e.g. 0.0h"]),
    ("openadapt-evals", ["sweep", "--tasks", "all", "--agent", "noop", "--cloud", "aws",
                         "--fault", "latency=1"],
     "--fault is for local pools (--cloud local)", ["--ssh-via", "--tasks-dir"]),
    (FLOW, ["--dry-run", "--price-per-hour", "-1"],
     "--price-per-hour must be a non-negative number of $/hour, not -1", ["--vm-hourly"]),
    (FLOW, ["--dry-run", "--vm-hourly", "-1"],
     "--vm-hourly must be a non-negative number of $/hour, not -1", ["--price-per-hour"]),
    (FLOW, ["--dry-run", "--price-per-hour", "abc"],
     "--price-per-hour must be a number, not 'abc'", ["--vm-hourly"]),
    (FLOW, ["--dry-run", "--price-per-hour", "1", "--cloud", "aws"],
     "give either --price-per-hour or --cloud", ["--vm-hourly"]),
    (FLOW, ["--dry-run", "--tasks", "local_small"],
     "--tasks 'local_small': a dry run reads no task catalog", []),
    ("openadapt-evals", ["tasks", "99"],
     "--tasks '99': a number N selects the first N tasks", []),
    # the dry run's catalog is WAA's 154 tasks, and the pool it prices has a size limit: it
    # priced 100000 tasks, and 100000 workers, that no run could have
    (FLOW, ["--dry-run", "--tasks", "155"],
     "--tasks '155': a number N selects the first N tasks, and WAA's suite has 154; give 1 to "
     "154", []),
    # an option the kind of run does not read: the dry run took --pool (a run on it was
    # expected, an estimate came), --live priced nothing and replayed when hybrid was asked
    (FLOW, ["--pool", "p", "--task-ids", NOTEPAD_TASK],
     "--pool is for a live run; add --live to run on the pool, or leave it out", []),
    (FLOW, ["--dry-run", "--max-cost-usd", "5"], "--max-cost-usd is for a live run", []),
    (FLOW, ["--live", "--pool", "p", "--task-ids", NOTEPAD_TASK, "--bundles", ".",
            "--workers", "4"], "--workers is for the dry run's estimate", []),
    (FLOW, ["--live", "--pool", "p", "--task-ids", NOTEPAD_TASK, "--bundles", ".", "--mode",
            "hybrid"], "--live replays compiled bundles only (--mode replay)", []),
    (FLOW, ["--dry-run", "--workers", "257"], "--workers 257 is more than the limit of 256",
     []),
    (FLOW, ["--dry-run", "--workers", "100000", "--price-per-hour", "1"],
     "--workers 100000 is more than the limit of 256", []),
    ("openadapt-evals", ["mock", "--tasks", "nope"], "no index or task named 'nope'", []),
    # a range's bounds said as every other bound (it was "--workers: Input should be less than
    # or equal to 16"), by the one rule of usage errors
    ("openadapt-evals", ["mock", "--workers", "99"], "--workers must be at most 16, not 99",
     ["Input should be"]),
    ("openadapt-evals", ["mock", "--workers", "0"], "--workers must be at least 1, not 0",
     ["Input should be"]),
    ("openadapt-evals", ["study", "ui-change", "--runs", "21"],
     "--runs must be at most 20, not 21", ["Input should be"]),
]


@pytest.mark.parametrize(("script", "args", "message", "unsaid"), ERRORS,
                         ids=[" ".join(e[1][:4]) for e in ERRORS])
def test_an_error_names_the_option_typed_in_the_users_units(
    home: Path, script: str, args: list[str], message: str, unsaid: list[str]
) -> None:
    line = run_cli(script, *args, home=home).assert_one_line_error()
    assert line.startswith(f"{script}: error: {message}"), line
    for text in unsaid:
        assert text not in line, line
    _nothing_created(home)


def test_a_hint_to_choose_a_pool_names_an_option_run_has(home: Path) -> None:
    for pool in ("a", "b"):
        _ok(run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "1", "--pool", pool,
                    "-y", home=home))
    done = run_cli("openadapt-evals", "run", "--tasks", "1", "--agent", "noop", home=home)
    line = done.assert_one_line_error()
    assert "choose one with --pool" in line and "--name" not in line, line
    assert done.returncode == 2, line  # bad input, as a pool named wrongly is
    for words in (["pool-status"], ["pool-wait"], ["pool-cleanup", "-y"]):
        done = run_cli("oa-vm", *words, home=home)
        assert "choose one with --pool" in done.assert_one_line_error()
        assert done.returncode == 2, words


def test_help_lists_new_names_first_and_durations_with_units(home: Path) -> None:
    def help_of(script: str, *words: str) -> str:
        return _flat(_ok(run_cli(script, *words, "--help", home=home)).stdout)

    create = help_of("oa-vm", "pool-create")
    assert "-n, --pool, --name <str>" in create
    assert "--ttl, --ttl-hours <duration>" in create and "[default: 4h]" in create
    assert "(--ttl-hours N: N hours)" in create
    pause = help_of("oa-vm", "pool-pause")
    assert "--keep, --keep-days <duration>" in pause and "[default: 7d]" in pause
    assert "--ttl, --ttl-hours <duration>" in help_of("oa-vm", "pool-resume")
    assert "(a bare number is minutes)" in help_of("oa-vm", "pool-wait")
    run = help_of("openadapt-evals", "run")
    assert re.search(r"--task-timeout <duration> .*\(a bare number is seconds\)\. "
                     r"\[default: 10m\]", run), run
    assert "[default: 1m]" in run and "[default: 0s]" in run
    assert re.search(r"--wait-for-pool <duration> .*\(give a unit\)", run), run
    sweep = help_of("openadapt-evals", "sweep")
    assert "-n, --pool, --name <str>" in sweep and "[default: 1h10m]" in sweep
    assert "--price-per-hour, --vm-hourly <float>" in help_of(FLOW)
    for text in (create, pause, run, sweep):
        assert not re.search(r"\[default: \d+\.\d+\]", text), text  # 600.0, 4.0, 7.0...


def test_tasks_help_offers_what_the_local_suite_has(home: Path) -> None:
    for words in (["run"], ["sweep"], ["tasks"]):
        shown = _flat(_ok(run_cli("openadapt-evals", *words, "--help", home=home)).stdout)
        assert "test_small" not in shown, (words, shown)
        assert "local_all, local_small" in shown and "N (the first N of all)" in shown


def test_tasks_takes_a_selection_argument_and_a_count(home: Path) -> None:
    def listed(*args: str) -> list[str]:
        data = json.loads(_ok(run_cli("openadapt-evals", "tasks", *args, "--json",
                                      home=home)).stdout)
        return [t["task_id"] for t in data["tasks"]]

    every = listed("all")
    assert every == listed("--tasks", "all") == listed() and len(every) == 24
    assert listed("3") == listed("--tasks", "3") == every[:3]
    line = run_cli("openadapt-evals", "tasks", "all", "--tasks", "3",
                   home=home).assert_one_line_error()
    assert "two selections" in line


def test_sweep_runs_the_first_n_tasks(home: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    _ok(run_cli("openadapt-evals", "sweep", "--workers", "1", "--tasks", "2", "--agent", "noop",
                "--run-name", "two", "--results-dir", str(results), home=home, timeout=300))
    every = json.loads(_ok(run_cli("openadapt-evals", "tasks", "all", "--json",
                                   home=home)).stdout)["tasks"]
    done = sorted(p.name for p in (results / "two" / "tasks").iterdir())
    assert done == sorted(t["task_id"] for t in every[:2]), done


def test_mock_takes_a_selection(home: Path, tmp_path: Path) -> None:
    shown = _ok(run_cli("openadapt-evals", "mock", "--tasks", NOTEPAD_TASK, "--workers", "1",
                        "--run-name", "one", "--results-dir", str(tmp_path / "r"),
                        home=home)).stdout
    assert re.search(r"^Attempts: 1$", shown, re.M), shown


def test_flow_tasks_is_a_selection_and_a_count_keeps_its_meaning(home: Path) -> None:
    def plan(*args: str) -> dict[str, object]:
        data: dict[str, object] = json.loads(
            _ok(run_cli(FLOW, "--dry-run", *args, "--json", home=home)).stdout)["plan"]
        return data

    assert plan("--tasks", "154")["num_tasks"] == plan()["num_tasks"] == 154
    assert plan("--tasks", "all")["num_tasks"] == 154
    assert plan("--tasks", "10")["num_tasks"] == plan("--task-count", "10")["num_tasks"] == 10
    ids = plan("--tasks", "a-1,b-2")
    assert ids["num_tasks"] == 2 and ids["task_ids"] == ["a-1", "b-2"]


def test_lines_for_people_say_a_time_one_way(home: Path) -> None:
    """Every expiry a command prints for people is UTC to the second, named; the record's ISO
    form (microseconds, an offset) stays in --json."""
    shown = re.compile(r"\b\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\b")
    iso = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
    said = [
        _ok(run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "1", "--pool", "t",
                    "-y", home=home)).stdout,
        _ok(run_cli("oa-vm", "pool-status", "--pool", "t", home=home)).stdout,
        _ok(run_cli("oa-vm", "pool-extend", "--pool", "t", "--by", "1h", home=home)).stdout,
        _ok(run_cli("oa-vm", "pool-pause", "--pool", "t", home=home)).stdout,
    ]
    for text in said:
        expiry = next(line for line in text.splitlines() if "expires" in line)
        assert shown.search(expiry) and not iso.search(expiry), expiry
    status = json.loads(_ok(run_cli("oa-vm", "pool-status", "--pool", "t", "--json",
                                    home=home)).stdout)
    assert iso.match(status["expires_at"]), status["expires_at"]
    _ok(run_cli("oa-vm", "pool-cleanup", "--pool", "t", "-y", home=home))
