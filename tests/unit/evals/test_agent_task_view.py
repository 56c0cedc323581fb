"""Agents see what WAA's agents see: no evaluator data unless their class opted in.

The loop runs against scripted HTTP servers on loopback (a WAA server and a checker that
answer like a worker); the checker still receives the full task, the agent only the public view.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from evals.agents.base import (
    PUBLIC_TASK_FIELDS,
    BenchmarkAction,
    BenchmarkAgent,
    BenchmarkObservation,
    BenchmarkTask,
    tasks_for_agent,
)
from evals.agents.oracle import OracleAgent
from evals.run.agent_loop import run_task
from evals.run.settings import RunConfig
from tests.support.http_servers import Reply, ScriptedServer
from waa_client import ScoringClient, WaaClient
from waa_client.http import no_retry_waits

ROOT = Path(__file__).resolve().parents[3]
LOCAL_TASKS = sorted((ROOT / "infra" / "local" / "tasks" / "examples").glob("*/*.json"))
SECRET_KEYS = ("evaluator", "reference_solution", "config", "trajectory")


class Spy(BenchmarkAgent):
    """Records every task view it is handed, then answers DONE."""

    def __init__(self) -> None:
        self.seen: list[BenchmarkTask] = []
        self.checked: dict[str, Any] = {}

    def reset(self, task: BenchmarkTask) -> None:
        self.seen.append(task)

    def act(self, observation: BenchmarkObservation, task: BenchmarkTask,
            history: Sequence[BenchmarkAction] | None = None) -> BenchmarkAction:
        self.seen.append(task)
        return BenchmarkAction("done")

    def check_tasks(self, tasks: Mapping[str, Mapping[str, Any]]) -> None:
        self.checked = dict(tasks)


class OptedInSpy(Spy):
    sees_answers = True


@pytest.fixture
def servers() -> Iterator[tuple[ScriptedServer, ScriptedServer]]:
    ok = Reply(200, b"ok", "text/plain")
    with ScriptedServer({"/setup/close_all": ok, "/setup/clear_task_files": ok,
                         "/obs_winagent": Reply.json({"window_title": "x"}),
                         "/accessibility": Reply.json({"AT": "<root/>"})}) as waa, \
            ScriptedServer({"/setup": Reply.json({"status": "ok", "results": []}),
                            "/evaluate": Reply.json({"score": 1.0, "success": True,
                                                     "reason": "r"})}) as scoring, \
            no_retry_waits():
        yield waa, scoring


def _run(agent: BenchmarkAgent, task: dict[str, Any], task_id: str,
         servers: tuple[ScriptedServer, ScriptedServer]) -> None:
    waa, scoring = servers
    run_task(WaaClient(waa.url, read_timeout=5, connect_timeout=2),
             ScoringClient(scoring.url, read_timeout=5, connect_timeout=2),
             task, task_id, agent, RunConfig(pool=None, selection="all", agent="noop", max_steps=3),
             sleep=lambda _s: None)


@pytest.mark.parametrize("path", LOCAL_TASKS, ids=[p.stem[:12] for p in LOCAL_TASKS])
def test_act_gets_no_evaluator_data_without_opting_in(
    path: Path, servers: tuple[ScriptedServer, ScriptedServer]
) -> None:
    task = json.loads(path.read_text(encoding="utf-8"))
    spy = Spy()
    _run(spy, task, path.stem, servers)
    assert len(spy.seen) == 2  # reset, then the one act
    for view in spy.seen:
        assert view.infeasible is None
        assert set(view.raw) <= set(PUBLIC_TASK_FIELDS)
        assert not any(key in view.raw for key in SECRET_KEYS)
        assert view.instruction == task["instruction"]
        text = json.dumps(view.raw)
        assert '"expected"' not in text and '"func"' not in text
    # The checker itself still got the whole task.
    _, scoring = servers
    sent = [json.loads(body) for where, body in scoring.bodies if where == "/evaluate"]
    assert sent and sent[-1]["task"]["evaluator"] == task["evaluator"]


def test_an_opted_in_agent_gets_the_full_task(
    servers: tuple[ScriptedServer, ScriptedServer]
) -> None:
    path = next(p for p in LOCAL_TASKS if p.stem.startswith("INF-"))
    task = json.loads(path.read_text(encoding="utf-8"))
    spy = OptedInSpy()
    _run(spy, task, path.stem, servers)
    assert spy.seen[-1].infeasible is True
    assert spy.seen[-1].raw["evaluator"] == task["evaluator"]
    assert spy.seen[-1].raw["reference_solution"] == task["reference_solution"]


def test_check_tasks_sees_the_same_view() -> None:
    tasks = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in LOCAL_TASKS}
    public = tasks_for_agent(Spy(), tasks)
    assert all(not any(k in t for k in SECRET_KEYS) for t in public.values())
    full = tasks_for_agent(OptedInSpy(), tasks)
    assert all("evaluator" in t for t in full.values())


def test_only_the_oracle_opts_in_among_the_built_ins() -> None:
    from evals.agents import BUILTIN_AGENTS, load_agent_class

    opted = {name for name in BUILTIN_AGENTS if load_agent_class(name).sees_answers}
    assert opted == {"oracle", "random"}  # random plays the reference solution at times
    assert OracleAgent.sees_answers is True
