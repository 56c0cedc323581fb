"""The ``random`` agent: the reference solution with probability p, else DONE at once."""

from __future__ import annotations

import pytest

from evals.agents import AgentOptions, create_agent
from evals.agents.base import DONE, BenchmarkObservation, BenchmarkTask
from evals.agents.chance import ChanceAgent
from evals.errors import InvalidRunInputError

TASK = BenchmarkTask("t", "notepad", "Type hi", False,
                     {"reference_solution": ["pyautogui.write('hi')", "DONE"]})


def _first_action(agent: ChanceAgent) -> str:
    agent.reset(TASK)
    return agent.act(BenchmarkObservation(), TASK, []).type


def test_solves_with_the_probability_given() -> None:
    agent = ChanceAgent(p=0.3, seed=11)
    solved = sum(_first_action(agent) != DONE for _ in range(4000))
    # Binomial(4000, 0.3): mean 1200, sd 29; a seeded stream, so this is one fixed draw.
    assert 1100 < solved < 1300


@pytest.mark.parametrize(("p", "expected"), [(0.0, DONE), (1.0, "execute_windows")])
def test_p_zero_never_solves_and_p_one_always_does(p: float, expected: str) -> None:
    agent = ChanceAgent(p=p, seed=1)
    assert {_first_action(agent) for _ in range(50)} == {expected}


def test_instances_of_one_seed_draw_independently() -> None:
    a, b = ChanceAgent(p=0.5, seed=5), ChanceAgent(p=0.5, seed=5)
    assert [_first_action(a) for _ in range(40)] != [_first_action(b) for _ in range(40)]


@pytest.mark.parametrize("arg", ["p=1.5", "p=-0.1", "p=abc", "seed=1.5"])
def test_bad_options_are_refused_in_one_line(arg: str) -> None:
    with pytest.raises(InvalidRunInputError, match="random agent"):
        create_agent("random", AgentOptions(args=(arg,)))
