"""What the model-API agents share: screenshot sizing, the run's token cap, retries with backoff.

The agents (``api-claude``, ``api-openai``) call the official ``anthropic`` and ``openai`` SDKs,
installed with ``pip install 'oa-vm[anthropic]'`` / ``'oa-vm[openai]'``. Keys come from the
environment (``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``); the endpoint from ``base_url`` (an
agent option) or the SDKs' own ``ANTHROPIC_BASE_URL`` / ``OPENAI_BASE_URL``.
"""

from __future__ import annotations

import io
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from evals.agents.base import BenchmarkAgent, BenchmarkTask
from evals.errors import AgentError, AgentOutOfTime, InvalidRunInputError
from evals.results.cost import known_models
from oa_vm.kit.lazy import load
from oa_vm.kit.lazy import pil_image as Image
from waa_client import retry

T = TypeVar("T")

DEFAULT_RETRIES = 5
MAX_BACKOFF_S = 30.0
RETRIED_STATUSES = frozenset({408, 409, 429})
"""Statuses below 500 retried, as the SDKs retry them: request timeout, lock timeout, rate
limit. Every 5xx is retried too (Anthropic's 529 "overloaded" among them)."""


class TokenBudget:
    """Tokens every agent of one run may spend together (input plus output); thread-safe.

    Args:
        cap: The most tokens the run may use; ``None`` for no cap.
    """

    def __init__(self, cap: int | None = None) -> None:
        if cap is not None and cap < 1:
            raise InvalidRunInputError(f"token_cap must be at least 1, not {cap}")
        self.cap = cap
        self.used = 0
        self._lock = threading.Lock()

    def check(self) -> None:
        """Refuse another call once the cap is reached.

        Raises:
            AgentError: the run used its tokens (the task ends as ``error/agent``).
        """
        with self._lock:
            if self.cap is not None and self.used >= self.cap:
                raise AgentError(
                    f"the run's token cap is reached ({self.used} of {self.cap} tokens); "
                    "raise --agent-arg token_cap=N to allow more"
                )

    def add(self, tokens: int) -> None:
        """Count tokens a call used."""
        with self._lock:
            self.used += max(0, int(tokens))


@dataclass(frozen=True)
class Shot:
    """A screenshot as sent to a model, and how to map its coordinates back to the screen."""

    png: bytes
    width: int
    height: int
    scale: float
    """Model pixels per screen pixel (``< 1`` when the picture was shrunk)."""

    def to_screen(self, x: float, y: float) -> tuple[int, int]:
        """A point in the model's picture -> screen pixels."""
        return round(x / self.scale), round(y / self.scale)


class ModelApiAgent(BenchmarkAgent):
    """What the model-API agents share: their SDK's client, the run's token budget, the
    demonstration, and each call retried with backoff (:func:`with_backoff`).

    Args:
        sdk: The SDK's stand-in (:mod:`oa_vm.kit.lazy`); ``client`` names its client class.
        name: The agent's ``--agent`` name, for the missing-package message.
        vendor: Who serves the API, for the failed-call message.
        key_variable: The environment variable holding the key.
        model, api_key, base_url, token_cap, budget, retries, timeout_s, demo: As the agents
            document them.

    Raises:
        InvalidRunInputError: the SDK package is missing or no key is set.
    """

    def __init__(self, sdk: Any, client: str, *, name: str, vendor: str,
                 key_variable: str, model: str, api_key: str | None, base_url: str | None,
                 token_cap: int | None, budget: TokenBudget | None, retries: int,
                 timeout_s: float, demo: str | None) -> None:
        try:
            self._sdk: Any = load(sdk)
        except ImportError as exc:
            raise InvalidRunInputError(
                f"--agent {name} needs the {sdk.name} package: pip install 'oa-vm[{sdk.name}]'"
            ) from exc
        self.vendor = vendor
        self.model = str(model)
        self.price_model = catalog_model(self.model, known_models())
        self.budget = budget or TokenBudget(token_cap)
        self.retries = int(retries)
        self.timeout_s = float(timeout_s)
        self.demo = demo
        key = api_key or os.environ.get(key_variable)  # the key given, else the environment's
        if not key:
            raise InvalidRunInputError(
                f"set {key_variable} in the environment (the model API's key)")
        self.api_key: str = key
        # The SDK's own retries are off: its retryable errors are retried by with_backoff
        # (on tenacity), whose docstring says why the SDK's do not do that job here.
        self.client: Any = getattr(self._sdk, client)(
            api_key=key, base_url=base_url, max_retries=0, timeout=timeout_s,
        )

    def task_text(self, task: BenchmarkTask) -> str:
        """The task's instruction, and the demonstration when one was given."""
        text = f"Task: {task.instruction}"
        return f"{text}\n\nDemonstration:\n{self.demo}" if self.demo else text

    def send(self, call: Callable[[float], Any]) -> Any:
        """One API call, retried with backoff, its tokens counted against the run's budget.

        ``call(timeout)`` makes one request given ``timeout`` seconds: ``timeout_s``, cut to
        the time the attempt has left (:func:`waa_client.retry.deadline_scope`, set by the
        agent loop), as the backoff is (:func:`with_backoff`).

        Raises:
            AgentOutOfTime: the attempt's time ran out first (before a request, or with the
                API still failing and the next wait past the deadline).
            AgentError: the run's token cap is reached, or the call failed for good.
        """
        self.budget.check()

        def once() -> Any:
            timeout = retry.try_timeout(self.timeout_s)
            if timeout <= 0:
                raise AgentOutOfTime(f"the attempt's time ran out before a {self.vendor} API "
                                     "call could be made")
            return call(timeout)

        try:
            reply = with_backoff(once, retryable=transient_sdk_error(self._sdk),
                                 retry_after=header_retry_after, retries=self.retries)
        except self._sdk.APIError as exc:
            raise AgentError(f"the {self.vendor} API failed: {exc}") from exc
        self.budget.add(sum(reply_tokens(reply)))
        return reply


def reply_tokens(reply: Any) -> tuple[int, int]:
    """``(input, output)`` tokens a reply of either SDK reports."""
    usage = reply.usage
    return (int(getattr(usage, "input_tokens", 0) or 0),
            int(getattr(usage, "output_tokens", 0) or 0))


def fit_screenshot(png: bytes | None, max_size: tuple[int, int]) -> Shot:
    """Shrink a screenshot to fit ``max_size`` (never enlarged), keeping its aspect ratio.

    Raises:
        AgentError: no screenshot, or one Pillow cannot read.
    """
    if not png:
        raise AgentError("the observation has no screenshot; a model-API agent needs one")
    try:
        with Image.open(io.BytesIO(png)) as image:
            image.load()
            width, height = image.size
            scale = min(1.0, max_size[0] / width, max_size[1] / height)
            if scale >= 1.0:
                return Shot(png, width, height, 1.0)
            size = (max(1, round(width * scale)), max(1, round(height * scale)))
            out = io.BytesIO()
            image.convert("RGB").resize(size, Image.Resampling.LANCZOS).save(out, format="PNG")
    except OSError as exc:
        raise AgentError(f"the screenshot cannot be read: {exc}") from exc
    return Shot(out.getvalue(), size[0], size[1], size[0] / width)


def transient_sdk_error(sdk: Any) -> Callable[[BaseException], bool]:
    """The errors of ``sdk`` (the ``anthropic`` or ``openai`` module) worth another try: those the
    SDK itself retries (read in both SDKs' ``_should_retry``), so that one overloaded or dropped
    reply does not end a task in ``error/agent``.

    The server's ``x-should-retry: true|false`` decides when it is sent; else a connection that
    failed or timed out, :data:`RETRIED_STATUSES` and any 5xx. A 400, 401, 403, 404 or 422 is
    the request's fault and is not retried.
    """

    def transient(exc: BaseException) -> bool:
        if not isinstance(exc, sdk.APIError):
            return False
        headers = getattr(getattr(exc, "response", None), "headers", None)
        said = headers.get("x-should-retry") if headers is not None else None
        if said in ("true", "false"):
            return bool(said == "true")
        if isinstance(exc, sdk.APIConnectionError):  # APITimeoutError is one
            return True
        status = getattr(exc, "status_code", None)
        return isinstance(status, int) and (status in RETRIED_STATUSES or status >= 500)

    return transient


def with_backoff(
    call: Callable[[], T],
    *,
    retryable: Callable[[BaseException], bool],
    retry_after: Callable[[BaseException], float | None],
    retries: int = DEFAULT_RETRIES,
    base_s: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Call, waiting and retrying on a ``retryable`` error (:func:`transient_sdk_error`: rate
    limits, overload, 5xx, dropped connections): the server's ``retry-after`` when it gives
    one, else ``base_s`` doubled each time (at most :data:`MAX_BACKOFF_S`). Inside
    :func:`waa_client.retry.deadline_scope` (an attempt of the agent loop) no retry is made
    whose wait would reach the deadline: an agent in backoff never holds an attempt past its
    task time.

    The agents build their SDK clients with ``max_retries=0`` and retry here, on
    :mod:`waa_client.retry` (tenacity), rather than with the SDKs' own retries, because those
    do not do this job (read in anthropic 2.15 and openai 3.57): the two disagree about a long
    ``retry-after`` (anthropic sleeps whatever the server says, up to 49 days; openai gives up
    past 120 s) while ours waits at most :data:`MAX_BACKOFF_S` for both, so an agent never holds
    a billed worker for the server's whole wait; and their sleep is ``time.sleep`` inside the
    client, which a test's fake clock cannot see, where ``sleep`` here lets tests pin the
    schedule (``tests/unit/evals/test_model_api.py``).

    Raises:
        AgentError: still failing after ``retries`` retries (the line says how it failed last).
        AgentOutOfTime: still failing when the deadline stopped the retries: the line says
            whether the time had run out or the next wait (the server's ``retry-after``, or the
            backoff) would have ended past it, with the seconds asked and left.
    """
    gave_up: list[retry.GaveUp] = []

    def server_wait(exc: BaseException, planned: float) -> float:
        told = retry_after(exc)
        return min(MAX_BACKOFF_S, told) if told is not None else planned

    try:
        return retry.call(call, attempts=retries + 1, retryable=retryable,
                          backoff_max=MAX_BACKOFF_S, first_wait=base_s, wait_for=server_wait,
                          sleep=sleep, on_give_up=gave_up.append)
    except Exception as exc:
        if not retryable(exc) or not gave_up:
            raise
        stop = gave_up[0]
        status = getattr(exc, "status_code", None)
        how = (("answering 429 (rate limit)" if status == 429 else f"answering {status}")
               if isinstance(status, int) else "failing")
        if stop.reason is retry.StopReason.ATTEMPTS:
            raise AgentError(f"the model API kept {how} after {stop.tries_text}: {exc}") from exc
        if stop.reason is retry.StopReason.DEADLINE:
            raise AgentOutOfTime(f"the model API was still {how} when the attempt's time ran "
                                 f"out (after {stop.tries_text}): {exc}") from exc
        # time was left: the wait before the next try would have ended past it
        last = ((f"last answer was {'429 (rate limit)' if status == 429 else f'status {status}'}")
                if isinstance(status, int) else "last call failed")
        told = retry_after(exc)
        wait = (f"the wait it asked for ({retry.seconds_text(told)})" if told is not None
                else f"the next backoff ({retry.seconds_text(stop.wait_s)})")
        raise AgentOutOfTime(
            f"after {stop.tries_text} the model API's {last}, and {wait} would end past the "
            f"attempt's time ({retry.seconds_text(stop.left_s or 0.0)} left): {exc}") from exc


def header_retry_after(exc: BaseException) -> float | None:
    """Seconds from an SDK error's ``retry-after`` header, if any."""
    response: Any = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    value = headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def catalog_model(model: str, known: list[str]) -> str:
    """The price catalog's name for an API model id (the longest catalog name it starts with,
    ``claude-sonnet-4-20250514`` -> ``claude-sonnet-4``); the id itself when none matches (the
    ledger then reports it as unpriced)."""
    matches = [name for name in known if model == name or model.startswith(name + "-")]
    return max(matches, key=len) if matches else model


def parse_agent_args(pairs: list[str] | tuple[str, ...] | None) -> dict[str, Any]:
    """``["key=value", ...]`` -> ``{key: value}`` with numbers and booleans converted.

    Raises:
        InvalidRunInputError: an item without ``=``; a key given twice (the last value won,
            silently: the run was not the one asked for).
    """
    from oa_vm.kit.validate import twice_problem

    split = [pair.partition("=") for pair in pairs or ()]
    for pair, (key, sep, _) in zip(pairs or (), split, strict=True):
        if not sep or not key.strip():
            raise InvalidRunInputError(
                f"--agent-arg {pair!r} is not KEY=VALUE; e.g. --agent-arg max_tokens=2048"
            )
    names = [key.strip().replace("-", "_") for key, _, _ in split]
    twice = twice_problem("--agent-arg", [key.strip() for key, _, _ in split], "key", names)
    if twice:
        raise InvalidRunInputError(twice)
    return {name: _value(value.strip()) for name, (_, _, value) in zip(names, split, strict=True)}


def _value(text: str) -> Any:
    lowered = text.lower()
    if lowered in ("true", "yes", "on"):
        return True
    if lowered in ("false", "no", "off"):
        return False
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


__all__ = [
    "Shot",
    "TokenBudget",
    "ModelApiAgent",
    "catalog_model",
    "fit_screenshot",
    "header_retry_after",
    "parse_agent_args",
    "reply_tokens",
    "transient_sdk_error",
    "with_backoff",
]
