"""The table across runs: one row per run folder under a results folder (``openadapt-evals runs``).

A row says what a reader needs to set runs side by side: the run's name and start, the agent with
its arguments and model, how many tasks and trials, the success rate with its interval, the mean
score, the cost, the kind of pool (``local``, ``aws``, ``azure``), and whether the agent saw the
answers (an oracle's 100% is a check of the harness, never a benchmark result). The numbers are
the run's own summary (:func:`evals.run.metrics.compute_summary`), computed from its records, so a
run still going or cut short is shown as it stands.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from evals.errors import InvalidRunInputError
from evals.results.records import RunMetadata
from evals.results.run_reader import list_runs, read_metadata, read_records
from evals.run.manifest import read_manifest
from evals.run.metrics import summarize, table
from oa_vm.kit.validate import folder_problem


@dataclass(frozen=True)
class RunRow:
    """One run in the table across runs."""

    name: str
    started_at: str
    status: str
    agent: str
    arguments: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    tasks: int = 0
    trials: int = 1
    attempts: int = 0
    success_rate: float | None = None
    rate_low: float | None = None
    rate_high: float | None = None
    mean_score: float | None = None
    cost_usd: float = 0.0
    pool_kind: str = ""
    saw_answers: bool = False
    unreadable: str | None = None
    """Why the run's records could not be summarized (the row keeps its name and date)."""

    def to_json(self) -> dict[str, Any]:
        """The row as ``--json`` prints it."""
        return asdict(self)


def run_row(run_dir: Path) -> RunRow:
    """The row of one run folder (one with a ``metadata.json``)."""
    manifest: dict[str, Any] = {}
    meta: RunMetadata = {}  # what can be read of it
    try:
        meta = read_metadata(run_dir)
        manifest = read_manifest(run_dir) or {}
        summary = summarize(meta, read_records(run_dir), run=run_dir.name)
    except InvalidRunInputError as exc:
        return RunRow(name=run_dir.name, started_at=str(meta.get("started_at") or ""),
                      status=str(meta.get("status") or ""), agent=str(meta.get("agent") or ""),
                      unreadable=str(exc))
    agent = manifest.get("agent") or {}
    interval = summary.get("success_rate_ci") or {}
    cloud = meta.get("cloud") or ", ".join(
        sorted({str(p.get("cloud")) for p in manifest.get("pools") or [] if p.get("cloud")}))
    task_ids = meta.get("task_ids") or []
    return RunRow(
        name=run_dir.name, started_at=str(meta.get("started_at") or ""),
        status=str(summary.get("status") or meta.get("status") or ""),
        agent=str(meta.get("agent") or agent.get("name") or ""),
        arguments=dict(agent.get("arguments") or {}), model=agent.get("model"),
        tasks=len(task_ids) if task_ids else int(summary.get("attempts") or 0),
        trials=int(meta.get("trials") or 1), attempts=int(summary.get("attempts") or 0),
        success_rate=summary.get("success_rate"), rate_low=interval.get("low"),
        rate_high=interval.get("high"), mean_score=summary.get("avg_score"),
        cost_usd=float((summary.get("cost") or {}).get("total_usd") or 0.0),
        pool_kind=str(cloud or ""),
        saw_answers=bool(summary.get("answer_visible_agents") or agent.get("sees_answers")),
    )


def list_run_rows(
    root: Path, *, agent: str | None = None, since: str | None = None,
    hide_answers: bool = False,
) -> list[RunRow]:
    """The rows of every run under ``root``, newest first, filtered.

    Args:
        root: The results folder.
        agent: Only runs of this agent (its name as given to ``--agent``).
        since: Only runs started on or after this ISO date or time (``2026-01-31``).
        hide_answers: Leave out runs whose agent saw the answers (oracles).

    Raises:
        InvalidRunInputError: ``root`` is a file, or ``since`` is not an ISO date or time
            (compared as text, ``abc`` or ``0`` would quietly keep no run, or every run).
    """
    problem = folder_problem("--results-dir", root)
    if problem is not None:
        raise InvalidRunInputError(problem)
    if since is not None:
        try:
            datetime.fromisoformat(since)
        except ValueError:
            raise InvalidRunInputError(
                f"--since {since!r} is not a date; give one as 2026-01-31 (or a time, "
                "2026-01-31T09:00)") from None
    rows = [run_row(root / name) for name in list_runs(root)]
    if agent is not None:
        rows = [r for r in rows if r.agent == agent]
    if since is not None:
        rows = [r for r in rows if r.started_at >= since]
    if hide_answers:
        rows = [r for r in rows if not r.saw_answers]
    return sorted(rows, key=lambda r: (r.started_at, r.name), reverse=True)


def _arguments(arguments: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(arguments.items())) or "-"


def _rate(row: RunRow) -> str:
    if row.success_rate is None:
        return "-"
    text = f"{100 * row.success_rate:.1f}%"
    if row.rate_low is not None and row.rate_high is not None:
        text += f" [{100 * row.rate_low:.0f}-{100 * row.rate_high:.0f}%]"
    return text


ANSWERS_MARK = "SAW ANSWERS"
UNFINISHED_MARK = "NOT FINISHED"
_UNFINISHED = {"running": "running, or killed", "interrupted": "interrupted",
               "budget_stopped": "stopped at its cost cap"}
"""The statuses of a run that did not go to its end, as the note under the table says them."""


def _unfinished(row: RunRow) -> str | None:
    """``live (interrupted, 3 of 24 attempts)`` for a run that did not go to its end: its row
    shows the rate of the attempts made, which the table alone would pass off as the run's."""
    said = _UNFINISHED.get(row.status)
    if said is None or row.unreadable:
        return None
    return f"{row.name} ({said}, {row.attempts} of {row.tasks * row.trials} attempts)"


def format_runs(rows: list[RunRow]) -> str:
    """The table as ``openadapt-evals runs`` prints it; a run whose agent saw the answers is
    marked in its own column and named again under the table, and a run that did not go to its
    end is named under it with how far it got."""
    if not rows:
        return "no runs"
    headers = ["run", "started (UTC)", "agent", "arguments", "tasks", "trials", "rate [95% CI]",
               "mean score", "cost", "pool", "answers"]
    body = []
    for row in rows:
        agent = row.agent + (f" ({row.model})" if row.model else "")
        body.append([
            row.name, row.started_at[:16].replace("T", " "), agent, _arguments(row.arguments),
            str(row.tasks), str(row.trials), _rate(row) if not row.unreadable else "unreadable",
            "-" if row.mean_score is None else f"{row.mean_score:.3f}", f"${row.cost_usd:.2f}",
            row.pool_kind or "-", ANSWERS_MARK if row.saw_answers else "",
        ])
    lines = [table(headers, body, align="llllrrrrrll")]
    oracles = [r.name for r in rows if r.saw_answers]
    if oracles:
        lines.append(f"\n{ANSWERS_MARK}: the agent was given the tasks' answers in "
                     f"{', '.join(oracles)}; their rates check the harness and are no "
                     "benchmark result.")
    unfinished = [said for said in map(_unfinished, rows) if said]
    if unfinished:
        lines.append(f"\n{UNFINISHED_MARK}: {', '.join(unfinished)}; their rates count only "
                     "the attempts made (--resume --run-name RUN continues one).")
    lines += [f"{row.name}: {row.unreadable}" for row in rows if row.unreadable]
    return "\n".join(lines)
