"""Every number of a run checked at its bound, by name, before anything is touched; and the
small pure helpers of the runner (found unguarded by the mutation run, see
``docs/reliability.md``)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest

from evals.errors import InvalidRunInputError
from evals.run.runner import RunConfig, default_run_name, estimate_seconds, health_warning

# field, option named in the message, smallest accepted value, a refused value just below it
BOUNDS = [
    ("max_steps", "--max-steps", 1, 0),
    ("task_timeout_s", "--task-timeout", 0.01, 0.0),
    ("max_attempts", "--max-attempts", 1, 0),
    ("max_cost_usd", "--max-cost-usd", 0.0, -0.01),
    ("read_timeout_s", "--read-timeout", 0.01, 0.0),
    ("connect_timeout_s", "connect timeout", 0.01, 0.0),
    ("step_pause_s", "--step-pause", 0.0, -0.01),
    ("lease_seconds", "lease seconds", 0.01, 0.0),
    ("quarantine_after", "quarantine threshold", 1, 0),
    ("wait_for_pool_s", "--wait-for-pool", 0.0, -0.01),
]


def _config(**changes: Any) -> RunConfig:
    """A config with ``changes``; checked as it is made (a bad value raises here)."""
    return RunConfig(**{"pool": "p", "selection": "all", "agent": "noop", "run_name": "r",
                        **changes})


@pytest.mark.parametrize(("field", "option", "lowest", "below"), BOUNDS)
def test_each_number_is_checked_at_its_bound(
    field: str, option: str, lowest: float, below: float
) -> None:
    _config(**{field: lowest})
    for bad in (below, math.nan, math.inf, -math.inf):
        with pytest.raises(InvalidRunInputError, match=re.escape(option)):
            _config(**{field: bad})


def test_results_dir_naming_a_file_is_refused(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(InvalidRunInputError, match="--results-dir .* is a file"):
        _config(results_dir=afile)
    _config(results_dir=tmp_path / "new")


@pytest.mark.parametrize("name", ["../up", "a/b", "a b", ".hidden", "-x", "", "r" * 101])
def test_a_run_name_that_is_not_a_plain_folder_name_is_refused(name: str) -> None:
    with pytest.raises(InvalidRunInputError, match="--run-name .* is not a plain folder name"):
        _config(run_name=name)


def test_plain_run_names_up_to_100_characters_are_taken() -> None:
    for name in ("run-1.a_b", "R" * 100):
        assert _config(run_name=name).run_name == name


def test_resume_needs_a_run_name() -> None:
    with pytest.raises(InvalidRunInputError, match="--resume needs --run-name"):
        _config(resume=True, run_name=None)
    _config(resume=True, run_name="r")
    _config(resume=False, run_name=None)


@pytest.mark.parametrize(
    ("errors", "total", "unhealthy"),
    [(9, 24, False), (12, 24, False), (13, 24, True), (1, 1, True), (0, 5, False)],
)
def test_more_than_half_in_error_is_unhealthy(errors: int, total: int, unhealthy: bool) -> None:
    counts = {"success": total - errors, "error": errors}
    assert (health_warning(counts, lost_all=False) is not None) is unhealthy


def test_counts_without_errors_are_healthy_and_a_lost_pool_never_is() -> None:
    assert health_warning({"success": 3}, lost_all=False) is None
    warning = health_warning({"success": 3}, lost_all=True)
    assert warning is not None and "every worker" in warning


def test_default_run_names_carry_the_agent_and_the_time() -> None:
    name = default_run_name("--my agent--")
    assert re.fullmatch(r"my-agent-\d{4}-\d{2}-\d{2}T\d{6}", name), name
    assert "." not in name


def test_estimates_grow_with_what_a_task_holds() -> None:
    base = {"reference_solution": ["echo a", "DONE"], "config": []}
    slept = {"reference_solution": ["sleep 2", "sleep 3", "DONE"], "config": []}
    assert estimate_seconds(slept) - estimate_seconds(base) >= 5.0  # both sleeps count
    set_up = {**base, "config": [{"type": "x"}, {"type": "y"}]}
    assert estimate_seconds(set_up) > estimate_seconds(base)
    assert estimate_seconds({"reference_solution": "not a list", "config": "nope"}) == (
        estimate_seconds({})
    )
    one = {"evaluator": {"func": ["a"]}}
    three = {"evaluator": {"func": ["a", "b", "c"]}}
    assert estimate_seconds(three) > estimate_seconds(one)
    assert estimate_seconds({"config": [{}, {}]}) > estimate_seconds({})


def test_an_odd_item_in_a_reference_solution_does_not_break_the_estimate() -> None:
    odd = {"reference_solution": [{"not": "a string"}, "sleep 1", "DONE"]}
    assert estimate_seconds(odd) >= 1.0


@pytest.mark.parametrize(("recorded", "current", "said"), [
    # a single-pool run resumed on another one pool: allowed anyway, so said to be not needed
    (["pa"], ["pb"], "--allow-change pools: not needed: a single-pool run may resume on any "
                     "one pool (it ran on pa, now on pb); leave --allow-change out"),
    (["pa"], ["pa"], "--allow-change pools: the run's pools are unchanged (pa); give the new "
                     "value with its option, or leave --allow-change out"),
    (["pa", "pb"], ["pb", "pa"], "--allow-change pools: the run's pools are unchanged (pa, pb)"),
])
def test_an_unneeded_allow_change_pools_says_why(
    recorded: list[str], current: list[str], said: str
) -> None:
    from evals.run.settings import unneeded_allow_change

    assert unneeded_allow_change("pools", {"pools": recorded},
                                 {"pools": current}).startswith(said)
    assert unneeded_allow_change("max-steps", {"max-steps": 15}, {"max-steps": 15}) == (
        "--allow-change max-steps: the run's max-steps is unchanged (15); give the new value "
        "with its option, or leave --allow-change out")
