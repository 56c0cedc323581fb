"""The audit: edit correct runs, deliver them, read the end state back, then grade.

Per task:

1. Ask the adapter for the reference run. A task whose reference writes nothing is skipped
   (no operator applies to it).
2. Apply every operator; one that cannot apply is recorded as refused, with its reason.
3. For ``extra-ni``, replay each candidate repeat ungraded and keep the newest whose end state
   differs from the plain replay's; when none does, ``extra-ni`` is refused.
4. Deliver the unedited reference (the control) and every edited run, each from a fresh start.
5. The control must pass and reproduce the reference's end state, else the task's edited runs
   prove nothing (``invalid``).
6. Give each edited run exactly one class of :data:`RUN_CLASSES`.

No step calls a model, and no verdict decides what is run next.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from evals.verifier_audit.adapters.base import BenchmarkAdapter, Delivery, Reference, Run
from evals.verifier_audit.effects import compare
from evals.verifier_audit.operators import (
    OPERATOR_CLASS,
    OPERATORS,
    Call,
    apply_operator,
    repeat_at,
    repeat_candidates,
)

FALSE_ACCEPT = "false-accept"
KILLED = "killed"
EQUIVALENT = "equivalent"
UNCONFIRMED = "unconfirmed"
REFUSED = "refused"
NOT_DELIVERED = "not-delivered"
INVALID = "invalid"

RUN_CLASSES: dict[str, str] = {
    FALSE_ACCEPT: "the verifier passed it and the end state differs from the reference run's",
    KILLED: "the verifier failed it",
    EQUIVALENT: "the verifier passed it and the end state is the reference run's: a right pass",
    UNCONFIRMED: "the verifier passed it and the end state differs, but a call raised during "
                 "delivery, so the difference may not come from the edit",
    REFUSED: "the operator had nothing to edit in this task",
    NOT_DELIVERED: "delivery or grading failed",
    INVALID: "the task's control failed, so its edited runs prove nothing",
}
"""Every edited run gets exactly one of these classes."""

TOO_STRICT = "too-strict"  # failed with the reference's end state: an adapter's report says killed

AUDITED = "audited"
NO_WRITE = "no-write"
NO_REFERENCE = "no-reference"
CONTROL_FAILED = "control-failed"


@dataclass
class RunResult:
    """One edited run and its class."""

    task_id: str
    operator: str
    run_class: str
    verdict: str | None = None
    shape: str | None = None
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    reason: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class TaskResult:
    """One task's audit: its status and its edited runs."""

    task_id: str
    status: str
    reason: str | None = None
    seconds: float = 0.0
    control_verdict: str | None = None
    runs: list[RunResult] = field(default_factory=list)

    @property
    def false_accepts(self) -> list[RunResult]:
        """The edited runs the verifier wrongly passed."""
        return [run for run in self.runs if run.run_class == FALSE_ACCEPT]


def _failure(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def judge(*, delivered: bool, control_ok: bool, passed: bool, same: bool,
          crashed: bool = False) -> str:
    """The one verdict rule of every audit (adapters and the local suite): an edited run's class
    from its delivery, its control's, its verdict, its end state and its raised calls."""
    if not delivered:
        return NOT_DELIVERED
    if not control_ok:
        return INVALID
    if same:
        return EQUIVALENT if passed else TOO_STRICT
    if not passed:
        return KILLED
    return UNCONFIRMED if crashed else FALSE_ACCEPT


def tally(runs: Iterable[tuple[str, str]], operators: Sequence[str],
          classes: Iterable[str]) -> dict[str, dict[str, int]]:
    """``{operator: {class: count}}`` over ``(operator, class)`` pairs, every cell present."""
    table = {op: dict.fromkeys(classes, 0) for op in operators}
    for operator, run_class in runs:
        table[operator][run_class] += 1
    return table


def _classify(operator: str, control: Delivery, mutant: Delivery, control_ok: bool,
              ignore: frozenset[str]) -> RunResult:
    """The class of one delivered edited run (task ID filled in by the caller)."""
    diff = compare(control.effect, mutant.effect, ignore)
    run_class = judge(delivered=not mutant.error and mutant.verdict in ("PASS", "FAIL"),
                      control_ok=control_ok, passed=mutant.verdict == "PASS",
                      same=diff.same, crashed=mutant.crashed_calls > control.crashed_calls)
    if run_class == NOT_DELIVERED:
        return RunResult("", operator, run_class, reason=mutant.error or "no verdict")
    if run_class == INVALID:
        return RunResult("", operator, run_class, mutant.verdict, reason="control failed")
    reason = (f"{mutant.crashed_calls} call(s) raised during delivery"
              if run_class == UNCONFIRMED else None)
    return RunResult("", operator, KILLED if run_class == TOO_STRICT else run_class,
                     mutant.verdict, diff.shape, diff.tables, reason=reason)


def _scan_repeats(adapter: BenchmarkAdapter, task_id: str, calls: list[Call],
                  ignore: frozenset[str]) -> tuple[int | None, str | None, dict[str, Any]]:
    """The newest repeat that changes the end state (no verifier call), or why there is none."""
    candidates = repeat_candidates(calls, adapter.policy)
    if not candidates:
        return None, "NO_WRITE", {}
    runs = [Run("scan-control", list(calls), grade=False)]
    runs += [Run(f"scan-repeat-{i}", repeat_at(calls, i), grade=False) for i in candidates]
    try:
        plain, *repeats = adapter.deliver(task_id, runs)
    except Exception as exc:  # a broken scan refuses extra-ni only, never the whole audit
        return None, "SCAN_FAILED", {"error": _failure(exc)}
    if plain.error:
        return None, "SCAN_FAILED", {"error": plain.error}
    tested: list[dict[str, Any]] = []
    for index, delivery in zip(candidates, repeats, strict=False):
        if delivery.error:
            tested.append({"index": index, "error": delivery.error})
            continue
        changes = not compare(plain.effect, delivery.effect, ignore).same
        tested.append({"index": index, "changes_state": changes})
        if changes:
            return index, None, {"tested": tested, "repeated": calls[index].get("url")}
    return None, "ALL_REPEATS_IDEMPOTENT", {"tested": tested}


def _reference(adapter: BenchmarkAdapter, task: TaskResult) -> Reference | None:
    """The task's reference run, or None with the task's status and reason set."""
    try:
        reference = adapter.reference(task.task_id)
    except Exception as exc:  # one task's failure must not end the audit
        task.status, task.reason = NO_REFERENCE, _failure(exc)
        return None
    if reference.error or not reference.calls:
        task.status = NO_REFERENCE
        task.reason = reference.error or "the reference run made no calls"
        return None
    if not any(adapter.policy.is_effectful(call) for call in reference.calls):
        task.status, task.reason = NO_WRITE, "the reference run writes nothing"
        return None
    return reference


def audit_task(adapter: BenchmarkAdapter, task_id: str, operators: Sequence[str] = OPERATORS,
               ignore_fields: Sequence[str] = ()) -> TaskResult:
    """Audit one task; ``ignore_fields`` adds to the adapter's own (``field``/``table.field``)."""
    started = time.monotonic()
    ignore = frozenset(adapter.ignore_fields) | frozenset(ignore_fields)
    task = TaskResult(task_id, AUDITED)
    reference = _reference(adapter, task)
    if reference is None:
        task.seconds = round(time.monotonic() - started, 1)
        return task
    calls = reference.calls
    runs = [Run("control", list(calls))]
    for operator in operators:
        if operator == "extra-ni":
            index, refusal, detail = _scan_repeats(adapter, task_id, calls, ignore)
            edited = None if index is None else repeat_at(calls, index)
        else:
            edit = apply_operator(calls, operator, adapter.policy)
            edited, refusal, detail = edit.calls, edit.refusal, edit.detail
        if edited is None:
            task.runs.append(RunResult(task_id, operator, REFUSED, reason=refusal, detail=detail))
            continue
        runs.append(Run(operator, edited))
        task.runs.append(RunResult(task_id, operator, NOT_DELIVERED, detail=detail))
    try:
        delivered = {d.run_id: d for d in adapter.deliver(task_id, runs)}
    except Exception as exc:  # every run of this task is then not delivered
        delivered = {run.run_id: Delivery(run.run_id, error=_failure(exc)) for run in runs}
    control = delivered.get("control") or Delivery("control", error="not returned")
    task.control_verdict = control.verdict
    control_ok = (not control.error and control.verdict == "PASS"
                  and compare(reference.effect, control.effect, ignore).same)
    if not control_ok:
        task.status = CONTROL_FAILED
        task.reason = (f"control not delivered: {control.error}" if control.error
                       else f"the verifier gave the unedited reference run {control.verdict}"
                       if control.verdict != "PASS"
                       else "replaying the reference run did not reproduce its end state")
    for position, pending in enumerate(task.runs):
        if pending.run_class == REFUSED:
            continue
        mutant = delivered.get(pending.operator) or Delivery(pending.operator,
                                                             error="not returned")
        result = _classify(pending.operator, control, mutant, control_ok, ignore)
        result.task_id = task_id
        grading = {k: mutant.detail[k] for k in ("num_tests", "num_failed")
                   if mutant.detail.get(k) is not None}
        result.detail = {**pending.detail, **grading}
        task.runs[position] = result
    task.seconds = round(time.monotonic() - started, 1)
    return task


@dataclass
class AuditResult:
    """A whole audit: what was audited, how, and each task's result."""

    benchmark: dict[str, Any]
    operators: list[str]
    ignore_fields: list[str]
    tasks: list[TaskResult]
    seconds: float

    @property
    def false_accepts(self) -> list[RunResult]:
        """Every edited run the verifier wrongly passed, over all tasks."""
        return [run for task in self.tasks for run in task.false_accepts]

    def by_operator(self) -> dict[str, dict[str, int]]:
        """Counts of each run class per operator."""
        return tally(((run.operator, run.run_class) for task in self.tasks for run in task.runs),
                     self.operators, RUN_CLASSES)

    def to_dict(self) -> dict[str, Any]:
        """The JSON report (the reference's ``openadapt-evals/verifier-audit/v1`` shape)."""
        return {
            "schema": "openadapt-evals/verifier-audit/v1",
            "benchmark": self.benchmark,
            "operators": [{"name": op, "class": OPERATOR_CLASS[op]} for op in self.operators],
            "ignore_fields": self.ignore_fields,
            "run_classes": RUN_CLASSES,
            "seconds": self.seconds,
            "summary": {
                "tasks": len(self.tasks),
                "tasks_audited": sum(1 for t in self.tasks if t.status == AUDITED),
                "tasks_with_false_accept": sum(1 for t in self.tasks if t.false_accepts),
                "false_accepts": len(self.false_accepts),
                "by_operator": self.by_operator(),
            },
            "tasks": [asdict(task) for task in self.tasks],
        }


def audit(adapter: BenchmarkAdapter, task_ids: Sequence[str],
          operators: Sequence[str] = OPERATORS, jobs: int = 1,
          progress: Callable[[int, int, TaskResult], None] | None = None,
          ignore_fields: Sequence[str] = ()) -> AuditResult:
    """Audit ``task_ids`` with ``operators``; ``jobs`` tasks at a time (each delivery still
    starts from a fresh state). Results keep the order of ``task_ids``.

    Raises:
        ValueError: an unknown operator.
    """
    unknown = [op for op in operators if op not in OPERATORS]
    if unknown:
        raise ValueError(f"unknown operator(s): {', '.join(unknown)}")
    started = time.monotonic()
    results: list[TaskResult | None] = [None] * len(task_ids)
    lock = threading.Lock()
    done = 0

    def one(position: int) -> None:
        nonlocal done
        result = audit_task(adapter, task_ids[position], operators, ignore_fields)
        with lock:
            results[position] = result
            done += 1
            if progress is not None:
                progress(done, len(task_ids), result)

    if jobs <= 1:
        for position in range(len(task_ids)):
            one(position)
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(one, range(len(task_ids))))
    return AuditResult(
        benchmark=adapter.describe(),
        operators=list(operators),
        ignore_fields=sorted(set(adapter.ignore_fields) | set(ignore_fields)),
        tasks=[r for r in results if r is not None],
        seconds=round(time.monotonic() - started, 1),
    )
