"""WAA's scoring rules, shared by the simulated worker and the cloud worker's scoring server.

This module only combines: it decides what a task scores given a way to fetch values (getters)
and a way to compare them (metrics). Where the values come from (a sandboxed simulated desktop,
or WAA's own getters inside the container) is the caller's business. It is shipped as a file onto
cloud hosts and runs on the WAA container's Python (3.9), so it uses the standard library only
and nothing newer than 3.9.

The rules are those of WAA's ``DesktopEnv._set_task_info`` and ``DesktopEnv.evaluate``
(``desktop_env/envs/desktop_env.py``), proven equal by differential tests that run WAA's own
code beside this module (``tests/unit/worker/test_scoring_differential.py``):

- ``func == "infeasible"``: 1 if the agent's last action is exactly ``FAIL``, else 0.
- A feasible task whose last action is exactly ``FAIL`` scores 0 without checking.
- One metric: a *result* getter that raises scores 0; the metric's value is the score when it
  is a number or a bool, and 0 when it is anything else (``None``, a string).
- Several metrics: ``conj == "and"`` (the default) scores 0 as soon as one metric is 0, else the
  **mean**; ``"or"`` scores 1 as soon as one is 1, else the maximum. A result getter raising
  ``FileNotFoundError`` under ``"and"`` scores 0.

Wherever WAA's code would raise instead (and so drop the task from its results), this module
raises :class:`Unscorable`: the caller records an ``evaluation`` error, never a 0 and never a 1.
That covers an expected getter that raises or returns ``None`` for a metric that needs it, a
list getter raising anything but ``FileNotFoundError``, ``"or"`` whose first getter finds no
file, a metric list without ``expected``, list options given as one object, a metric that raises,
a non-numeric value inside a metric list, and unknown metric or getter names. The one deliberate
difference (``"or"`` with a *later* getter finding no file: WAA reuses the previous getter's
value, this module answers :class:`Unscorable`) is documented in ``docs/results.md``.

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

MetricLookup = Callable[[str], Callable[..., Any]]
"""Returns the metric function for a name; raises ``KeyError`` for an unknown metric."""

GetterCheck = Callable[[str], bool]
"""True if a getter type (``"vm_file"``) exists."""


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


class Unscorable(EvaluatorConfigError):
    """WAA's own ``evaluate`` would raise here and drop the task: an evaluation error."""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float))  # bool is an int, as WAA counts it


def _length(value: Any, what: str) -> int:
    try:
        return len(value)
    except TypeError:
        raise Unscorable(f"{what} has no length ({type(value).__name__})") from None


def _getter_count(evaluator: Mapping[str, Any], field: str, as_list: bool, count: int,
                  getter_exists: GetterCheck | None) -> int | None:
    """Check ``result``/``expected`` as WAA's ``_set_task_info`` does.

    Returns how many getters WAA lines up (``None`` when it holds one function, not a list).
    """
    if field not in evaluator or _length(evaluator[field], f"evaluator.{field}") == 0:
        return count if as_list else None
    config = evaluator[field]
    entries = config if isinstance(config, list) else [config]
    for entry in entries:
        if field == "expected" and isinstance(config, list) and not entry:
            continue
        if not isinstance(entry, Mapping) or "type" not in entry:
            raise Unscorable(f"evaluator.{field} entry {entry!r} has no getter 'type'")
        kind = entry["type"]
        if getter_exists is not None and not (isinstance(kind, str) and getter_exists(kind)):
            raise Unscorable(f"unknown getter type {kind!r} in evaluator.{field}")
    return len(config) if isinstance(config, list) else None


def _check_task(
    evaluator: Mapping[str, Any], metric: MetricLookup, getter_exists: GetterCheck | None
) -> list[Callable[..., Any]]:
    """WAA's ``_set_task_info``: every name must resolve and list lengths must agree."""
    if not isinstance(evaluator, Mapping) or "func" not in evaluator:
        raise Unscorable("the evaluator has no 'func'")
    func = evaluator["func"]
    as_list = isinstance(func, list)
    names = func if as_list else [func]
    if not names or not all(isinstance(n, str) and n for n in names):
        raise EvaluatorConfigError("evaluator.func must be a metric name or a list of them")
    fns: list[Callable[..., Any]] = []
    for name in names:
        if name == INFEASIBLE and not as_list:
            fns.append(lambda *args, **kwargs: 0)  # WAA's metrics.infeasible, never called
            continue
        try:
            fns.append(metric(name))
        except KeyError:
            raise Unscorable(f"unknown metric {name!r}") from None
    count = len(names)
    results = _getter_count(evaluator, "result", as_list, count, getter_exists)
    expected = _getter_count(evaluator, "expected", as_list, count, getter_exists)
    if as_list:
        options = evaluator.get("options", [{}] * count)
        lengths = {count, results, expected, _length(options, "evaluator.options")}
        if None in lengths:
            raise Unscorable("with a metric list, result and expected must be lists")
        if len(lengths) != 1:
            raise Unscorable(f"result, expected and options must each list {count} entries, "
                             "one per metric")
    return fns


def _call_metric(fn: Callable[..., Any], name: str, result: Any, expected: Any,
                 options: Any) -> Any:
    """Call a metric as WAA does: ``expected`` is passed only when it is not ``None``."""
    if not isinstance(options, Mapping):
        raise Unscorable(f"{name}: options must be an object, not {type(options).__name__}")
    try:
        if expected is not None:
            return fn(result, expected, **options)
        return fn(result, **options)
    except Unscorable:
        raise
    except Exception as exc:
        raise Unscorable(f"metric {name} raised {type(exc).__name__}: {exc}") from exc


def evaluate(
    evaluator: Mapping[str, Any],
    last_action: str | None,
    *,
    get_value: Getter,
    metric: MetricLookup,
    getter_exists: GetterCheck | None = None,
) -> Verdict:
    """Score a task from its ``evaluator`` block and the agent's last action.

    Args:
        evaluator: the task's ``evaluator`` (``func``, ``conj``, ``result``, ``expected``,
            ``options``); ``postconfig`` must already have run.
        last_action: the agent's last action (``"DONE"``, ``"FAIL"``, or anything else);
            compared exactly, as WAA compares its action history.
        get_value: resolves a getter config to a value; may raise.
        metric: resolves a metric name to a callable ``metric(result, expected?, **options)``.
        getter_exists: says whether a getter type exists (WAA checks them all before scoring);
            without it, unknown types are found only when fetched.

    Raises:
        Unscorable: WAA's ``evaluate`` would raise (see the module docstring).
        EvaluatorConfigError: the evaluator block is malformed.
    """
    fns = _check_task(evaluator, metric, getter_exists)
    func = evaluator["func"]
    action = last_action or ""
    if func == INFEASIBLE:
        if action == FAIL:
            return Verdict(1.0, True, "infeasible task, agent answered FAIL")
        return Verdict(0.0, False, f"infeasible task, last action was {action or 'none'!r}, "
                                   "not FAIL")
    if action == FAIL:
        return Verdict(0.0, False, "feasible task, agent answered FAIL")
    if isinstance(func, list):
        return _evaluate_list(evaluator, func, fns, get_value)
    return _evaluate_one(evaluator, func, fns[0], get_value)


def _evaluate_one(evaluator: Mapping[str, Any], name: str, fn: Callable[..., Any],
                  get_value: Getter) -> Verdict:
    try:
        result_cfg = evaluator["result"]
        if not isinstance(result_cfg, Mapping) or not result_cfg:
            raise TypeError("no result getter object")
        result = get_value(result_cfg)
    except Unscorable:
        raise
    except Exception as exc:  # WAA: any error of the result getter scores 0
        return Verdict(0.0, False, f"{name}: result getter failed ({type(exc).__name__}: {exc})")
    expected = None
    if "expected" in evaluator:
        expected_cfg = evaluator["expected"]
        if not isinstance(expected_cfg, Mapping) or not expected_cfg:
            raise Unscorable("evaluator.expected is present but is not a getter object")
        expected = _expected_value(name, expected_cfg, get_value)
    options = evaluator.get("options", {})
    value = _call_metric(fn, name, result, expected, options)
    if not _is_number(value):
        return Verdict(0.0, False, f"{name} returned {type(value).__name__}, not a number "
                                   "(WAA scores 0)")
    score = float(value)
    return Verdict(score, score >= 1.0, f"{name}={score:g}")


def _expected_value(name: str, cfg: Mapping[str, Any], get_value: Getter) -> Any:
    try:
        return get_value(cfg)
    except Unscorable:
        raise
    except Exception as exc:  # WAA does not catch the expected getter's errors
        raise Unscorable(
            f"{name}: expected getter failed ({type(exc).__name__}: {exc})"
        ) from exc


def _item(config: Any, field: str, index: int) -> Any:
    try:
        return config[field][index]
    except (KeyError, IndexError, TypeError):
        raise Unscorable(f"a metric list needs evaluator.{field}[{index}]") from None


def _evaluate_list(evaluator: Mapping[str, Any], names: list[str],
                   fns: list[Callable[..., Any]], get_value: Getter) -> Verdict:
    conj = evaluator.get("conj", "and")
    options: Any = evaluator.get("options", [{}] * len(names))
    values: list[Any] = []
    notes: list[str] = []
    for index, name in enumerate(names):
        fn = fns[index]
        try:
            result = get_value(_item(evaluator, "result", index))
        except FileNotFoundError as exc:
            if conj == "and":
                notes.append(f"{name}: no file ({exc})")
                return Verdict(0.0, False, "; ".join(notes))
            # WAA goes on with whatever value the previous getter left (none for the first).
            raise Unscorable(f"{name}: result getter found no file under {conj!r} ({exc})") from exc
        except Unscorable:
            raise
        except Exception as exc:  # WAA catches only FileNotFoundError here
            raise Unscorable(
                f"{name}: result getter failed ({type(exc).__name__}: {exc})"
            ) from exc
        expected_cfg = _item(evaluator, "expected", index)
        expected = _expected_value(name, expected_cfg, get_value) if expected_cfg else None
        if not isinstance(options, list):
            raise Unscorable("with a metric list, evaluator.options must be a list")
        value = _call_metric(fn, name, result, expected, options[index] or {})
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise Unscorable(f"{name} returned {value!r}, not a number") from None
        notes.append(f"{name}={number:g}")
        if conj == "and" and number == 0.0:
            return Verdict(0.0, False, "; ".join(notes))
        if conj == "or" and number == 1.0:
            return Verdict(1.0, True, "; ".join(notes))
        values.append(value)
    if not all(_is_number(v) for v in values):
        raise Unscorable("a metric of the list returned a string: WAA cannot combine it")
    score = float(sum(values) / len(values)) if conj == "and" else float(max(values))
    return Verdict(score, score >= 1.0, "; ".join(notes))
