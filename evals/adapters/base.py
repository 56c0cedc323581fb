"""The reference tool's ``openadapt_evals.adapters.base`` names: the data classes adapters and
agents exchange, the adapter interface, and ``UIElement``.

See docs/compat.md for what differs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evals.agents.base import BenchmarkAction, BenchmarkObservation, BenchmarkTask
from evals.compat.benchmark_api import BenchmarkAdapter, BenchmarkResult


@dataclass
class UIElement:
    """One element of a user interface, in the reference tool's normalized form.

    Nothing here produces these (workers send WAA's accessibility XML, see
    ``evals.agents.builtin.format_accessibility_tree``); the class is kept so code that builds
    or passes them around runs unchanged.

    Attributes:
        node_id: The element's ID in its tree.
        role: ``button``, ``textfield``, ``link``...
        name: Its accessible name.
        bbox: ``(left, top, right, bottom)``, in pixels or fractions of the screen.
        text: Its text content.
        value: Its current value (inputs).
        children: Its child elements.
        attributes: Anything platform-specific.
    """

    node_id: str
    role: str
    name: str | None = None
    bbox: tuple[float, float, float, float] | None = None
    text: str | None = None
    value: str | None = None
    children: list[UIElement] | None = None
    attributes: dict[str, Any] | None = None


__all__ = [
    "BenchmarkAction",
    "BenchmarkAdapter",
    "BenchmarkObservation",
    "BenchmarkResult",
    "BenchmarkTask",
    "UIElement",
]
