"""What a sweep costs: the reference dry-run estimate, extended to W workers, and model prices.

The reference formula (the published ``openadapt-eval-flow --dry-run``), reproduced exactly:

- minutes per task: 1.0 for replay; hybrid ``(1 - f) * 1.0 + f * 3.0``, f the fallback rate.
- VM-hours ``(N * minutes / 60 / W + 0.25) * W``: each of W workers runs its share of the tasks
  and pays 0.25 h of start-up; wall time is ``N * minutes / 60 / W + 0.25`` hours.
- one agent step costs ``((image_tokens + 500) * in + 300 * out) / 1e6`` dollars for a
  1920x1080 screenshot, 500 text tokens in and 300 tokens out.
- the pure-agent baseline pays 22 steps for every task; hybrid pays 10 steps for each fallback
  task (``N * f`` of them); replay pays none.

Image tokens:

- Claude: ``int(w * h / 750)`` after scaling so the long edge is at most 1568 px (both sides
  truncated to whole pixels): 1920x1080 -> 1568x882 -> 1843 tokens. With claude-sonnet-4 this
  gives the reference baseline of $39.06 for 154 tasks.
- OpenAI (high detail): ``85 + 170 * tiles`` with 512 px tiles counted on the image as the API
  sends it to the model: scaled to fit 2048x2048, then so the short side is at most 768 px.
  1920x1080 -> 1365x768 -> 3 x 2 = 6 tiles -> 1105 tokens. This is OpenAI's documented rule and
  the reference's; tiling the raw 1920x1080 (4 x 3 = 12 tiles, 2125 tokens) would overstate it.

Pure functions and frozen dataclasses only: no I/O, so the CLI, the sweep ledger and tests share
one source of truth.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from oa_vm.errors import InvalidInputError
from oa_vm.kit import timings
from waa_client.catalog import WAA_SUITE_TASKS

SCREEN = (1920, 1080)
TEXT_TOKENS_PER_STEP = 500
OUTPUT_TOKENS_PER_STEP = 300
# The formula's times come from oa_vm.kit.timings, the one source of every time estimate (the
# reference's own figures, kept so its output reproduces exactly).
REPLAY_MINUTES_PER_TASK = timings.REPLAY_TASK.typical_s / 60  # 1.0
AGENT_MINUTES_PER_TASK = timings.AGENT_TASK.typical_s / 60  # 3.0
STARTUP_HOURS = timings.REFERENCE_STARTUP.typical_s / 3600  # 0.25
BASELINE_STEPS_PER_TASK = 22
FALLBACK_STEPS_PER_TASK = 10
DEFAULT_FALLBACK_RATE = 0.30
DEFAULT_VM_HOURLY = 0.19
DEFAULT_MODEL = "claude-sonnet-4"
FULL_SUITE_TASKS = WAA_SUITE_TASKS

CLAUDE_MAX_LONG_EDGE = 1568
CLAUDE_PIXELS_PER_TOKEN = 750
OPENAI_MAX_SIDE = 2048
OPENAI_MAX_SHORT_SIDE = 768
OPENAI_TILE = 512
OPENAI_BASE_TOKENS = 85
OPENAI_TOKENS_PER_TILE = 170


class Mode(StrEnum):
    """How tasks are run: compiled replay only, or replay with an agent fallback."""

    REPLAY = "replay"
    HYBRID = "hybrid"


def claude_image_tokens(width: int, height: int) -> int:
    """Tokens Claude bills for one image of ``width`` x ``height`` pixels."""
    long_edge = max(width, height)
    if long_edge > CLAUDE_MAX_LONG_EDGE:
        scale = CLAUDE_MAX_LONG_EDGE / long_edge
        width, height = int(width * scale), int(height * scale)
    return int(width * height / CLAUDE_PIXELS_PER_TOKEN)


def openai_image_tokens(width: int, height: int) -> int:
    """Tokens an OpenAI vision model bills for one high-detail image (see the module notes)."""
    if max(width, height) > OPENAI_MAX_SIDE:
        scale = OPENAI_MAX_SIDE / max(width, height)
        width, height = int(width * scale), int(height * scale)
    if min(width, height) > OPENAI_MAX_SHORT_SIDE:
        scale = OPENAI_MAX_SHORT_SIDE / min(width, height)
        width, height = int(width * scale), int(height * scale)
    tiles = math.ceil(width / OPENAI_TILE) * math.ceil(height / OPENAI_TILE)
    return OPENAI_BASE_TOKENS + OPENAI_TOKENS_PER_TILE * tiles


@dataclass(frozen=True)
class ModelPrice:
    """List price of one model, in USD per million tokens, and how it counts image tokens."""

    name: str
    input_per_million: float
    output_per_million: float
    image_tokens: Callable[[int, int], int]


MODELS: dict[str, ModelPrice] = {
    m.name: m
    for m in (
        ModelPrice("gpt-4o", 2.50, 10.00, openai_image_tokens),
        ModelPrice("gpt-4o-mini", 0.15, 0.60, openai_image_tokens),
        ModelPrice("claude-sonnet-4", 3.00, 15.00, claude_image_tokens),
        ModelPrice("claude-opus-4.5", 15.00, 75.00, claude_image_tokens),
        ModelPrice("claude-haiku-4.5", 1.00, 5.00, claude_image_tokens),
        # OpenAI's computer-use model (the api-openai agent), list price per million tokens
        ModelPrice("computer-use-preview", 3.00, 12.00, openai_image_tokens),
    )
}


def known_models() -> list[str]:
    """Names of the priced models, in catalog order."""
    return list(MODELS)


def model_price(model: str) -> ModelPrice:
    """The price of ``model``.

    Raises:
        InvalidInputError: unknown model; the message lists the known ones.
    """
    found = MODELS.get(model.strip())
    if found is None:
        raise InvalidInputError(
            f"unknown model {model!r}; known models: {', '.join(known_models())}"
        )
    return found


def token_cost(model: str, tokens_in: int, tokens_out: int) -> float:
    """Dollars for ``tokens_in`` input and ``tokens_out`` output tokens of ``model``.

    Raises:
        InvalidInputError: unknown model, or a negative token count.
    """
    price = model_price(model)
    if tokens_in < 0 or tokens_out < 0:
        raise InvalidInputError(
            f"token counts must not be negative (got in={tokens_in}, out={tokens_out})"
        )
    return (tokens_in * price.input_per_million + tokens_out * price.output_per_million) / 1e6


def step_tokens(model: str, screen: tuple[int, int] = SCREEN) -> tuple[int, int]:
    """(input, output) tokens of one agent step: a screenshot, the text context and a reply."""
    price = model_price(model)
    return price.image_tokens(*screen) + TEXT_TOKENS_PER_STEP, OUTPUT_TOKENS_PER_STEP


def step_cost(model: str, screen: tuple[int, int] = SCREEN) -> float:
    """Dollars for one agent step of ``model`` (the reference's per-step formula)."""
    tokens_in, tokens_out = step_tokens(model, screen)
    return token_cost(model, tokens_in, tokens_out)


def minutes_per_task(
    mode: Mode | str,
    fallback_rate: float = DEFAULT_FALLBACK_RATE,
    *,
    replay_minutes: float = REPLAY_MINUTES_PER_TASK,
    agent_minutes: float = AGENT_MINUTES_PER_TASK,
) -> float:
    """VM minutes one task takes: replay 1.0; hybrid (1 - f) * 1.0 + f * 3.0."""
    if Mode(mode) is Mode.REPLAY:
        return replay_minutes
    return (1 - fallback_rate) * replay_minutes + fallback_rate * agent_minutes


def wall_hours(
    n_tasks: int, minutes: float, workers: int = 1, startup_hours: float = STARTUP_HOURS
) -> float:
    """Hours from start to finish with ``workers`` sharing the tasks, start-up included."""
    return n_tasks * minutes / 60 / workers + startup_hours


def vm_hours(
    n_tasks: int, minutes: float, workers: int = 1, startup_hours: float = STARTUP_HOURS
) -> float:
    """Machine-hours billed: every worker is up for the whole wall time."""
    return wall_hours(n_tasks, minutes, workers, startup_hours) * workers


@dataclass(frozen=True)
class EstimateInput:
    """What a dry-run estimate is asked for.

    Attributes:
        n_tasks: number of tasks (at least 1).
        mode: replay or hybrid.
        model: the agent model (fallback in hybrid, and the baseline).
        fallback_rate: share of tasks that fall back to the agent in hybrid (0..1).
        vm_hourly: USD per worker-hour (>= 0).
        workers: parallel workers (at least 1).
        screen, baseline_steps, fallback_steps, replay_minutes, agent_minutes, startup_hours:
            the formula's constants (the reference's defaults); the flow cost API
            (:func:`evals.compat.flow.cost.estimate_flow_waa_cost`) lets callers change them.
    """

    n_tasks: int
    mode: Mode = Mode.REPLAY
    model: str = DEFAULT_MODEL
    fallback_rate: float = DEFAULT_FALLBACK_RATE
    vm_hourly: float = DEFAULT_VM_HOURLY
    workers: int = 1
    screen: tuple[int, int] = SCREEN
    baseline_steps: int = BASELINE_STEPS_PER_TASK
    fallback_steps: int = FALLBACK_STEPS_PER_TASK
    replay_minutes: float = REPLAY_MINUTES_PER_TASK
    agent_minutes: float = AGENT_MINUTES_PER_TASK
    startup_hours: float = STARTUP_HOURS

    def validated(self) -> EstimateInput:
        """This input, checked; raises :class:`InvalidInputError` with what to fix."""
        if self.n_tasks < 1:
            raise InvalidInputError(f"the number of tasks must be at least 1 (got {self.n_tasks})")
        if self.workers < 1:
            raise InvalidInputError(f"--workers must be at least 1 (got {self.workers})")
        if not math.isfinite(self.vm_hourly) or self.vm_hourly < 0:
            raise InvalidInputError(
                f"the VM price must be a non-negative number of $/hour (got {self.vm_hourly})"
            )
        if not math.isfinite(self.fallback_rate) or not 0 <= self.fallback_rate <= 1:
            raise InvalidInputError(
                f"--fallback-rate must be between 0 and 1 (got {self.fallback_rate})"
            )
        model_price(self.model)
        width, height = self.screen
        if width < 1 or height < 1:
            raise InvalidInputError(
                f"the screen must be at least 1x1 pixels (got {width}x{height})"
            )
        for name, value in (("steps per task", self.baseline_steps),
                            ("fallback steps", self.fallback_steps)):
            if value < 0:
                raise InvalidInputError(f"{name} must not be negative (got {value})")
        for name, number in (("replay minutes per task", self.replay_minutes),
                             ("agent minutes per task", self.agent_minutes),
                             ("start-up hours", self.startup_hours)):
            if not math.isfinite(number) or number < 0:
                raise InvalidInputError(f"{name} must be a non-negative number (got {number})")
        return self


@dataclass(frozen=True)
class CostEstimate:
    """A dry-run estimate; every money figure in USD, unrounded (round when printing)."""

    n_tasks: int
    mode: str
    model: str
    workers: int
    vm_hourly: float
    fallback_rate: float
    minutes_per_task: float
    wall_hours: float
    vm_hours: float
    vm_cost: float
    step_cost: float
    paid_tasks: float
    steps_per_paid_task: int
    token_cost: float
    total: float
    per_task: float
    baseline_steps_per_task: int
    baseline: float
    savings: float

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (full precision)."""
        return asdict(self)

    def summary_line(self) -> str:
        """The one-line summary, e.g. ``154 tasks, replay mode, $0.19/h, ...: 2.82 VM-hours``."""
        head = (
            f"{self.n_tasks} tasks, {self.mode} mode, ${format_rate(self.vm_hourly)}/h, "
            f"{self.model}, W={self.workers}"
        )
        if self.mode == Mode.HYBRID:
            head += f", f={self.fallback_rate:g}"
        return (
            f"{head}: {self.vm_hours:.2f} VM-hours, {money(self.total)} total, "
            f"{money(self.per_task, 4)}/task, baseline {money(self.baseline)} "
            f"({self.baseline_steps_per_task} steps/task), savings {money(self.savings)}"
        )


def estimate(inputs: EstimateInput) -> CostEstimate:
    """The cost of a run as the reference computes it, extended to ``workers`` workers.

    Raises:
        InvalidInputError: an input is out of range or the model is unknown.
    """
    i = inputs.validated()
    mode = Mode(i.mode)
    per_step = step_cost(i.model, i.screen)
    rate = 0.0 if mode is Mode.REPLAY else i.fallback_rate
    minutes = minutes_per_task(mode, rate, replay_minutes=i.replay_minutes,
                               agent_minutes=i.agent_minutes)
    paid_tasks = i.n_tasks * rate
    steps = 0 if mode is Mode.REPLAY else i.fallback_steps
    tokens = paid_tasks * steps * per_step
    hours = vm_hours(i.n_tasks, minutes, i.workers, i.startup_hours)
    vm_cost = hours * i.vm_hourly
    total = vm_cost + tokens
    baseline = i.n_tasks * i.baseline_steps * per_step
    return CostEstimate(
        n_tasks=i.n_tasks,
        mode=mode.value,
        model=i.model,
        workers=i.workers,
        vm_hourly=i.vm_hourly,
        fallback_rate=rate,
        minutes_per_task=minutes,
        wall_hours=wall_hours(i.n_tasks, minutes, i.workers, i.startup_hours),
        vm_hours=hours,
        vm_cost=vm_cost,
        step_cost=per_step,
        paid_tasks=paid_tasks,
        steps_per_paid_task=steps,
        token_cost=tokens,
        total=total,
        per_task=total / i.n_tasks,
        baseline_steps_per_task=i.baseline_steps,
        baseline=baseline,
        savings=baseline - total,
    )


def money(value: float, places: int = 2) -> str:
    """``$1.23``; negatives as ``-$1.23``."""
    sign = "-" if value < 0 and round(value, places) != 0 else ""
    return f"{sign}${abs(value):.{places}f}"


def format_rate(value: float) -> str:
    """A $/hour figure with at least 2 and at most 5 decimals: 0.19, 0.42336, 4.608."""
    text = f"{value:.5f}".rstrip("0")
    whole, _, frac = text.partition(".")
    return f"{whole}.{frac.ljust(2, '0')}"


def format_estimate(est: CostEstimate, title: str | None = None) -> str:
    """The estimate's block in the reference's layout (no trailing newline)."""
    workers = f"{est.workers} worker{'s' if est.workers != 1 else ''}"
    lines = [
        f"  {title or f'{est.n_tasks} tasks'}:",
        f"    VM-hours:              {est.vm_hours:.2f} VM-hours @ ${format_rate(est.vm_hourly)}"
        f"/h = {money(est.vm_cost)}",
        f"    Wall time:             {est.wall_hours:.2f} h ({workers}, "
        f"incl. {STARTUP_HOURS:g} h start-up)",
        f"    Agent token cost:      {money(est.token_cost)} (paid tasks={est.paid_tasks:.1f}, "
        f"{est.steps_per_paid_task} steps each)",
        f"    -> TOTAL:              {money(est.total)} ({money(est.per_task, 4)}/task)",
        f"    Pure-agent baseline:   {money(est.baseline)} ({est.baseline_steps_per_task} "
        "steps/task, all paid)",
        f"    Savings vs baseline:   {money(est.savings)}",
    ]
    return "\n".join(lines)
