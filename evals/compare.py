"""Compare two runs task by task: what got better, what got worse, what broke.

Only tasks both runs recorded are compared, and both runs are summarized over those tasks alone,
so a run that covered more tasks does not look better or worse for it; tasks only one run has are
listed apart.

How a task changed from run A to run B:

- both are outcomes: ``improved`` / ``regressed`` when the checker's score went up / down, else
  ``same``;
- otherwise (an error or a task not run on either side): ``same`` when both ended alike (status
  and error type), else ``changed`` (e.g. ``error -> success``), since an error is not a score.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from evals.errors import InvalidRunInputError
from evals.metrics import (
    TaskOutcome,
    aggregate,
    fmt_num,
    fmt_rate,
    read_executions,
    read_metadata,
    table,
)

CHANGES = ("improved", "regressed", "changed", "same")


@dataclass(frozen=True)
class TaskPair:
    """One task as each run ended it."""

    a: TaskOutcome
    b: TaskOutcome

    @property
    def task_id(self) -> str:
        """The task's index ID."""
        return self.a.task_id

    @property
    def domain(self) -> str:
        """The task's domain (run B's record wins if they disagree)."""
        return self.b.domain or self.a.domain

    @property
    def change(self) -> str:
        """``improved``, ``regressed``, ``changed`` or ``same`` (see the module docstring)."""
        a, b = self.a, self.b
        if a.is_outcome and b.is_outcome:
            score_a, score_b = a.score or 0.0, b.score or 0.0
            if score_b > score_a:
                return "improved"
            if score_b < score_a:
                return "regressed"
            return "same"
        if (a.status, a.error_type) == (b.status, b.error_type):
            return "same"
        return "changed"


def _status_text(item: TaskOutcome) -> str:
    if item.error_type and not item.is_outcome:
        return f"{item.status} ({item.error_type})"
    return item.status


@dataclass
class Comparison:
    """Two runs over the tasks they share."""

    run_a: str
    run_b: str
    path_a: Path
    path_b: Path
    pairs: list[TaskPair]
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)

    def summary(self, side: str) -> dict[str, Any]:
        """Counts and rates of run ``"a"`` or ``"b"`` over the shared tasks only."""
        return aggregate([pair.a if side == "a" else pair.b for pair in self.pairs])

    def changes(self) -> dict[str, int]:
        """How many shared tasks improved, regressed, changed or stayed the same."""
        counts = dict.fromkeys(CHANGES, 0)
        for pair in self.pairs:
            counts[pair.change] += 1
        return counts

    def to_json(self) -> dict[str, Any]:
        """The ``compare --json`` document."""

        def side(item: TaskOutcome) -> dict[str, Any]:
            return {"status": item.status, "score": item.score, "steps": item.steps,
                    "error_type": item.error_type}

        summaries = {}
        for key in ("a", "b"):
            data = self.summary(key)
            summaries[key] = {k: v for k, v in data.items() if k not in ("by_domain", "cost")}
        return {
            "run_a": self.run_a,
            "run_b": self.run_b,
            "common_tasks": len(self.pairs),
            "summary": summaries,
            "changes": self.changes(),
            "tasks": [
                {"task_id": p.task_id, "domain": p.domain, "change": p.change,
                 "a": side(p.a), "b": side(p.b)}
                for p in self.pairs
            ],
            "only_in_a": self.only_a,
            "only_in_b": self.only_b,
        }


def compare_runs(run_a: Path | str, run_b: Path | str) -> Comparison:
    """Pair the tasks two run folders share (in run A's order).

    Raises:
        InvalidRunInputError: a folder is not a run folder, a record is unreadable, or the runs
            share no task.
    """
    path_a, path_b = Path(run_a), Path(run_b)
    meta_a, meta_b = read_metadata(path_a), read_metadata(path_b)
    name_a = str(meta_a.get("run") or path_a.name)
    name_b = str(meta_b.get("run") or path_b.name)
    items_a = [TaskOutcome.from_execution(r) for r in read_executions(path_a)]
    items_b = {
        t.task_id: t for t in (TaskOutcome.from_execution(r) for r in read_executions(path_b))
    }
    ids_a = {t.task_id for t in items_a}
    pairs = [TaskPair(a, items_b[a.task_id]) for a in items_a if a.task_id in items_b]
    if not pairs:
        raise InvalidRunInputError(
            f"runs {name_a!r} and {name_b!r} have no recorded task in common; "
            "compare two runs of the same task selection"
        )
    return Comparison(
        run_a=name_a,
        run_b=name_b,
        path_a=path_a,
        path_b=path_b,
        pairs=pairs,
        only_a=[t.task_id for t in items_a if t.task_id not in items_b],
        only_b=[tid for tid in items_b if tid not in ids_a],
    )


def _score(item: TaskOutcome) -> str:
    return fmt_num(item.score, 2) if item.score is not None else "-"


def format_comparison(comparison: Comparison) -> str:
    """The comparison as text: the totals of both runs, then one line per shared task."""
    a, b = comparison.summary("a"), comparison.summary("b")
    label_a, label_b = f"A: {comparison.run_a}", f"B: {comparison.run_b}"
    totals = table(
        ["", label_a, label_b],
        [
            ["success rate (outcomes only)", fmt_rate(a["success_rate"]),
             fmt_rate(b["success_rate"])],
            ["outcomes", str(a["outcomes"]), str(b["outcomes"])],
            ["successes", str(a["successes"]), str(b["successes"])],
            ["errors", str(a["errors"]), str(b["errors"])],
            ["not run", str(a["not_run"]), str(b["not_run"])],
            ["avg score", fmt_num(a["avg_score"]), fmt_num(b["avg_score"])],
            ["avg steps", fmt_num(a["avg_steps"], 1), fmt_num(b["avg_steps"], 1)],
        ],
    )
    changes = comparison.changes()
    lines = [
        f"Comparing {len(comparison.pairs)} task(s) both runs recorded",
        "",
        totals,
        "",
        "Changes: " + ", ".join(f"{n} {kind}" for kind, n in changes.items()),
        "",
        table(
            ["task", "domain", "A", "A score", "A steps", "B", "B score", "B steps", "change"],
            [
                [p.task_id, p.domain, _status_text(p.a), _score(p.a), str(p.a.steps),
                 _status_text(p.b), _score(p.b), str(p.b.steps), p.change]
                for p in comparison.pairs
            ],
            align="lllrrlrrl",
        ),
    ]
    for label, ids in (("A", comparison.only_a), ("B", comparison.only_b)):
        if ids:
            lines += ["", f"Only in {label} ({len(ids)}): {', '.join(ids)}"]
    return "\n".join(lines)


def _view_link(run_path: Path, page_dir: Path, task_id: str) -> str | None:
    view = run_path / "view.html"
    if not view.is_file():
        return None
    relative = os.path.relpath(view, page_dir).replace(os.sep, "/")
    return f"{quote(relative)}#{quote('task-' + task_id)}"


def render_comparison(comparison: Comparison, page_dir: Path | None = None) -> str:
    """The comparison as a self-contained HTML page.

    Args:
        comparison: what :func:`compare_runs` returned.
        page_dir: where the page will live; when given, task IDs link to each run's
            ``view.html`` (if written) relative to it.
    """
    from evals.viewer import badge, esc, outcome_bar, page

    a, b = comparison.summary("a"), comparison.summary("b")
    changes = comparison.changes()

    def cell(item: TaskOutcome, link: str | None) -> str:
        """A status badge, its error type, and a link to the run's steps of the task."""
        text = badge(item.status)
        if item.error_type and not item.is_outcome:
            text += f' <span class="muted">{esc(item.error_type)}</span>'
        if link:
            text += f' <a href="{esc(link)}">steps</a>'
        return text

    def stat_row(name: str, left: str, right: str) -> str:
        return f"<tr><td>{esc(name)}</td><td class='num'>{esc(left)}</td>" \
               f"<td class='num'>{esc(right)}</td></tr>"

    totals = "".join([
        stat_row("success rate (outcomes only)", fmt_rate(a["success_rate"]),
                 fmt_rate(b["success_rate"])),
        stat_row("outcomes", str(a["outcomes"]), str(b["outcomes"])),
        stat_row("successes", str(a["successes"]), str(b["successes"])),
        stat_row("errors", str(a["errors"]), str(b["errors"])),
        stat_row("not run", str(a["not_run"]), str(b["not_run"])),
        stat_row("avg score", fmt_num(a["avg_score"]), fmt_num(b["avg_score"])),
        stat_row("avg steps", fmt_num(a["avg_steps"], 1), fmt_num(b["avg_steps"], 1)),
        f"<tr><td>outcomes</td><td>{outcome_bar(a)}</td><td>{outcome_bar(b)}</td></tr>",
    ])
    rows = []
    for pair in comparison.pairs:
        link_a = _view_link(comparison.path_a, page_dir, pair.task_id) if page_dir else None
        link_b = _view_link(comparison.path_b, page_dir, pair.task_id) if page_dir else None
        rows.append(
            f"<tr><td class='tid'>{esc(pair.task_id)}</td><td>{esc(pair.domain)}</td>"
            f"<td class='nowrap'>{cell(pair.a, link_a)}</td>"
            f"<td class='num'>{esc(_score(pair.a))}</td>"
            f"<td class='num'>{pair.a.steps}</td>"
            f"<td class='nowrap'>{cell(pair.b, link_b)}</td>"
            f"<td class='num'>{esc(_score(pair.b))}</td>"
            f"<td class='num'>{pair.b.steps}</td><td>{badge(pair.change)}</td></tr>"
        )
    chips = " ".join(f"{badge(kind)} {n}" for kind, n in changes.items())
    only = "".join(
        f'<p class="muted">Only in {label} ({len(ids)}): {esc(", ".join(ids))}</p>'
        for label, ids in (("A", comparison.only_a), ("B", comparison.only_b)) if ids
    )
    body = (
        f"<header><h1>{esc(comparison.run_a)} vs {esc(comparison.run_b)}</h1>"
        f'<div class="meta"><span>{len(comparison.pairs)} task(s) both runs recorded</span>'
        "</div></header><main>"
        "<h2>Totals over the shared tasks</h2>"
        f"<table class='small'><tr><th></th><th class='num name'>A: {esc(comparison.run_a)}</th>"
        f"<th class='num name'>B: {esc(comparison.run_b)}</th></tr>{totals}</table>"
        f"<h2>Changes</h2><p>{chips}</p>"
        "<h2>Tasks</h2><table><tr><th>task</th><th>domain</th><th>A</th>"
        "<th class='num'>score</th><th class='num'>steps</th><th>B</th>"
        "<th class='num'>score</th><th class='num'>steps</th><th>change</th></tr>"
        f"{''.join(rows)}</table>{only}</main>"
    )
    return page(f"{comparison.run_a} vs {comparison.run_b}", body)


def default_page_path(comparison: Comparison) -> Path:
    """``compare-<A>-vs-<B>.html`` beside run A's folder (in the results folder)."""
    name = f"compare-{comparison.path_a.name}-vs-{comparison.path_b.name}.html"
    return comparison.path_a.parent / name


def write_comparison(comparison: Comparison, out: Path | str | None = None) -> Path:
    """Write the comparison page (default :func:`default_page_path`); returns its path."""
    from oa_vm.state import atomic_write_text

    target = Path(out) if out is not None else default_page_path(comparison)
    atomic_write_text(target, render_comparison(comparison, target.parent))
    return target
