"""Seeded draws per task and trial (evals.agents.seeding), and the random GUI agent on them."""

from __future__ import annotations

import os
import subprocess
import sys

from evals.agents.base import BenchmarkObservation, BenchmarkTask
from evals.agents.builtin import RandomAgent
from evals.agents.seeding import task_draws

OBSERVATION = BenchmarkObservation(viewport=(1280, 720))


def _task(task_id: str, trial: int = 1) -> BenchmarkTask:
    return BenchmarkTask(task_id, "notepad", "Type hi", trial=trial)


def test_a_stream_depends_on_the_seed_the_task_and_the_trial_alone() -> None:
    first = [task_draws(7, _task("a")).random() for _ in range(3)]
    assert first[0] == first[1] == first[2]
    others = {task_draws(8, _task("a")).random(), task_draws(7, _task("b")).random(),
              task_draws(7, _task("a", trial=2)).random()}
    assert first[0] not in others and len(others) == 3
    assert task_draws(None, _task("a")).random() != task_draws(None, _task("a")).random()


def test_a_stream_is_the_same_in_another_process_with_another_hash_salt() -> None:
    code = ("from evals.agents.base import BenchmarkTask; "
            "from evals.agents.seeding import task_draws; "
            "print(repr(task_draws(7, BenchmarkTask('a', trial=3)).random()))")
    printed = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       timeout=60, env={**os.environ, "PYTHONHASHSEED": salt}).stdout.strip()
        for salt in ("1", "2")}
    assert printed == {repr(task_draws(7, _task("a", trial=3)).random())}


def test_draws_of_different_tasks_and_trials_are_independent() -> None:
    # The first draw of 2000 tasks x 2 trials, below 0.5 or not: neighbouring tasks and a task's
    # two trials agree about half the time (sd about 1.1% here), as independent coins do.
    coins = {(n, t): task_draws(3, _task(f"t{n}", t)).random() < 0.5
             for n in range(2000) for t in (1, 2)}
    trials = sum(coins[(n, 1)] == coins[(n, 2)] for n in range(2000)) / 2000
    tasks = sum(coins[(n, 1)] == coins[(n + 1, 1)] for n in range(1999)) / 1999
    heads = sum(coins.values()) / len(coins)
    for share in (trials, tasks, heads):
        assert 0.45 < share < 0.55


def _actions(agent: RandomAgent, task: BenchmarkTask, reset_with_task: bool = True) -> list[str]:
    if reset_with_task:
        agent.reset(task)
    else:
        agent.reset()
    history = []
    for _ in range(agent.max_actions):
        history.append(agent.act(OBSERVATION, task, history))
    return [a.to_string() for a in history]


def test_random_agent_plays_the_same_actions_per_task_and_trial_whichever_instance() -> None:
    keys = [(f"t{n}", trial) for n in range(10) for trial in (1, 2)]
    a, b = RandomAgent(seed=7, max_actions=5), RandomAgent(seed=7, max_actions=5)
    played = {key: _actions(a, _task(*key)) for key in keys}
    again = {key: _actions(b, _task(*key), reset_with_task=False)
             for key in reversed(keys * 2)}  # another order, each twice, reset as the reference
    assert played == again
    assert len({tuple(p) for p in played.values()}) == len(keys)


def test_random_agent_without_a_seed_does_not_repeat() -> None:
    agent = RandomAgent(max_actions=5)
    assert _actions(agent, _task("t")) != _actions(agent, _task("t"))
