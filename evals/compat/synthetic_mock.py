"""``WAAMockAdapter``: the reference tool's synthetic mock, in-process, for testing agent plumbing.

Nothing here is a WAA task. The adapter invents tasks (``mock_<domain>_<nnn>``, instruction
``Mock task N in <domain> domain``), shows one fixed form (buttons ``OK``, ``Cancel``,
``Submit`` and a text field on a 1920x1200 screen) and scores a task from the actions it was
sent, by the rules the reference documents for its mock. It starts no process and opens no
connection, so it suits unit tests of an agent's loop, parsing and bookkeeping; it says nothing
about whether an agent can do WAA tasks. For that, :class:`evals.WAASimulatedAdapter` runs the
real local tasks on simulated workers, scored by the real checker.

Kept apart from real runs on purpose: live adapters and ``openadapt-evals run`` refuse
``mock_*`` IDs (:class:`evals.adapters.SyntheticTaskError`), and
:func:`evals.evaluate_agent_on_benchmark` writes no run folder for this adapter, so its scores
never appear beside real ones.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evals.agents.base import BenchmarkAction, BenchmarkObservation, BenchmarkTask
from evals.compat.benchmark_api import (
    WAA_DOMAINS,
    BenchmarkAdapter,
    BenchmarkResult,
    known_or_key_error,
)
from oa_vm.kit.lazy import pil_draw as ImageDraw
from oa_vm.kit.lazy import pil_image as Image
from waa_client.catalog import Catalog, TaskRef
from waa_client.scoring import ScoringClient
from waa_client.waa import WaaClient

SCREEN = (1920, 1200)
"""The mock screen's size in pixels (the reference mock's)."""
MOCK_STEP_LIMIT = 15
"""Steps per mock task: ``step`` says ``done`` at this count, and tasks carry it as
``time_limit_steps``."""
WINDOW_TITLE = "Mock Window - synthetic form"


@dataclass(frozen=True)
class MockControl:
    """One control of the mock form: its node ID, role, name and where a click hits it
    (``left, top, right, bottom`` in screen pixels, edges included)."""

    node_id: str
    role: str
    name: str
    hit_box: tuple[int, int, int, int]


CONTROLS = (
    MockControl("1", "button", "OK", (100, 100, 200, 140)),
    MockControl("2", "textfield", "Input", (100, 160, 500, 200)),
    MockControl("3", "button", "Cancel", (220, 100, 320, 140)),
    # Drawn at 350,100-450,140; clicks are accepted a little around it, as the reference's are.
    MockControl("4", "button", "Submit", (350, 80, 450, 160)),
)
OK_ID, SUBMIT_ID = "1", "4"


class WAAMockAdapter(BenchmarkAdapter):
    """A synthetic mock of a WAA adapter, in-process, for testing agent plumbing only.

    Its tasks are invented (``mock_*`` IDs that live adapters refuse) and all show the same
    form; a task succeeds when the agent clicked ``Submit``, or typed text and clicked ``OK``.
    It does not run WAA tasks and its scores are not benchmark results: use
    :class:`evals.WAASimulatedAdapter` (real local tasks, real checker) for that.

    Scoring (:meth:`evaluate`), from the actions sent to :meth:`step` since :meth:`reset`:

    - a ``click`` hits a control by ``target_node_id``, else by ``target_name``, else by its
      point (``x``/``y``, fractions of the screen when both are within ``[0, 1]``, else pixels;
      or the centre of ``target_bbox``) falling in the control's hit box;
    - success (score 1.0): ``Submit`` was clicked, or some text was typed and ``OK`` clicked;
    - otherwise, when a control was clicked or text typed: partial credit
      ``0.3 + 0.1 * min(distinct controls clicked, 3) + (0.2 if text was typed)``;
    - otherwise 0.0 (an agent that says ``done`` at once scores 0).

    Attributes read by code written against the reference: ``_current_task``,
    ``_step_count`` (actions sent to :meth:`step` since the last reset) and ``_actions``
    (those actions, in order).
    """

    name = "waa-mock"
    live = False
    in_process = True
    max_steps = MOCK_STEP_LIMIT

    def __init__(self, num_tasks: int = 20, domains: Sequence[str] | None = None) -> None:
        """Invent ``num_tasks`` tasks spread over ``domains`` (default: the first three of
        :data:`evals.adapters.WAA_DOMAINS`), the first domains taking one more when they do
        not divide evenly.

        Raises:
            ValueError: ``num_tasks`` below 1, no domains, or a domain that is not a plain name.
        """
        if isinstance(num_tasks, bool) or not isinstance(num_tasks, int) or num_tasks < 1:
            raise ValueError(f"num_tasks must be a whole number of at least 1, not {num_tasks!r}")
        chosen = list(domains) if domains is not None else WAA_DOMAINS[:3]
        bad = [d for d in chosen if not isinstance(d, str) or not d.strip() or "," in d]
        if not chosen or bad:
            raise ValueError(f"domains must be non-empty names, not {chosen!r}")
        self.num_tasks = num_tasks
        self.domains = chosen
        self._tasks = _invent_tasks(num_tasks, chosen)
        self._by_id = {task.task_id: task for task in self._tasks}
        self._current_task: BenchmarkTask | None = None
        self._step_count = 0
        self._actions: list[BenchmarkAction] = []

    # -- the interactive interface -----------------------------------------------------------

    def list_tasks(self, domain: str | None = None) -> list[BenchmarkTask]:
        """The invented tasks, optionally of one domain."""
        return [t for t in self._tasks if domain is None or t.domain == domain]

    def load_task(self, task_id: str) -> BenchmarkTask:
        """One invented task by ID.

        Raises:
            KeyError: no such task.
        """
        known_or_key_error(task_id, self._by_id, source=type(self).__name__)
        return self._by_id[task_id]

    def reset(self, task: BenchmarkTask) -> BenchmarkObservation:
        """Start ``task`` afresh (no actions, step 0); the form as the first observation."""
        self._current_task = task
        self._step_count = 0
        self._actions = []
        return self._mock_observation()

    def step(self, action: BenchmarkAction) -> tuple[BenchmarkObservation, bool, dict[str, Any]]:
        """Record ``action``; ``(observation, done, {"step": n})``. ``done`` is True for
        ``done``/``fail`` and once the task took its step limit (15).

        Raises:
            RuntimeError: :meth:`reset` was not called.
        """
        if self._current_task is None:
            raise RuntimeError("call reset(task) before step()")
        self._step_count += 1
        self._actions.append(action)
        limit = self._current_task.time_limit_steps or MOCK_STEP_LIMIT
        done = action.ends_task or self._step_count >= limit
        return self._mock_observation(), done, {"step": self._step_count}

    def evaluate(self, task: BenchmarkTask) -> BenchmarkResult:
        """Score ``task`` from the actions sent since it was reset (see the class docstring);
        a task that is not the current one has had no actions."""
        current = self._current_task is not None and self._current_task.task_id == task.task_id
        actions = self._actions if current else []
        clicked = {hit for a in actions if a.type == "click" and (hit := _hit(a)) is not None}
        typed = any(a.type == "type" and a.text for a in actions)
        said_done = any(a.type == "done" for a in actions)
        success = SUBMIT_ID in clicked or (typed and OK_ID in clicked)
        if success:
            score = 1.0
        elif clicked or typed:
            score = 0.3 + 0.1 * min(len(clicked), 3) + (0.2 if typed else 0.0)
        else:
            score = 0.0
        names = sorted(c.name for c in CONTROLS if c.node_id in clicked)
        return BenchmarkResult(
            task_id=task.task_id, success=success, score=round(score, 6),
            num_steps=self._step_count if current else 0, domain=task.domain,
            reason=f"synthetic mock: clicked={names}, typed={typed}, done={said_done}")

    # -- what the sweep machinery would use: not available, said plainly ----------------------

    def catalog(self) -> Catalog:
        """Not available: mock tasks exist only in this adapter, not in any worker's catalog.

        Raises:
            NotImplementedError: always.
        """
        raise NotImplementedError(_NOT_A_WORKER)

    def clients(self) -> tuple[WaaClient, ScoringClient]:
        """Not available: the mock has no worker.

        Raises:
            NotImplementedError: always.
        """
        raise NotImplementedError(_NOT_A_WORKER)

    def default_task_ids(self) -> list[str]:
        """Every invented task."""
        return [t.task_id for t in self._tasks]

    def select(self, task_ids: Sequence[str] | None) -> list[TaskRef]:
        """Not available (see :meth:`catalog`); :func:`evals.evaluate_agent_on_benchmark` plays
        this adapter through :meth:`reset`/:meth:`step`/:meth:`evaluate` instead.

        Raises:
            NotImplementedError: always.
        """
        raise NotImplementedError(_NOT_A_WORKER)

    def close(self) -> None:
        """Remove the screenshots written so far. Idempotent."""
        if self._screens is not None:
            self._screens.cleanup()
            self._screens = None

    # -- the observation -----------------------------------------------------------------------

    def _mock_observation(self) -> BenchmarkObservation:
        png = _render(self._current_task, self._step_count)
        tree: Any = {
            "role": "window",
            "name": "Mock Window",
            "id": "0",
            "children": [
                {"role": c.role, "name": c.name, "id": c.node_id, "bbox": list(c.hit_box)}
                for c in CONTROLS
            ],
        }
        return BenchmarkObservation(
            screenshot=png,
            screenshot_path=self._save_screenshot(png, self._step_count),
            accessibility_tree=tree,
            window_title=WINDOW_TITLE,
            step=self._step_count,
            viewport=SCREEN,
            raw_observation={"synthetic": True},
        )


_NOT_A_WORKER = ("WAAMockAdapter is a synthetic in-process mock with no worker or task catalog; "
                 "play it with reset/step/evaluate or evaluate_agent_on_benchmark, or use "
                 "WAASimulatedAdapter for real tasks on simulated workers")


def _invent_tasks(num_tasks: int, domains: list[str]) -> list[BenchmarkTask]:
    """``num_tasks`` tasks spread over ``domains``, earlier domains taking the remainder."""
    share, extra = divmod(num_tasks, len(domains))
    return [BenchmarkTask(task_id=f"mock_{domain}_{n:03d}",
                          domain=domain,
                          instruction=f"Mock task {n} in {domain} domain",
                          time_limit_steps=MOCK_STEP_LIMIT,
                          raw_config={"mock": True, "synthetic": True})
            for index, domain in enumerate(domains)
            for n in range(1, share + (1 if index < extra else 0) + 1)]


def _hit(action: BenchmarkAction) -> str | None:
    """The node ID of the control a click lands on, or None."""
    if action.target_node_id is not None:
        return str(action.target_node_id)
    if action.target_name:
        for control in CONTROLS:
            if control.name.lower() == action.target_name.lower():
                return control.node_id
    point = _point(action)
    if point is None:
        return None
    x, y = point
    for control in CONTROLS:
        left, top, right, bottom = control.hit_box
        if left <= x <= right and top <= y <= bottom:
            return control.node_id
    return None


def _point(action: BenchmarkAction) -> tuple[float, float] | None:
    """Where a click lands in screen pixels (fractions are scaled to the screen)."""
    if action.x is not None and action.y is not None:
        x, y = float(action.x), float(action.y)
    elif action.target_bbox is not None:
        left, top, right, bottom = action.target_bbox
        x, y = (left + right) / 2, (top + bottom) / 2
    else:
        return None
    if 0 <= x <= 1 and 0 <= y <= 1:
        return x * SCREEN[0], y * SCREEN[1]
    return x, y


def _render(task: BenchmarkTask | None, step: int) -> bytes:
    """The form as a PNG: the fixed form, plus the task's ID and the step."""
    image = _form().copy()
    draw = ImageDraw.Draw(image)
    label = task.task_id if task is not None else "(no task)"
    draw.text((100, 250), f"Task: {label}", fill=(0, 0, 0))
    draw.text((100, 280), f"Step: {step}", fill=(0, 0, 0))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=1)  # flat image: fast beats small here
    return buffer.getvalue()


@functools.cache
def _form() -> Any:
    """The form without task or step (drawn once): title bar, controls where their hit boxes
    say, so a click aimed at what the screenshot shows lands on it."""
    image = Image.new("RGB", SCREEN, (236, 236, 236))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, SCREEN[0], 40), fill=(50, 50, 60))
    draw.text((16, 12), f"{WINDOW_TITLE} (not a WAA task)", fill=(255, 255, 255))
    fills = {"OK": (0, 110, 200), "Cancel": (190, 190, 190), "Submit": (20, 150, 60)}
    for control in CONTROLS:
        left, top, right, bottom = control.hit_box
        if control.role == "textfield":
            draw.rectangle(control.hit_box, fill=(255, 255, 255), outline=(110, 110, 110))
            draw.text((left + 8, top + 12), "Type here", fill=(150, 150, 150))
            continue
        if control.name == "Submit":
            top, bottom = 100, 140  # drawn like the other buttons; the hit box is wider
        draw.rectangle((left, top, right, bottom), fill=fills[control.name])
        draw.text((left + 14, top + 12), control.name, fill=(0, 0, 0))
    return image
