"""The reference tool's flow cost API (``openadapt_evals.flow.cost``) on this package's formula.

Same module path with only the import changed (``from evals.compat.flow.cost import ...``),
same names and keyword arguments: :func:`estimate_flow_waa_cost` returns a
:class:`FlowRunCostEstimate` whose ``as_dict()`` has the reference's keys, :class:`SpendLedger`
and :class:`CostGuardConfig` are its guardrails, :func:`looks_like_billing_error` its
billing-error detection. The figures come from :func:`evals.results.cost.estimate` (the same
formula, one source of truth), so the dry run, the sweep ledger and this API cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evals.results import cost as _cost
from evals.results.cost import DEFAULT_MODEL, DEFAULT_VM_HOURLY, EstimateInput, Mode, estimate
from evals.results.cost import MODELS as PRICES
from oa_vm.errors import InvalidInputError

DEFAULT_SCREEN = _cost.SCREEN
DEFAULT_AGENT_STEPS_PER_TASK = _cost.BASELINE_STEPS_PER_TASK
DEFAULT_FALLBACK_STEPS = _cost.FALLBACK_STEPS_PER_TASK
DEFAULT_TEXT_TOKENS_PER_STEP = _cost.TEXT_TOKENS_PER_STEP
DEFAULT_OUTPUT_TOKENS_PER_STEP = _cost.OUTPUT_TOKENS_PER_STEP
DEFAULT_REPLAY_MINUTES_PER_TASK = _cost.REPLAY_MINUTES_PER_TASK
DEFAULT_AGENT_MINUTES_PER_TASK = _cost.AGENT_MINUTES_PER_TASK
DEFAULT_OVERHEAD_HOURS = _cost.STARTUP_HOURS


def openai_image_tokens(width: int, height: int, detail: str = "high") -> int:
    """Tokens an OpenAI vision model bills for one image (``detail="low"``: a flat 85)."""
    if detail == "low":
        return _cost.OPENAI_BASE_TOKENS
    return _cost.openai_image_tokens(width, height)


def claude_image_tokens(width: int, height: int) -> int:
    """Tokens Claude bills for one image (long edge scaled to at most 1568 px)."""
    return _cost.claude_image_tokens(width, height)


_DISPLAY = {
    "gpt-4o": "GPT-4o",
    "gpt-4o-mini": "GPT-4o-mini",
    "claude-sonnet-4": "Claude Sonnet 4",
    "claude-opus-4.5": "Claude Opus 4.5",
    "claude-haiku-4.5": "Claude Haiku 4.5",
}


@dataclass(frozen=True)
class ModelPricing:
    """List price of one vision model (``name`` is its display name)."""

    name: str
    input_per_million: float
    output_per_million: float
    image_token_calculator: Callable[[int, int], int]
    notes: str = ""


MODELS: dict[str, ModelPricing] = {
    key: ModelPricing(_DISPLAY.get(key, key), p.input_per_million, p.output_per_million,
                      p.image_tokens)
    for key, p in PRICES.items()
}
"""The price catalog's models by key, in the reference's shape."""


@dataclass
class FlowRunCostEstimate:
    """A flow-on-WAA run's estimated cost (the reference's fields)."""

    mode: str
    num_tasks: int
    model_name: str
    vm_hourly: float
    vm_hours: float
    vm_cost_usd: float
    fallback_rate: float
    paid_tasks: float
    agent_steps_per_paid_task: int
    token_cost_usd: float
    total_cost_usd: float
    cost_per_task_usd: float
    baseline_agent_cost_usd: float
    baseline_agent_steps_per_task: int

    def as_dict(self) -> dict[str, Any]:
        """The reference's rounded JSON form (its ``--json`` ``estimates`` rows)."""
        return {
            "mode": self.mode,
            "num_tasks": self.num_tasks,
            "model": self.model_name,
            "vm_hourly_usd": round(self.vm_hourly, 4),
            "vm_hours": round(self.vm_hours, 3),
            "vm_cost_usd": round(self.vm_cost_usd, 4),
            "fallback_rate": round(self.fallback_rate, 3),
            "paid_tasks": round(self.paid_tasks, 2),
            "agent_steps_per_paid_task": self.agent_steps_per_paid_task,
            "token_cost_usd": round(self.token_cost_usd, 4),
            "total_cost_usd": round(self.total_cost_usd, 4),
            "cost_per_task_usd": round(self.cost_per_task_usd, 5),
            "baseline_pure_agent_cost_usd": round(self.baseline_agent_cost_usd, 4),
            "baseline_agent_steps_per_task": self.baseline_agent_steps_per_task,
            "savings_vs_baseline_usd": round(
                self.baseline_agent_cost_usd - self.total_cost_usd, 4
            ),
        }


def tokens_per_step(
    model: ModelPricing,
    screen: tuple[int, int] = DEFAULT_SCREEN,
    text_tokens: int = DEFAULT_TEXT_TOKENS_PER_STEP,
    output_tokens: int = DEFAULT_OUTPUT_TOKENS_PER_STEP,
) -> tuple[int, int]:
    """(input, output) tokens of one agent step: a screenshot plus text in, a reply out."""
    return model.image_token_calculator(*screen) + text_tokens, output_tokens


def cost_per_step_usd(model: ModelPricing, **kw: Any) -> float:
    """List-price dollars of one agent step (``kw`` as :func:`tokens_per_step` takes them)."""
    tokens_in, tokens_out = tokens_per_step(model, **kw)
    return (tokens_in * model.input_per_million + tokens_out * model.output_per_million) / 1e6


def estimate_flow_waa_cost(
    num_tasks: int,
    mode: str = "replay",
    model_name: str = DEFAULT_MODEL,
    *,
    fallback_rate: float = 0.30,
    vm_hourly: float = DEFAULT_VM_HOURLY,
    screen: tuple[int, int] = DEFAULT_SCREEN,
    agent_steps_per_task: int = DEFAULT_AGENT_STEPS_PER_TASK,
    fallback_steps: int = DEFAULT_FALLBACK_STEPS,
    replay_minutes_per_task: float = DEFAULT_REPLAY_MINUTES_PER_TASK,
    agent_minutes_per_task: float = DEFAULT_AGENT_MINUTES_PER_TASK,
    overhead_hours: float = DEFAULT_OVERHEAD_HOURS,
    num_workers: int = 1,
) -> FlowRunCostEstimate:
    """What a flow run of ``num_tasks`` WAA tasks costs (see :func:`evals.results.cost.estimate`).

    The reference's arguments, with its defaults: ``mode`` ``"replay"`` or ``"hybrid"``,
    ``model_name`` a key of :data:`MODELS`, the fallback rate (clamped to 0..1, hybrid only),
    the VM's $/hour, the screen, the steps a from-scratch agent and a fallback take, the VM
    minutes per replayed and per agent task, the one-off start-up hours, and the workers.

    Raises:
        ValueError: an unknown mode or model, or an input out of range (unlike the reference,
            which prices zero or negative counts without complaint).
    """
    if mode not in (m.value for m in Mode):
        raise ValueError(f"unknown mode {mode!r}; expected 'replay' or 'hybrid'")
    if model_name not in MODELS:
        raise ValueError(f"unknown model {model_name!r}; choose from {sorted(MODELS)}")
    try:
        est = estimate(EstimateInput(
            n_tasks=num_tasks, mode=Mode(mode), model=model_name,
            fallback_rate=max(0.0, min(1.0, fallback_rate)), vm_hourly=vm_hourly,
            workers=num_workers, screen=screen, baseline_steps=agent_steps_per_task,
            fallback_steps=fallback_steps, replay_minutes=replay_minutes_per_task,
            agent_minutes=agent_minutes_per_task, startup_hours=overhead_hours,
        ))
    except InvalidInputError as exc:
        raise ValueError(str(exc)) from exc
    return FlowRunCostEstimate(
        mode=est.mode,
        num_tasks=est.n_tasks,
        model_name=MODELS[model_name].name,
        vm_hourly=est.vm_hourly,
        vm_hours=est.vm_hours,
        vm_cost_usd=est.vm_cost,
        fallback_rate=est.fallback_rate,
        paid_tasks=est.paid_tasks,
        agent_steps_per_paid_task=est.steps_per_paid_task,
        token_cost_usd=est.token_cost,
        total_cost_usd=est.total,
        cost_per_task_usd=est.per_task,
        baseline_agent_cost_usd=est.baseline,
        baseline_agent_steps_per_task=est.baseline_steps_per_task,
    )


BILLING_ABORT_AFTER = 2
_BILLING_MARKERS = ("billing", "quota", "insufficient", "payment", "credit", "rate limit",
                    "rate_limit", "401", "403", "429", "unauthorized", "authentication",
                    "invalid api key", "invalid_api_key", "permission")


def looks_like_billing_error(error: str) -> bool:
    """True when an error reads like an auth, billing or quota failure."""
    lowered = error.lower()
    return any(marker in lowered for marker in _BILLING_MARKERS)


@dataclass
class CostGuardConfig:
    """Hard caps for paid runs (list-price dollars and tokens)."""

    per_run_usd: float = 0.50
    total_usd: float = 5.00
    per_task_tokens: int = 60_000
    billing_abort_after: int = BILLING_ABORT_AFTER


class SpendLedger:
    """One budget across paid runs: a ceiling checked before each run, a per-task token cap,
    and a stop after repeated auth/billing errors."""

    def __init__(self, config: CostGuardConfig | None = None) -> None:
        self.config = config or CostGuardConfig()
        self.spent = 0.0
        self.tokens_used = 0
        self.aborted: str | None = None
        self._billing_errors = 0

    def can_start(self) -> bool:
        """True when another run's whole cap still fits under the ceiling."""
        return self.aborted is None and (
            self.spent + self.config.per_run_usd <= self.config.total_usd
        )

    def blocked_reason(self) -> str:
        """Why a run may not start now."""
        if self.aborted is not None:
            return self.aborted
        return (f"total budget ceiling: ${self.spent:.2f} of ${self.config.total_usd:.2f} "
                f"spent; the next run's ${self.config.per_run_usd:.2f} cap could exceed it")

    def token_cap_exceeded(self, tokens: int) -> bool:
        """True when one task's tokens pass the per-task cap."""
        return tokens > self.config.per_task_tokens

    def record(self, cost_usd: float, *, tokens: int = 0, error: str | None = None) -> None:
        """Count a finished run's cost, tokens and error."""
        self.spent += cost_usd
        self.tokens_used += tokens
        if error and looks_like_billing_error(error):
            self._billing_errors += 1
            if self._billing_errors >= self.config.billing_abort_after:
                self.aborted = (f"paid spending aborted after {self._billing_errors} "
                                f"consecutive auth/billing errors -- last error: {error}")
        else:
            self._billing_errors = 0

    def summary(self) -> dict[str, Any]:
        """The ledger as JSON-ready data (the reference's keys)."""
        return {
            "spent_usd": round(self.spent, 4),
            "tokens_used": self.tokens_used,
            "per_run_cap_usd": self.config.per_run_usd,
            "total_cap_usd": self.config.total_usd,
            "per_task_token_cap": self.config.per_task_tokens,
            "aborted": self.aborted,
        }


__all__ = [
    "BILLING_ABORT_AFTER",
    "DEFAULT_AGENT_MINUTES_PER_TASK",
    "DEFAULT_AGENT_STEPS_PER_TASK",
    "DEFAULT_FALLBACK_STEPS",
    "DEFAULT_MODEL",
    "DEFAULT_OUTPUT_TOKENS_PER_STEP",
    "DEFAULT_OVERHEAD_HOURS",
    "DEFAULT_REPLAY_MINUTES_PER_TASK",
    "DEFAULT_SCREEN",
    "DEFAULT_TEXT_TOKENS_PER_STEP",
    "DEFAULT_VM_HOURLY",
    "MODELS",
    "CostGuardConfig",
    "FlowRunCostEstimate",
    "ModelPricing",
    "SpendLedger",
    "claude_image_tokens",
    "cost_per_step_usd",
    "estimate_flow_waa_cost",
    "looks_like_billing_error",
    "openai_image_tokens",
    "tokens_per_step",
]
