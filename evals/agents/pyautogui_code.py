"""An agent's action (:class:`BenchmarkAction`) and its pyautogui source.

The action type lives here, beside the one conversion that reads every field of it;
:mod:`evals.agents.base` re-exports it with the rest of what an agent is.

A structured action (click at x, y; type text; hotkey...) turns into pyautogui source.

This is the form real WAA agents send to a guest's ``/execute_windows``, and the local worker
accepts the same source, so an agent behaves the same on both. Coordinates are pixels, or
normalized to ``[0, 1]`` when both are floats in that range (scaled by the screen size). An action
without coordinates but with a target element is aimed at the element's centre: its
``target_bbox``, or the element named ``target_name`` (or ``target_node_id``) in the
observation's accessibility tree (``rect="left,top,right,bottom"`` attributes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from xml.etree import ElementTree as ET

SCREEN = (1280, 720)
"""The screen size normalized coordinates are scaled to (the local worker's and WAA's)."""

PREFIX = "import pyautogui\nimport time\npyautogui.FAILSAFE = False\n"
SCROLL_STEP = 5
"""Scroll clicks per action when only a direction is given."""


def _scale(x: float, y: float, screen: tuple[int, int]) -> tuple[int, int]:
    normalized = isinstance(x, float) and isinstance(y, float) and 0 <= x <= 1 and 0 <= y <= 1
    if normalized:
        return round(x * screen[0]), round(y * screen[1])
    return round(x), round(y)


def element_center(tree: str | None, name: str | None, node_id: str | None = None
                   ) -> tuple[int, int] | None:
    """The centre of the element named ``name`` (or whose ``id``/``node_id`` is ``node_id``)
    in an accessibility tree in XML with ``rect`` attributes; the last (topmost) match wins."""
    if not tree or not (name or node_id):
        return None
    try:
        root = ET.fromstring(tree)
    except ET.ParseError:
        return None
    found: tuple[int, int] | None = None
    for element in root.iter():
        matches = (name is not None and (element.get("name") or "").strip().lower()
                   == name.strip().lower()) or (
            node_id is not None and node_id in (element.get("id"), element.get("node_id")))
        rect = element.get("rect")
        if matches and rect:
            try:
                left, top, right, bottom = (int(float(v)) for v in rect.split(","))
            except ValueError:
                continue
            found = ((left + right) // 2, (top + bottom) // 2)
    return found


def point_of(action: BenchmarkAction, tree: str | None = None,
             screen: tuple[int, int] = SCREEN) -> tuple[int, int] | None:
    """Where a pointer action aims, in pixels (``None``: at the current mouse position)."""
    if action.x is not None and action.y is not None:
        return _scale(action.x, action.y, screen)
    if action.target_bbox is not None:
        left, top, right, bottom = action.target_bbox
        cx, cy = (left + right) / 2, (top + bottom) / 2
        if all(0 <= v <= 1 for v in action.target_bbox):
            return round(cx * screen[0]), round(cy * screen[1])
        return round(cx), round(cy)
    center = element_center(tree, action.target_name, action.target_node_id)
    if center is None and (action.target_name or action.target_node_id):
        raise ValueError(
            f"target {action.target_name or action.target_node_id!r} is not in the "
            "accessibility tree; give x and y"
        )
    return center


def _keys(action: BenchmarkAction) -> list[str]:
    keys = [m.lower() for m in action.modifiers or []]
    if action.key:
        keys += [k.strip().lower() for k in action.key.replace("+", " ").split() if k.strip()]
    return keys


def to_pyautogui(action: BenchmarkAction, tree: str | None = None,
                 screen: tuple[int, int] = SCREEN) -> str:
    """pyautogui source for a structured action (with WAA's import prefix).

    Raises:
        ValueError: the action lacks what its type needs (text for ``type``, a key for ``key``,
            end coordinates for ``drag``...).
    """
    kind = action.type
    point = point_of(action, tree, screen) if kind in POINTER_TYPES else None
    at = f"{point[0]}, {point[1]}" if point else ""
    lines: list[str] = []
    if kind in _CLICKS:
        lines.append(f"pyautogui.{_CLICKS[kind]}({at})")
    elif kind == "move":
        if point is None:
            raise ValueError("a move action needs x and y (or a target)")
        lines.append(f"pyautogui.moveTo({at})")
    elif kind == "type":
        if action.text is None:
            raise ValueError("a type action needs text")
        if point is not None:
            lines.append(f"pyautogui.click({at})")
        lines.append(f"pyautogui.typewrite({action.text!r})")
    elif kind in ("key", "hotkey"):
        keys = _keys(action)
        if not keys:
            raise ValueError(f"a {kind} action needs key (and optional modifiers)")
        if len(keys) == 1:
            lines.append(f"pyautogui.press({keys[0]!r})")
        else:
            lines.append("pyautogui.hotkey(" + ", ".join(repr(k) for k in keys) + ")")
    elif kind == "scroll":
        direction = (action.scroll_direction or "down").lower()
        amount = int(action.scroll_amount or SCROLL_STEP)
        if point is not None:
            lines.append(f"pyautogui.moveTo({at})")
        if direction in ("left", "right"):
            lines.append(f"pyautogui.hscroll({amount if direction == 'right' else -amount})")
        else:
            lines.append(f"pyautogui.scroll({amount if direction == 'up' else -amount})")
    elif kind == "drag":
        if action.end_x is None or action.end_y is None:
            raise ValueError("a drag action needs end_x and end_y")
        end = _scale(action.end_x, action.end_y, screen)
        if point is not None:
            lines.append(f"pyautogui.moveTo({at})")
        lines.append(f"pyautogui.dragTo({end[0]}, {end[1]}, duration=0.5)")
    else:
        raise ValueError(f"action type {kind!r} has no pyautogui form")
    return PREFIX + "\n".join(lines)


_CLICKS = {"click": "click", "double_click": "doubleClick", "right_click": "rightClick"}
POINTER_TYPES = ("click", "double_click", "right_click", "move", "type", "scroll", "drag")
GUI_TYPES = ("click", "double_click", "right_click", "type", "key", "hotkey", "scroll", "drag",
             "move")
"""Action types sent to the worker as pyautogui source."""

EXECUTE = "execute"
EXECUTE_WINDOWS = "execute_windows"
DONE = "done"
FAIL = "fail"
WAIT = "wait"
SEND_MSG_TO_USER = "send_msg_to_user"
REPORT_INFEASIBLE = "report_infeasible"
ABSTENTION_TYPES = (SEND_MSG_TO_USER, REPORT_INFEASIBLE)
"""The two abstention actions: ask the user a question, or report the request cannot be done.
Each ends the episode, with its ``text`` recorded (``evals.tasks.openapps`` scores them)."""
GUI_ACTION_TYPES = GUI_TYPES
"""The reference tool's GUI actions, sent to the worker as pyautogui source."""
ACTION_TYPES = (EXECUTE, EXECUTE_WINDOWS, DONE, FAIL, WAIT, *ABSTENTION_TYPES, *GUI_TYPES)


@dataclass
class BenchmarkAction:
    """One action.

    GUI actions (the reference tool's vocabulary) become pyautogui source, the form WAA's
    agents send, which real and local workers both accept (see docs/agents.md):

    - ``click``, ``double_click``, ``right_click``: at ``x, y`` or at the target element;
    - ``move``: move the mouse there; ``drag``: from ``x, y`` to ``end_x, end_y``;
    - ``type``: ``text`` (clicking ``x, y`` first when given);
    - ``key``/``hotkey``: ``key`` (``"enter"``, ``"ctrl+s"``) with optional ``modifiers``;
    - ``scroll``: ``scroll_direction`` and ``scroll_amount``;
    - ``wait``, ``done``, ``fail``: WAA's special actions.

    ``execute`` (a command-language ``command``) and ``execute_windows`` (Python ``code``) send
    what the agent wrote as is.

    Attributes:
        type: One of :data:`ACTION_TYPES`.
        x, y: Pixels, or normalized to ``[0, 1]`` when both are floats in that range.
        target_node_id, target_bbox, target_role, target_name: The element aimed at; used when
            ``x``/``y`` are absent (the bbox centre, or the named element's centre in the
            accessibility tree).
        text: Text of a ``type`` action.
        key: Key of a ``key``/``hotkey`` action (``"enter"``, ``"ctrl+s"``).
        modifiers: Keys held with ``key`` (``["ctrl", "shift"]``).
        scroll_direction, scroll_amount: A ``scroll`` action's direction and clicks.
        end_x, end_y: Where a ``drag`` ends.
        answer: An answer string (kept for the reference tool's benchmarks; not scored here).
        raw_action: The agent's own form of the action, kept as is.
        command: The command of an ``execute`` action.
        code: The Python source of an ``execute_windows`` action.
        raw: What the agent sent, when it came from outside (the http agent's answer).
        usage: Model tokens this step used, ``{"model", "tokens_in", "tokens_out"}``.
    """

    type: str
    x: float | None = None
    y: float | None = None
    target_node_id: str | None = None
    target_bbox: tuple[float, float, float, float] | None = None
    target_role: str | None = None
    target_name: str | None = None
    text: str | None = None
    key: str | None = None
    modifiers: list[str] | None = None
    scroll_direction: str | None = None
    scroll_amount: float | None = None
    end_x: float | None = None
    end_y: float | None = None
    answer: str | None = None
    raw_action: dict[str, Any] | None = None
    command: str | None = None
    code: str | None = None
    raw: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self.type = self.type.lower() if isinstance(self.type, str) else self.type
        if self.type == "hotkey" and self.key is None and self.modifiers:
            self.key = ""
        if self.type not in ACTION_TYPES:
            raise ValueError(f"unknown action type {self.type!r}; use one of {ACTION_TYPES}")
        if self.type == EXECUTE and not self.command:
            raise ValueError("an execute action needs a command")
        if self.type == EXECUTE_WINDOWS and not self.code:
            raise ValueError("an execute_windows action needs code")

    @property
    def ends_task(self) -> bool:
        """True for ``done``, ``fail`` and the abstention actions: the agent says it is
        finished, asks the user, or reports the request infeasible."""
        return self.type in (DONE, FAIL, *ABSTENTION_TYPES)

    def to_pyautogui(self, accessibility_tree: str | None = None) -> str:
        """The pyautogui source a worker runs for this action (``execute_windows``: its code).

        Raises:
            ValueError: a GUI action lacking what its type needs, or a non-GUI action.
        """
        if self.type == EXECUTE_WINDOWS:
            return str(self.code)
        return to_pyautogui(self, accessibility_tree)

    def to_string(self) -> str:
        """WAA's action string: ``DONE``/``FAIL``/``WAIT``, the command/code itself, or a GUI
        action's pyautogui source (aimed by coordinates or bbox; a target named only in the
        accessibility tree is resolved when the action is sent)."""
        if self.type == EXECUTE:
            return str(self.command)
        if self.type == EXECUTE_WINDOWS:
            return str(self.code)
        if self.type in GUI_TYPES:
            try:
                return to_pyautogui(self)
            except ValueError:
                return f"{self.type.upper()} {self.target_name or self.target_node_id or ''}"
        if self.type in ABSTENTION_TYPES:
            return f"{self.type.upper()} {json.dumps(self.text or '')}"
        return self.type.upper()

    def to_json(self) -> dict[str, Any]:
        """The action as recorded in a step: ``type`` and every field that is set."""
        data: dict[str, Any] = {"type": self.type}
        for name in _RECORDED:
            value = getattr(self, name)
            if value is not None:
                data[name] = list(value) if isinstance(value, tuple) else value
        return data


_RECORDED = ("x", "y", "target_node_id", "target_bbox", "target_role", "target_name", "text",
             "key", "modifiers", "scroll_direction", "scroll_amount", "end_x", "end_y", "answer",
             "command", "code")


__all__ = [
    "ABSTENTION_TYPES", "ACTION_TYPES", "DONE", "EXECUTE", "EXECUTE_WINDOWS", "FAIL",
    "GUI_ACTION_TYPES", "GUI_TYPES", "POINTER_TYPES", "REPORT_INFEASIBLE", "SCREEN",
    "SEND_MSG_TO_USER", "WAIT", "BenchmarkAction", "element_center", "point_of", "to_pyautogui",
]
