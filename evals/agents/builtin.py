"""The reference tool's built-in agents and action helpers, for code written against it.

``RandomAgent``, ``ScriptedAgent`` (a fixed list of actions), ``SmartMockAgent``, ``ApiAgent``
(``provider="anthropic"`` or ``"openai"``, on the model-API agents of this package), and the
helpers ``action_to_string``, ``format_accessibility_tree`` and ``parse_action_response``. What
differs from the reference, and why, is listed in docs/compat.md.
"""

from __future__ import annotations

import inspect
import random
import re
from collections.abc import Sequence
from typing import Any
from xml.etree import ElementTree as ET

from evals.agents.base import (
    DONE,
    FAIL,
    BenchmarkAction,
    BenchmarkAgent,
    BenchmarkObservation,
    BenchmarkTask,
)
from evals.agents.pyautogui_code import SCREEN

_TYPES = ("click", "double_click", "right_click", "type", "key", "scroll", "wait")


def call_reset(agent: BenchmarkAgent, task: BenchmarkTask) -> None:
    """``agent.reset(task)``, or ``agent.reset()`` for an agent written against the reference
    tool (whose ``reset`` takes no task)."""
    reset: Any = agent.reset
    try:
        takes_task = len(inspect.signature(reset).parameters) >= 1
    except (TypeError, ValueError):
        takes_task = True
    if takes_task:
        reset(task)
    else:
        reset()


class RandomAgent(BenchmarkAgent):
    """Random GUI actions (a floor to compare against), ``done`` after ``max_actions``.

    Args:
        action_types: The types to draw from (default: clicks, typing, keys, scrolls, waits).
        seed: For a repeatable sequence.
        max_actions: Actions per task before ``done``.
    """

    def __init__(self, action_types: Sequence[str] | None = None, seed: int | None = None,
                 max_actions: int = 10) -> None:
        self.action_types = list(action_types or _TYPES)
        self.rng = random.Random(seed)
        self.max_actions = max_actions

    def act(self, observation: BenchmarkObservation, task: BenchmarkTask,
            history: Sequence[BenchmarkAction] | None = None) -> BenchmarkAction:
        """A random action inside the screen."""
        if len(history or ()) >= self.max_actions:
            return BenchmarkAction(DONE)
        kind = self.rng.choice(self.action_types)
        width, height = observation.viewport or SCREEN
        x, y = self.rng.randrange(width), self.rng.randrange(height - 40)
        if kind == "type":
            return BenchmarkAction("type", text=self.rng.choice(["hello", "test", "42"]))
        if kind == "key":
            return BenchmarkAction("key", key=self.rng.choice(["enter", "tab", "escape"]))
        if kind == "scroll":
            return BenchmarkAction("scroll", x=x, y=y, scroll_direction="down")
        if kind in ("wait", "done", "fail"):
            return BenchmarkAction(kind)
        return BenchmarkAction(kind, x=x, y=y)


class ScriptedAgent(BenchmarkAgent):
    """Plays a fixed list of actions (the same for every task), then ``done``.

    Args:
        actions: The actions, in order.
    """

    def __init__(self, actions: Sequence[BenchmarkAction] | None = None) -> None:
        self.actions = list(actions or [])

    def act(self, observation: BenchmarkObservation, task: BenchmarkTask,
            history: Sequence[BenchmarkAction] | None = None) -> BenchmarkAction:
        """The next scripted action."""
        index = len(history or ())
        return self.actions[index] if index < len(self.actions) else BenchmarkAction(DONE)


class SmartMockAgent(BenchmarkAgent):
    """A deterministic agent for exercising a harness: clicks the first button the
    accessibility tree lists, then says ``done``. It does not solve tasks (the reference's
    solves its own mock UI, which has no counterpart here: the local tasks are real)."""

    def act(self, observation: BenchmarkObservation, task: BenchmarkTask,
            history: Sequence[BenchmarkAction] | None = None) -> BenchmarkAction:
        """Click the first button once, then finish."""
        if history:
            return BenchmarkAction(DONE)
        for element in _elements(observation.accessibility_tree):
            if element.tag == "Button" and element.get("rect"):
                return BenchmarkAction("click", target_name=element.get("name"),
                                       target_bbox=_bbox(element.get("rect", "")))
        return BenchmarkAction(DONE)


class ApiAgent(BenchmarkAgent):
    """A model API agent by provider, as the reference's ``ApiAgent`` is built.

    Args:
        provider: ``anthropic`` (Claude's computer-use tool) or ``openai`` (OpenAI's
            computer-use model).
        model: The model id (default: the provider agent's).
        api_key: The key (default: ``ANTHROPIC_API_KEY`` / ``OPENAI_API_KEY``).
        demo: A demonstration, included with the task at every step.
        **options: More options of the provider's agent (``base_url``, ``token_cap``...).

    Raises:
        ValueError: an unknown provider.
        InvalidRunInputError: the provider's SDK or key is missing.
    """

    def __init__(self, provider: str = "anthropic", model: str | None = None,
                 api_key: str | None = None, demo: str | None = None, **options: Any) -> None:
        if model is not None:
            options["model"] = model
        if provider == "anthropic":
            from evals.agents.api_claude import ClaudeComputerUseAgent

            self.agent: BenchmarkAgent = ClaudeComputerUseAgent(api_key=api_key, demo=demo,
                                                                **options)
        elif provider == "openai":
            from evals.agents.api_openai import OpenAIComputerUseAgent

            self.agent = OpenAIComputerUseAgent(api_key=api_key, demo=demo, **options)
        else:
            raise ValueError(f"unknown provider {provider!r}; use 'anthropic' or 'openai'")
        self.provider = provider

    def reset(self, task: BenchmarkTask | None = None) -> None:
        """Start a fresh conversation."""
        if task is not None:
            self.agent.reset(task)

    def act(self, observation: BenchmarkObservation, task: BenchmarkTask,
            history: Sequence[BenchmarkAction] | None = None) -> BenchmarkAction:
        """The provider agent's action."""
        if observation.step == 0:
            self.agent.reset(task)
        return self.agent.act(observation, task, history)


def action_to_string(action: BenchmarkAction) -> str:
    """A short readable form: ``CLICK(500, 208)``, ``TYPE('hi')``, ``KEY(ctrl+s)``, ``DONE``."""
    kind = action.type.upper()
    if action.type in ("click", "double_click", "right_click", "move"):
        if action.x is not None and action.y is not None:
            return f"{kind}({action.x:g}, {action.y:g})"
        return f"{kind}({action.target_name or action.target_node_id or ''})"
    if action.type == "type":
        return f"TYPE({action.text!r})"
    if action.type in ("key", "hotkey"):
        keys = [*(action.modifiers or []), *(action.key or "").split("+")]
        return f"KEY({'+'.join(k for k in keys if k)})"
    if action.type == "scroll":
        return f"SCROLL({action.scroll_direction or 'down'})"
    if action.type == "drag":
        return f"DRAG({action.x:g}, {action.y:g} -> {action.end_x:g}, {action.end_y:g})" \
            if None not in (action.x, action.y, action.end_x, action.end_y) else "DRAG()"
    if action.type in ("execute", "execute_windows"):
        return action.to_string()
    return kind


def format_accessibility_tree(tree: str | None, max_lines: int = 200) -> str:
    """The accessibility tree as indented lines ``[Role] name = value @ rect``, for prompts."""
    lines: list[str] = []

    def walk(element: ET.Element, depth: int) -> None:
        if len(lines) >= max_lines:
            return
        name = element.get("name", "")
        value = element.get("value")
        rect = element.get("rect")
        line = f"{'  ' * depth}[{element.tag}] {name}"
        if value:
            line += f" = {value[:80]!r}"
        if rect:
            line += f" @ {rect}"
        lines.append(line)
        for child in element:
            walk(child, depth + 1)

    root = _root(tree)
    if root is not None:
        walk(root, 0)
    return "\n".join(lines)


_CALL = re.compile(r"^\s*([A-Za-z_]+)\s*(?:\((.*)\))?\s*$", re.S)


def parse_action_response(response: str, observation: BenchmarkObservation | None = None
                          ) -> BenchmarkAction:
    """An action from a model's text reply: the last line of the form ``CLICK(x, y)``,
    ``DOUBLE_CLICK(x, y)``, ``RIGHT_CLICK(x, y)``, ``TYPE("text")``, ``KEY(ctrl+s)``,
    ``SCROLL(down)``, ``WAIT``, ``DONE`` or ``FAIL`` (``Action: ...`` prefixes are allowed).
    Anything else becomes ``fail`` with the reply kept in ``raw_action``."""
    for line in reversed([ln.strip() for ln in response.strip().splitlines() if ln.strip()]):
        line = re.sub(r"^(action|ACTION|Action)\s*:\s*", "", line)
        match = _CALL.match(line)
        if not match:
            continue
        name, args = match.group(1).lower(), (match.group(2) or "").strip()
        if name in ("done", "fail", "wait") and not args:
            return BenchmarkAction(name, raw_action={"response": response})
        if name in ("click", "double_click", "right_click", "move"):
            numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", args)]
            if len(numbers) >= 2:
                return BenchmarkAction(name, x=numbers[0], y=numbers[1],
                                       raw_action={"response": response})
        if name == "type":
            text = args[1:-1] if len(args) >= 2 and args[0] == args[-1] and args[0] in "'\"" \
                else args
            return BenchmarkAction("type", text=text, raw_action={"response": response})
        if name in ("key", "hotkey", "press"):
            key = args.strip("'\" ").lower().replace(" ", "")
            if key:
                return BenchmarkAction("key", key=key, raw_action={"response": response})
        if name == "scroll":
            return BenchmarkAction("scroll", scroll_direction=args.strip("'\" ") or "down",
                                   raw_action={"response": response})
    return BenchmarkAction(FAIL, raw_action={"response": response, "error": "unparsed"})


def _root(tree: str | None) -> ET.Element | None:
    if not tree:
        return None
    try:
        return ET.fromstring(tree)
    except ET.ParseError:
        return None


def _elements(tree: str | None) -> list[ET.Element]:
    root = _root(tree)
    return list(root.iter()) if root is not None else []


def _bbox(rect: str) -> tuple[float, float, float, float]:
    left, top, right, bottom = (float(v) for v in rect.split(","))
    return left, top, right, bottom


__all__ = [
    "ApiAgent",
    "RandomAgent",
    "ScriptedAgent",
    "SmartMockAgent",
    "action_to_string",
    "call_reset",
    "format_accessibility_tree",
    "parse_action_response",
]
