"""The reference tool's built-in agents and action helpers, for code written against it.

``RandomAgent``, ``ScriptedAgent`` (a fixed list of actions), ``SmartMockAgent``, ``ApiAgent``
(``provider="anthropic"`` or ``"openai"``, on the model-API agents of this package), and the
helpers ``action_to_string``, ``format_accessibility_tree`` and ``parse_action_response``. What
differs from the reference, and why, is listed in docs/compat.md.
"""

from __future__ import annotations

import inspect
import math
import random
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from xml.etree import ElementTree as ET

from evals.agents.base import (
    ABSTENTION_TYPES,
    DONE,
    BenchmarkAction,
    BenchmarkAgent,
    BenchmarkObservation,
    BenchmarkTask,
    parse_abstention,
)
from evals.agents.pyautogui_code import SCREEN
from evals.agents.seeding import task_draws
from evals.errors import InvalidRunInputError

if TYPE_CHECKING:
    from evals.agents.model_api import ModelApiAgent

_TYPES = ("click", "type", "scroll", "done")
"""The reference tool's default random action types."""
_PREFERRED_BUTTONS = ("submit", "ok")
"""Buttons :class:`SmartMockAgent` clicks before any other, as a form's confirm button."""


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
        action_types: The types to draw from (default, as the reference's: ``click``,
            ``type``, ``scroll``, ``done``; also ``double_click``, ``right_click``, ``key``,
            ``wait``, ``fail``).
        seed: For repeatable actions: each task's trial draws its actions from a stream of its
            own, started from the seed, the task's ID and the trial
            (:func:`evals.agents.seeding.task_draws`) when the task starts, so the same seed
            gives a task's trial the same actions whatever the number of workers, the order
            they take tasks in, or a retry on another worker. Without a seed, the actions are
            drawn from the OS.
        max_actions: Actions per task before ``done`` (the reference stops after 20).
    """

    def __init__(self, action_types: Sequence[str] | None = None, seed: int | None = None,
                 max_actions: int = 20) -> None:
        self.action_types = list(action_types or _TYPES)
        self.seed = seed
        self.max_actions = max_actions
        self.rng = random.Random()  # replaced by the task's own stream when a task starts
        self._stream_of: tuple[str, int] | None = None

    def reset(self, task: BenchmarkTask | None = None) -> None:
        """Start the task's stream of draws (at its first action when ``task`` is not given,
        as the reference's loop resets without it)."""
        self._stream_of = None
        if task is not None:
            self._start(task)

    def act(self, observation: BenchmarkObservation, task: BenchmarkTask,
            history: Sequence[BenchmarkAction] | None = None) -> BenchmarkAction:
        """A random action inside the screen."""
        if len(history or ()) >= self.max_actions:
            return BenchmarkAction(DONE)
        if self._stream_of != (task.task_id, task.trial):  # a new task without a reset
            self._start(task)
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

    def _start(self, task: BenchmarkTask) -> None:
        self.rng = task_draws(self.seed, task)
        self._stream_of = (task.task_id, task.trial)


class ScriptedAgent(BenchmarkAgent):
    """Plays a fixed list of actions (the same for every task), then ``done``.

    Args:
        actions: The actions, in order.
    """

    def __init__(self, actions: Sequence[BenchmarkAction] | None = None) -> None:
        self.actions = list(actions or [])
        self._next = 0

    def reset(self, task: BenchmarkTask | None = None) -> None:
        """Start the script again (the loop calls this before each task)."""
        self._next = 0

    def act(self, observation: BenchmarkObservation, task: BenchmarkTask,
            history: Sequence[BenchmarkAction] | None = None) -> BenchmarkAction:
        """The next scripted action (counted per call, so it also works without history)."""
        index = self._next
        self._next += 1
        return self.actions[index] if index < len(self.actions) else BenchmarkAction(DONE)


class SmartMockAgent(BenchmarkAgent):
    """A deterministic agent for exercising a harness: clicks one button of the accessibility
    tree (``Submit`` or ``OK`` if there is one, else the first), then says ``done``.

    It does not solve tasks: the reference's is tuned to its own synthetic mock UI, which has
    no counterpart here (the local tasks are real). Both WAA's XML tree and the reference's
    dict tree (``{"role", "name", "id", "children"}``) are read.
    """

    def __init__(self) -> None:
        self._acted = False

    def reset(self, task: BenchmarkTask | None = None) -> None:
        """Start again with the click (the loop calls this before each task)."""
        self._acted = False

    def act(self, observation: BenchmarkObservation, task: BenchmarkTask,
            history: Sequence[BenchmarkAction] | None = None) -> BenchmarkAction:
        """Click a button once, then finish."""
        if self._acted or history:
            return BenchmarkAction(DONE)
        self._acted = True
        tree: Any = observation.accessibility_tree
        if isinstance(tree, dict):
            return _click_dict_button(tree)
        root = _root(tree)
        buttons = [e for e in (root.iter() if root is not None else ()) if e.tag == "Button"
                   and e.get("rect")]
        buttons.sort(key=lambda e: _preference(e.get("name")))
        if buttons:
            return BenchmarkAction("click", target_name=buttons[0].get("name"),
                                   target_bbox=_bbox(buttons[0].get("rect", "")))
        return BenchmarkAction(DONE)


def _click_dict_button(tree: dict[str, Any]) -> BenchmarkAction:
    """A click on the preferred button of a dict tree, by its node ID."""
    buttons = [node for node in _dict_nodes(tree) if str(node.get("role", "")).lower() == "button"]
    buttons.sort(key=lambda n: _preference(n.get("name")))
    if not buttons:
        return BenchmarkAction(DONE)
    node = buttons[0]
    node_id = node.get("id", node.get("node_id"))
    return BenchmarkAction("click", target_node_id=None if node_id is None else str(node_id),
                           target_name=node.get("name"))


def _preference(name: Any) -> int:
    """Rank of a button by name: ``Submit``, then ``OK``, then the rest in tree order."""
    text = str(name or "").strip().lower()
    return _PREFERRED_BUTTONS.index(text) if text in _PREFERRED_BUTTONS else len(_PREFERRED_BUTTONS)


def _dict_nodes(tree: dict[str, Any]) -> list[dict[str, Any]]:
    nodes = [tree]
    for child in tree.get("children") or ():
        if isinstance(child, dict):
            nodes.extend(_dict_nodes(child))
    return nodes


class ApiAgent(BenchmarkAgent):
    """A model API agent by provider, built as the reference's ``ApiAgent`` is (the same
    arguments, in the same order).

    Args:
        provider: ``anthropic`` (Claude's computer-use tool) or ``openai`` (OpenAI's
            computer-use model).
        api_key: The key (default: ``ANTHROPIC_API_KEY`` / ``OPENAI_API_KEY``).
        model: The model id (default: the provider agent's).
        temperature, use_accessibility_tree, use_history: The reference's settings, kept as
            attributes: the computer-use agents send the screen and keep their conversation.
        max_tokens: The most tokens an answer may have (Anthropic's agent).
        demo: A demonstration, included with the task at every step.
        **options: More options of the provider's agent (``base_url``, ``token_cap``...).

    Raises:
        ValueError: an unknown provider.
        ApiAgentError: the provider's SDK or key is missing (a ``RuntimeError``, as the
            reference raises).
    """

    def __init__(self, provider: str = "anthropic", api_key: str | None = None,
                 model: str | None = None, temperature: float = 0.5, max_tokens: int = 1500,
                 use_accessibility_tree: bool = True, use_history: bool = True,
                 demo: str | None = None, **options: Any) -> None:
        if model is not None:
            options["model"] = model
        try:
            if provider == "anthropic":
                from evals.agents.api_claude import ClaudeComputerUseAgent

                self.agent: ModelApiAgent = ClaudeComputerUseAgent(
                    api_key=api_key, demo=demo, max_tokens=max_tokens, **options)
            elif provider == "openai":
                from evals.agents.api_openai import OpenAIComputerUseAgent

                self.agent = OpenAIComputerUseAgent(api_key=api_key, demo=demo, **options)
            else:
                raise ValueError(f"unknown provider {provider!r}; use 'anthropic' or 'openai'")
        except InvalidRunInputError as exc:
            raise ApiAgentError(str(exc)) from exc
        self.provider = provider
        self.model = self.agent.model
        self.api_key = self.agent.api_key
        self.demo = demo
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.use_accessibility_tree = use_accessibility_tree
        self.use_history = use_history

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


class ApiAgentError(InvalidRunInputError, RuntimeError):
    """:class:`ApiAgent` cannot be built (its SDK or key is missing): the reference raises a
    ``RuntimeError`` there, this project an :class:`evals.errors.InvalidRunInputError`."""


def _coord(value: float) -> str:
    """Pixels as written, fractions with three decimals (the reference's format)."""
    return str(value) if isinstance(value, int) else f"{value:.3f}"


def action_to_string(action: BenchmarkAction) -> str:
    """A short readable form, as the reference writes it: ``CLICK([4])`` (node ID),
    ``CLICK(0.500, 0.300)`` (fractions), ``CLICK(500, 208)`` (pixels), ``TYPE('hi')``,
    ``KEY(ctrl+s)``, ``SCROLL(down)``, ``DONE()``."""
    kind = action.type.upper()
    if action.type in ("click", "double_click", "right_click", "move"):
        if action.target_node_id:
            return f"{kind}([{action.target_node_id}])"
        if action.x is not None and action.y is not None:
            return f"{kind}({_coord(action.x)}, {_coord(action.y)})"
        return f"{kind}({action.target_name or ''})"
    if action.type == "type":
        return f"TYPE({action.text!r})"
    if action.type in ("key", "hotkey"):
        keys = [*(action.modifiers or []), *(action.key or "").split("+")]
        return f"KEY({'+'.join(k for k in keys if k)})"
    if action.type == "scroll":
        return f"SCROLL({action.scroll_direction or 'down'})"
    if action.type == "drag":
        points = (action.x, action.y, action.end_x, action.end_y)
        return f"DRAG({', '.join(_coord(p) for p in points if p is not None)})" \
            if None not in points else "DRAG()"
    if action.type in ("execute", "execute_windows"):
        return action.to_string()
    return f"{kind}()"


def format_accessibility_tree(tree: str | dict[str, Any] | None, indent: int = 0,
                              max_lines: int | None = None) -> str:
    """The accessibility tree as indented lines, for prompts.

    WAA's XML (what a worker sends) gives ``[Role] name = value @ rect``; the reference's
    dict tree (``{"role", "name", "id", "children"}``) gives its ``[id] role: name`` lines.
    ``indent`` is the reference's: the first line's depth (two spaces a level). Every node is
    written, as the reference does; ``max_lines`` (keyword) stops after that many lines.
    """
    lines: list[str] = []
    limit = max_lines if max_lines is not None else math.inf
    if isinstance(tree, dict):
        _walk_dict(tree, indent, lines, limit)
        return "\n".join(lines)

    def walk(element: ET.Element, depth: int) -> None:
        if len(lines) >= limit:
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
        walk(root, indent)
    return "\n".join(lines)


def _walk_dict(node: dict[str, Any], depth: int, lines: list[str], limit: float) -> None:
    if len(lines) >= limit:
        return
    node_id = node.get("id", node.get("node_id", ""))
    line = f"{'  ' * depth}[{node_id}] {node.get('role', 'unknown')}"
    if node.get("name"):
        line += f": {node['name']}"
    lines.append(line)
    for child in node.get("children") or ():
        if isinstance(child, dict):
            _walk_dict(child, depth + 1, lines, limit)


_NAMES = ("double_click", "right_click", "click", "move", "type", "key", "hotkey", "press",
          "scroll", "drag", "done", "fail", "wait", "send_msg_to_user", "report_infeasible")
_CALL = re.compile(r"^\s*([A-Za-z_]+)\s*(?:\((.*)\))?\s*$", re.S)
_CALL_IN_TEXT = re.compile(
    r"\b(" + "|".join(_NAMES) + r")\s*\(([^()]*)\)", re.I)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def parse_action_response(response: str, observation: BenchmarkObservation | None = None
                          ) -> BenchmarkAction:
    """An action from a model's text reply, as the reference parses it.

    The reply's last action wins: ``CLICK([4])`` (node ID), ``CLICK(x, y)``,
    ``DOUBLE_CLICK(x, y)``, ``RIGHT_CLICK(x, y)``, ``TYPE("text")``, ``KEY(ctrl+s)`` (key
    ``s``, modifiers ``["ctrl"]``), ``SCROLL(down)``, ``DRAG(x1, y1, x2, y2)``, ``WAIT``,
    ``DONE`` or ``FAIL``, alone on a line, after ``Action:``, or inside a sentence. Pixel
    coordinates (above 1) become fractions of ``observation.viewport`` when an observation
    is given. A reply with no action is ``done`` with ``raw_action["parse_error"]``: the
    checker then scores what is on the screen (``fail`` would claim the task infeasible).
    """
    raw: dict[str, Any] = {"response": response}
    for line in reversed([ln.strip() for ln in response.strip().splitlines() if ln.strip()]):
        line = re.sub(r"^.*?\baction\s*:\s*", "", line, flags=re.I)
        abstention = parse_abstention(line, raw_action=raw)
        if abstention is not None:  # SEND_MSG_TO_USER "question", REPORT_INFEASIBLE "why"
            return abstention
        candidates: list[tuple[str, str | None]] = []
        match = _CALL.match(line)
        if match:
            candidates.append((match.group(1).lower(), match.group(2)))
        candidates += [(m.group(1).lower(), m.group(2))
                       for m in reversed(list(_CALL_IN_TEXT.finditer(line)))]
        for name, args in candidates:
            action = _action_from_call(name, (args or "").strip(), raw, observation)
            if action is not None:
                return action
    raw["parse_error"] = "No action pattern found"
    return BenchmarkAction(DONE, raw_action=raw)


def _action_from_call(name: str, args: str, raw: dict[str, Any],
                      observation: BenchmarkObservation | None) -> BenchmarkAction | None:
    """The action one ``NAME(args)`` stands for, or None when it is not one."""
    if name in ("done", "fail", "wait") and not args:
        return BenchmarkAction(name, raw_action=raw)
    # TYPE("text"), SEND_MSG_TO_USER("question"), REPORT_INFEASIBLE("why")
    if name == "type" or name in ABSTENTION_TYPES:
        text = args[1:-1] if len(args) >= 2 and args[0] == args[-1] and args[0] in "'\"" \
            else args
        return BenchmarkAction(name, text=text, raw_action=raw)
    numbers = [float(n) for n in _NUMBER.findall(args)]
    if name in ("click", "double_click", "right_click", "move"):
        node = re.fullmatch(r"\[\s*([^\]]+?)\s*\]", args)
        if node:
            return BenchmarkAction(name, target_node_id=node.group(1), raw_action=raw)
        if len(numbers) >= 2:
            x, y = _fractions(numbers[:2], observation, raw)
            return BenchmarkAction(name, x=x, y=y, raw_action=raw)
        return None
    if name == "drag":
        if len(numbers) < 4:
            return None
        x, y, end_x, end_y = _fractions(numbers[:4], observation, raw)
        return BenchmarkAction("drag", x=x, y=y, end_x=end_x, end_y=end_y, raw_action=raw)
    if name in ("key", "hotkey", "press"):
        keys = [k for k in args.strip("'\" ").replace(" ", "").split("+") if k]
        if not keys:
            return None
        return BenchmarkAction("key", key=keys[-1], modifiers=keys[:-1] or None, raw_action=raw)
    if name == "scroll":
        return BenchmarkAction("scroll", scroll_direction=args.strip("'\" ").lower() or "down",
                               raw_action=raw)
    return None


def _fractions(values: list[float], observation: BenchmarkObservation | None,
               raw: dict[str, Any]) -> list[float]:
    """Pixel values as fractions of the viewport (the reference's normalization), when an
    observation with a viewport is given and any value is above 1; else as they are."""
    viewport = observation.viewport if observation is not None else None
    if not viewport or all(v <= 1.0 for v in values):
        return values
    width, height = viewport
    raw["original_coords"] = dict(zip(("x", "y", "end_x", "end_y"), values, strict=False))
    raw["normalized"] = True
    return [v / (width if i % 2 == 0 else height) for i, v in enumerate(values)]


def parse_accessibility_tree(xml: str | None) -> dict[str, Any] | None:
    """An accessibility tree in XML as the reference tool's dict tree, or None when ``xml`` is
    empty or not XML.

    Each element becomes ``{"role", "name", "id", "BoundingRectangle", "children"}``: ``role``
    is the tag, ``id`` the ``AutomationId``, else the ``RuntimeId``, else the name, and
    ``BoundingRectangle`` is ``"left,top,right,bottom"`` in pixels (absent when unknown). Three
    spellings are read: the local worker's (``name``, ``rect``), Windows UI Automation's
    (``Name``, ``AutomationId``, ``BoundingRectangle``) and AT-SPI's (``name``,
    ``cp:screencoord="(x, y)"`` with ``cp:size="(w, h)"``).
    """
    root = _root(xml)
    return None if root is None else _element_dict(root)


def _element_dict(element: ET.Element) -> dict[str, Any]:
    # Attribute names without their XML namespace ("{uri}screencoord" -> "screencoord").
    attrs = {key.rsplit("}", 1)[-1]: value for key, value in element.attrib.items()}
    name = attrs.get("Name", attrs.get("name", ""))
    node: dict[str, Any] = {
        "role": element.tag.rsplit("}", 1)[-1],
        "name": name,
        "id": attrs.get("AutomationId") or attrs.get("RuntimeId") or name,
    }
    rect = attrs.get("BoundingRectangle") or attrs.get("rect") or _atspi_rect(attrs)
    if rect:
        node["BoundingRectangle"] = rect
    node["children"] = [_element_dict(child) for child in element]
    return node


def _atspi_rect(attrs: dict[str, str]) -> str | None:
    """AT-SPI's position and size as ``"left,top,right,bottom"``."""
    position = _NUMBER.findall(attrs.get("screencoord", ""))
    size = _NUMBER.findall(attrs.get("size", ""))
    if len(position) != 2 or len(size) != 2:
        return None
    x, y, w, h = (int(float(v)) for v in (*position, *size))
    return f"{x},{y},{x + w},{y + h}"


def _root(tree: str | None) -> ET.Element | None:
    if not tree:
        return None
    try:
        return ET.fromstring(tree)
    except ET.ParseError:
        return None


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
    "parse_accessibility_tree",
    "parse_action_response",
]
