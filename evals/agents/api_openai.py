"""``--agent api-openai``: OpenAI's computer-use model, through the official ``openai`` SDK.

Each step calls the Responses API with the ``computer_use_preview`` tool: the first with the task
and the screen, later ones with the ``computer_call_output`` (the new screen) of the model's last
``computer_call``, chained by ``previous_response_id``. Screens are sent at their size when they
fit :data:`MAX_SCREEN` (the model's high-detail limit), shrunk otherwise. A reply without a
computer call ends the task: ``FAIL`` when it says the task is impossible, else ``DONE``.

Options (``--agent-arg key=value``): ``model``, ``token_cap``, ``base_url``, ``retries``.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from evals.agents.base import (
    ABSTENTION_PROMPT,
    WAIT,
    BenchmarkAction,
    BenchmarkObservation,
    BenchmarkTask,
    final_reply_action,
)
from evals.agents.model_api import ModelApiAgent, Shot, TokenBudget, fit_screenshot, reply_tokens
from evals.errors import AgentError
from oa_vm.kit.lazy import openai

DEFAULT_MODEL = "computer-use-preview"
MAX_SCREEN = (2048, 768)
"""Longest side 2048 and shortest 768 px: what the model sees at high detail."""
MAX_INNER_CALLS = 4

INSTRUCTIONS = (
    "You operate a Windows 11 desktop with the computer tool to complete the user's task. "
    "When it is complete, reply with a short message and no computer call. If it cannot be "
    "done on this computer, reply with the single word FAIL."
    + ABSTENTION_PROMPT
)


class OpenAIComputerUseAgent(ModelApiAgent):
    """OpenAI's computer-use model.

    Args:
        model: The OpenAI model id.
        api_key: The key (default: ``OPENAI_API_KEY``).
        base_url: The API endpoint (default: the SDK's, or ``OPENAI_BASE_URL``).
        token_cap: Tokens this agent may use in all (ignored when ``budget`` is given).
        budget: A budget shared by every agent of a run (the CLI passes one).
        retries: Retries of a call the SDK would retry (429, 408, 409, 5xx, a dropped
            connection), with backoff.
        timeout_s: Seconds to wait for each reply.
        demo: Text added to the task (a demonstration).

    Raises:
        InvalidRunInputError: the ``openai`` package is missing or no key is set.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        token_cap: int | None = None,
        budget: TokenBudget | None = None,
        retries: int = 5,
        timeout_s: float = 120.0,
        demo: str | None = None,
    ) -> None:
        super().__init__(openai, "OpenAI", name="api-openai", vendor="OpenAI",
                         key_variable="OPENAI_API_KEY", model=model, api_key=api_key,
                         base_url=base_url, token_cap=token_cap, budget=budget, retries=retries,
                         timeout_s=timeout_s, demo=demo)
        self._previous: str | None = None
        self._pending: dict[str, Any] | None = None  # the last computer_call

    def reset(self, task: BenchmarkTask) -> None:
        """Start a fresh conversation."""
        self._previous = None
        self._pending = None

    def act(
        self,
        observation: BenchmarkObservation,
        task: BenchmarkTask,
        history: Sequence[BenchmarkAction] | None = None,
    ) -> BenchmarkAction:
        """Send the screen (as the last call's output), turn the reply into an action."""
        shot = fit_screenshot(observation.screenshot, MAX_SCREEN)
        if self._pending is None:
            items: list[dict[str, Any]] = [{"role": "user", "content": [
                {"type": "input_text", "text": self.task_text(task)},
                {"type": "input_image", "image_url": _data_url(shot)}]}]
            self._previous = None
        else:
            items = [_call_output(self._pending, shot)]
        tokens_in = tokens_out = 0
        for _ in range(MAX_INNER_CALLS):
            reply = self._call(items, shot)
            used_in, used_out = reply_tokens(reply)
            tokens_in, tokens_out = tokens_in + used_in, tokens_out + used_out
            self._previous = str(reply.id)
            output = [item.model_dump(exclude_none=True) for item in reply.output]
            usage = {"model": self.price_model, "tokens_in": tokens_in, "tokens_out": tokens_out}
            call = next((o for o in output if o.get("type") == "computer_call"), None)
            if call is None:
                self._pending = None
                text = " ".join(
                    str(part.get("text", "")) for o in output if o.get("type") == "message"
                    for part in o.get("content", []) if isinstance(part, dict))
                return final_reply_action(text, usage=usage, raw_action={"output": output})
            action = self._convert(call.get("action") or {}, shot)
            if action is None:  # a screenshot request: answer it and ask again
                items = [_call_output(call, shot)]
                continue
            self._pending = call
            action.usage = usage
            action.raw_action = call
            return action
        raise AgentError(f"the model asked for {MAX_INNER_CALLS} screenshots without acting")

    def _call(self, items: list[dict[str, Any]], shot: Shot) -> Any:
        def call(timeout: float) -> Any:
            extra: dict[str, Any] = ({"previous_response_id": self._previous}
                                     if self._previous is not None
                                     else {"instructions": INSTRUCTIONS})
            create: Any = self.client.responses.create  # dict params, not the SDK's TypedDicts
            return create(
                timeout=timeout,
                model=self.model,
                tools=[{"type": "computer_use_preview", "display_width": shot.width,
                        "display_height": shot.height, "environment": "windows"}],
                input=items,
                truncation="auto",
                **extra,
            )

        return self.send(call)

    def _convert(self, data: dict[str, Any], shot: Shot) -> BenchmarkAction | None:
        kind = str(data.get("type", ""))

        def at() -> tuple[int, int]:
            if "x" not in data or "y" not in data:
                raise AgentError(f"the model's {kind} has no x/y")
            return shot.to_screen(float(data["x"]), float(data["y"]))

        if kind == "screenshot":
            return None
        if kind == "click":
            x, y = at()
            button = str(data.get("button", "left"))
            return BenchmarkAction("right_click" if button == "right" else "click", x=x, y=y)
        if kind in ("double_click", "move"):
            x, y = at()
            return BenchmarkAction(kind, x=x, y=y)
        if kind == "drag":
            path = data.get("path") or []
            if len(path) < 2:
                raise AgentError("the model's drag has no path")
            x, y = shot.to_screen(float(path[0]["x"]), float(path[0]["y"]))
            end_x, end_y = shot.to_screen(float(path[-1]["x"]), float(path[-1]["y"]))
            return BenchmarkAction("drag", x=x, y=y, end_x=end_x, end_y=end_y)
        if kind == "type":
            return BenchmarkAction("type", text=str(data.get("text", "")))
        if kind == "keypress":
            keys = [str(k).lower() for k in data.get("keys") or []]
            if not keys:
                raise AgentError("the model's keypress has no keys")
            return BenchmarkAction("key", key="+".join("win" if k in ("meta", "super", "cmd")
                                                       else k for k in keys))
        if kind == "scroll":
            x, y = at()
            dy, dx = float(data.get("scroll_y", 0)), float(data.get("scroll_x", 0))
            direction = ("down" if dy > 0 else "up") if dy else ("right" if dx > 0 else "left")
            return BenchmarkAction("scroll", x=x, y=y, scroll_direction=direction,
                                   scroll_amount=max(1.0, abs(dy or dx) / 100))
        if kind == "wait":
            return BenchmarkAction(WAIT)
        raise AgentError(f"the model used computer action {kind!r}, which is not supported here")


def _data_url(shot: Shot) -> str:
    return "data:image/png;base64," + base64.b64encode(shot.png).decode("ascii")


def _call_output(call: dict[str, Any], shot: Shot) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "computer_call_output", "call_id": call.get("call_id"),
                            "output": {"type": "input_image", "image_url": _data_url(shot)}}
    checks = call.get("pending_safety_checks")
    if checks:
        item["acknowledged_safety_checks"] = checks
    return item


__all__ = ["OpenAIComputerUseAgent"]
