"""The local suite's adapter to the audit: do the local checkers refuse runs that did not do
the task?

For each task with a reference solution, the reference is replayed once, then edited by one
operator at a time (:data:`~evals.verifier_audit.operators.OPERATORS`, here on action strings:
the local command language or pyautogui Python alike; only ``DONE``/``FAIL``/``WAIT`` are
special) and replayed again, each run from a fresh start (the worker's reset and the task's
setup), its end state read back (``GET /state``) before the task's checker, unmodified, grades
it (``POST /evaluate``). Here an operator edits each step it can, one at a time (see
:func:`mutants`). Each edited run gets its class from the engine's one verdict rule
(:func:`~evals.verifier_audit.runner.judge`) under the local report's names (:data:`CLASSES`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from evals.agents.base import EXECUTE, EXECUTE_WINDOWS, WAIT, parse_action
from evals.verifier_audit import runner
from evals.verifier_audit.operators import OPERATORS
from waa_client.errors import WaaError
from waa_client.scoring import ScoringClient
from waa_client.waa import WaaClient

LABELS = {runner.KILLED: "killed", runner.FALSE_ACCEPT: "false accept",
          runner.EQUIVALENT: "equivalent", runner.TOO_STRICT: "refused",
          runner.INVALID: "unconfirmed", runner.NOT_DELIVERED: "error", runner.REFUSED: "invalid"}
"""The engine's classes as the local report names them (see docs/results.md)."""
CLASSES = tuple(LABELS.values())
_FINAL = ("DONE", "FAIL")
# A string literal in double or single quotes (backslash escapes allowed), or a number.
_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|(?<![\w.])\d+(?:\.\d+)?(?![\w.])')


@dataclass(frozen=True)
class Mutant:
    """One edited reference solution."""

    operator: str
    detail: str
    actions: list[str]


@dataclass
class RunResult:
    """What one replay ended with."""

    last_action: str
    state: dict[str, Any] | None = None
    accepted: bool | None = None
    score: float | None = None
    reason: str = ""
    error: str | None = None


@dataclass
class AuditRow:
    """One edited run and its class."""

    task_id: str
    operator: str
    detail: str
    classification: str
    score: float | None = None
    reason: str = ""


@dataclass
class AuditReport:
    """Every row, and the per-operator counts."""

    rows: list[AuditRow] = field(default_factory=list)
    references: dict[str, str] = field(default_factory=dict)

    @property
    def false_accepts(self) -> list[AuditRow]:
        """The rows the checker wrongly accepted."""
        return [r for r in self.rows if r.classification == "false accept"]

    def table(self) -> dict[str, dict[str, int]]:
        """``{operator: {class: count}}`` over all rows."""
        return runner.tally(((r.operator, r.classification) for r in self.rows), OPERATORS,
                            CLASSES)

    def to_json(self) -> dict[str, Any]:
        """The ``--out`` document."""
        return {
            "operators": list(OPERATORS),
            "classes": list(CLASSES),
            "references": self.references,
            "rows": [asdict(r) for r in self.rows],
            "table": self.table(),
            "false_accepts": len(self.false_accepts),
        }


# -- operators ------------------------------------------------------------------------------


def _split(actions: Sequence[str]) -> tuple[list[str], str | None]:
    """The steps before the final answer, and the final answer (``None`` if there is none)."""
    steps = list(actions)
    final = None
    if steps and steps[-1].strip().upper() in _FINAL:
        final = steps.pop().strip().upper()
    return steps, final


def _close(steps: list[str], final: str | None) -> list[str]:
    return [*steps, final or "DONE"]


def mutate_literal(literal: str) -> str:
    """A different value of the same kind: a number plus one, a string with its text changed."""
    if literal[0] in "\"'":
        quote, body = literal[0], literal[1:-1]
        if re.fullmatch(r"-?\d+(?:\.\d+)?", body):
            return f"{quote}{_bump(body)}{quote}"
        return f"{quote}{body}_wrong{quote}" if body else f"{quote}wrong{quote}"
    return _bump(literal)


def _bump(number: str) -> str:
    return str(float(number) + 1) if "." in number else str(int(number) + 1)


def mutants(actions: Sequence[str]) -> dict[str, list[Mutant]]:
    """Every edit of ``actions``, by operator (an empty list: the operator does not apply):
    ``claim-only`` keeps the final answer only, ``omit`` leaves one step out, ``partial`` keeps
    the first half, ``wrong-value`` changes one literal in one step, ``extra`` plays the last
    step twice, ``extra-ni`` adds a ``WAIT`` (the run must still pass)."""
    steps, final = _split(actions)
    out: dict[str, list[Mutant]] = {op: [] for op in OPERATORS}
    real = [i for i, a in enumerate(steps) if a.strip().upper() not in (*_FINAL, "WAIT")]
    if real:
        out["claim-only"].append(Mutant("claim-only", "final answer only", _close([], final)))
    for i in real:
        edited = steps[:i] + steps[i + 1:]
        out["omit"].append(Mutant("omit", f"step {i} left out", _close(edited, final)))
    if len(real) >= 2:
        keep = real[(len(real) + 1) // 2 - 1] + 1
        out["partial"].append(Mutant("partial", f"first {keep} step(s)",
                                     _close(steps[:keep], final)))
    for i in real:
        for match in _LITERAL.finditer(steps[i]):
            changed = (steps[i][:match.start()] + mutate_literal(match.group())
                       + steps[i][match.end():])
            edited = [*steps[:i], changed, *steps[i + 1:]]
            out["wrong-value"].append(Mutant("wrong-value", f"step {i}: {match.group()}",
                                             _close(edited, final)))
    if real:
        i = real[-1]
        edited = [*steps[:i + 1], steps[i], *steps[i + 1:]]
        out["extra"].append(Mutant("extra", f"step {i} played twice", _close(edited, final)))
    out["extra-ni"].append(Mutant("extra-ni", "WAIT added", _close([*steps, "WAIT"], final)))
    return out


# -- replay ---------------------------------------------------------------------------------


def replay(waa: WaaClient, scoring: ScoringClient, task: Mapping[str, Any], task_id: str,
           actions: Sequence[str]) -> RunResult:
    """Play ``actions`` from a fresh start, read the end state back, then grade it."""
    last = ""
    try:
        waa.close_all()
        waa.clear_task_files()
        scoring.setup(list(task.get("config") or []))
        for text in actions:
            action = parse_action(text)
            if action.ends_task:
                last = action.to_string()
                break
            if action.type == WAIT:
                continue
            try:
                if action.type == EXECUTE and action.command:
                    waa.execute(action.command, shell=False)
                    last = action.command
                elif action.type == EXECUTE_WINDOWS and action.code:
                    waa.execute_windows(action.code)
                    last = action.code
            except WaaError as exc:
                if exc.is_infrastructure:
                    raise
                last = text  # the worker refused the step: the run goes on, as an agent's would
        state = scoring.state()
        verdict = scoring.evaluate(dict(task), last)
    except (WaaError, ValueError) as exc:
        return RunResult(last, error=f"{type(exc).__name__}: {exc}")
    return RunResult(last, state=state, accepted=bool(verdict.get("success")),
                     score=float(verdict.get("score", 0.0)), reason=str(verdict.get("reason", "")))


OUTCOME_KEYS = ("files", "folders", "settings", "clock", "clipboard")
"""The parts of the end state that are the task's outcome, with what the calculator shows.
Which windows are open and unsaved text are left out: an agent may reach the same outcome by
another path (a setting changed without opening the Settings window is still changed)."""


def outcome(state: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The outcome part of an end state (:data:`OUTCOME_KEYS` and what the calculator shows:
    its display and its history of calculations)."""
    if state is None:
        return None
    windows = state.get("windows") or []
    shown = sorted(f"{w.get('display')} {w.get('history') or []}" for w in windows
                   if isinstance(w, Mapping) and w.get("app") == "calc")
    return {**{key: state.get(key) for key in OUTCOME_KEYS}, "calculator": shown}


def classify(operator: str, reference: RunResult, run: RunResult) -> str:
    """The class of one edited run against the reference run (an ``extra-ni`` run counts as
    the reference's: it must pass)."""
    same = operator == "extra-ni" or (outcome(run.state) == outcome(reference.state)
                                      and run.last_action.upper() == reference.last_action.upper())
    return LABELS[runner.judge(delivered=run.error is None, passed=bool(run.accepted), same=same,
                               control_ok=reference.error is None and bool(reference.accepted))]


def audit(
    tasks: Mapping[str, Mapping[str, Any]],
    waa: WaaClient,
    scoring: ScoringClient,
    *,
    reference_key: str = "reference_solution",
    on_row: Callable[[AuditRow], None] | None = None,
) -> AuditReport:
    """Audit every task that has a reference solution; rows are reported as they come."""
    report = AuditReport()
    for task_id, task in tasks.items():
        actions = task.get(reference_key)
        if not (isinstance(actions, list) and actions and all(isinstance(a, str)
                                                                for a in actions)):
            continue
        reference = replay(waa, scoring, task, task_id, actions)
        report.references[task_id] = (
            "error" if reference.error else "accepted" if reference.accepted else "refused"
        )
        for operator, edits in mutants(actions).items():
            for row in _rows(task_id, operator, edits, reference, task, waa, scoring):
                report.rows.append(row)
                if on_row is not None:
                    on_row(row)
    return report


def _rows(task_id: str, operator: str, edits: list[Mutant], reference: RunResult,
          task: Mapping[str, Any], waa: WaaClient, scoring: ScoringClient) -> Iterator[AuditRow]:
    if not edits:
        yield AuditRow(task_id, operator, "does not apply", LABELS[runner.REFUSED])
        return
    for mutant in edits:
        run = replay(waa, scoring, task, task_id, mutant.actions)
        yield AuditRow(task_id, operator, mutant.detail, classify(operator, reference, run),
                       run.score, run.error or run.reason)


# -- printing -------------------------------------------------------------------------------


def format_row(row: AuditRow) -> str:
    """One per-task line: ``<task>  <operator>  <class>  <detail>``."""
    flag = "  <-- FALSE ACCEPT" if row.classification == "false accept" else ""
    return f"{row.task_id:<44}  {row.operator:<11}  {row.classification:<12}  " \
           f"{row.detail}{flag}"


def format_table(report: AuditReport) -> str:
    """The per-operator table: one row per operator, one column per class, then totals."""
    from evals.run.metrics import table as text_table

    table = report.table()
    rows = [[op, *(str(table[op][c]) for c in CLASSES), str(sum(table[op].values()))]
            for op in OPERATORS]
    totals = [sum(table[op][c] for op in OPERATORS) for c in CLASSES]
    rows.append(["all", *map(str, totals), str(sum(totals))])
    return text_table(["operator", *CLASSES, "total"], rows)
