"""The ``http`` agent: any agent, in any language, behind a URL.

Each step is one ``POST <url>`` with a JSON body::

    {"task": {"task_id", "domain", "instruction"},
     "observation": {"step", "screenshot": <base64 PNG or null>, "accessibility_tree",
                     "window_title", "last_result", "last_error"},
     "history": ["<action>", ...]}

and the answer is ``{"action": "<action>" | {"type", ...fields},
"usage": {"model", "tokens_in", "tokens_out"}?}``. Actions use WAA's string form (``DONE``,
``FAIL``, ``WAIT``, pyautogui source or a command) or a :class:`BenchmarkAction` as JSON
(``{"type": "click", "x": 100, "y": 200}``, see docs/agents.md). Any failure (no answer in
time, a non-2xx status, a malformed answer) raises :class:`~evals.errors.AgentError`, which
ends the task as ``error/agent``.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

import requests

from evals.agents.base import (
    BenchmarkAction,
    BenchmarkAgent,
    BenchmarkObservation,
    BenchmarkTask,
    parse_action,
)
from evals.errors import AgentError, AgentOutOfTime, InvalidRunInputError
from oa_vm.kit.redact import redact_text, redact_url, register_secret
from waa_client import retry

AGENT_TOKEN_ENV = "OA_EVALS_AGENT_TOKEN"
"""If set, sent as ``Authorization: Bearer <token>`` to the agent server."""
DEFAULT_TIMEOUT_S = 120.0
CONNECT_TIMEOUT_S = 5.0


def observation_payload(
    observation: BenchmarkObservation,
    task: BenchmarkTask,
    history: Sequence[BenchmarkAction] | None,
) -> dict[str, Any]:
    """The JSON body posted for one step (pure; the infeasible flag is not sent)."""
    shot = observation.screenshot
    return {
        "task": {"task_id": task.task_id, "domain": task.domain, "instruction": task.instruction},
        "observation": {
            "step": observation.step,
            "screenshot": None if shot is None else base64.b64encode(shot).decode("ascii"),
            "accessibility_tree": observation.accessibility_tree,
            "window_title": observation.window_title,
            "last_result": observation.last_result,
            "last_error": observation.last_error,
        },
        "history": [a.to_string() for a in history or ()],
    }


def parse_answer(body: Any) -> BenchmarkAction:
    """The action in an agent server's answer.

    Raises:
        AgentError: the answer has no usable ``action``.
    """
    if not isinstance(body, dict) or "action" not in body:
        raise AgentError("the agent's answer is not a JSON object with an 'action'")
    raw = body["action"]
    if not isinstance(raw, str | dict):
        raise AgentError(f"the agent's 'action' is {raw!r}, not a string or an object")
    try:
        action = parse_action(raw)
    except ValueError as exc:
        raise AgentError(f"the agent's action is not valid: {exc}") from exc
    usage = body.get("usage")
    if isinstance(usage, dict):
        action.usage = dict(usage)
    return action


class HttpAgent(BenchmarkAgent):
    """Asks an agent server for each action.

    Args:
        url: The agent server's endpoint (``http(s)://...``).
        timeout_s: Seconds to wait for each answer.

    Raises:
        InvalidRunInputError: ``url`` is not an http(s) URL.
    """

    def __init__(self, url: str, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        shown = redact_url(url)  # what messages and records may show (no credentials)
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - parsed only to refuse a port out of range now
        except ValueError as exc:  # an unclosed [IPv6 bracket, a port past 65535
            raise InvalidRunInputError(
                f"--agent-url {shown!r} is not a valid URL ({exc}); pass one like "
                "http://127.0.0.1:8000/act"
            ) from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidRunInputError(
                f"--agent-url {shown!r} is not an http(s) URL; pass one like "
                "http://127.0.0.1:8000/act"
            )
        self.url = url
        self.shown_url = shown
        self.timeout_s = timeout_s
        self._session = requests.Session()
        token = os.environ.get(AGENT_TOKEN_ENV)
        if token and (parts.username is not None or parts.password is not None):
            # requests would send the URL's user:pass as Basic auth in place of the token
            raise InvalidRunInputError(
                f"--agent-url {shown!r} carries a user name or password and {AGENT_TOKEN_ENV} "
                "is set: only one can be the Authorization header; drop one of them"
            )
        if token:
            # a credential kept out of the command line (and so out of ps and shell history)
            self._session.headers["Authorization"] = f"Bearer {token}"
            register_secret(token)  # a server echoing it back must not get it into a record
        if parts.password is not None:
            # requests sends the URL's user:pass as Basic auth: its base64 form is a secret too
            register_secret(parts.password)
            basic = f"{unquote(parts.username or '')}:{unquote(parts.password)}"
            register_secret(base64.b64encode(basic.encode()).decode("ascii"))

    def act(
        self,
        observation: BenchmarkObservation,
        task: BenchmarkTask,
        history: Sequence[BenchmarkAction] | None = None,
    ) -> BenchmarkAction:
        """POST the observation, return the answer's action.

        Raises:
            AgentOutOfTime: the attempt's time (:func:`waa_client.retry.deadline_scope`) ran
                out before the call, or while the server had not answered.
            AgentError: the server did not answer, or answered something unusable.
        """
        payload = observation_payload(observation, task, history)
        left = retry.try_timeout(self.timeout_s)  # a hung server holds no attempt past its time
        if left <= 0:
            raise AgentOutOfTime(f"the attempt's time ran out before agent server "
                                 f"{self.shown_url} could be asked")
        try:
            response = self._session.post(
                self.url, json=payload, timeout=(min(CONNECT_TIMEOUT_S, left), left)
            )
        except requests.Timeout as exc:
            if left < self.timeout_s:
                raise AgentOutOfTime(f"the attempt's time ran out while agent server "
                                     f"{self.shown_url} had not answered") from exc
            raise AgentError(
                f"agent server {self.shown_url} did not answer: {redact_text(str(exc))}"
            ) from exc
        except requests.RequestException as exc:
            raise AgentError(
                f"agent server {self.shown_url} did not answer: {redact_text(str(exc))}"
            ) from exc
        if not response.ok:
            raise AgentError(
                f"agent server {self.shown_url} answered HTTP {response.status_code}: "
                f"{redact_text(response.text)[:200]}"
            )
        try:
            body = response.json()
        except ValueError as exc:
            raise AgentError(
                f"agent server {self.shown_url} answered something that is not JSON"
            ) from exc
        return parse_answer(body)


PROBE_TIMEOUT_S = 10.0
"""How long the probe before a run waits for the agent server (to connect, then to answer)."""


def probe(url: str, *, option: str = "--agent-url", timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Ask the agent server once, before any task runs or any pool is made, whether it is there.

    One ``HEAD <url>``: any HTTP answer counts, a 404, 405 or 501 too (the protocol is ``POST``,
    and a server need not know ``HEAD``), since only a server that does not answer at all
    would end every task in ``error/agent``. ``option`` is where the URL came from (the option
    or the environment variable), as the refusal names it.

    Raises:
        InvalidRunInputError: nothing answered within ``timeout_s`` (the line names the URL
            without its credentials).
    """
    try:
        requests.head(url, timeout=(timeout_s, timeout_s), allow_redirects=False)
    except requests.RequestException as exc:
        raise InvalidRunInputError(
            f"{option} {redact_url(url)}: the agent server does not answer "
            f"({_reason(exc, timeout_s)}); start it, or give the URL it listens on"
        ) from exc


def probe_agent_server(agent: str, url: str | None, *, option: str = "--agent-url") -> None:
    """:func:`probe` the server of an ``http`` agent; any other agent needs nothing.

    The one check both the commands (before a pool is made) and
    :func:`evals.run.runner.run_evaluation` (before a lease is taken, for Python callers) make.
    An ``http`` agent without a URL is refused where it is built, so there is nothing to probe.
    """
    if agent == "http" and url:
        probe(url, option=option)


def _reason(exc: requests.RequestException, timeout_s: float) -> str:
    """The short cause of a failed request ("Connection refused"), not urllib3's retry prose."""
    if isinstance(exc, requests.Timeout):
        return f"no answer within {timeout_s:g} s"
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, OSError) and cause.strerror:
            return cause.strerror
        cause = cause.__cause__ or cause.__context__
    return type(exc).__name__
