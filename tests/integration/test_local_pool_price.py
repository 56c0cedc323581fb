"""A local pool's price reads the same in every command that shows one: its plan, pool-status,
pool-list (text and JSON), sweep --plan and a run's summary: $0.00 an hour, as it rents nothing,
or the --price-per-hour it was given; a record of an earlier oa-vm, which stored no price for
what it did not rent, reads $0.00 too, while a cloud pool's record without a price reads "-"
(:func:`oa_vm.clouds.price_per_hour`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oa_vm import api
from oa_vm.model import state
from oa_vm.model.state import PoolRecord, PoolState
from tests.support.cli import Result, run_cli

pytestmark = pytest.mark.integration

TASK = "c499b229-110c-5fc8-9895-f2f879ac1512-WOS"  # in the bundled local suite


def _ok(result: Result) -> Result:
    assert result.returncode == 0, result.stdout + result.stderr
    return result


@pytest.mark.parametrize(("given", "shown", "earlier"), [
    ([], 0.0, False), (["--price-per-hour", "0.5"], 0.5, False), ([], 0.0, True),
], ids=["free", "priced", "an earlier oa-vm's record"])
def test_a_local_pool_shows_one_price_everywhere(
    given: list[str], shown: float, earlier: bool, home: Path, tmp_path: Path
) -> None:
    figure = f"${shown:.2f}"
    create = ["pool-create", "--cloud", "local", "--workers", "1", "--name", "p", *given, "-y"]
    assert f"Price: {figure}/hour" in _ok(run_cli("oa-vm", *create, "--plan", home=home)).stdout
    _ok(run_cli("oa-vm", *create, home=home))
    _ok(run_cli("oa-vm", "pool-wait", "--pool", "p", home=home))
    if earlier:  # saved as an oa-vm from before local pools were priced saved it: no price
        record = state.load("p")
        record.price_per_hour = None
        state.save(record)
        assert api.pool_cost_so_far(record) == 0.0  # the Python API's reader too

    status = _ok(run_cli("oa-vm", "pool-status", "--pool", "p", home=home)).stdout
    assert f"Price {figure}/hour" in status.splitlines()[1]
    data = json.loads(_ok(run_cli("oa-vm", "pool-status", "--pool", "p", "--json",
                                  home=home)).stdout)
    assert (data["price_per_hour"], data["price_per_hour_total"]) == (shown, shown)
    listed = _ok(run_cli("oa-vm", "pool-list", home=home)).stdout.splitlines()[1].split()
    assert listed[0] == "p" and f"{figure}/h" in listed
    assert json.loads(_ok(run_cli("oa-vm", "pool-list", "--json", home=home)).stdout)[0][
        "price_per_hour_total"] == shown

    sweep = ["sweep", "--plan", "--json", "--tasks", TASK, "--agent", "noop", "--cloud", "local",
             "--workers", "1", *given]
    plan = json.loads(_ok(run_cli("openadapt-evals", *sweep, home=home)).stdout)
    assert plan["plan"]["price_per_hour"] == shown

    env = {"OA_EVALS_RESULTS": str(tmp_path / "results")}
    run = ["run", "--pool", "p", "--tasks", TASK, "--agent", "noop"]
    summary = json.loads(_ok(run_cli("openadapt-evals", *run, "--json", home=home,
                                     env=env)).stdout)
    assert summary["price_per_hour"] == shown
    text = _ok(run_cli("openadapt-evals", *run, "--run-name", "again", home=home, env=env))
    assert "\nCost: $" in text.stdout  # priced, so the cost is said, $0 as any other


def test_a_cloud_pool_recorded_without_a_price_still_shows_none(home: Path) -> None:
    state.save(PoolRecord("c", "aws", PoolState.READY, state.utcnow()))
    try:
        status = _ok(run_cli("oa-vm", "pool-status", "--pool", "c", home=home)).stdout
        assert "Price -/hour, cost so far -" in status.splitlines()[1]
        data = json.loads(_ok(run_cli("oa-vm", "pool-status", "--pool", "c", "--json",
                                      home=home)).stdout)
        assert (data["price_per_hour"], data["price_per_hour_total"]) == (None, None)
        listed = _ok(run_cli("oa-vm", "pool-list", home=home)).stdout.splitlines()[1].split()
        assert listed[0] == "c" and listed[-2:] == ["-", "-"]
    finally:
        state.delete("c")  # no cloud to clean up: a record only
