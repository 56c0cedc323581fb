"""Our own ``cua_bench`` namespace: what a Cua-Bench task module imports, when the real
``cua-bench`` package is not installed.

It is a module object handed to the module's ``import cua_bench`` (:func:`install`), never
installed as a package: the types (:class:`Task`, the session types ``DesktopSession`` and
``MobileSession``, the action types, also as ``cua_bench.types``), the four
lifecycle decorators with both call forms (``@cb.setup_task``, ``@cb.setup_task("train")``,
``@cb.setup_task(split="train")``; the split defaults to ``train``), and ``cb.interact`` as a
no-op. A decorated function carries its kind and split as ``_td_type`` and ``_td_split``, the
attributes the real package sets, so the loader reads modules written against either alike.
"""

from __future__ import annotations

import functools
import importlib.util
import operator
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

DEFAULT_SPLIT = "train"
KINDS = ("tasks_config", "setup_task", "solve_task", "evaluate_task")


@dataclass
class Task:
    """One variant of a task: the objective the agent reads, and what the module needs."""

    description: str
    task_id: str | None = None
    metadata: dict[str, Any] | None = None
    computer: dict[str, Any] | None = None


# --- actions: Cua-Bench's input actions, at screen coordinates --------------------------------


@dataclass
class _AtPoint:
    """A screen point, where the pointer actions act."""

    x: int
    y: int


@dataclass
class ClickAction(_AtPoint):
    """A left click at a screen point."""


@dataclass
class RightClickAction(_AtPoint):
    """A right click at a screen point."""


@dataclass
class DoubleClickAction(_AtPoint):
    """A double click at a screen point."""


@dataclass
class MiddleClickAction(_AtPoint):
    """A middle click at a screen point."""


@dataclass
class MoveToAction(_AtPoint):
    """Move the pointer to a screen point."""

    duration: float = 0.0


@dataclass
class DragAction:
    """Press at one screen point, move to another, release there."""

    from_x: int
    from_y: int
    to_x: int
    to_y: int
    duration: float = 1.0


@dataclass
class ScrollAction:
    """Turn the wheel (``amount`` pixels, as Cua-Bench counts; a notch is 100); up unless
    said, as Cua-Bench's default."""

    direction: str = "up"
    amount: int = 100


@dataclass
class TypeAction:
    """Type text into whatever has the focus."""

    text: str


@dataclass
class KeyAction:
    """Press one key (``enter``, ``tab``, ``a``...)."""

    key: str


@dataclass
class HotkeyAction:
    """Press keys together (``["ctrl", "a"]``)."""

    keys: list[str] = field(default_factory=list)


@dataclass
class WaitAction:
    """Do nothing for a while."""

    seconds: float = 1.0


@dataclass
class DoneAction:
    """The agent says it is done."""


ACTION_TYPES: tuple[type, ...] = (
    ClickAction, RightClickAction, DoubleClickAction, MiddleClickAction, MoveToAction,
    DragAction, ScrollAction, TypeAction, KeyAction, HotkeyAction, WaitAction, DoneAction,
)
# Cua-Bench's name for any of them, a union of the types (for annotations and isinstance)
Action: Any = functools.reduce(operator.or_, ACTION_TYPES)


class DesktopSession(Protocol):
    """What lifecycle functions receive (:class:`evals.tasks.cua_bench.session.WorkerSession`)."""

    async def launch_window(self, *args: Any, **kwargs: Any) -> Any: ...
    async def execute_javascript(self, pid: Any, javascript: str) -> Any: ...
    async def click_element(self, pid: Any, selector: str) -> None: ...
    async def execute_action(self, action: Any) -> None: ...
    async def screenshot(self) -> bytes: ...


# --- decorators --------------------------------------------------------------------------------


def _decorator(kind: str) -> Callable[..., Any]:
    def decorate(first: Any = None, /, *args: Any, **kwargs: Any) -> Any:
        def mark(function: Callable[..., Any], split: str) -> Callable[..., Any]:
            function._td_type = kind  # type: ignore[attr-defined]
            function._td_split = split  # type: ignore[attr-defined]
            return function

        if callable(first):  # bare: @cb.setup_task
            return mark(first, str(kwargs.get("split", DEFAULT_SPLIT)))
        if first is not None and not isinstance(first, str):
            raise TypeError(f"@cb.{kind}: the first argument is the split's name, a string")
        split = str(kwargs.get("split", first if first is not None else DEFAULT_SPLIT))
        return lambda function: mark(function, split)

    decorate.__name__ = kind
    decorate.__doc__ = f"Mark a function as the module's ``{kind}`` for a split."
    return decorate


tasks_config, setup_task, solve_task, evaluate_task = map(_decorator, KINDS)


def interact(*args: Any, **kwargs: Any) -> None:
    """Cua-Bench's interactive viewer; nothing to show in a run, so nothing happens."""


def real_package_installed() -> bool:
    """Whether the real ``cua-bench`` package can be imported (then modules get it).

    A folder named ``cua_bench`` on the path (a dataset folder such as the examples') is a
    namespace package to Python, with nothing in it: that is not the package.
    """
    spec = importlib.util.find_spec("cua_bench")
    return spec is not None and spec.origin not in (None, "namespace")


def cua_bench_module() -> types.ModuleType:
    """A fresh module object named ``cua_bench`` holding our namespace, with its ``types``
    submodule (the action types, ``Action``), which modules import as ``from cua_bench.types
    import KeyAction``: :func:`install` makes both importable.

    ``MobileSession`` is ``DesktopSession``, as in Cua-Bench (its mobile session is a
    placeholder there), so the annotation ``cb.DesktopSession | cb.MobileSession`` that
    Cua-Bench's examples write evaluates.
    """
    module = types.ModuleType("cua_bench", "Cua-Bench's task interface, as oa-vm provides it.")
    submodule = types.ModuleType("cua_bench.types", "Cua-Bench's action types.")
    actions: dict[str, Any] = {cls.__name__: cls for cls in ACTION_TYPES}
    actions["Action"] = Action
    for name, value in actions.items():
        setattr(submodule, name, value)
    submodule.__all__ = sorted(actions)  # type: ignore[attr-defined]
    names = {
        "Task": Task, "DesktopSession": DesktopSession, "MobileSession": DesktopSession,
        "tasks_config": tasks_config, "setup_task": setup_task, "solve_task": solve_task,
        "evaluate_task": evaluate_task, "interact": interact, **actions,
    }
    for name, value in names.items():
        setattr(module, name, value)
    module.__all__ = sorted(names)  # type: ignore[attr-defined]
    module.types = submodule  # type: ignore[attr-defined]
    return module


def install() -> None:
    """Make ``import cua_bench`` and ``import cua_bench.types`` give our namespace, unless
    the real package is installed or a ``cua_bench`` is imported already."""
    if "cua_bench" in sys.modules or real_package_installed():
        return
    module = cua_bench_module()
    sys.modules["cua_bench"] = module
    sys.modules["cua_bench.types"] = module.types
