"""The audit as text (the false accepts, then one row per operator) and as ``--out`` JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evals.verifier_audit.effects import summarize
from evals.verifier_audit.operators import OPERATOR_CLASS
from evals.verifier_audit.runner import (
    AUDITED,
    EQUIVALENT,
    FALSE_ACCEPT,
    INVALID,
    KILLED,
    NOT_DELIVERED,
    REFUSED,
    UNCONFIRMED,
    AuditResult,
    TaskResult,
)
from oa_vm.kit import safe_fs

COLUMNS = (("killed", KILLED), ("false accept", FALSE_ACCEPT), ("equivalent", EQUIVALENT),
           ("unconfirmed", UNCONFIRMED), ("refused", REFUSED), ("error", NOT_DELIVERED),
           ("invalid", INVALID))


def _table(rows: list[list[str]]) -> list[str]:
    """Rows as aligned text, the first as a header; numbers right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines: list[str] = []
    for n, row in enumerate(rows):
        cells = [cell.rjust(w) if i >= 2 and cell.isdigit() else cell.ljust(w)
                 for i, (cell, w) in enumerate(zip(row, widths, strict=True))]
        lines.append("  " + "  ".join(cells).rstrip())
        if n == 0:
            lines.append("  " + "  ".join("-" * w for w in widths))
    return lines


def task_line(done: int, total: int, task: TaskResult) -> str:
    """One progress line per audited task."""
    if task.status != AUDITED:
        note = f"{task.status}: {task.reason}"
    elif task.false_accepts:
        note = f"FALSE ACCEPT ({', '.join(r.operator for r in task.false_accepts)})"
    else:
        note = "no false accept"
    return f"[{done}/{total}] {task.task_id}: {note}"


def render(result: AuditResult) -> str:
    """The per-task table of false accepts and the per-operator table (no clock figures, so two
    audits of the same benchmark print the same text)."""
    name = result.benchmark.get("name", "benchmark")
    audited = sum(1 for t in result.tasks if t.status == AUDITED)
    lines = [f"Verifier audit: {name}, {len(result.tasks)} task(s), {audited} audited", ""]
    accepts = result.false_accepts
    if accepts:
        lines.append(f"The verifier passed {len(accepts)} edited run(s) whose end state is wrong:")
        rows = [["task", "operator", "end state compared with the reference run"]]
        rows += [[r.task_id, r.operator, summarize(r.tables)] for r in accepts]
        lines += _table(rows)
    else:
        lines.append("No confirmed false accepts in these tasks.")
    lines += ["", "Per operator (each edited run counted once; operators are not pooled):"]
    counts = result.by_operator()
    rows = [["operator", "class", "runs", *[label for label, _ in COLUMNS]]]
    for operator in result.operators:
        c = counts[operator]
        runs = sum(c[key] for _, key in COLUMNS if key != REFUSED)
        rows.append([operator, OPERATOR_CLASS[operator], str(runs),
                     *[str(c[key]) for _, key in COLUMNS]])
    lines += _table(rows)
    skipped = [t for t in result.tasks if t.status != AUDITED]
    if skipped:
        lines += ["", f"{len(skipped)} task(s) not audited:"]
        lines += [f"  {t.task_id}: {t.status} ({t.reason})" for t in skipped]
    lines += ["",
              "false accept: the verifier passed the edited run, and the end state (read back",
              "  before grading) differs from the reference run's.",
              "equivalent: the edit left the end state as the reference's, so the pass is right."]
    return "\n".join(lines)


REPORT_MARKER = b'{\n  "generator": "openadapt-evals audit-verifier"'
"""How an ``audit-verifier --out`` report begins: the mark by which the next ``--out`` knows the
file as one it may replace without ``--force`` (:func:`oa_vm.kit.safe_fs.write_out`)."""


def write_report(document: dict[str, Any], path: Path, *, force: bool = False) -> None:
    """Write an ``--out`` report (adapters' and the local suite's) through the one ``--out``
    writer: its generator first, then the document (keys sorted)."""
    body = json.loads(json.dumps(document, sort_keys=True))
    text = json.dumps({"generator": "openadapt-evals audit-verifier", **body}, indent=2) + "\n"
    safe_fs.write_out(path, text, marker=REPORT_MARKER, force=force)
