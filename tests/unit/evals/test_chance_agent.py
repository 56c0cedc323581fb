"""The ``random`` agent: the reference solution with probability p, else DONE at once."""

from __future__ import annotations

import pytest

from evals.agents import AgentOptions, create_agent
from evals.agents.base import DONE, BenchmarkObservation, BenchmarkTask
from evals.agents.chance import ChanceAgent
from evals.errors import InvalidRunInputError

TASK = BenchmarkTask("t", "notepad", "Type hi", False,
                     {"reference_solution": ["pyautogui.write('hi')", "DONE"]})


def _task(task_id: str = "t", trial: int = 1) -> BenchmarkTask:
    return BenchmarkTask(task_id, TASK.domain, TASK.instruction, False, TASK.raw, trial=trial)


def _first_action(agent: ChanceAgent, task: BenchmarkTask = TASK) -> str:
    agent.reset(task)
    return agent.act(BenchmarkObservation(), task, []).type


def test_solves_with_the_probability_given() -> None:
    agent = ChanceAgent(p=0.3, seed=11)
    solved = sum(_first_action(agent, _task(f"t{n}")) != DONE for n in range(4000))
    # Binomial(4000, 0.3): mean 1200, sd 29; seeded draws, so this is one fixed draw.
    assert 1100 < solved < 1300


@pytest.mark.parametrize(("p", "expected"), [(0.0, DONE), (1.0, "execute_windows")])
def test_p_zero_never_solves_and_p_one_always_does(p: float, expected: str) -> None:
    agent = ChanceAgent(p=p, seed=1)
    assert {_first_action(agent, _task(f"t{n}")) for n in range(50)} == {expected}


def test_a_seed_draws_per_task_and_trial_whichever_instance_or_order() -> None:
    keys = [(f"t{n}", trial) for n in range(40) for trial in (1, 2)]
    a, b = ChanceAgent(p=0.5, seed=5), ChanceAgent(p=0.5, seed=5)
    drawn = {key: _first_action(a, _task(*key)) for key in keys}
    # another instance (another worker), the keys in another order, each drawn twice (a retry)
    again = {key: _first_action(b, _task(*key)) for key in reversed(keys * 2)}
    assert drawn == again
    assert set(drawn.values()) == {DONE, "execute_windows"}
    assert any(drawn[(t, 1)] != drawn[(t, 2)] for t, _ in keys)  # the trials draw apart
    other = ChanceAgent(p=0.5, seed=6)
    assert {key: _first_action(other, _task(*key)) for key in keys} != drawn


def test_without_a_seed_a_task_draws_anew_each_time() -> None:
    agent = ChanceAgent(p=0.5)
    assert {_first_action(agent) for _ in range(60)} == {DONE, "execute_windows"}


def test_a_reset_without_the_task_draws_at_the_first_step() -> None:
    seeded = ChanceAgent(p=0.5, seed=5)
    expected = [_first_action(seeded, _task(f"t{n}")) for n in range(20)]
    drawn = []
    for n in range(20):
        seeded.reset()
        drawn.append(seeded.act(BenchmarkObservation(), _task(f"t{n}"), []).type)
    assert drawn == expected


@pytest.mark.parametrize("arg", ["p=1.5", "p=-0.1", "p=abc", "seed=1.5"])
def test_bad_options_are_refused_in_one_line(arg: str) -> None:
    with pytest.raises(InvalidRunInputError, match="random agent"):
        create_agent("random", AgentOptions(args=(arg,)))
