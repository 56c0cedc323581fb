"""One vocabulary across ``oa-vm``, ``openadapt-evals`` and ``openadapt-eval-flow``: the new
spellings (``--pool``/``-n``, durations with units, ``view RUN``, ``--task-count``,
``--price-per-hour``) work as the real commands, and the old ones keep their meaning."""

from __future__ import annotations

import json
import os
import re
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from oa_vm.kit.durations import to_seconds
from tests.support.cli import BIN, Result, run_cli

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
NOTEPAD_TASK = "c499b229-110c-5fc8-9895-f2f879ac1512-WOS"  # in the bundled local suite


def _ok(result: Result) -> Result:
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def _status(home: Path, pool: str) -> dict[str, object]:
    data: dict[str, object] = json.loads(
        _ok(run_cli("oa-vm", "pool-status", "--name", pool, "--json", home=home)).stdout
    )
    return data


def _hours_left(data: dict[str, object], since: str = "created_at") -> float:
    expires = datetime.fromisoformat(str(data["expires_at"]))
    start = datetime.fromisoformat(str(data[since])) if since else datetime.now(expires.tzinfo)
    return (expires - start).total_seconds() / 3600.0


def test_durations_take_units_and_bare_numbers_keep_their_unit() -> None:
    assert to_seconds("90s", "s") == 90.0 and to_seconds("10m", "s") == 600.0
    assert to_seconds("90m", "h") == 5400.0 and to_seconds("1d", "h") == 86400.0
    assert to_seconds("2", "h") == 7200.0
    assert to_seconds("12h", "d") == 43200.0 and to_seconds("3", "d") == 259200.0
    assert to_seconds("0", "s", zero_ok=True) == 0.0
    for bad in ("0", "-1", "soon", "5x", "nan", "inf", ""):
        with pytest.raises(ValueError):
            to_seconds(bad, "s")


def test_oa_vm_pool_commands_take_pool_and_durations(home: Path) -> None:
    _ok(run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "1", "--pool", "v",
                "--ttl", "90m", "-y", home=home))
    assert _hours_left(_status(home, "v")) == pytest.approx(1.5, abs=0.01)
    _ok(run_cli("oa-vm", "pool-wait", "--pool", "v", "--timeout", "2m", home=home))
    for env in ({}, {"OA_VM_FAST_PATH": "0"}):  # the fast path and Typer
        for args in (["--pool", "v"], ["--pool=v"], ["-n", "v"]):
            shown = _ok(run_cli("oa-vm", "pool-status", *args, home=home, env=env)).stdout
            assert shown.startswith("Pool v (local):"), (args, env, shown)
    _ok(run_cli("oa-vm", "pool-pause", "--pool", "v", "--keep", "12h", home=home))
    assert _hours_left(_status(home, "v"), since="") == pytest.approx(12.0, abs=0.05)
    _ok(run_cli("oa-vm", "pool-resume", "--pool", "v", "--ttl", "1d", "--timeout", "3m",
                home=home))
    assert _hours_left(_status(home, "v"), since="") == pytest.approx(24.0, abs=0.05)
    _ok(run_cli("oa-vm", "pool-extend", "--pool", "v", "--by", "2h", home=home))
    assert _hours_left(_status(home, "v"), since="") == pytest.approx(26.0, abs=0.05)
    _ok(run_cli("oa-vm", "pool-cleanup", "--pool", "v", "-y", home=home))
    assert "No pools" in _ok(run_cli("oa-vm", "pool-list", home=home)).stdout


def test_old_spellings_keep_their_units(home: Path) -> None:
    _ok(run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "1", "--name", "old",
                "--ttl-hours", "2", "-y", home=home))
    assert _hours_left(_status(home, "old")) == pytest.approx(2.0, abs=0.01)
    _ok(run_cli("oa-vm", "pool-wait", "-n", "old", "--timeout", "2", home=home))  # minutes
    _ok(run_cli("oa-vm", "pool-pause", "--name", "old", "--keep-days", "3", home=home))
    assert _hours_left(_status(home, "old"), since="") == pytest.approx(72.0, abs=0.05)


def test_bad_durations_are_one_line_naming_the_option(home: Path) -> None:
    for script, args, option in [
        ("oa-vm", ["pool-create", "--cloud", "local", "--ttl", "soon", "-y"], "--ttl"),
        ("openadapt-evals", ["run", "--tasks", "all", "--agent", "noop", "--task-timeout", "5x"],
         "--task-timeout"),
        ("openadapt-evals", ["sweep", "--tasks", "all", "--agent", "noop", "--wait-timeout",
                             "0s"], "--wait-timeout"),
    ]:
        result = run_cli(script, *args, home=home)
        assert result.returncode == 2
        assert option in result.assert_one_line_error()
    assert not (home / "pools").exists() or not any((home / "pools").iterdir())


def test_run_tasks_and_view_take_the_new_spellings(home: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    _ok(run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "1", "-n", "r", "-y",
                home=home))
    _ok(run_cli("oa-vm", "pool-wait", "-n", "r", home=home))
    listed = _ok(run_cli("openadapt-evals", "tasks", "-n", "r", home=home)).stdout
    assert NOTEPAD_TASK in listed
    _ok(run_cli("openadapt-evals", "run", "-n", "r", "--tasks", NOTEPAD_TASK, "--agent",
                "oracle", "--run-name", "first", "--results-dir", str(results),
                "--task-timeout", "2m", "--read-timeout", "30s", "--step-pause", "0s",
                "--wait-for-pool", "1d", home=home))
    metadata = json.loads((results / "first" / "metadata.json").read_text())
    assert metadata["pool"] == "r" and metadata["task_timeout_s"] == 120.0
    by_argument = _ok(run_cli("openadapt-evals", "view", "first", "--results-dir", str(results),
                              home=home)).stdout
    by_option = _ok(run_cli("openadapt-evals", "view", "--run-name", "first", "--results-dir",
                            str(results), home=home)).stdout
    assert by_argument == by_option and Path(by_argument.strip()).is_file()
    both = run_cli("openadapt-evals", "view", "first", "--run-name", "other", "--results-dir",
                   str(results), home=home)
    assert "two runs named" in both.assert_one_line_error()
    assert "view RUN" in run_cli("openadapt-evals", "view", home=home).assert_one_line_error()


def test_sweep_takes_pool_and_a_duration(home: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    _ok(run_cli("openadapt-evals", "sweep", "--pool", "sw", "--workers", "1", "--tasks",
                NOTEPAD_TASK, "--agent", "oracle", "--run-name", "s", "--wait-timeout", "5m",
                "--results-dir", str(results), home=home))
    assert json.loads((results / "s" / "metadata.json").read_text())["pool"] == "sw"


def test_mock_takes_task_count_and_still_tasks(home: Path, tmp_path: Path) -> None:
    for option, run_name in (("--task-count", "new"), ("--tasks", "old")):
        shown = _ok(run_cli("openadapt-evals", "mock", option, "2", "--workers", "1",
                            "--run-name", run_name, "--results-dir", str(tmp_path / "r"),
                            home=home)).stdout
        assert re.search(r"^Attempts: 2$", shown, re.M), shown


def test_flow_takes_price_per_hour_and_task_count(home: Path) -> None:
    new = _ok(run_cli("openadapt-eval-flow", "--task-count", "10", "--price-per-hour", "0.5",
                      home=home)).stdout
    old = _ok(run_cli("openadapt-eval-flow", "--tasks", "10", "--vm-hourly", "0.5",
                      home=home)).stdout
    default = _ok(run_cli("openadapt-eval-flow", "--tasks", "10", home=home)).stdout
    assert new == old != default
    assert "$0.50/h" in new


def test_readme_tour_runs_as_written(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    tour = readme.split("A short tour on the local pool", 1)[1].split("```bash\n", 1)[1]
    script = tour.split("```", 1)[0]
    assert script.startswith(". .venv/bin/activate\n")
    # this interpreter's environment stands for the activated one (it may live elsewhere)
    script = script.replace(". .venv/bin/activate\n", f'export PATH="{BIN}:$PATH"\n', 1)
    env = {**os.environ, "OA_VM_HOME": str(tmp_path / "home"),
           "OA_EVALS_RESULTS": str(tmp_path / "results")}
    done = subprocess.run(  # the README's own lines, no user input
        ["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env, capture_output=True,
        text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "results" / "first" / "view.html").is_file()
    assert not any((tmp_path / "home" / "pools").glob("*/pool.json"))


def test_every_cli_has_version_and_short_help(home: Path) -> None:
    for script in ("oa-vm", "openadapt-evals", "openadapt-eval-flow"):
        version = _ok(run_cli(script, "--version", home=home)).stdout
        assert re.fullmatch(rf"{script} \S+\n", version), version
        short, long = (_ok(run_cli(script, flag, home=home)).stdout for flag in ("-h", "--help"))
        assert short == long and short.startswith(f"Usage: {script}")
