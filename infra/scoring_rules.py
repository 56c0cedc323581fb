"""WAA's scoring rules, shared by the simulated worker and the cloud worker's scoring server.

This module only combines: it decides what a task scores given a way to fetch values (getters)
and a way to compare them (metrics). Where the values come from (a sandboxed simulated desktop,
or WAA's own getters inside the container) is the caller's business. It is shipped as a file onto
cloud hosts, so it depends on the standard library only.

The rules (WAA_PROTOCOL section 5, as WAA's ``desktop_env`` applies them):

- ``func == "infeasible"``: 1 if the agent's last action was ``FAIL``, else 0.
- A feasible task whose last action was ``FAIL`` scores 0 without checking.
- One metric: a getter that raises gives 0; otherwise the metric's value.
- Several metrics: ``conj == "and"`` (the default) gives 0 as soon as one is 0, else the mean;
  ``"or"`` gives 1 as soon as one is 1, else the maximum.

Postconfig steps are run by the caller before :func:`evaluate` (they need the desktop).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

FAIL = "FAIL"
INFEASIBLE = "infeasible"

Getter = Callable[[Mapping[str, Any]], Any]
"""Fetches a value described by a getter config (``{"type": "vm_file", ...}``)."""

MetricLookup = Callable[[str], Callable[..., float]]
"""Returns the metric function for a name; raises ``KeyError`` for an unknown metric."""


@dataclass(frozen=True)
class Verdict:
    """The checker's decision for one task."""

    score: float
    success: bool
    reason: str

    def to_json(self) -> dict[str, Any]:
        """``{"score", "success", "reason"}`` as the scoring server answers ``/evaluate``."""
        return {"score": self.score, "success": self.success, "reason": self.reason}


class EvaluatorConfigError(ValueError):
    """The task's ``evaluator`` block cannot be read (a task bug, not an agent failure)."""


def _as_list(value: Any, count: int, field: str) -> list[Any]:
    """Align a per-metric field with the metric list (WAA writes one value or one per metric)."""
    if count == 1:
        return [value[0] if isinstance(value, list) and len(value) == 1 else value]
    if value is None:
        return [None] * count
    if not isinstance(value, list) or len(value) != count:
        raise EvaluatorConfigError(f"evaluator.{field} must be a list of {count} entries")
    return list(value)


def evaluate(
    evaluator: Mapping[str, Any],
    last_action: str | None,
    *,
    get_value: Getter,
    metric: MetricLookup,
) -> Verdict:
    """Score a task from its ``evaluator`` block and the agent's last action.

    Args:
        evaluator: the task's ``evaluator`` (``func``, ``conj``, ``result``, ``expected``,
            ``options``); ``postconfig`` must already have run.
        last_action: the agent's last action (``"DONE"``, ``"FAIL"``, or anything else).
        get_value: resolves a getter config to a value; may raise.
        metric: resolves a metric name to a callable ``metric(result, expected?, **options)``.

    Raises:
        EvaluatorConfigError: the evaluator block is malformed or names an unknown metric.
    """
    func = evaluator.get("func")
    action = (last_action or "").strip().upper()
    if func == INFEASIBLE:
        if action == FAIL:
            return Verdict(1.0, True, "infeasible task, agent answered FAIL")
        return Verdict(0.0, False, f"infeasible task, last action was {action or 'none'}, not FAIL")
    if action == FAIL:
        return Verdict(0.0, False, "feasible task, agent answered FAIL")

    names = func if isinstance(func, list) else [func]
    if not names or not all(isinstance(n, str) and n for n in names):
        raise EvaluatorConfigError("evaluator.func must be a metric name or a list of them")
    count = len(names)
    results = _as_list(evaluator.get("result"), count, "result")
    expected = _as_list(evaluator.get("expected"), count, "expected")
    options = _as_list(evaluator.get("options"), count, "options")
    conj = evaluator.get("conj", "and")
    if conj not in ("and", "or"):
        raise EvaluatorConfigError(f"evaluator.conj must be 'and' or 'or', not {conj!r}")

    scores: list[float] = []
    notes: list[str] = []
    for name, result_cfg, expected_cfg, opts in zip(names, results, expected, options, strict=True):
        try:
            fn = metric(name)
        except KeyError:
            raise EvaluatorConfigError(f"unknown metric {name!r}") from None
        try:
            result_value = get_value(result_cfg) if result_cfg else None
            expected_value = get_value(expected_cfg) if expected_cfg else None
        except Exception as exc:  # WAA: a getter that raises scores 0
            scores.append(0.0)
            notes.append(f"{name}: getter failed ({exc})")
        else:
            kwargs = dict(opts or {})
            value = (
                fn(result_value, expected_value, **kwargs)
                if expected_cfg
                else fn(result_value, **kwargs)
            )
            scores.append(float(value))
            notes.append(f"{name}={float(value):g}")
        if conj == "and" and scores[-1] == 0.0:
            return Verdict(0.0, False, "; ".join(notes))
        if conj == "or" and scores[-1] == 1.0:
            return Verdict(1.0, True, "; ".join(notes))

    score = sum(scores) / len(scores) if conj == "and" else max(scores)
    return Verdict(score, score >= 1.0, "; ".join(notes))
