"""The verifier audit: do the local checkers refuse runs that did not do the task?

For each task with a reference solution, the reference is replayed once, then edited by one
operator at a time and replayed again, each run from a fresh start (the worker's reset and the
task's setup), its end state read back (``GET /state``: files, windows, settings, clock) before
the task's checker, unmodified, grades it (``POST /evaluate``).

Operators (format-agnostic: a step is any action string, the local command language or
pyautogui Python alike; only ``DONE``/``FAIL``/``WAIT`` are special):

- ``claim-only``: nothing but the final answer (``DONE``/``FAIL``): claims without doing.
- ``omit``: one step left out (each step in turn).
- ``partial``: the first half of the steps, then the final answer.
- ``wrong-value``: one string or number literal inside one step changed (each literal in turn).
- ``extra``: one step played twice (the last step that changes something).
- ``extra-ni``: a non-interfering extra (a ``WAIT`` step) added: the run must still pass.

Each edited run is classified:

- ``killed``: the checker refused a run whose outcome (files, folders, settings, clock,
  clipboard: :data:`OUTCOME_KEYS`) or final answer differs from the reference's.
- ``false accept``: the checker accepted a run whose outcome differs (a checker bug).
- ``equivalent``: the edit left the end state and the answer as the reference's (no verdict
  expected), or an ``extra-ni`` run the checker accepted as it should.
- ``refused``: the checker refused a run equivalent to the reference (too strict).
- ``unconfirmed``: the unedited reference itself does not pass, so its edits prove nothing.
- ``error``: the replay or the checker failed (setup, worker or evaluation error).
- ``invalid``: the operator does not apply (nothing to omit, no literal to change...).

A false accept makes the audit fail (exit 1).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from evals.agents.base import EXECUTE, EXECUTE_WINDOWS, WAIT, parse_action
from waa_client.errors import WaaError
from waa_client.scoring import ScoringClient
from waa_client.waa import WaaClient

OPERATORS = ("claim-only", "omit", "partial", "wrong-value", "extra", "extra-ni")
CLASSES = ("killed", "false accept", "equivalent", "refused", "unconfirmed", "error", "invalid")
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
        counts: dict[str, Counter[str]] = {op: Counter() for op in OPERATORS}
        for row in self.rows:
            counts[row.operator][row.classification] += 1
        return {op: {c: counts[op][c] for c in CLASSES} for op in OPERATORS}

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


def _is_step(action: str) -> bool:
    return action.strip().upper() not in (*_FINAL, "WAIT")


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
    """Every edit of ``actions``, by operator (an empty list: the operator does not apply)."""
    steps, final = _split(actions)
    out: dict[str, list[Mutant]] = {op: [] for op in OPERATORS}
    real = [i for i, a in enumerate(steps) if _is_step(a)]
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
    """The class of one edited run against the reference run (see the module docstring)."""
    if run.error is not None:
        return "error"
    if reference.error is not None or not reference.accepted:
        return "unconfirmed"
    same = outcome(run.state) == outcome(reference.state) and (
        run.last_action.upper() == reference.last_action.upper()
    )
    if operator == "extra-ni" or same:
        return "equivalent" if run.accepted else "refused"
    return "false accept" if run.accepted else "killed"


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
        yield AuditRow(task_id, operator, "does not apply", "invalid")
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
    headers = ["operator", *CLASSES, "total"]
    table = report.table()
    rows = [[op, *(str(table[op][c]) for c in CLASSES), str(sum(table[op].values()))]
            for op in OPERATORS]
    totals = [sum(table[op][c] for op in OPERATORS) for c in CLASSES]
    rows.append(["all", *map(str, totals), str(sum(totals))])
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    lines = []
    for row in [headers, *rows]:
        cells = [row[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(row[1:], widths[1:],
                                                                        strict=True))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


REPORT_MARKER = b'{\n  "generator": "openadapt-evals audit-verifier"'
"""How an ``audit-verifier --out`` report begins: the mark by which the next ``--out`` knows the
file as one it may replace without ``--force`` (:func:`oa_vm.kit.safe_fs.write_out`)."""


def report_json(document: dict[str, Any]) -> str:
    """An ``audit-verifier`` report as written to ``--out``: its generator first, then the
    document (keys sorted)."""
    body = json.loads(json.dumps(document, sort_keys=True))
    return json.dumps({"generator": "openadapt-evals audit-verifier", **body}, indent=2) + "\n"


def write_report(report: AuditReport, path: str, *, force: bool = False) -> None:
    """Write the ``--out`` JSON document through the one ``--out`` writer."""
    from pathlib import Path

    from oa_vm.kit import safe_fs  # atomic, 0600, never through a symlink; the folder must exist

    safe_fs.write_out(Path(path), report_json(report.to_json()), marker=REPORT_MARKER,
                      force=force)
