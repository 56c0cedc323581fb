"""Turn a structured action (click at x, y; type text; hotkey...) into pyautogui source.

This is the form real WAA agents send to a guest's ``/execute_windows``, and the local worker
accepts the same source, so an agent behaves the same on both. Coordinates are pixels, or
normalized to ``[0, 1]`` when both are floats in that range (scaled by the screen size). An action
without coordinates but with a target element is aimed at the element's centre: its
``target_bbox``, or the element named ``target_name`` (or ``target_node_id``) in the
observation's accessibility tree (``rect="left,top,right,bottom"`` attributes).
"""

from __future__ import annotations

from typing import Protocol
from xml.etree import ElementTree as ET


class BenchmarkAction(Protocol):
    """What this module reads of an action (:class:`evals.agents.base.BenchmarkAction` has it);
    a protocol, so that this module needs nothing from the one that builds actions."""

    type: str
    x: float | None
    y: float | None
    target_node_id: str | None
    target_bbox: tuple[float, float, float, float] | None
    target_name: str | None
    text: str | None
    key: str | None
    modifiers: list[str] | None
    scroll_direction: str | None
    scroll_amount: float | None
    end_x: float | None
    end_y: float | None

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
    if kind == "click":
        lines.append(f"pyautogui.click({at})")
    elif kind == "double_click":
        lines.append(f"pyautogui.doubleClick({at})")
    elif kind == "right_click":
        lines.append(f"pyautogui.rightClick({at})")
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


POINTER_TYPES = ("click", "double_click", "right_click", "move", "type", "scroll", "drag")
GUI_TYPES = ("click", "double_click", "right_click", "type", "key", "hotkey", "scroll", "drag",
             "move")
"""Action types sent to the worker as pyautogui source."""

__all__ = ["GUI_TYPES", "POINTER_TYPES", "SCREEN", "element_center", "point_of", "to_pyautogui"]
