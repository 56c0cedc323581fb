"""Agents: actions, the registry, module:Class loading, and the built-in agents."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from evals.agents import (
    AgentOptions,
    BenchmarkAction,
    BenchmarkObservation,
    BenchmarkTask,
    agent_factory,
    create_agent,
    load_agent_class,
    parse_action,
)
from evals.agents.http import HttpAgent, probe
from evals.agents.noop import NoopAgent
from evals.agents.oracle import OracleAgent
from evals.agents.replay import ReplayAgent
from evals.errors import (
    AgentError,
    AgentOutOfTime,
    InvalidRunInputError,
    MissingBundlesError,
    UnknownAgentError,
)
from tests.support.http_servers import RefusingPort, Reply, ScriptedServer, SilentServer

OBS = BenchmarkObservation(screenshot=b"\x89PNG fake", accessibility_tree="<a/>",
                           window_title="Notepad", step=0)


def _task(task_id: str = "t1", **raw: object) -> BenchmarkTask:
    return BenchmarkTask(task_id, "notepad", "Type hi", False, dict(raw))


# --- actions -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [("DONE", "done"), ("fail", "fail"), (" WAIT ", "wait"), ("notepad open", "execute")],
)
def test_action_strings(text: str, kind: str) -> None:
    action = parse_action(text)
    assert action.type == kind
    assert parse_action(action.to_string()) == action


def test_action_objects_and_bad_actions() -> None:
    action = parse_action({"type": "execute_windows", "code": "print(1)"})
    assert action.type == "execute_windows" and action.code == "print(1)"
    assert action.to_json() == {"type": "execute_windows", "code": "print(1)"}
    for bad in ("", {"type": "jump"}, {"type": "execute"}, {"command": "x"}):
        with pytest.raises(ValueError):
            parse_action(bad)


# --- registry ----------------------------------------------------------------------------------


def test_builtins_by_name() -> None:
    assert load_agent_class("noop") is NoopAgent
    assert load_agent_class("oracle") is OracleAgent
    assert isinstance(create_agent("replay", AgentOptions(bundles=Path("."))), ReplayAgent)
    assert isinstance(create_agent("http", AgentOptions(agent_url="http://127.0.0.1:9")), HttpAgent)


def test_unknown_agent_lists_the_known_ones() -> None:
    with pytest.raises(UnknownAgentError) as info:
        load_agent_class("gpt-genius")
    assert "noop" in str(info.value) and "module:Class" in str(info.value)
    assert info.value.exit_code == 2


def test_third_party_agent_by_module_and_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_agents.py").write_text(
        "from evals.agents.base import BenchmarkAgent, BenchmarkAction\n"
        "class Clicker(BenchmarkAgent):\n"
        "    def act(self, observation, task, history=None):\n"
        "        return BenchmarkAction('fail')\n"
        "class NotAnAgent:\n"
        "    pass\n"
    )
    (tmp_path / "broken_agents.py").write_text("import does_not_exist_anywhere\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    factory = agent_factory("my_agents:Clicker")
    first, second = factory(), factory()
    assert first is not second
    assert first.act(OBS, _task()).type == "fail"
    for spec, needle in [
        ("broken_agents:X", "cannot import broken_agents"),
        ("my_agents:Missing", "has no attribute Missing"),
        ("my_agents:NotAnAgent", "not a BenchmarkAgent"),
        ("my_agents:", "module:Class"),
    ]:
        with pytest.raises(UnknownAgentError, match=needle):
            load_agent_class(spec)


def test_builtins_that_need_an_option_say_which() -> None:
    with pytest.raises(InvalidRunInputError, match="--bundles"):
        create_agent("replay")
    with pytest.raises(InvalidRunInputError, match="--agent-url"):
        create_agent("http")
    with pytest.raises(InvalidRunInputError, match="not an http"):
        create_agent("http", AgentOptions(agent_url="ftp://x"))
    for url, why in [("http://[::1/act", "Invalid IPv6 URL"),
                     ("http://127.0.0.1:99999/act", "Port out of range")]:
        with pytest.raises(InvalidRunInputError, match=rf"is not a valid URL \({why}"):
            create_agent("http", AgentOptions(agent_url=url))
    # an agent's own refusal of its options is passed on as it is, not wrapped
    with pytest.raises(InvalidRunInputError, match=r"^the random agent's p must be"):
        create_agent("random", AgentOptions(args=("p=2",)))


# --- scripted agents ---------------------------------------------------------------------------


def test_noop_is_done_at_once() -> None:
    assert NoopAgent().act(OBS, _task()).type == "done"


def test_oracle_plays_the_reference_solution_step_by_step() -> None:
    task = _task(reference_solution=["notepad type hi", "sleep 0.1", "DONE"])
    oracle = OracleAgent()
    history: list[BenchmarkAction] = []
    while True:
        action = oracle.act(OBS, task, history)
        history.append(action)
        if action.ends_task:
            break
    assert [a.to_string() for a in history] == ["notepad type hi", "sleep 0.1", "DONE"]


def test_oracle_refuses_tasks_without_a_reference_solution_listing_them() -> None:
    with pytest.raises(InvalidRunInputError, match="2 selected task") as info:
        OracleAgent().check_tasks(
            {"a": {"reference_solution": ["DONE"]}, "b": {}, "c": {"reference_solution": []}}
        )
    assert "b, c" in str(info.value)
    with pytest.raises(AgentError):
        OracleAgent().act(OBS, _task())


def test_replay_refuses_to_start_while_bundles_are_missing(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "workflow.json").write_text(json.dumps({"actions": ["x 1", "DONE"]}))
    agent = ReplayAgent(tmp_path)
    with pytest.raises(MissingBundlesError) as info:
        agent.check_tasks({"a": {}, "b": {}, "c": {}})
    assert info.value.task_ids == ["b", "c"]
    agent.check_tasks({"a": {}})
    assert agent.act(OBS, _task("a")).command == "x 1"
    assert agent.act(OBS, _task("a"), [parse_action("x 1")]).type == "done"


def test_replay_rejects_a_malformed_bundle_and_a_missing_folder(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "workflow.json").write_text('{"steps": []}')
    with pytest.raises(InvalidRunInputError, match="actions"):
        ReplayAgent(tmp_path).check_tasks({"a": {}})
    with pytest.raises(InvalidRunInputError, match="nope does not exist"):
        ReplayAgent(tmp_path / "nope")


# --- http agent (a real server on loopback) ----------------------------------------------------


def test_http_agent_posts_the_observation_and_takes_the_answer() -> None:
    answer = {"action": "notepad type hi",
              "usage": {"model": "gpt-4o", "tokens_in": 900, "tokens_out": 40}}
    with ScriptedServer({"/act": Reply.json(answer)}) as server:
        agent = HttpAgent(server.url + "/act", timeout_s=5)
        action = agent.act(OBS, _task(), [parse_action("WAIT")])
        _, body = server.bodies[0]
    assert action.command == "notepad type hi"
    assert action.usage == {"model": "gpt-4o", "tokens_in": 900, "tokens_out": 40}
    sent = json.loads(body)
    assert base64.b64decode(sent["observation"]["screenshot"]) == OBS.screenshot
    assert sent["observation"]["window_title"] == "Notepad"
    assert sent["observation"]["last_error"] is None and "last_result" in sent["observation"]
    assert sent["task"] == {"task_id": "t1", "domain": "notepad", "instruction": "Type hi"}
    assert sent["history"] == ["WAIT"]


@pytest.mark.parametrize(
    "reply",
    [Reply.json({"error": "boom"}, 500), Reply.json({"no": "action"}), Reply(200, b"not json"),
     Reply.json({"action": ""}), Reply.json({"action": 7})],
)
def test_http_agent_failures_are_agent_errors(reply: Reply) -> None:
    with ScriptedServer({"/act": reply}) as server, pytest.raises(AgentError):
        HttpAgent(server.url + "/act", timeout_s=5).act(OBS, _task())


def test_a_hung_http_agent_server_holds_the_attempt_only_until_its_deadline() -> None:
    # the agent server's own timeout (60 s) was used whatever time the attempt had left
    import time

    from waa_client.retry import deadline_scope

    with SilentServer() as server:
        agent = HttpAgent(server.url + "/act", timeout_s=60)
        started = time.monotonic()
        with deadline_scope(started + 2.0), pytest.raises(AgentOutOfTime, match="ran out"):
            agent.act(OBS, _task())
        assert time.monotonic() - started < 30.0  # about 2 s; the server's timeout is 60 s
        with deadline_scope(time.monotonic() - 1.0), pytest.raises(AgentOutOfTime, match="before"):
            agent.act(OBS, _task())  # the time already gone: nothing is sent


def test_http_agent_unreachable_is_an_agent_error() -> None:
    with RefusingPort() as port, pytest.raises(AgentError, match="did not answer"):
        HttpAgent(port.url, timeout_s=2).act(OBS, _task())


def test_the_probe_accepts_any_http_answer_and_sends_one_request() -> None:
    # the protocol is POST: a server that knows no HEAD (501) or no such path (404) is there
    with ScriptedServer({"/act": Reply.json({"action": "DONE"})}) as server:
        probe(server.url + "/act")
        probe(server.url + "/elsewhere")
        assert server.hits == {}  # HEAD is not scripted: answered 501 before any route


def test_the_probe_refuses_a_server_that_does_not_answer_naming_the_url() -> None:
    with RefusingPort() as port, pytest.raises(InvalidRunInputError) as refused:
        probe(f"http://bob:s3cret@127.0.0.1:{port.port}/act", option="$OA_EVALS_AGENT_URL")
    assert str(refused.value).startswith(
        f"$OA_EVALS_AGENT_URL http://***@127.0.0.1:{port.port}/act: the agent server does not "
        "answer (Connection refused)")
    assert "s3cret" not in str(refused.value)
    with SilentServer() as silent, pytest.raises(InvalidRunInputError, match="no answer within"):
        probe(f"http://127.0.0.1:{silent.port}/act", timeout_s=1)


def test_a_constructor_that_raises_is_bad_input_naming_the_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "raising_agents.py").write_text(
        "from evals.agents.base import BenchmarkAgent\n"
        "class NoWeights(BenchmarkAgent):\n"
        "    def __init__(self):\n"
        "        raise RuntimeError('no weights in ./model')\n"
        "    def act(self, observation, task, history=None):\n"
        "        raise AssertionError\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(InvalidRunInputError) as refused:
        agent_factory("raising_agents:NoWeights")
    assert str(refused.value).startswith(
        "agent 'raising_agents:NoWeights' could not be created: RuntimeError: no weights")
    assert isinstance(refused.value.__cause__, RuntimeError)  # --debug shows where


@pytest.mark.parametrize(("spec", "args", "named"), [
    ("random", ("pp=0.5",), "it accepts p, seed"),
    ("noop", ("speed=1",), "it takes no --agent-arg"),
    ("tests.support.local_runs:LookThenStop", ("look=2",), "it accepts looks, label"),
])
def test_an_agent_arg_typo_names_the_accepted_ones(spec: str, args: tuple[str, ...],
                                                   named: str) -> None:
    from evals.agents import AgentOptions

    with pytest.raises(InvalidRunInputError) as caught:
        create_agent(spec, AgentOptions(args=args))
    assert named in str(caught.value)
