"""A resumed run with nothing left to run needs no pool: ``sweep --resume`` makes none (on a
cloud: a pool's start-up and price for nothing), ``run --resume`` asks none, and both print
and write the run's summary, with the finished run's exit code. One rule
(:func:`evals.run.runner.nothing_left`): every task has its final record, none was kept from
running by a cap, and none is to be run again (``--rerun-errors`` with errors to rerun does
need a pool). The real CLI, real local workers, real SQLite.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import Result, run_cli
from tests.support.run_records import assert_summary_matches, read_records

pytestmark = pytest.mark.integration

NOTHING_LEFT = "nothing left to run (every task has its final record), so no pool was used"


def evals(*args: str, home: Path, results: Path, env: dict[str, str] | None = None) -> Result:
    """``openadapt-evals ARGS --results-dir RESULTS`` as a subprocess."""
    return run_cli("openadapt-evals", *args, "--results-dir", str(results), home=home,
                   timeout=300, env=env)


def _pools_made(home: Path) -> list[str]:
    """Every pool the home holds or held (a pool made and removed is kept under removed/)."""
    return sorted(str(p.relative_to(home)) for kept in ("pools", "removed")
                  if (home / kept).is_dir() for p in (home / kept).iterdir())


def _offline(tmp_path: Path) -> dict[str, str]:
    """No cloud CLI on PATH, caller-IP detection at a closed loopback port: a cloud sweep that
    went on to its pool would stop there (and never reach a cloud)."""
    empty = tmp_path / "empty-path"
    empty.mkdir(exist_ok=True)
    return {"PATH": str(empty), "OA_VM_IP_ECHO_URL": "http://127.0.0.1:9/"}


def _summary_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.strip()]


def test_a_finished_run_resumed_makes_no_pool_and_ends_as_it_ended(
    home: Path, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    # one worker that crashes part-way: a finished run with both results and errors to rerun
    # (its requests counted from the start's probes of both its servers: its first task ends)
    first = evals("sweep", "--cloud", "local", "--workers", "1", "--fault", "crash-after=41",
                  "--agent", "oracle", "--tasks", "local_small", "--run-name", "e",
                  home=home, results=results)
    assert first.returncode in (0, 4), first.stderr
    run_dir = results / "e"
    records = read_records(run_dir)
    errors = [t for t, r in records.items() if r["status"] == "error"]
    assert errors and len(errors) < len(records), first.stdout  # both kinds, or it shows less
    files = {p: p.read_bytes() for p in (run_dir / "tasks").glob("**/execution.json")}
    summary = json.loads((run_dir / "summary.json").read_text())
    pools = _pools_made(home)
    assert len(pools) == 1, pools  # the first sweep's pool, removed
    (run_dir / "summary.json").unlink()  # written again from the records, as a run's end does

    # sweep --resume, local: no pool made, the summary printed and written, the same exit code
    again = evals("sweep", "--cloud", "local", "--resume", "--run-name", "e",
                  home=home, results=results)
    assert again.returncode == first.returncode, again.stderr
    assert NOTHING_LEFT in again.stderr and "creating pool" not in again.stderr, again.stderr
    assert _pools_made(home) == pools
    assert run_cli("oa-vm", "pool-list", home=home).stdout.startswith("No pools")
    assert _summary_lines(again.stdout) == _summary_lines(first.stdout)
    assert json.loads((run_dir / "summary.json").read_text()) == summary
    assert {p: p.read_bytes() for p in files} == files
    assert_summary_matches(run_dir, read_records(run_dir))

    # a cloud sweep of it never reaches the pool step (without -y, no terminal, no cloud CLI:
    # it would have stopped there)
    cloud = evals("sweep", "--cloud", "aws", "--resume", "--run-name", "e",
                  home=home, results=results, env=_offline(tmp_path))
    assert cloud.returncode == first.returncode, cloud.stderr
    assert NOTHING_LEFT in cloud.stderr, cloud.stderr
    assert _pools_made(home) == pools
    # and its plan plans no pool and no price
    planned = evals("sweep", "--cloud", "aws", "--resume", "--run-name", "e", "--plan",
                    home=home, results=results, env=_offline(tmp_path))
    assert planned.returncode == 0, planned.stderr
    assert "nothing left to run: its --resume makes no pool" in planned.stdout, planned.stdout
    assert "/hour" not in planned.stdout and "Resources" not in planned.stdout
    as_json = evals("sweep", "--cloud", "aws", "--resume", "--run-name", "e", "--plan",
                    "--json", home=home, results=results, env=_offline(tmp_path))
    assert as_json.returncode == 0, as_json.stderr
    document = json.loads(as_json.stdout)
    assert document["plan"] is None and document["sweep"]["nothing_left"] is True
    assert _pools_made(home) == pools

    # run --resume: the same rule, without any pool
    resumed = evals("run", "--resume", "--run-name", "e", "--json", home=home, results=results)
    assert resumed.returncode == first.returncode, resumed.stderr
    assert NOTHING_LEFT in resumed.stderr
    printed = json.loads(resumed.stdout)
    assert {k: printed[k] for k in summary} == summary

    # errors to run again are work: --rerun-errors asks for a pool (there is none here)
    rerun = evals("run", "--rerun-errors", "e", home=home, results=results)
    line = rerun.assert_one_line_error()
    assert NOTHING_LEFT not in rerun.stderr and "pool" in line, line
    assert {p: p.read_bytes() for p in files} == files
    assert json.loads((run_dir / "metadata.json").read_text())["status"] == "finished"


def test_a_healthy_finished_sweep_resumed_exits_zero_without_a_pool(
    home: Path, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    first = evals("sweep", "--workers", "1", "--agent", "oracle", "--tasks", "domain:clock",
                  "--run-name", "ok", home=home, results=results)
    assert first.returncode == 0, first.stderr
    pools = _pools_made(home)
    for command in ("sweep", "run"):
        again = evals(command, "--resume", "--run-name", "ok", home=home, results=results)
        assert again.returncode == 0, again.stderr
        assert NOTHING_LEFT in again.stderr, again.stderr
        assert _summary_lines(again.stdout) == _summary_lines(first.stdout)
    assert _pools_made(home) == pools
