"""Compare two runs task by task: what got better, what got worse, what broke.

Only tasks both runs recorded are compared, and both runs are summarized over those tasks alone,
so a run that covered more tasks does not look better or worse for it; tasks only one run has are
listed apart.

How a task changed from run A to run B:

- both are outcomes: ``improved`` / ``regressed`` when the checker's score went up / down, else
  ``same``;
- otherwise (an error or a task not run on either side): ``same`` when both ended alike (status
  and error type), else ``changed`` (e.g. ``error -> success``), since an error is not a score.

The paired comparison (:func:`paired_comparison`, the ``paired`` key of ``--json``) uses the tasks
both runs *counted* (a success, a failure, or an error of the agent's own, ``agent`` or
``timeout``, which counts as a failure scoring 0; an infrastructure, setup or evaluation error says
nothing about the agent and is left out), each task cut to the same number of trials a side
(:func:`evals.results.stats.equal_trials`). It reports B minus A with ONE paired test and the
interval obtained by inverting it (:func:`evals.results.stats.paired_difference`), so the verdict's
test and interval agree; the tasks that changed each way; the smallest gain the test would detect
with 80% power, simulated for that test (:func:`evals.results.stats.detectable_difference`); and a
verdict in words at the 5% level. Before the verdict, ``Warning:`` lines say what else differs
between the runs (their manifests), which side had errors of its own, and which agent saw the
answers.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any
from urllib.parse import quote

from evals.errors import InvalidRunInputError
from evals.results import stats
from evals.results.records import Aggregate, RunMetadata
from evals.results.run_reader import missing_line, missing_of, read_metadata, read_records
from evals.run.manifest import difference_rows, manifest_differences, read_manifest
from evals.run.metrics import (
    TaskOutcome,
    aggregate,
    counted_score,
    fmt_num,
    fmt_rate,
    group_trials,
    table,
)

CHANGES = ("improved", "regressed", "changed", "same")
SIGNIFICANCE = 0.05


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
    trials_a: dict[str, list[TaskOutcome]] = field(default_factory=dict)
    trials_b: dict[str, list[TaskOutcome]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)
    """What the verdict cannot see: errors of an agent's own, an agent that saw the answers."""

    def paired(self) -> PairedComparison:
        """The paired statistics over the tasks both runs scored (:func:`paired_comparison`)."""
        ids = [p.task_id for p in self.pairs]
        return paired_comparison(
            {t: self.trials_a.get(t, []) for t in ids}, {t: self.trials_b.get(t, []) for t in ids}
        )

    def summary(self, side: str) -> Aggregate:
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
            "paired": {**self.paired().to_json(), "warnings": self.warnings,
                       "caveats": self.caveats},
        }


@dataclass(frozen=True)
class PairedMeasure:
    """One measure (success rate or mean score) of both runs over the paired tasks.

    Attributes:
        a, b: Each run's value (the mean over tasks of the per-task value).
        difference: The mean of the per-task differences, B minus A (an interval of it).
        test: The paired exact test.
    """

    a: float
    b: float
    difference: stats.Interval
    test: stats.PairedTest

    def to_json(self) -> dict[str, Any]:
        """``{"a", "b", "difference", "ci": {"low", "high", ...}, "test", "p_value", ...}``."""
        return {
            "a": round(self.a, 6),
            "b": round(self.b, 6),
            "difference": round(self.difference.estimate, 6),
            "ci": self.difference.to_json(),
            **self.test.to_json(),
        }


@dataclass(frozen=True)
class PairedComparison:
    """B against A over the tasks both counted (see the module docstring).

    Attributes:
        tasks: The paired tasks (counted by both runs).
        success_rate, mean_score: The two measures, ``None`` when no task was counted by both.
        better_in_b, worse_in_b: Tasks whose success rate (or, at equal rates, mean score)
            went up / down from A to B, on the trials compared (exact comparisons: a tie is
            a tie whatever the order the scores were summed in).
        minimum_detectable: The smallest success-rate gain (a fraction) the test would detect
            with 80% power (:func:`evals.results.stats.detectable_difference`); ``None`` when even
            the largest would not be.
        trials_cut: Tasks whose longer side was cut to the other's number of trials.
    """

    tasks: list[str]
    success_rate: PairedMeasure | None
    mean_score: PairedMeasure | None
    better_in_b: list[str]
    worse_in_b: list[str]
    minimum_detectable: float | None
    trials_cut: int = 0

    @property
    def significant(self) -> bool:
        """Whether the success rates differ at the 5% level (the test's p-value)."""
        return self.success_rate is not None and self.success_rate.test.p_value <= SIGNIFICANCE

    def verdict(self) -> str:
        """The comparison in one sentence, on the success rate (points are percentage points).

        The test and the interval agree by construction; if they ever did not (a numerical
        edge), the verdict says so rather than picking one.
        """
        rate = self.success_rate
        if rate is None:
            return "no verdict: no task was counted by both runs"
        ci = rate.difference
        figures = (f"{_points(ci.estimate)} points, 95% CI [{_points(ci.low)}, "
                   f"{_points(ci.high)}], {rate.test.name} p = {_p(rate.test.p_value)}")
        excludes = ci.low > 0 or ci.high < 0
        if self.significant != excludes:
            return (f"undecided: the test and the interval disagree ({figures}); "
                    "report both and add tasks or trials")
        if self.significant:
            side = "better" if ci.estimate > 0 else "worse"
            return f"B is {side} than A: {figures}"
        text = f"no detectable difference ({figures})"
        if self.minimum_detectable is not None:
            text += ("; the smallest gain this pair would detect with 80% power is about "
                     f"{self.minimum_detectable * 100:.0f} points")
        elif min(rate.a, rate.b) >= 1.0:
            # no gain is possible at the ceiling, however many tasks: "too few tasks" sent
            # people to add more of the tasks both agents already solve
            text += ("; both runs succeeded on every trial compared, so no gain can show: add "
                     "tasks they do not both solve")
        else:
            text += "; too few tasks to detect any gain with 80% power"
        return text

    def to_json(self) -> dict[str, Any]:
        """The ``paired`` document of ``compare --json`` (its ``warnings`` are added there)."""
        return {
            "tasks": len(self.tasks),
            "success_rate": self.success_rate.to_json() if self.success_rate else None,
            "mean_score": self.mean_score.to_json() if self.mean_score else None,
            "better_in_b": self.better_in_b,
            "worse_in_b": self.worse_in_b,
            "minimum_detectable_difference": (
                None if self.minimum_detectable is None else round(self.minimum_detectable, 6)
            ),
            "tasks_with_trials_cut": self.trials_cut,
            "significant": self.significant,
            "significance_level": SIGNIFICANCE,
            "verdict": self.verdict(),
        }


def _points(fraction: float) -> str:
    return f"{fraction * 100:+.1f}"


def _p(value: float) -> str:
    return f"{value:.3f}" if value >= 0.001 else f"{value:.1e}"


def paired_comparison(
    trials_a: dict[str, list[TaskOutcome]], trials_b: dict[str, list[TaskOutcome]],
    *, seed: int | None = None,
) -> PairedComparison:
    """Pair the tasks both runs counted and compare B with A (see the module docstring).

    Args:
        trials_a, trials_b: Each run's trials by task (infrastructure errors may be among
            them; they are left out; an agent's own errors count as failures).
        seed: The seed of the detectable difference's simulation.
    """
    success: dict[str, tuple[list[float], list[float]]] = {}
    scores: dict[str, tuple[list[float], list[float]]] = {}
    cut = 0
    for tid, items_a in trials_a.items():
        counted_a = _counted(items_a)
        counted_b = _counted(trials_b.get(tid, []))
        if not counted_a or not counted_b:
            continue
        cut += len(counted_a) != len(counted_b)
        a, b = stats.equal_trials(counted_a, counted_b)
        success[tid] = ([1.0 if t.status == "success" else 0.0 for t in a],
                        [1.0 if t.status == "success" else 0.0 for t in b])
        scores[tid] = ([counted_score(t) for t in a], [counted_score(t) for t in b])
    tasks = list(success)
    if not tasks:
        return PairedComparison([], None, None, [], [], None)
    rate = stats.paired_difference([a for a, _ in success.values()],
                                   [b for _, b in success.values()])
    score = stats.paired_difference([a for a, _ in scores.values()],
                                    [b for _, b in scores.values()])
    assert rate is not None and score is not None  # there are tasks

    def key(values: tuple[list[float], list[float]], side: int) -> Fraction:
        # exact: fsum rounds once, so the same scores in any order give the same mean
        return Fraction(math.fsum(values[side])) / len(values[side])

    def order(tid: str, side: int) -> tuple[Fraction, Fraction]:
        return key(success[tid], side), key(scores[tid], side)

    better = [t for t in tasks if order(t, 1) > order(t, 0)]
    worse = [t for t in tasks if order(t, 1) < order(t, 0)]
    mdd = stats.detectable_difference(
        [int(sum(a)) for a, _ in success.values()], [int(sum(b)) for _, b in success.values()],
        [len(a) for a, _ in success.values()], seed=seed)
    return PairedComparison(
        tasks=tasks,
        success_rate=_measure(success, rate),
        mean_score=_measure(scores, score),
        better_in_b=better,
        worse_in_b=worse,
        minimum_detectable=mdd,
        trials_cut=cut,
    )


def _measure(values: dict[str, tuple[list[float], list[float]]],
             difference: stats.PairedDifference) -> PairedMeasure:
    """Each side's mean over tasks of its per-task mean, and the paired difference."""
    n = len(values)
    a = math.fsum(math.fsum(x) / len(x) for x, _ in values.values()) / n
    b = math.fsum(math.fsum(y) / len(y) for _, y in values.values()) / n
    return PairedMeasure(a, b, difference.interval, difference.test)


def _counted(items: list[TaskOutcome]) -> list[TaskOutcome]:
    """The trials that count for the agent, in trial order (see the module docstring)."""
    return sorted((t for t in items if t.counts_for_agent), key=lambda t: t.trial)


def compare_runs(run_a: Path | str, run_b: Path | str) -> Comparison:
    """Pair the tasks two run folders share (in run A's order).

    Its ``warnings`` list every way the runs' manifests differ other than the agent (or that
    one has none): :func:`evals.run.manifest.manifest_differences`.

    Raises:
        InvalidRunInputError: a folder is not a run folder, a record is unreadable, the runs
            share no task, or both name one run (its difference with itself is no finding).
    """
    path_a, path_b = Path(run_a), Path(run_b)
    if path_a.resolve() == path_b.resolve():
        raise InvalidRunInputError(
            f"{path_a.name!r} is compared with itself; name two runs (the runs there: "
            "openadapt-evals runs)")
    meta_a, meta_b = read_metadata(path_a), read_metadata(path_b)
    name_a = str(meta_a.get("run") or path_a.name)
    name_b = str(meta_b.get("run") or path_b.name)
    records_a, records_b = read_records(path_a), read_records(path_b)
    trials_a, trials_b = group_trials(records_a), group_trials(records_b)
    # The per-task table shows each task's first trial; the paired statistics use them all.
    items_a = [trials[0] for trials in trials_a.values()]
    items_b = {tid: trials[0] for tid, trials in trials_b.items()}
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
        trials_a=trials_a,
        trials_b=trials_b,
        warnings=manifest_differences(
            read_manifest(path_a), read_manifest(path_b), [p.task_id for p in pairs]
        ),
        caveats=[*(missing_line(f"{label} ({name})", missing)
                   for label, name, meta, records in (("A", name_a, meta_a, records_a),
                                                      ("B", name_b, meta_b, records_b))
                   if (missing := missing_of(meta, records))),
                 *_caveats({"A": (meta_a, trials_a), "B": (meta_b, trials_b)},
                           {p.task_id for p in pairs})],
    )


ANSWER_AGENTS = frozenset({"oracle", "random", "replay"})
"""Built-in agents that play (or replay) the task's reference solution: they saw the answers
even where a run's metadata predates ``answer_visible_agents``."""


def _caveats(sides: dict[str, tuple[RunMetadata, dict[str, list[TaskOutcome]]]],
             shared: set[str]) -> list[str]:
    """What the verdict cannot see: a side whose agent raised or timed out (those count as
    failures, but a crash is not a comparison of skill), a side whose agent saw the answers."""
    lines = []
    for label, (meta, trials) in sides.items():
        own = [t for tid, ts in trials.items() if tid in shared for t in ts
               if t.status == "error" and t.counts_for_agent]
        if own:
            kinds = sorted({str(t.error_type) for t in own})
            tasks = len({t.task_id for t in own})
            lines.append(f"{label} has {len(own)} error(s) of its own agent ({', '.join(kinds)}) "
                         f"on {tasks} task(s); they count as failures: read them before the "
                         "verdict")
        agent = str(meta.get("agent") or "")
        seen = list(meta.get("answer_visible_agents") or [])
        if seen or agent in ANSWER_AGENTS:
            lines.append(f"{label}'s agent ({agent or ', '.join(map(str, seen))}) saw the "
                         "answers (the reference solution): not a benchmark result")
    return lines


def _score(item: TaskOutcome) -> str:
    return fmt_num(item.score, 2) if item.score is not None else "-"


def _total_rows(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[list[str]]:
    """The totals both forms of the comparison show: ``[name, A's value, B's value]`` rows."""
    rates = [("success rate", "success_rate"),
             ("success rate (outcomes only)", "success_rate_outcomes_only")]
    counts = ["agent_errors", "outcomes", "successes", "errors", "not_run"]
    return [*([name, fmt_rate(a[key]), fmt_rate(b[key])] for name, key in rates),
            *([key.replace("_", " "), str(a[key]), str(b[key])] for key in counts),
            ["avg score", fmt_num(a["avg_score"]), fmt_num(b["avg_score"])],
            ["avg steps", fmt_num(a["avg_steps"], 1), fmt_num(b["avg_steps"], 1)]]


def format_comparison(comparison: Comparison) -> str:
    """The comparison as text: the totals of both runs, then one line per shared task."""
    a, b = comparison.summary("a"), comparison.summary("b")
    label_a, label_b = f"A: {comparison.run_a}", f"B: {comparison.run_b}"
    totals = table(["", label_a, label_b], _total_rows(a, b))
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
    if any(len(t) > 1 for t in (*comparison.trials_a.values(), *comparison.trials_b.values())):
        lines += ["", "(With trials: the tables show each task's first trial; the paired "
                      "comparison below uses all of them.)"]
    lines += ["", *paired_lines(comparison)]
    return "\n".join(lines)


def paired_lines(comparison: Comparison) -> list[str]:
    """The paired statistics as text: both measures, the changed tasks, the warnings about
    what else differs between the runs, then the verdict."""
    paired = comparison.paired()
    lines = [f"Paired over {len(paired.tasks)} task(s) both runs counted (B minus A; an "
             "agent's own errors count as failures):"]
    for name, measure, rate in (("success rate", paired.success_rate, True),
                                ("mean score", paired.mean_score, False)):
        if measure is None:
            continue
        ci = measure.difference
        if rate:
            values = (f"A {fmt_rate(measure.a)}, B {fmt_rate(measure.b)}, "
                      f"{_points(ci.estimate)} points, "
                      f"95% CI [{_points(ci.low)}, {_points(ci.high)}]")
        else:
            values = (f"A {fmt_num(measure.a)}, B {fmt_num(measure.b)}, "
                      f"{ci.estimate:+.3f}, 95% CI [{ci.low:+.3f}, {ci.high:+.3f}]")
        lines.append(f"  {name}: {values}; {measure.test.name} p = {_p(measure.test.p_value)} "
                     f"(B better on {measure.test.b_better}, A on {measure.test.a_better})")
    for label, ids in (("Better in B", paired.better_in_b), ("Worse in B", paired.worse_in_b)):
        lines.append(f"  {label} ({len(ids)}): {', '.join(ids) if ids else '-'}")
    if paired.trials_cut:
        lines.append(f"  Trials: {paired.trials_cut} task(s) had more trials on one side; each "
                     "was compared on the first trials of the longer side, as many as the "
                     "other has")
    if paired.minimum_detectable is not None:
        lines.append(f"  Smallest gain detectable with 80% power: about "
                     f"{paired.minimum_detectable * 100:.1f} points (simulated for this test)")
    lines += [f"Warning: {line}" for line in (*comparison.warnings, *comparison.caveats)]
    lines.append(f"Verdict: {paired.verdict()}")
    return lines


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
    from evals.report.viewer import badge, esc, outcome_bar, page

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

    totals = "".join(stat_row(*row) for row in _total_rows(a, b)) + (
        f"<tr><td>outcomes</td><td>{outcome_bar(a)}</td><td>{outcome_bar(b)}</td></tr>")
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
    paired = "".join(f"<p>{esc(line)}</p>" for line in paired_lines(comparison))
    differences = difference_rows(read_manifest(comparison.path_a),
                                  read_manifest(comparison.path_b),
                                  [p.task_id for p in comparison.pairs], agent=True)
    diff_table = (
        "<table class='small manifest-diff'><tr><th>what</th><th>A</th><th>B</th></tr>"
        + "".join(f"<tr><td>{esc(w)}</td><td><code>{esc(va)}</code></td>"
                  f"<td><code>{esc(vb)}</code></td></tr>" for w, va, vb in differences)
        + "</table>") if differences else "<p class='muted'>The manifests agree.</p>"
    body = (
        f"<header><h1>{esc(comparison.run_a)} vs {esc(comparison.run_b)}</h1>"
        f'<div class="meta"><span>{len(comparison.pairs)} task(s) both runs recorded</span>'
        "</div></header><main>"
        "<h2>Totals over the shared tasks</h2>"
        f"<table class='small'><tr><th></th><th class='num name'>A: {esc(comparison.run_a)}</th>"
        f"<th class='num name'>B: {esc(comparison.run_b)}</th></tr>{totals}</table>"
        f"<h2>Changes</h2><p>{chips}</p>"
        f"<h2>Per task: A against B</h2>{task_plot(comparison)}"
        f"<h2>Paired comparison</h2>{paired}"
        f"<h2>What differs between the runs</h2>{diff_table}"
        "<h2>Tasks</h2><table><tr><th>task</th><th>domain</th><th>A</th>"
        "<th class='num'>score</th><th class='num'>steps</th><th>B</th>"
        "<th class='num'>score</th><th class='num'>steps</th><th>change</th></tr>"
        f"{''.join(rows)}</table>{only}</main>"
    )
    return page(f"{comparison.run_a} vs {comparison.run_b}", body)


PLOT_SIZE = 280
PLOT_PAD = 34


def task_plot(comparison: Comparison) -> str:
    """Each shared task as a point at (A's mean score, B's mean score) over its trials, with the
    diagonal where nothing changed: above it B did better. Inline SVG, no script, no network;
    a point's title names the task."""
    from evals.report.viewer import esc

    def mean(items: list[TaskOutcome]) -> float:
        return sum(counted_score(i) for i in items) / len(items) if items else 0.0

    span = PLOT_SIZE - 2 * PLOT_PAD

    def at(a: float, b: float) -> tuple[float, float]:
        return PLOT_PAD + a * span, PLOT_SIZE - PLOT_PAD - b * span

    low, high = at(0, 0), at(1, 1)
    parts = [
        f'<svg class="task-plot" xmlns="http://www.w3.org/2000/svg" width="{PLOT_SIZE}" '
        f'height="{PLOT_SIZE}" viewBox="0 0 {PLOT_SIZE} {PLOT_SIZE}" role="img" '
        f'aria-label="score per task, A against B">',
        f'<rect x="{low[0]}" y="{high[1]}" width="{span}" height="{span}" fill="none" '
        'stroke="#d0d7de"/>',
        f'<line class="diagonal" x1="{low[0]}" y1="{low[1]}" x2="{high[0]}" y2="{high[1]}" '
        'stroke="#afb8c1" stroke-dasharray="4 3"/>',
        f'<text x="{PLOT_SIZE / 2}" y="{PLOT_SIZE - 6}" text-anchor="middle" font-size="11">'
        f'A: {esc(comparison.run_a)}</text>',
        f'<text x="11" y="{PLOT_SIZE / 2}" text-anchor="middle" font-size="11" '
        f'transform="rotate(-90 11 {PLOT_SIZE / 2})">B: {esc(comparison.run_b)}</text>',
    ]
    colors = {"improved": "#1a7f37", "regressed": "#b42318", "changed": "#9a6700",
              "same": "#57606a"}
    for pair in comparison.pairs:
        a = mean(comparison.trials_a.get(pair.task_id) or [pair.a])
        b = mean(comparison.trials_b.get(pair.task_id) or [pair.b])
        x, y = at(a, b)
        parts.append(
            f'<circle class="task-point" data-task="{esc(pair.task_id)}" cx="{x:.1f}" '
            f'cy="{y:.1f}" r="5" fill="{colors.get(pair.change, "#57606a")}" '
            f'fill-opacity="0.7"><title>{esc(pair.task_id)}: A {a:.2f}, B {b:.2f}'
            f'</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


def default_page_path(comparison: Comparison) -> Path:
    """``compare-<A>-vs-<B>.html`` beside run A's folder (in the results folder)."""
    name = f"compare-{comparison.path_a.name}-vs-{comparison.path_b.name}.html"
    return comparison.path_a.parent / name


def write_comparison(
    comparison: Comparison, out: Path | str | None = None, *, force: bool = False
) -> Path:
    """Write the comparison page (default :func:`default_page_path`); returns its path.

    As a run's page is written (:func:`evals.report.viewer.write_page`): another file is not
    replaced without ``force``, and a symlink, a device or a missing folder is refused.

    Raises:
        InvalidRunInputError, oa_vm.kit.safe_fs.UnsafePathError, oa_vm.kit.safe_fs.WriteFailedError:
            see :func:`evals.report.viewer.write_page`.
    """
    from evals.report.viewer import check_page_target, write_page, write_view

    target = Path(out) if out is not None else default_page_path(comparison)
    check_page_target(target, force=force)
    # the page's step links open each run's own page: write it where it is missing, so they
    # work whether or not `view` ran before
    for run_path in (comparison.path_a, comparison.path_b):
        if not (run_path / "view.html").exists():
            write_view(run_path)
    write_page(target, render_comparison(comparison, target.parent), force=force)
    return target
