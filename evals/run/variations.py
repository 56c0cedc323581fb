"""Goal variations in a run: adding them to a selection, and comparing each style with the
original tasks (see :mod:`waa_client.variations` for the file format).

``--variations FILE`` adds, right after each selected task, that task's variations from FILE;
each runs as a task of its own (``<task_id>__<style>_<n>``) with the original's setup and
checker. The summary then sets each style beside the originals of the same tasks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.errors import InvalidRunInputError
from waa_client.errors import CatalogError
from waa_client.variations import (
    STYLES,
    Variation,
    base_of,
    expand,
    load_variations,
    style_of,
    variation_task,
)

if TYPE_CHECKING:
    from evals.results.stats import Interval, PairedDifference
    from evals.run.pools import Selected


def read_variations(path: Path) -> dict[str, Variation]:
    """The variations of ``--variations FILE``, checked (one line naming the entry if not).

    Raises:
        InvalidRunInputError: the file cannot be read or an entry is malformed.
    """
    try:
        return load_variations(variations_path(path))
    except CatalogError as exc:
        raise InvalidRunInputError(f"--variations: {exc.message}") from exc


def variations_path(given: Path) -> Path:
    """The file ``--variations`` names: a path as given, or a bare name of the variations
    shipped with the local suite (``local_all``: ``infra/local/tasks/variations/local_all.json``
    in the installed package) when no file of that name is here."""
    from oa_vm import local_tasks_dir

    if given.exists() or given.parent != Path(".") or given.suffix:
        return given
    shipped = local_tasks_dir() / "variations" / f"{given.name}.json"
    return shipped if shipped.is_file() else given


def expand_ids(task_ids: list[str], variations: Mapping[str, Variation]) -> list[str]:
    """``task_ids`` with each one's variations right after it.

    Raises:
        InvalidRunInputError: none of the variations is of one of ``task_ids``.
    """
    order = expand(task_ids, variations)
    if len(order) == len(task_ids):
        raise InvalidRunInputError(
            f"--variations: no variation of the {len(set(task_ids))} selected task(s); the "
            "file's keys are '<task_id>__<style>_<n>' of the tasks to vary"
        )
    return order


def add_variations(selected: Selected, variations: Mapping[str, Variation]) -> Selected:
    """``selected`` with each selected task's variations added right after it.

    Raises:
        InvalidRunInputError: none of the variations is of a selected task, or one changes a
            field other than the instruction.
    """
    from evals.run.pools import Selected

    refs = {r.task_id: r for r in selected.refs}
    order = expand_ids([r.task_id for r in selected.refs], variations)
    tasks: dict[str, dict[str, Any]] = {}
    new_refs: list[Any] = []
    for task_id in order:
        if task_id in refs:
            new_refs.append(refs[task_id])
            tasks[task_id] = selected.tasks[task_id]
            continue
        variation = variations[task_id]
        try:
            tasks[task_id] = variation_task(selected.tasks[variation.base_id], variation)
        except CatalogError as exc:
            raise InvalidRunInputError(f"--variations: {exc.message}") from exc
        new_refs.append(replace(refs[variation.base_id], task_id=task_id,
                                instruction=variation.instruction))
    return Selected(new_refs, tasks)


@dataclass(frozen=True)
class StyleRow:
    """One goal style beside the originals of the same tasks.

    Counted runs are outcomes and the agent's own errors (as failures: the caller passes them
    as ``failure``); other errors stay apart. Every trial is kept; intervals and the paired
    test treat an original task and all its rewordings as one cluster (its base task), since
    they are not independent tasks.

    Attributes:
        style: ``original`` or a goal style.
        tasks: Distinct original tasks with at least one counted run in this style.
        runs: Counted runs in this style.
        successes: Of those, successes.
        mean_score: Mean checker score of the runs.
        errors: Runs that ended in an error that does not count (infrastructure and the like).
        original_success_rate: The originals' success rate on the same base tasks, over all
            their trials (None for the ``original`` row or when the originals have none there).
        success_rate_ci: The style's rate interval, clustered by base task.
        difference: B (the style) minus the originals, paired by base task
            (:func:`evals.results.stats.paired_difference`); None for the ``original`` row.
    """

    style: str
    tasks: int
    runs: int
    successes: int
    mean_score: float | None
    errors: int
    original_success_rate: float | None
    success_rate_ci: Interval | None = None
    difference: PairedDifference | None = None

    @property
    def success_rate(self) -> float | None:
        """Successes over counted runs; None when nothing was counted."""
        return self.successes / self.runs if self.runs else None

    def to_json(self) -> dict[str, Any]:
        """The row as ``summary.json`` keeps it (``goal_styles``)."""
        ci = self.success_rate_ci.to_json() if self.success_rate_ci else None
        diff = self.difference
        return {"style": self.style, "tasks": self.tasks, "runs": self.runs,
                "successes": self.successes, "success_rate": self.success_rate,
                "success_rate_ci": ci, "mean_score": self.mean_score,
                "errors": self.errors, "original_success_rate": self.original_success_rate,
                "difference_from_originals": None if diff is None else {
                    "ci": diff.interval.to_json(), **diff.test.to_json()}}


Outcome = tuple[str, str, float | None]
"""``(task_id, status, score)`` of one final record (status ``success``/``failure``/``error``;
an agent's own error is passed as a ``failure``)."""


def compare_styles(outcomes: Iterable[Outcome]) -> list[StyleRow]:
    """The originals' row, then one row per goal style present, from final records.

    A style's ``original_success_rate`` and paired difference are computed on the originals
    of the base tasks that style has counted runs for, with every trial of each (a dict keyed
    by task would keep only the last trial of each).
    """
    from evals.results.stats import clustered_interval, paired_difference

    by_style: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        by_style.setdefault(style_of(outcome[0]) or "original", []).append(outcome)

    def by_base(rows: list[Outcome]) -> dict[str, list[float]]:
        grouped: dict[str, list[float]] = {}
        for t, s, _ in rows:
            if s != "error":
                grouped.setdefault(base_of(t), []).append(1.0 if s == "success" else 0.0)
        return grouped

    originals = by_base(by_style.get("original", []))

    def row(style: str, rows: list[Outcome]) -> StyleRow:
        scored = [(t, s, sc) for t, s, sc in rows if s != "error"]
        scores = [sc for _, _, sc in scored if sc is not None]
        bases = by_base(rows)
        ci = clustered_interval([math.fsum(v) for v in bases.values()],
                                [len(v) for v in bases.values()])
        shared = [b for b in bases if b in originals]
        rate = difference = None
        if style != "original" and shared:
            trials = [v for b in shared for v in originals[b]]
            rate = math.fsum(trials) / len(trials)
            difference = paired_difference([originals[b] for b in shared],
                                           [bases[b] for b in shared])
        return StyleRow(style, len(bases), len(scored),
                        sum(1 for _, s, _ in scored if s == "success"),
                        math.fsum(scores) / len(scores) if scores else None,
                        len(rows) - len(scored), rate, ci, difference)

    order = ["original", *STYLES]
    return [row(style, by_style[style]) for style in order if style in by_style]


def difference_text(row: Mapping[str, Any]) -> str:
    """A ``goal_styles`` row's difference from the originals as the summary and the run page
    say it (``+12.5 points 95% CI [-3.1, +28.1], p = 0.125 (paired by task)``); empty for the
    originals' row or where there are no originals to pair with."""
    diff = row.get("difference_from_originals")
    if not diff:
        return ""
    ci = diff["ci"]
    return (f"{100 * ci['estimate']:+.1f} points 95% CI [{100 * ci['low']:+.1f}, "
            f"{100 * ci['high']:+.1f}], p = {diff['p_value']:.3f} (paired by task)")


def format_styles(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """The ``goal_styles`` rows of a summary as lines (none when the run has no variation)."""
    listed = list(rows)
    if not any(r["style"] != "original" for r in listed):
        return []

    def pct(value: float | None) -> str:
        return "n/a" if value is None else f"{100 * value:.1f}%"

    lines = ["Goal styles (the same tasks, reworded; the checker is the original's):"]
    for r in listed:
        ci = r.get("success_rate_ci")
        interval = f" 95% CI [{pct(ci['low'])}, {pct(ci['high'])}]" if ci else ""
        against = ("" if r["style"] == "original"
                   else f"; originals of these tasks {pct(r.get('original_success_rate'))}")
        diff = difference_text(r)
        if diff:
            against += f", difference {diff}"
        errors = f", {r['errors']} error(s)" if r.get("errors") else ""
        lines.append(f"  {r['style']:<18} {r['successes']}/{r['runs']} succeeded "
                     f"({pct(r.get('success_rate'))}){interval} on {r['tasks']} task(s)"
                     f"{errors}{against}")
    return lines
