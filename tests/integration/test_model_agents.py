"""``--agent api-claude`` and ``--agent api-openai`` through the real CLI and a real local pool,
against loopback stand-ins for the model APIs (tests/support/fake_model_apis.py; the real
endpoints are never contacted)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evals.results.cost import token_cost
from tests.support.cli import run_cli
from tests.support.fake_model_apis import TOKENS_IN, TOKENS_OUT, FakeModelApis
from tests.support.run_records import read_records

pytestmark = pytest.mark.integration

NOTIFICATIONS_OFF = "d999d632-3d7d-5774-9c6f-ccc79bea22ec-WOS"
DARK_MODE = "e112363f-4a10-536e-89c0-53e0fb3afa05-WOS"
# Claude sees the 1280x720 screen shrunk to 1024x576 (x0.8): the Notifications switch, centred
# at (500, 208) on screen, is at (400, 166) in its picture.
CLAUDE_SCRIPT = [
    {"action": "key", "text": "super+i"},
    {"action": "screenshot"},
    {"action": "left_click", "coordinate": [400, 166]},
    {"final": "Notifications are now off."},
]
OPENAI_SCRIPT = [
    {"type": "keypress", "keys": ["META", "I"]},
    {"type": "click", "button": "left", "x": 500, "y": 288},
    {"final": "Dark mode is on."},
]


def _run(
    home: Path, results: Path, *args: str, env: dict[str, str], exit_code: int = 0
) -> dict[str, object]:
    done = run_cli("openadapt-evals", "run", "--pool", "p", "--results-dir", str(results),
                   "--json", *args, home=home, env=env, timeout=240)
    assert done.returncode == exit_code, done.stderr
    summary: dict[str, object] = json.loads(done.stdout)
    return summary


def test_api_claude_completes_a_local_task_and_the_ledger_prices_it(
    pooled: Path, tmp_path: Path
) -> None:
    with FakeModelApis(anthropic_script=CLAUDE_SCRIPT, rate_limited=1) as fake:
        summary = _run(pooled, tmp_path / "r", "--agent", "api-claude", "--tasks",
                       NOTIFICATIONS_OFF, "--run-name", "claude", "--agent-arg",
                       f"base_url={fake.url}", env={"ANTHROPIC_API_KEY": "sk-ant-test"})
        record = read_records(tmp_path / "r" / "claude")[NOTIFICATIONS_OFF]
        assert record["status"] == "success" and record["score"] == 1.0
        assert [s["action"]["type"] for s in record["steps"]] == ["key", "click", "done"]
        click = record["steps"][1]["action"]
        assert (click["x"], click["y"]) == (500, 208)
        # 4 model calls answered (the screenshot request cost a call), plus one 429 retried
        calls = [r for r in fake.requests if r.path.endswith("/v1/messages")]
        assert len(calls) == 5
        # the key from the environment (newer SDKs send it as a bearer token)
        assert all("sk-ant-test" in (r.headers.get("x-api-key", "") +
                                     r.headers.get("authorization", "")) for r in calls)
        assert set(fake.images("/v1/messages")) == {(1024, 576)}
        tool = calls[-1].body["tools"][0]
        assert (tool["display_width_px"], tool["display_height_px"]) == (1024, 576)
    used_in, used_out = 4 * TOKENS_IN, 4 * TOKENS_OUT
    cost = record["cost"]
    assert (cost["tokens_in"], cost["tokens_out"]) == (used_in, used_out)
    assert cost["model_usd"] == pytest.approx(token_cost("claude-sonnet-4", used_in, used_out))
    assert sum(int(s["usage"]["tokens_in"]) for s in record["steps"]) == used_in
    # the run's ledger (the printed summary) carries them too
    ledger = summary["cost"]
    assert isinstance(ledger, dict)
    assert (ledger["tokens_in"], ledger["tokens_out"]) == (used_in, used_out)
    assert ledger["model_usd"] == pytest.approx(cost["model_usd"], abs=1e-6)
    assert summary["success_rate"] == 1.0


def test_an_overloaded_or_failing_model_api_is_retried_as_the_sdk_would(
    pooled: Path, tmp_path: Path
) -> None:
    # 529 (overloaded) and 500 before the first answer: the task still succeeds, where it
    # used to end in error/agent at the first of them.
    with FakeModelApis(anthropic_script=CLAUDE_SCRIPT, failures=[529, 500]) as fake:
        _run(pooled, tmp_path / "r", "--agent", "api-claude", "--tasks", NOTIFICATIONS_OFF,
             "--run-name", "overloaded", "--max-attempts", "1", "--agent-arg",
             f"base_url={fake.url}", env={"ANTHROPIC_API_KEY": "sk-ant-test"})
        record = read_records(tmp_path / "r" / "overloaded")[NOTIFICATIONS_OFF]
        assert record["status"] == "success", record.get("error_message")
        calls = [r for r in fake.requests if r.path.endswith("/v1/messages")]
        assert len(calls) == 4 + 2
    with FakeModelApis(anthropic_script=CLAUDE_SCRIPT, failures=[400]) as fake:
        _run(pooled, tmp_path / "r", "--agent", "api-claude", "--tasks", NOTIFICATIONS_OFF,
             "--run-name", "refused", "--max-attempts", "1", "--agent-arg",
             f"base_url={fake.url}", env={"ANTHROPIC_API_KEY": "sk-ant-test"}, exit_code=4)
        record = read_records(tmp_path / "r" / "refused")[NOTIFICATIONS_OFF]
        assert record["status"] == "error" and record["error_type"] == "agent"
        assert "the Anthropic API failed" in record["error_message"]
        assert len(fake.requests) == 1  # a bad request is not sent again


TASK_TIME_S = 8
"""--task-timeout of the rate-limited run: it ends about then, where the old code ran 150 s."""


def test_a_rate_limited_model_api_ends_the_attempt_at_its_task_time_not_after_its_backoff(
    pooled: Path, tmp_path: Path
) -> None:
    # Every call answered 429 with retry-after 30: the agent waited 30 s (its cap) before each
    # of its 5 retries whatever --task-timeout said, and the attempt ended 150 s on in
    # error/agent. No retry is made now whose wait would pass the attempt's deadline: the
    # attempt ends as error/timeout (retried, as any timeout) by its task time, and its line
    # says why: not "the attempt's time ran out (1 tries)" with seconds still left, but the
    # wait asked for and the time left.
    with FakeModelApis(anthropic_script=CLAUDE_SCRIPT, rate_limited=1000,
                       retry_after="30") as fake:
        _run(pooled, tmp_path / "r", "--agent", "api-claude", "--tasks", NOTIFICATIONS_OFF,
             "--run-name", "limited", "--max-attempts", "1", "--task-timeout",
             f"{TASK_TIME_S}s", "--agent-arg", f"base_url={fake.url}",
             env={"ANTHROPIC_API_KEY": "sk-ant-test"},
             exit_code=4)  # its one task ended in error: the run is reported unhealthy
        record = read_records(tmp_path / "r" / "limited")[NOTIFICATIONS_OFF]
        calls = [r for r in fake.requests if r.path.endswith("/v1/messages")]
    message = record["error_message"]
    assert record["status"] == "error" and record["error_type"] == "timeout", record
    assert message.startswith(
        "the agent could not choose step 0 within the attempt's time: after 1 try the model "
        "API's last answer was 429 (rate limit), and the wait it asked for (30 s) would end "
        "past the attempt's time ("), message
    left = re.search(r"\((\d+) s left\): ", message)
    assert left is not None and 0 <= int(left.group(1)) <= TASK_TIME_S, message
    assert "ran out" not in message and "tries" not in message
    assert len(calls) == 1  # the old code sent 6
    assert record["duration_s"] < 3 * TASK_TIME_S


def test_the_token_cap_stops_the_agent(pooled: Path, tmp_path: Path) -> None:
    with FakeModelApis(anthropic_script=CLAUDE_SCRIPT) as fake:
        _run(pooled, tmp_path / "r", "--agent", "api-claude", "--tasks", NOTIFICATIONS_OFF,
             "--run-name", "capped", "--max-attempts", "1", "--agent-arg",
             f"base_url={fake.url}", "--agent-arg", "token_cap=1000",
             env={"ANTHROPIC_API_KEY": "sk-ant-test"},
             exit_code=4)  # every task ended in error: the run is reported unhealthy
        record = read_records(tmp_path / "r" / "capped")[NOTIFICATIONS_OFF]
        assert record["status"] == "error" and record["error_type"] == "agent"
        assert "token cap" in record["error_message"]
        assert len(fake.requests) == 1  # the call past the cap was never made


def test_api_openai_completes_a_local_task(pooled: Path, tmp_path: Path) -> None:
    with FakeModelApis(openai_script=OPENAI_SCRIPT) as fake:
        _run(pooled, tmp_path / "r", "--agent", "api-openai", "--tasks", DARK_MODE,
             "--run-name", "openai", "--agent-arg", f"base_url={fake.url}/v1",
             env={"OPENAI_API_KEY": "sk-test"})
        record = read_records(tmp_path / "r" / "openai")[DARK_MODE]
        assert record["status"] == "success"
        calls = [r for r in fake.requests if r.path.endswith("/v1/responses")]
        assert {r.headers.get("authorization") for r in calls} == {"Bearer sk-test"}
        assert set(fake.images("/v1/responses")) == {(1280, 720)}
        assert calls[1].body["previous_response_id"] == "resp_000"
        assert calls[1].body["input"][0]["type"] == "computer_call_output"
    assert record["cost"]["model_usd"] == pytest.approx(
        token_cost("computer-use-preview", 3 * TOKENS_IN, 3 * TOKENS_OUT))


def test_a_missing_key_is_one_line(pooled: Path, tmp_path: Path) -> None:
    done = run_cli("openadapt-evals", "run", "--pool", "p", "--agent", "api-claude", "--tasks",
                   NOTIFICATIONS_OFF, "--results-dir", str(tmp_path / "r"), home=pooled,
                   env={"ANTHROPIC_API_KEY": ""})
    assert done.returncode != 0
    assert "ANTHROPIC_API_KEY" in done.assert_one_line_error()
