"""Run metrics: summarize a run's records, print the summary.

Counting rules (the same for ``summary.json``, the printed summary and the public API):

- a task ends as an *outcome* (``success`` or ``failure``, scored by WAA's checker), an *error*
  (with a type: infrastructure, setup, agent, evaluation, timeout) or *not run* (a budget cap kept
  it from starting);
- *attempts* are outcomes plus errors; tasks that never ran are listed, not attempted;
- the success rate and the mean score count the outcomes and the agent's own errors
  (:data:`AGENT_ERROR_TYPES`: ``agent``, ``timeout``) as failures scoring 0: leaving those out
  would reward an agent for crashing. Infrastructure, setup and evaluation errors say nothing
  about the agent and are listed apart, not folded in as zeros (WAA's own loop silently drops
  failed tasks). The outcomes-only figures and the rate with every error as a failure are kept
  beside the headline (``success_rate_outcomes_only``, ``success_rate_all_errors_as_failures``);
- the mean score (``avg_score``) is WAA's own headline figure: WAA's checker gives fractions
  (``compare_pdfs``, ``compare_images``...), only a score of 1 is a ``success``, and the mean
  counts each fraction as it is;
- the average number of steps is taken over all attempts;
- with several trials per task (``--trials K``) each trial is an attempt of its own; the
  intervals, pass@k, pass^k and the flaky tasks (:func:`statistics`, on :mod:`evals.results.stats`)
  group the trials by task and use scored trials only.

A rate or average with nothing to average over is ``None`` (``null`` in JSON, ``n/a`` when
printed), never a made-up zero.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evals.results.records import (
    Aggregate,
    Counts,
    Listed,
    RunMetadata,
    Statistics,
    Summary,
    TaskExecution,
)
from evals.results.run_reader import STATUSES, read_metadata, read_records
from evals.run.reset import reset_lines, reset_summary

OUTCOMES = ("success", "failure")
COST_KEYS = ("worker_seconds", "vm_usd", "model_usd", "total_usd")
AGENT_ERROR_TYPES = frozenset({"agent", "timeout"})
"""Errors that are the agent's own (it raised, or ran out of steps or time): they count as
failures scoring 0 in every headline figure. Leaving them out would reward crashing: an agent
that dies on hard tasks would score higher than one that fails them politely."""


# --- a run folder's task records, by task -------------------------------------------------------


def group_trials(records: Iterable[TaskExecution]) -> dict[str, list[TaskOutcome]]:
    """Every trial's final record (:func:`evals.results.run_reader.read_records`), grouped by
    task (in the run's task order). A run without ``--trials`` has one trial per task."""
    grouped: dict[str, list[TaskOutcome]] = {}
    for record in records:
        item = TaskOutcome.from_execution(record)
        grouped.setdefault(item.task_id, []).append(item)
    return grouped


# --- aggregation -------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskOutcome:
    """The few facts about one task that every metric is computed from."""

    task_id: str
    domain: str
    status: str
    score: float | None
    steps: int
    error_type: str | None = None
    worker: str | None = None
    duration_s: float | None = None
    cost: Mapping[str, float] = field(default_factory=dict)
    trial: int = 1

    @property
    def is_outcome(self) -> bool:
        """Scored by the checker (success or failure), as opposed to an error or not run."""
        return self.status in OUTCOMES

    @property
    def counts_for_agent(self) -> bool:
        """Counted in the headline figures: an outcome, or an error of the agent's own
        (:data:`AGENT_ERROR_TYPES`), which counts as a failure scoring 0."""
        return self.is_outcome or (self.status == "error" and self.error_type in AGENT_ERROR_TYPES)

    @property
    def attempted(self) -> bool:
        """Ran at all (an outcome or an error)."""
        return self.status != "not_run"

    @classmethod
    def from_execution(cls, execution: TaskExecution) -> TaskOutcome:
        """The one derivation from the task record (what each field comes from:
        :data:`OUTCOME_FROM_RECORD`)."""
        cost = {
            k: float(v) for k, v in vars(execution.cost).items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        }
        return cls(
            task_id=execution.task_id,
            domain=execution.domain or "unknown",
            status=execution.status.value,
            score=_as_float(execution.score),
            steps=len(execution.steps),
            error_type=None if execution.error_type is None else execution.error_type.value,
            worker=execution.worker,
            duration_s=_as_float(execution.duration_s),
            cost=cost,
            trial=execution.trial,
        )


OUTCOME_FROM_RECORD: Mapping[str, str] = {
    "task_id": "task_id",
    "domain": "domain",
    "status": "status",
    "score": "score",
    "steps": "steps",  # their number
    "error_type": "error_type",
    "worker": "worker",
    "duration_s": "duration_s",
    "cost": "cost",  # the totals; by_pool stays in the record
    "trial": "trial",
}
"""Which :class:`TaskOutcome` field each :class:`evals.results.records.TaskExecution` field
becomes."""
OUTCOME_LEAVES_OUT = frozenset({
    "instruction", "infeasible", "error_message", "reason", "attempts", "started_at",
    "ended_at", "last_action", "previous_attempts", "reset", "reset_s", "fingerprint",
    "agent_traceback",  # the run page and execution.json show it; the summary counts kinds
    "egress",  # the manifest names each pool's; the record says which one a task ran under
    "reward_components", "task_traceback",  # shown by the run page; the score is their mean
    "state_diff",  # an OpenApps-style task's: shown by the run page, the score is its reward
})
"""Record fields no metric is computed from (the summary reads the few it needs, such as
``previous_attempts`` and ``reset``, from the record itself)."""


def _as_float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _mean(values: Iterable[float]) -> float | None:
    items = list(values)
    return sum(items) / len(items) if items else None


def counted_score(item: TaskOutcome) -> float:
    """A counted trial's score: the checker's for an outcome, 0 for an agent's own error."""
    return (item.score or 0.0) if item.is_outcome else 0.0


def _counts(items: list[TaskOutcome]) -> Counts:
    outcomes = [t for t in items if t.is_outcome]
    counted = [t for t in items if t.counts_for_agent]
    attempted = [t for t in items if t.attempted]
    successes = sum(1 for t in items if t.status == "success")
    return {
        "attempts": len(attempted),
        "outcomes": len(outcomes),
        "counted": len(counted),
        "successes": successes,
        "failures": sum(1 for t in items if t.status == "failure"),
        "errors": sum(1 for t in items if t.status == "error"),
        "agent_errors": len(counted) - len(outcomes),
        "not_run": sum(1 for t in items if t.status == "not_run"),
        # the headline: an agent's own errors count as failures (AGENT_ERROR_TYPES)
        "success_rate": successes / len(counted) if counted else None,
        "avg_score": _fmean(counted_score(t) for t in counted),
        # beside it: outcomes only, and every error (infrastructure too) as a failure
        "success_rate_outcomes_only": successes / len(outcomes) if outcomes else None,
        "avg_score_outcomes_only": _fmean(t.score for t in outcomes if t.score is not None),
        "success_rate_all_errors_as_failures": (
            successes / len(attempted) if attempted else None),
    }


def _fmean(values: Iterable[float]) -> float | None:
    items = list(values)
    return math.fsum(items) / len(items) if items else None


def aggregate(items: list[TaskOutcome]) -> Aggregate:
    """The counts, rates and tables every summary shares (see the module docstring)."""
    attempted = [t for t in items if t.attempted]
    by_domain = {  # the headline figures only (the run's keep the rest)
        domain: {k: v for k, v in _counts([t for t in items if t.domain == domain]).items()
                 if k not in ("outcomes", "counted", "agent_errors", "success_rate_outcomes_only",
                              "avg_score_outcomes_only", "success_rate_all_errors_as_failures")}
        for domain in sorted({t.domain for t in items})
    }
    error_types = Counter(t.error_type for t in items if t.error_type)
    cost = {key: round(sum(t.cost.get(key, 0.0) for t in items), 6) for key in COST_KEYS}
    for key in ("tokens_in", "tokens_out"):
        cost[key] = int(sum(t.cost.get(key, 0) for t in items))
    return {
        **_counts(items),
        "avg_steps": _mean(t.steps for t in attempted),
        "by_domain": by_domain,
        "by_error_type": dict(sorted(error_types.items())),
        "cost": cost,
    }


def statistics(items: list[TaskOutcome], trials: int | None = None,
               base_task: Any = None) -> Statistics:
    """The run's statistics (:mod:`evals.results.stats`), the ``summary.json`` keys of the same
    names.

    Trials are grouped by task; the counted trials are the outcomes and the agent's own errors
    (as failures scoring 0, :data:`AGENT_ERROR_TYPES`); infrastructure, setup and evaluation
    errors never count.

    Args:
        items: Every trial's final record (one per task when there are no trials).
        trials: The trials asked for per task (``metadata.json``'s ``trials``); by default the
            most trials any task has.
        base_task: For a ``--variations`` run, ``task_id -> the original task's ID``: the
            intervals then treat an original and its rewordings as one cluster (they are not
            independent tasks). By default every task is its own.

    Returns:
        ``trials``; ``success_rate_ci`` and ``mean_score_ci``
        (:func:`evals.results.stats.clustered_interval` over tasks, or base tasks), each
        :meth:`evals.results.stats.Interval.to_json` or ``None`` when nothing was counted;
        ``success_rate_ci_outcomes_only`` (the same over outcomes only);
        ``by_domain_ci`` (``{domain: success_rate_ci}``); ``pass_at_k`` and ``pass_all_k``
        (:func:`evals.results.stats.pass_k_table`); ``flaky_tasks``:
        ``[{"task_id", "successes", "outcomes", "scores"}]`` of the tasks whose counted trials
        disagree.
    """
    from evals.results import stats

    by_task: dict[str, list[TaskOutcome]] = {}
    for item in items:
        by_task.setdefault(item.task_id, []).append(item)
    k = trials or max((len(v) for v in by_task.values()), default=1)
    counted = {tid: sorted((t for t in ts if t.counts_for_agent), key=lambda t: t.trial)
               for tid, ts in by_task.items()}
    counts = {
        tid: (sum(1 for t in ts if t.status == "success"), len(ts))
        for tid, ts in counted.items() if ts
    }
    cluster = base_task or (lambda tid: tid)

    def rate_ci(chosen: Mapping[str, list[TaskOutcome]]) -> Any:
        sums: dict[str, list[float]] = {}
        for tid, ts in chosen.items():
            sums.setdefault(cluster(tid), []).extend(
                1.0 if t.status == "success" else 0.0 for t in ts)
        ci = stats.clustered_interval([math.fsum(v) for v in sums.values()],
                                      [len(v) for v in sums.values()])
        return ci.to_json() if ci else None

    scores: dict[str, list[float]] = {}
    for tid, ts in counted.items():
        scores.setdefault(cluster(tid), []).extend(counted_score(t) for t in ts)
    score = stats.mean_score_interval(list(scores.values()))
    outcomes_only = {tid: [t for t in ts if t.is_outcome] for tid, ts in by_task.items()}
    domains = sorted({t.domain for t in items})
    by_domain_ci = {
        d: rate_ci({tid: ts for tid, ts in counted.items() if ts and ts[0].domain == d})
        for d in domains
    }
    pass_at, pass_all = stats.pass_k_table(counts, k)
    flaky = [
        {"task_id": tid, "successes": counts[tid][0], "outcomes": counts[tid][1],
         "scores": [t.score for t in ts]}
        for tid, ts in counted.items()
        if ts and stats.flaky([(t.status, counted_score(t)) for t in ts])
    ]
    listed: Listed = {}
    if k > 1:  # each task's trials, listed (the records are in tasks/<id>/[trial-<n>/])
        listed["trials_by_task"] = {
            tid: [{"trial": t.trial, "status": t.status, "score": t.score,
                   "error_type": t.error_type, "worker": t.worker} for t in ts]
            for tid, ts in by_task.items()
        }
    return {
        **listed,
        "trials": k,
        "success_rate_ci": rate_ci(counted),
        "mean_score_ci": score.to_json() if score else None,
        "success_rate_ci_outcomes_only": rate_ci(outcomes_only),
        "by_domain_ci": by_domain_ci,
        "pass_at_k": pass_at,
        "pass_all_k": pass_all,
        "flaky_tasks": flaky,
    }


def compute_summary(run_dir: Path | str) -> Summary:
    """The run's summary (the ``summary.json`` document), computed from its records on disk
    (:func:`summarize` of :func:`read_metadata` and :func:`read_records`).

    Raises:
        InvalidRunInputError: the folder is not a run folder or a record is unreadable.
    """
    path = Path(run_dir)
    return summarize(read_metadata(path), read_records(path), run=path.name)


def summarize(
    metadata: RunMetadata, records: Iterable[TaskExecution], *, run: str
) -> Summary:
    """The run's summary (the ``summary.json`` document) from its metadata and its final
    records (what the runner holds when a run ends, or what :func:`compute_summary` reads), put
    in the run's order: its tasks' (``task_ids``) and each task's trials; tasks the metadata
    does not list follow in name order.

    Quarantined workers are the metadata's (``"quarantined_workers"``: names), where the runner
    records them; tasks listed in the metadata without a record yet are reported as
    ``task_ids_pending``.
    """
    order = {str(tid): i for i, tid in enumerate(metadata.get("task_ids") or [])}
    records = sorted(records, key=lambda r: (order.get(r.task_id, len(order)), r.task_id, r.trial))
    items = [TaskOutcome.from_execution(r) for r in records]
    from evals.run.pools import host_namer, namer, session_pools

    named = namer(metadata)  # a run that ran on several pools: bare names are its first pool's
    quarantined = sorted(named(str(w)) for w in metadata.get("quarantined_workers") or [])
    workers: defaultdict[str, dict[str, Any]] = defaultdict(
        lambda: {"tasks": 0, "errors": 0, "quarantined": False})
    for item in items:
        if item.worker is None:
            continue
        workers[named(item.worker)]["tasks"] += 1
        workers[named(item.worker)]["errors"] += item.status == "error"
    for record in records:
        # Failed attempts count against the worker they happened on, even when the task was
        # finished elsewhere (or by no worker at all): a worker that lost every task it took
        # must not show 0 errors. An attempt cut short by a stopped controller or a lost SSH
        # path is not its worker's error (AttemptRecord.failed).
        for attempt in record.previous_attempts:
            if isinstance(attempt.worker, str) and attempt.worker and attempt.failed:
                workers[named(attempt.worker)]["errors"] += 1
    lost_hosts = [*map(host_namer(metadata), metadata.get("quarantined_hosts") or [])]
    for name in [*quarantined, *(str(n) for h in lost_hosts for n in h.get("workers") or [])]:
        workers[named(name)]["quarantined"] = True
    recorded = {t.task_id for t in items}
    multi = _by_pool(metadata, records)
    trials = metadata.get("trials")
    return {
        "run": metadata.get("run", run),
        "status": metadata.get("status"),
        "agent": metadata.get("agent"),
        "answer_visible_agents": list(metadata.get("answer_visible_agents") or []),
        "pool": metadata.get("pool"),
        "session_pools": session_pools(metadata),  # the pool each session ran on
        "price_per_hour": metadata.get("price_per_hour"),
        **multi,  # by_pool: a multi-pool run's rows (where each task ran)
        **aggregate(items),
        **statistics(items, trials if isinstance(trials, int) and trials > 0 else None,
                     _base_task(items)),
        "workers": dict(sorted(workers.items())),
        "quarantined_workers": quarantined,
        # a host lost whole (every worker of it at once): named once, with its workers
        "quarantined_hosts": lost_hosts,
        "task_ids_not_run": [t.task_id for t in items if t.status == "not_run"],
        "task_ids_pending": [str(t) for t in metadata.get("task_ids") or []
                             if str(t) not in recorded],
        # run --rerun-errors: each session's reopened tasks (their earlier attempts are kept)
        "reruns": list(metadata.get("reruns") or []),
        "rejected_actions": sum(r.rejected_actions for r in records),
        "resets": reset_summary(records),
        # --variations: each goal style beside the originals of the same tasks
        "goal_styles": _goal_styles(items),
    }


def _base_task(items: list[TaskOutcome]) -> Any:
    """For a ``--variations`` run, ``task_id -> original task``: its headline intervals count
    an original and its rewordings as one cluster. ``None`` for any other run."""
    from waa_client.variations import base_of, style_of

    if not any(style_of(t.task_id) for t in items):
        return None
    return base_of


def _goal_styles(items: list[TaskOutcome]) -> list[dict[str, Any]]:
    """``goal_styles`` rows (none for a run without goal variations)."""
    from evals.run.variations import compare_styles

    rows = compare_styles(
        (t.task_id, "failure" if t.status == "error" and t.counts_for_agent else t.status,
         counted_score(t) if t.counts_for_agent else t.score)
        for t in items if t.status in ("success", "failure", "error"))
    return [r.to_json() for r in rows] if any(r.style != "original" for r in rows) else []


def _by_pool(metadata: RunMetadata, records: list[TaskExecution]) -> Listed:
    """``{"by_pool": {...}}`` for a run over several pools (``{}`` otherwise): per pool its
    cloud, price and workers, the tasks that ended on its workers (by status), the worker time
    it billed (every attempt on it, including those of tasks finished elsewhere) and its cost.

    A task's pool is its final worker's (``<pool>/<worker>``); its model cost counts there.
    """
    pools = metadata.get("pools")
    if not isinstance(pools, list):
        return {}
    rows: dict[str, dict[str, Any]] = {}
    for entry in pools:
        if not isinstance(entry, dict):
            continue
        rows[str(entry.get("name"))] = {
            "cloud": entry.get("cloud"),
            "price_per_hour": entry.get("price_per_hour"),
            "workers": len(entry.get("workers") or []),
            "tasks": 0, "successes": 0, "failures": 0, "errors": 0,
            "worker_seconds": 0.0, "vm_usd": 0.0, "model_usd": 0.0,
        }
    for record in records:
        cost = record.cost
        for name, part in cost.by_pool.items():
            if name in rows and isinstance(part, dict):
                rows[name]["worker_seconds"] += float(part.get("worker_seconds") or 0.0)
                rows[name]["vm_usd"] += float(part.get("vm_usd") or 0.0)
        worker = record.worker
        pool = worker.partition("/")[0] if isinstance(worker, str) and "/" in worker else None
        if pool is None or pool not in rows:
            continue
        row = rows[pool]
        row["tasks"] += 1
        key = {"success": "successes", "failure": "failures", "error": "errors"}.get(
            record.status.value)
        if key:
            row[key] += 1
        row["model_usd"] += float(cost.model_usd or 0.0)
    for row in rows.values():
        row["worker_seconds"] = round(row["worker_seconds"], 3)
        row["vm_usd"] = round(row["vm_usd"], 6)
        row["model_usd"] = round(row["model_usd"], 6)
        row["total_usd"] = round(row["vm_usd"] + row["model_usd"], 6)
    return {"by_pool": rows}


# --- the public API's metrics ------------------------------------------------------------------


def _outcome_of(result: Any) -> TaskOutcome:
    """Read a result object (attributes) or mapping (keys) from the public API."""

    execution = getattr(result, "execution", None)
    if isinstance(execution, TaskExecution):
        # a BenchmarkResult of the API: derived from the same record, in the same one place
        return TaskOutcome.from_execution(execution)

    def get(name: str, default: Any = None) -> Any:
        if isinstance(result, Mapping):
            return result.get(name, default)
        return getattr(result, name, default)

    status = get("status")
    if status not in STATUSES:
        if get("error_type") or get("error"):
            status = "error"
        else:
            status = "success" if get("success") else "failure"
    steps = get("num_steps", get("steps", 0))
    if not isinstance(steps, int):
        steps = len(steps) if isinstance(steps, list) else 0
    return TaskOutcome(
        task_id=str(get("task_id")),
        domain=str(get("domain") or "unknown"),
        status=status,
        score=_as_float(get("score")),
        steps=steps,
        error_type=get("error_type") or ("unknown" if status == "error" else None),
        duration_s=_as_float(get("total_time_seconds", get("duration_s"))),
    )


def compute_metrics(results: Iterable[Any]) -> dict[str, Any]:
    """Aggregate metrics of results from :func:`evals.evaluate_agent_on_benchmark`.

    Accepts result objects or mappings with ``task_id``, ``domain``, ``success``, ``score``,
    ``steps`` (a count) and ``error``/``error_type``. The keys follow the reference tool's
    (``num_tasks``, ``success_rate``, ``avg_score``, ``avg_steps``, ``avg_time_seconds``, ...),
    with this project's counting rule: ``success_rate`` and ``avg_score`` count outcomes and
    the agent's own errors as failures (other errors are in ``error_count`` and
    ``by_error_type`` only). ``success_rate`` is ``None`` when
    every task errored, as ``summary.json`` and the CLI's ``n/a`` say: a 0.0 there would read as
    an agent that failed every task. No results at all, and the other averages with nothing to
    count over, give ``0.0``, as the reference tool's do.

    Returns:
        A dict with ``num_tasks``, ``num_outcomes``, ``success_count``, ``fail_count``,
        ``error_count``, ``success_rate``, ``avg_score``, ``avg_steps``, ``avg_time_seconds``,
        ``num_infrastructure_failures``, ``num_tasks_excluding_infra``,
        ``success_rate_excluding_infra``, ``by_domain`` and ``by_error_type``.
    """
    items = [_outcome_of(r) for r in results]
    agg = aggregate(items)
    non_infra = [t for t in items if t.error_type != "infrastructure"]
    non_infra_success = sum(1 for t in non_infra if t.status == "success")
    return {
        "num_tasks": len(items),
        "num_outcomes": agg["outcomes"],
        "success_count": agg["successes"],
        "fail_count": agg["failures"],
        "error_count": agg["errors"],
        # None when every task errored (the CLI's n/a); [] gives 0.0, as the reference's does
        "success_rate": None if items and not agg["counted"] else agg["success_rate"] or 0.0,
        "avg_score": agg["avg_score"] or 0.0,
        "avg_steps": agg["avg_steps"] or 0.0,
        "avg_time_seconds": _mean(t.duration_s for t in items if t.duration_s is not None) or 0.0,
        "num_infrastructure_failures": len(items) - len(non_infra),
        "num_tasks_excluding_infra": len(non_infra),
        "success_rate_excluding_infra": non_infra_success / len(non_infra) if non_infra else 0.0,
        "by_domain": agg["by_domain"],
        "by_error_type": agg["by_error_type"],
    }


# --- printing ----------------------------------------------------------------------------------


def fmt_rate(value: float | None) -> str:
    """``0.5`` -> ``50.0%``; ``None`` -> ``n/a``."""
    return "n/a" if value is None else f"{value * 100:.1f}%"


def fmt_num(value: float | None, digits: int = 3) -> str:
    """A fixed-point number, or ``n/a``."""
    return "n/a" if value is None else f"{value:.{digits}f}"


def table(headers: list[str], rows: list[list[str]], align: str = "") -> str:
    """A plain-text table.

    Args:
        headers: Column titles.
        rows: Cells, one list per row.
        align: One letter per column, ``l`` or ``r``; by default the first column is
            left-aligned and the others (numbers) right-aligned.
    """
    align = align or "l" + "r" * (len(headers) - 1)
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    lines = []
    for row in [headers, *rows]:
        cells = [
            str(c).ljust(widths[i]) if align[i] == "l" else str(c).rjust(widths[i])
            for i, c in enumerate(row)
        ]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def format_summary(summary: Summary) -> str:
    """The end-of-run summary: the reference tool's lines, then per-domain, error-type, cost.

    Args:
        summary: a document from :func:`compute_summary` (or ``summary.json``).
    """
    lines = [
        f"Attempts: {summary['attempts']}",
        f"Outcomes: {summary['outcomes']}  "
        f"(success {summary['successes']}, failure {summary['failures']})",
        f"Errors: {summary['errors']}",
    ]
    if summary.get("not_run"):
        lines.append(f"Not run: {summary['not_run']}")
    lines += [
        f"Success rate: {fmt_rate(summary['success_rate'])}{_rate_note(summary)}",
        f"Mean score: {fmt_num(summary['avg_score'])} "
        "(WAA's headline: the mean score over scored tasks"
        + (f"; {fmt_num(summary.get('avg_score_outcomes_only'))} over outcomes only)"
           if summary.get("agent_errors") else ")"),
        f"Avg steps: {fmt_num(summary['avg_steps'], 1)}",
    ]
    if summary.get("rejected_actions"):
        lines.append(f"Actions rejected by workers: {summary['rejected_actions']}")
    reruns = summary.get("reruns") or []
    if reruns:
        last = reruns[-1].get("tasks") or []
        lines.append(
            f"Rerun: {len(last)} task(s) that had ended in an infrastructure, setup or timeout "
            f"error (rerun {len(reruns)} time(s); earlier attempts kept in previous_attempts "
            "and tasks/<id>/attempt-<n>/)"
        )
    lines += _statistics_lines(summary)
    styles = summary.get("goal_styles") or []
    if styles:
        from evals.run.variations import format_styles

        lines += ["", *format_styles(styles)]
    by_domain = summary.get("by_domain") or {}
    if by_domain:
        domain_ci = summary.get("by_domain_ci") or {}
        rows = [
            [domain, *(str(d[k]) for k in ("attempts", "successes", "failures", "errors")),
             fmt_rate(d["success_rate"]), fmt_interval(domain_ci.get(domain), rate=True),
             fmt_num(d["avg_score"])]
            for domain, d in by_domain.items()
        ]
        headers = ["domain", "attempts", "success", "failure", "errors", "rate", "95% CI",
                   "mean score"]
        lines += ["", table(headers, rows)]
    by_error = summary.get("by_error_type") or {}
    if by_error:
        rows = [[kind, str(n)] for kind, n in by_error.items()]
        lines += ["", table(["error type", "tasks"], rows)]
    by_pool = summary.get("by_pool") or {}
    if by_pool:
        rows = [
            [name, str(row.get("cloud")),
             "n/a" if row.get("price_per_hour") is None else f"{row['price_per_hour']:g}",
             *(str(row[k]) for k in ("workers", "tasks", "successes", "failures", "errors")),
             f"{float(row['worker_seconds']) / 3600:.3f}", f"${float(row['total_usd']):.4f}"]
            for name, row in by_pool.items()
        ]
        headers = ["pool", "cloud", "$/hour", "workers", "tasks", "success", "failure",
                   "errors", "worker-hours", "cost"]
        lines += ["", table(headers, rows, align="ll" + "r" * 8)]
    sessions = sessions_fact(summary)
    if sessions:
        lines += ["", ": ".join(sessions)]
    quarantined = summary.get("quarantined_workers") or []
    if quarantined:
        lines += ["", f"Quarantined workers: {', '.join(quarantined)}"]
    for lost in summary.get("quarantined_hosts") or []:
        lines += ["", f"Quarantined host {lost.get('host')} (workers "
                      f"{', '.join(lost.get('workers') or [])}): {lost.get('reason')}"]
    opted_in = summary.get("answer_visible_agents") or []
    if opted_in:
        lines += ["", f"Agent saw the answers: {', '.join(opted_in)} (opted in to the task's "
                      "evaluator data; not a benchmark result)"]
    lines += reset_lines(summary)
    lines += _cost_lines(summary)
    return "\n".join(lines)


def sessions_fact(summary: Summary) -> tuple[str, str] | None:
    """``("Sessions ran on pools", "a, then b")``: the pools a run's sessions ran on, in order,
    as the printed summary and the run page say them; ``None`` when every session ran on one
    pool (the pool the run names says it all)."""
    sessions = summary.get("session_pools") or []
    if len(set(sessions)) < 2:
        return None
    return "Sessions ran on pools", ", then ".join(sessions)


def _rate_note(summary: Summary) -> str:
    """What the headline rate counts, with the outcomes-only figure beside it where it differs
    and the sensitivity to every error counted as a failure."""
    agent_errors = int(summary.get("agent_errors") or 0)
    errors = int(summary.get("errors") or 0)
    if "agent_errors" not in summary:  # a summary from before the rule: outcomes only
        return " (outcomes only)"
    parts = [] if agent_errors else ["outcomes only"]
    if agent_errors:
        parts.append(f"{agent_errors} agent/timeout error(s) counted as failures; "
                     f"{fmt_rate(summary.get('success_rate_outcomes_only'))} over outcomes only")
    if errors > agent_errors:
        parts.append(f"{errors - agent_errors} infrastructure/setup/evaluation error(s) left "
                     f"out; {fmt_rate(summary.get('success_rate_all_errors_as_failures'))} if "
                     "every error were a failure")
    return f" ({'; '.join(parts)})"


def fmt_interval(interval: Mapping[str, Any] | None, *, rate: bool) -> str:
    """``[40.0%, 89.2%]`` (a rate) or ``[0.412, 0.771]``; ``n/a`` without an interval."""
    if not interval:
        return "n/a"
    show = fmt_rate if rate else fmt_num
    return f"[{show(interval['low'])}, {show(interval['high'])}]"


def _statistics_lines(summary: Summary) -> list[str]:
    """The intervals, pass@k / pass^k and flaky tasks (a summary from before them: none)."""
    if "success_rate_ci" not in summary:
        return []
    rate_ci, score_ci = summary.get("success_rate_ci"), summary.get("mean_score_ci")
    lines = [
        "",
        f"95% CI of the success rate: {fmt_interval(rate_ci, rate=True)}"
        + (f" ({rate_ci['method']})" if rate_ci else ""),
        f"95% CI of the mean score: {fmt_interval(score_ci, rate=False)}"
        + (f" ({score_ci['method']})" if score_ci else ""),
    ]
    k = int(summary.get("trials") or 1)
    pass_at, pass_all = summary.get("pass_at_k") or {}, summary.get("pass_all_k") or {}
    left_out = int(pass_at.get("tasks_left_out") or 0)
    lines.append(
        f"Trials per task: {k}; pass@{k} {fmt_rate(pass_at.get('value'))}, "
        f"pass^{k} {fmt_rate(pass_all.get('value'))} (over {pass_at.get('tasks', 0)} task(s) "
        f"with {k} counted trial(s)"
        + (f"; {left_out} task(s) with fewer left out)" if left_out else ")")
    )
    if k > 1 and pass_at.get("by_k"):
        lines.append("  by k (the same tasks): " + ", ".join(
            f"pass@{j} {fmt_rate(v)} / pass^{j} {fmt_rate((pass_all.get('by_k') or {}).get(j))}"
            for j, v in pass_at["by_k"].items()))
    flaky = summary.get("flaky_tasks") or []
    if flaky:
        shown = ", ".join(
            f"{f['task_id']} ({f['successes']}/{f['outcomes']} success)" for f in flaky[:20]
        )
        more = f" and {len(flaky) - 20} more" if len(flaky) > 20 else ""
        lines.append(f"Flaky tasks ({len(flaky)}, trials disagree): {shown}{more}")
    elif k > 1:
        lines.append("Flaky tasks: none (every task's trials agree)")
    return lines


def _cost_lines(summary: Summary) -> list[str]:
    cost = summary.get("cost") or {}
    priced = summary.get("price_per_hour") is not None or any(
        cost.get(k) for k in ("vm_usd", "model_usd", "total_usd")
    ) or any(row.get("price_per_hour") is not None
             for row in (summary.get("by_pool") or {}).values())
    if not priced:
        return []
    hours = float(cost.get("worker_seconds", 0.0)) / 3600
    lines = [
        "",
        f"Cost: ${float(cost.get('total_usd', 0.0)):.4f} total",
        f"  workers: ${float(cost.get('vm_usd', 0.0)):.4f} ({hours:.3f} worker-hours)",
        f"  model:   ${float(cost.get('model_usd', 0.0)):.4f} "
        f"({cost.get('tokens_in', 0)} tokens in, {cost.get('tokens_out', 0)} out)",
    ]
    attempts = summary.get("attempts") or 0
    if attempts:
        lines.append(f"  per attempted task: ${float(cost.get('total_usd', 0.0)) / attempts:.4f}")
    return lines
