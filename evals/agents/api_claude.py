"""``--agent api-claude``: Anthropic's computer-use tool, through the official ``anthropic`` SDK.

Each step sends the screen (shrunk to fit :data:`MAX_SCREEN`, the size Anthropic recommends for
computer use; the model's coordinates are scaled back) and, after the first step, the result of
the previous action as the ``tool_result`` of its ``tool_use``. The model's ``computer`` action
becomes a :class:`BenchmarkAction` (and so pyautogui source on the worker). A reply without a
tool call ends the task: ``FAIL`` when it says the task is impossible, else ``DONE``.

Options (``--agent-arg key=value``): ``model``, ``max_tokens`` (per reply), ``token_cap`` (the
run's tokens in all), ``base_url``, ``retries`` (of what the SDK would retry),
``keep_screenshots`` (how many recent screenshots stay in the conversation).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from evals.agents.base import (
    ABSTENTION_PROMPT,
    EXECUTE_WINDOWS,
    WAIT,
    BenchmarkAction,
    BenchmarkObservation,
    BenchmarkTask,
    final_reply_action,
)
from evals.agents.model_api import ModelApiAgent, Shot, TokenBudget, fit_screenshot, reply_tokens
from evals.errors import AgentError
from oa_vm.kit.lazy import anthropic

DEFAULT_MODEL = "claude-sonnet-4-20250514"
TOOL_TYPE = "computer_20250124"
BETA = "computer-use-2025-01-24"
MAX_SCREEN = (1024, 768)
"""Anthropic recommends XGA for computer use; larger screens are shrunk to fit it."""
MAX_INNER_CALLS = 4
"""Model calls per step at most (a ``screenshot`` request is answered without a step)."""

SYSTEM = (
    "You operate a Windows 11 desktop through the computer tool to complete the user's task. "
    "Act one step at a time. When the task is complete, reply with a short message and no "
    "tool call. If the task cannot be done on this computer, reply with the single word FAIL."
    + ABSTENTION_PROMPT
)

_KEYS = {
    "return": "enter", "kp_enter": "enter", "super": "win", "super_l": "win", "meta": "win",
    "page_down": "pagedown", "page_up": "pageup", "control": "ctrl", "control_l": "ctrl",
    "alt_l": "alt", "shift_l": "shift",
}


def _key(combo: str) -> str:
    """xdotool key names (``ctrl+Return``, ``super``) -> pyautogui's (``ctrl+enter``, ``win``)."""
    return "+".join(_KEYS.get(part.strip().lower(), part.strip().lower())
                    for part in combo.split("+") if part.strip())


class ClaudeComputerUseAgent(ModelApiAgent):
    """Claude with Anthropic's computer-use tool.

    Args:
        model: The Anthropic model id.
        api_key: The key (default: ``ANTHROPIC_API_KEY``).
        base_url: The API endpoint (default: the SDK's, or ``ANTHROPIC_BASE_URL``).
        max_tokens: Tokens per reply at most.
        token_cap: Tokens this agent may use in all (ignored when ``budget`` is given).
        budget: A budget shared by every agent of a run (the CLI passes one).
        retries: Retries of a call the SDK would retry (429, 408, 409, 5xx, a dropped
            connection), with backoff.
        keep_screenshots: Screenshots kept in the conversation (older ones are dropped).
        timeout_s: Seconds to wait for each reply.
        demo: Text added to the task at every step (a demonstration, as the reference's
            ``ApiAgent`` takes it).

    Raises:
        InvalidRunInputError: the ``anthropic`` package is missing or no key is set.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int = 1024,
        token_cap: int | None = None,
        budget: TokenBudget | None = None,
        retries: int = 5,
        keep_screenshots: int = 3,
        timeout_s: float = 120.0,
        demo: str | None = None,
    ) -> None:
        super().__init__(anthropic, "Anthropic", name="api-claude", vendor="Anthropic",
                         key_variable="ANTHROPIC_API_KEY", model=model, api_key=api_key,
                         base_url=base_url, token_cap=token_cap, budget=budget, retries=retries,
                         timeout_s=timeout_s, demo=demo)
        self.max_tokens = int(max_tokens)
        self.keep_screenshots = max(1, int(keep_screenshots))
        self._messages: list[dict[str, Any]] = []
        self._pending: tuple[str, Shot] | None = None  # (tool_use id, shot it was planned on)

    def reset(self, task: BenchmarkTask) -> None:
        """Start a fresh conversation."""
        self._messages = []
        self._pending = None

    def act(
        self,
        observation: BenchmarkObservation,
        task: BenchmarkTask,
        history: Sequence[BenchmarkAction] | None = None,
    ) -> BenchmarkAction:
        """Send the screen (and the last action's result), turn the reply into an action."""
        shot = fit_screenshot(observation.screenshot, MAX_SCREEN)
        if not self._messages or self._pending is None:
            self._messages = [{"role": "user", "content": [
                {"type": "text", "text": self.task_text(task)}, _image(shot)]}]
        else:
            self._messages.append({"role": "user", "content": [
                _tool_result(self._pending[0], shot, observation.last_error)]})
        tokens_in = tokens_out = 0
        for _ in range(MAX_INNER_CALLS):
            reply = self._call(shot)
            used_in, used_out = reply_tokens(reply)
            tokens_in, tokens_out = tokens_in + used_in, tokens_out + used_out
            content = [block.model_dump(exclude_none=True) for block in reply.content]
            self._messages.append({"role": "assistant", "content": content})
            use = next((b for b in content if b.get("type") == "tool_use"), None)
            usage = {"model": self.price_model, "tokens_in": tokens_in, "tokens_out": tokens_out}
            if use is None:
                text = " ".join(str(b.get("text", "")) for b in content if b.get("type") == "text")
                self._pending = None
                return final_reply_action(text, usage=usage, raw_action={"content": content})
            action = self._convert(use.get("input") or {}, shot)
            if action is None:  # a screenshot or cursor request: answer it and ask again
                self._messages.append({"role": "user", "content": [
                    _tool_result(str(use["id"]), shot, None)]})
                continue
            self._pending = (str(use["id"]), shot)
            action.usage = usage
            action.raw_action = dict(use)
            return action
        raise AgentError(f"the model asked for {MAX_INNER_CALLS} screenshots without acting")

    def _call(self, shot: Shot) -> Any:
        _trim_images(self._messages, self.keep_screenshots)

        def call(timeout: float) -> Any:
            create: Any = self.client.beta.messages.create  # dict params, not TypedDicts
            return create(
                timeout=timeout,
                model=self.model,
                max_tokens=self.max_tokens,
                system=SYSTEM,
                tools=[{"type": TOOL_TYPE, "name": "computer",
                        "display_width_px": shot.width, "display_height_px": shot.height}],
                messages=self._messages,
                betas=[BETA],
            )

        return self.send(call)

    def _convert(self, data: dict[str, Any], shot: Shot) -> BenchmarkAction | None:
        kind = str(data.get("action", ""))

        def at(name: str = "coordinate") -> tuple[int, int]:
            point = data.get(name)
            if not (isinstance(point, list) and len(point) == 2):
                raise AgentError(f"the model's {kind} has no {name}")
            return shot.to_screen(float(point[0]), float(point[1]))

        if kind in ("screenshot", "cursor_position"):
            return None
        if kind in ("left_click", "right_click", "double_click", "middle_click", "mouse_move"):
            x, y = at()
            mapped = {"left_click": "click", "middle_click": "click", "mouse_move": "move"}
            return BenchmarkAction(mapped.get(kind, kind), x=x, y=y)
        if kind == "triple_click":
            x, y = at()
            return BenchmarkAction(EXECUTE_WINDOWS, code=f"import pyautogui\n"
                                   f"pyautogui.tripleClick({x}, {y})")
        if kind == "left_click_drag":
            x, y = at("start_coordinate")
            end_x, end_y = at()
            return BenchmarkAction("drag", x=x, y=y, end_x=end_x, end_y=end_y)
        if kind == "type":
            return BenchmarkAction("type", text=str(data.get("text", "")))
        if kind == "key":
            return BenchmarkAction("key", key=_key(str(data.get("text", ""))))
        if kind == "scroll":
            point = at() if data.get("coordinate") else None
            return BenchmarkAction("scroll", x=point[0] if point else None,
                                   y=point[1] if point else None,
                                   scroll_direction=str(data.get("scroll_direction", "down")),
                                   scroll_amount=float(data.get("scroll_amount", 3)))
        if kind == "wait":
            return BenchmarkAction(WAIT)
        raise AgentError(f"the model used computer action {kind!r}, which is not supported here")


def _image(shot: Shot) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                        "data": base64.b64encode(shot.png).decode("ascii")}}


def _tool_result(tool_use_id: str, shot: Shot, error: str | None) -> dict[str, Any]:
    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id,
                              "content": [_image(shot)]}
    if error:
        result["content"].insert(0, {"type": "text", "text": f"The action failed: {error}"})
        result["is_error"] = True
    return result


def _trim_images(messages: list[dict[str, Any]], keep: int) -> None:
    """Replace all but the last ``keep`` screenshots by a note (each costs ~1,000 tokens)."""
    seen = 0
    for message in reversed(messages):
        blocks = message.get("content")
        if not isinstance(blocks, list):
            continue
        for block in blocks:
            holders = [block] + [c for c in block.get("content", []) if isinstance(c, dict)] \
                if isinstance(block.get("content"), list) else [block]
            for holder in holders:
                if holder.get("type") == "image":
                    seen += 1
                    if seen > keep:
                        holder.clear()
                        holder.update({"type": "text", "text": "(older screenshot omitted)"})


__all__ = ["ClaudeComputerUseAgent"]
