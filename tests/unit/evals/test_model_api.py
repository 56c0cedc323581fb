"""The model-API agents' shared parts: screenshot sizing, token cap, backoff (ending by the
attempt's deadline), options."""

from __future__ import annotations

import base64
import io
import re
import time
from typing import Any

import pytest
from PIL import Image

from evals.agents.model_api import (
    MAX_BACKOFF_S,
    TokenBudget,
    catalog_model,
    fit_screenshot,
    parse_agent_args,
    transient_sdk_error,
    with_backoff,
)
from evals.errors import AgentError, AgentOutOfTime, InvalidRunInputError
from evals.results.records import ErrorType
from tests.support.fake_model_apis import FakeModelApis
from tests.support.http_servers import RefusingPort, Reply, ScriptedServer
from waa_client import ScoringClient, WaaClient, retry


def _png(size: tuple[int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (10, 20, 30)).save(out, format="PNG")
    return out.getvalue()


def test_screenshots_shrink_to_fit_and_coordinates_map_back() -> None:
    shot = fit_screenshot(_png((1280, 720)), (1024, 768))
    assert (shot.width, shot.height, shot.scale) == (1024, 576, 0.8)
    with Image.open(io.BytesIO(shot.png)) as image:
        assert image.size == (1024, 576)
    assert shot.to_screen(400, 166) == (500, 208)
    same = fit_screenshot(_png((1280, 720)), (2048, 768))
    assert (same.width, same.height, same.scale) == (1280, 720, 1.0)
    with pytest.raises(AgentError, match="no screenshot"):
        fit_screenshot(None, (1024, 768))
    with pytest.raises(AgentError, match="cannot be read"):
        fit_screenshot(b"not a png", (1024, 768))


def test_token_budget() -> None:
    budget = TokenBudget(100)
    budget.check()
    budget.add(60)
    budget.check()
    budget.add(60)
    with pytest.raises(AgentError, match="token cap is reached"):
        budget.check()
    TokenBudget(None).check()
    with pytest.raises(InvalidRunInputError):
        TokenBudget(0)


class _Limited(Exception):
    def __init__(self, after: str | None) -> None:
        super().__init__("429")
        self.after = after


def test_backoff_waits_what_the_server_says_then_doubles() -> None:
    waits: list[float] = []
    answers = iter([_Limited("2"), _Limited(None), _Limited(None), "ok"])

    def call() -> str:
        item = next(answers)
        if isinstance(item, Exception):
            raise item
        return item

    result = with_backoff(call, retryable=lambda e: isinstance(e, _Limited),
                          retry_after=lambda e: float(e.after) if getattr(e, "after", None)
                          else None, base_s=1.0, sleep=waits.append)
    assert result == "ok" and waits == [2.0, 2.0, 4.0]  # the doubling counts every retry


def test_backoff_gives_up_and_passes_other_errors() -> None:
    def limited() -> str:
        raise _Limited(None)

    waits: list[float] = []
    with pytest.raises(AgentError, match="kept failing after 4 tries"):
        with_backoff(limited, retryable=lambda e: True, retry_after=lambda e: None,
                     retries=3, base_s=20.0, sleep=waits.append)
    assert waits == [20.0, MAX_BACKOFF_S, MAX_BACKOFF_S]

    def broken() -> str:
        raise KeyError("x")

    with pytest.raises(KeyError):
        with_backoff(broken, retryable=lambda e: False, retry_after=lambda e: None)


def test_catalog_names_and_agent_args() -> None:
    known = ["claude-sonnet-4", "gpt-4o", "gpt-4o-mini", "computer-use-preview"]
    assert catalog_model("claude-sonnet-4-20250514", known) == "claude-sonnet-4"
    assert catalog_model("gpt-4o-mini-2024-07-18", known) == "gpt-4o-mini"
    assert catalog_model("computer-use-preview", known) == "computer-use-preview"
    assert catalog_model("something-else", known) == "something-else"
    assert parse_agent_args(["token_cap=5000", "probe=true", "model=x", "base-url=http://h",
                             "ratio=0.5"]) == {
        "token_cap": 5000, "probe": True, "model": "x", "base_url": "http://h", "ratio": 0.5}
    with pytest.raises(InvalidRunInputError, match="KEY=VALUE"):
        parse_agent_args(["oops"])


def _sdk_error(sdk_name: str, base_url: str) -> tuple[Any, BaseException]:
    """The exception the real SDK raises for one call to ``base_url`` (its own retries off)."""
    sdk = pytest.importorskip(sdk_name)
    try:
        if sdk_name == "anthropic":
            client: Any = sdk.Anthropic(api_key="sk-test", base_url=base_url, max_retries=0,
                                        timeout=10.0)
            client.messages.create(model="claude-sonnet-4-20250514", max_tokens=1,
                                   messages=[{"role": "user", "content": "hi"}])
        else:
            client = sdk.OpenAI(api_key="sk-test", base_url=base_url + "/v1", max_retries=0,
                                timeout=10.0)
            client.responses.create(model="computer-use-preview", input="hi")
    except Exception as exc:
        return sdk, exc
    raise AssertionError("the fake was to fail this call")


@pytest.mark.parametrize("sdk_name", ["anthropic", "openai"])
@pytest.mark.parametrize(("status", "retried"), [
    (400, False), (401, False), (403, False), (404, False), (422, False),
    (408, True), (409, True), (429, True), (500, True), (503, True), (529, True),
])
def test_what_is_retried_is_what_the_sdk_would_retry(
    sdk_name: str, status: int, retried: bool
) -> None:
    with FakeModelApis(failures=[status]) as fake:
        sdk, exc = _sdk_error(sdk_name, fake.url)
    assert getattr(exc, "status_code", None) == status
    assert transient_sdk_error(sdk)(exc) is retried


@pytest.mark.parametrize("sdk_name", ["anthropic", "openai"])
def test_the_servers_x_should_retry_decides_and_a_dropped_connection_is_retried(
    sdk_name: str,
) -> None:
    with FakeModelApis(failures=[500], failure_headers={"x-should-retry": "false"}) as fake:
        sdk, exc = _sdk_error(sdk_name, fake.url)
    assert transient_sdk_error(sdk)(exc) is False
    with FakeModelApis(failures=[400], failure_headers={"x-should-retry": "true"}) as fake:
        sdk, exc = _sdk_error(sdk_name, fake.url)
    assert transient_sdk_error(sdk)(exc) is True
    with RefusingPort() as refused:
        sdk, exc = _sdk_error(sdk_name, refused.url)
    assert isinstance(exc, sdk.APIConnectionError) and transient_sdk_error(sdk)(exc) is True
    assert transient_sdk_error(sdk)(KeyError("not the SDK's")) is False


class _Answered(Exception):
    def __init__(self, status: int | None, after: str | None) -> None:
        super().__init__(f"status {status}")
        self.status_code = status
        self.after = after


@pytest.mark.parametrize(("status", "after", "said"), [
    (429, "30", "the model API's last answer was 429 (rate limit), and the wait it asked for "
                "(30 s) would end past the attempt's time"),
    (503, None, "the model API's last answer was status 503, and the next backoff (20 s) would "
                "end past the attempt's time"),
    (None, None, "the model API's last call failed, and the next backoff (20 s) would end past "
                 "the attempt's time"),
], ids=["429 with retry-after", "503", "no answer"])
def test_a_wait_that_would_pass_the_deadline_is_not_reported_as_time_run_out(
    status: int | None, after: str | None, said: str,
) -> None:
    # 429 with retry-after 30 and 8 s left: the attempt ended at once "when the attempt's time
    # ran out (1 tries)", with 8 s left. The time had not run out: the wait would have passed
    # it. The line says so, with the seconds asked and left, and "1 try".
    def answer() -> str:
        raise _Answered(status, after)

    with retry.deadline_scope(time.monotonic() + 8.0), \
            pytest.raises(AgentOutOfTime) as info:
        with_backoff(answer, retryable=lambda e: True,
                     retry_after=lambda e: float(e.after) if getattr(e, "after", None)
                     else None, retries=5, base_s=20.0, sleep=lambda s: pytest.fail("waited"))
    message = str(info.value)
    assert message.startswith(f"after 1 try {said} (")
    left = re.search(r"the attempt's time \((\d+) s left\)", message)
    assert left is not None and 0 <= int(left.group(1)) <= 8, message
    assert "ran out" not in message and "tries" not in message


TASK_TIME_S = 3.0
"""The attempts below end about then; the old code held them 60 s (two 30 s waits of backoff)
or about 60 s (three tries of the agent's 20 s timeout)."""
WORKER = {
    "/setup/close_all": Reply(200, b"ok", "text/plain"),
    "/setup/clear_task_files": Reply(200, b"ok", "text/plain"),
    "/obs_winagent": Reply.json({"image": base64.b64encode(_png((64, 48))).decode()}),
    "/accessibility": Reply.json({"AT": "<root/>"}),
}
CHECKER = {"/setup": Reply.json({"status": "success", "results": []}),
           "/evaluate": Reply.json({"score": 1.0, "success": True, "reason": "ok"})}


@pytest.mark.parametrize("api", ["rate-limited", "hung"])
def test_a_model_api_in_backoff_or_hung_ends_the_attempt_as_a_timeout_at_its_task_time(
    api: str,
) -> None:
    # 429 with retry-after 60: the agent used to wait 30 s (MAX_BACKOFF_S) before each retry,
    # whatever time the attempt had; a hung API got the agent's whole timeout per try. Now no
    # retry is made whose wait would pass the attempt's deadline, each request's timeout is cut
    # to the time left, and the task ends as error/timeout (retried), not error/agent.
    pytest.importorskip("anthropic")
    from evals.agents.api_claude import ClaudeComputerUseAgent
    from evals.run.agent_loop import run_task
    from evals.run.settings import RunConfig

    hold = {"rate_limited": 100, "retry_after": "60"} if api == "rate-limited" else {
        "delay_s": 120.0}
    with FakeModelApis(anthropic_script=[{"final": "done"}], **hold) as fake, \
            ScriptedServer(WORKER) as worker, ScriptedServer(CHECKER) as checker, \
            WaaClient(worker.url, read_timeout=10.0) as waa, \
            ScoringClient(checker.url, read_timeout=10.0) as scoring:
        agent = ClaudeComputerUseAgent(api_key="sk-ant-test", base_url=fake.url, retries=2,
                                       timeout_s=20.0)
        config = RunConfig(pool=None, selection="all", agent="api-claude", step_pause_s=0.0)
        started = time.monotonic()
        record = run_task(waa, scoring, {"id": "t1", "instruction": "Wait", "config": []},
                          "t1", agent, config, deadline=started + TASK_TIME_S)
        elapsed = time.monotonic() - started
        calls = len(fake.requests)
    assert record.error_type is ErrorType.TIMEOUT, record.error_message
    assert "the agent could not choose step 0 within the attempt's time" in (
        record.error_message or "")
    if api == "rate-limited":  # time was left: the wait asked for would have passed it
        assert "the wait it asked for (60 s) would end past the attempt's time" in (
            record.error_message or "")
    assert calls == 1  # no retry: its wait, or another try, would pass the deadline
    assert checker.hits["/evaluate"] == 0
    assert elapsed < 5 * TASK_TIME_S, f"the attempt took {elapsed:.1f}s"


def test_an_agent_call_made_after_the_deadline_is_not_sent() -> None:
    pytest.importorskip("anthropic")
    from evals.agents.api_claude import ClaudeComputerUseAgent

    with FakeModelApis(anthropic_script=[{"final": "done"}]) as fake:
        agent = ClaudeComputerUseAgent(api_key="sk-ant-test", base_url=fake.url)
        with retry.deadline_scope(time.monotonic() - 1.0), \
                pytest.raises(AgentOutOfTime, match="time ran out before"):
            agent.send(lambda timeout: pytest.fail(f"sent with {timeout}s"))
        assert fake.requests == []
