"""Run metrics: read a run folder's records, summarize them, print the summary.

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

import json
import math
import os
import stat
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evals.errors import InvalidRunInputError
from evals.results.records import TaskExecution, results_root, task_id_of_folder
from evals.results.trials import trial_key
from evals.run.reset import reset_lines, reset_summary
from oa_vm.kit import safe_fs
from oa_vm.kit.validate import Schema, record_problem

OUTCOMES = ("success", "failure")
STATUSES = ("success", "failure", "error", "not_run")
COST_KEYS = ("worker_seconds", "vm_usd", "model_usd", "total_usd")
AGENT_ERROR_TYPES = frozenset({"agent", "timeout"})
"""Errors that are the agent's own (it raised, or ran out of steps or time): they count as
failures scoring 0 in every headline figure. Leaving them out would reward crashing: an agent
that dies on hard tasks would score higher than one that fails them politely."""


# --- locating and reading a run folder ---------------------------------------------------------


_NAME_MAX = 255  # bytes in one file name on the file systems runs live on (ext4, APFS, NTFS)


def find_run(run_name: str, results_dir: Path | str | None = None) -> Path:
    """The folder of the run named ``run_name``.

    Raises:
        InvalidRunInputError: the name is not a plain folder name, or no such run exists (the
            message lists the runs that do).
    """
    if not run_name or run_name in (".", "..") or "/" in run_name or "\\" in run_name:
        raise InvalidRunInputError(
            f"invalid run name {run_name!r}: give the run folder's name, without slashes"
        )
    if len(os.fsencode(run_name)) > _NAME_MAX:
        raise InvalidRunInputError(
            f"invalid run name {run_name[:40]!r}... ({len(run_name)} characters): a run folder's "
            f"name is at most {_NAME_MAX} bytes; give the run folder's name"
        )
    root = results_root(results_dir)
    path = root / run_name
    if os.path.lexists(path):
        check_readable_folder(root, path)
    if not (path / "metadata.json").is_file():
        known = list_runs(root)
        hint = f"known runs: {', '.join(known)}" if known else "it holds no runs"
        raise InvalidRunInputError(
            f"no run named {run_name!r} in {root} ({hint}); "
            "pass --results-dir if it lives elsewhere"
        )
    return path


def check_readable_folder(root: Path, path: Path) -> None:
    """The rule of every reader of a results folder, the writers' own (:mod:`oa_vm.kit.safe_fs`):
    the results folder may be a symlink of ours (to another disk), but a run folder in it, and
    every record read from it, must be a real folder or file owned by us or root, never a
    symlink: one planted there would make ``view`` or ``compare`` read (and publish on a page)
    whatever it points at.

    Raises:
        InvalidRunInputError: a symlink, or a folder of another user, on the way.
    """
    try:
        safe_fs.check_dir(root, own_link=True)
        if path != root:
            safe_fs.check_dir(path)
    except safe_fs.UnsafePathError as exc:
        raise InvalidRunInputError(f"refusing to read {exc.path}: {exc.reason}") from None


def _check_record(path: Path) -> None:
    try:
        info = os.lstat(path)
    except OSError:
        return  # missing: the reader says so
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
        raise InvalidRunInputError(
            f"refusing to read {path}: it is a symlink or not a regular file; a run folder's "
            "records are plain files (remove it and run the command again)")


def list_runs(root: Path) -> list[str]:
    """Names of the run folders under ``root`` (those with a ``metadata.json``), sorted."""
    if not root.is_dir():
        return []
    return sorted(p.parent.name for p in root.glob("*/metadata.json"))


_S, _OS, _N, _ON = (str,), (str, type(None)), (int, float), (int, float, type(None))
# pool and cloud are null in a run of the reference's API (evals.compat.benchmark_api), which may
# also leave the task time limit unset
METADATA_SCHEMA: Schema = {
    "run": _S, "pool": _OS, "cloud": _OS, "agent": _S, "answer_visible_agents": (list,),
    "selection": _S, "task_ids": (list,), "trials": (int,), "variations": _OS,
    "max_steps": (int,), "max_attempts": (int,), "task_timeout_s": _ON, "max_cost_usd": _ON,
    "price_per_hour": _ON, "versions": (dict,), "workers": (list,), "started_at": _OS,
    "ended_at": _OS, "status": _S, "quarantined_workers": (list,), "reset": (dict,),
    "quarantined_hosts": [{"host": _S, "workers": (list,), "reason": _S}],
    "cost": (dict,), "warning": _OS, "warning_cause": _OS,
}
"""What ``metadata.json``'s fields must be (:func:`oa_vm.kit.validate.record_problem`)."""

EXECUTION_SCHEMA: Schema = {
    "task_id": _S, "domain": _OS, "instruction": _OS, "infeasible": (bool,), "status": _S,
    "score": _ON, "error_type": _OS, "error_message": _OS, "reason": _OS, "worker": _OS,
    "attempts": (int,), "started_at": _OS, "ended_at": _OS, "duration_s": _ON,
    "last_action": _OS, "steps": (list,), "cost": (dict, type(None)),
    "previous_attempts": (list,), "reset": _OS, "reset_s": _ON, "fingerprint": (dict, type(None)),
    "trial": (int,),
}
"""What an ``execution.json``'s fields must be."""

SUMMARY_SCHEMA: Schema = {
    "run": _S, "status": _S, "agent": _S, "pool": _OS, "attempts": (int,), "outcomes": (int,),
    "counted": (int,), "successes": (int,), "failures": (int,), "errors": (int,),
    "by_domain": (dict,), "by_error_type": (dict,), "cost": (dict,), "trials": (int,),
    "workers": (dict,), "task_ids_not_run": (list,), "task_ids_pending": (list,),
    "reruns": (list,), "resets": (dict,),
}
"""What ``summary.json``'s fields must be."""

_SCHEMAS = {"metadata.json": METADATA_SCHEMA, "execution.json": EXECUTION_SCHEMA,
            "summary.json": SUMMARY_SCHEMA}


def _read_json(path: Path) -> dict[str, Any]:
    _check_record(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidRunInputError(f"{path} is missing; is this a run folder?") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidRunInputError(f"cannot read {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise InvalidRunInputError(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}); "
            "fix or move the file, then try again"
        ) from exc
    if not isinstance(data, dict):
        raise InvalidRunInputError(f"{path} does not hold a JSON object")
    problem = record_problem(data, _SCHEMAS.get(path.name, {}))
    if problem:
        raise InvalidRunInputError(f"{path}: {problem}; fix or move the file, then try again")
    return data


def read_metadata(run_dir: Path) -> dict[str, Any]:
    """The run's ``metadata.json``.

    Raises:
        InvalidRunInputError: the folder is not a run folder or the file is unreadable.
    """
    if not run_dir.is_dir():
        raise InvalidRunInputError(f"run folder {run_dir} does not exist")
    return _read_json(run_dir / "metadata.json")


def read_executions(run_dir: Path) -> list[dict[str, Any]]:
    """Every final task record (``tasks/<id>/execution.json``), in the run's task order.

    Tasks still running (no ``execution.json`` yet) are skipped. Tasks the metadata does not list
    follow in name order, so nothing recorded is hidden.

    Raises:
        InvalidRunInputError: a record is unreadable or has an unknown status (the message names
            the file).
    """
    return [record for _, record in read_execution_files(run_dir)]


def read_execution_files(run_dir: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Like :func:`read_executions`, with each record's task folder (where its screenshots are)."""
    tasks_dir = run_dir / "tasks"
    if not tasks_dir.is_dir():
        return []
    order = {tid: i for i, tid in enumerate(_metadata_task_ids(run_dir))}

    def where(path: Path) -> tuple[str, int]:
        """The task and trial a record's path is of (trials >= 2 in ``trial-<n>/``)."""
        folder = path.parent
        if folder.parent != tasks_dir and folder.name.startswith("trial-"):
            number = folder.name.removeprefix("trial-")
            return task_id_of_folder(folder.parent.name), int(number) if number.isdigit() else 0
        return task_id_of_folder(folder.name), 1

    found = [*tasks_dir.glob("*/execution.json"), *tasks_dir.glob("*/trial-*/execution.json")]
    paths = sorted(found, key=lambda p: (order.get(where(p)[0], len(order)), *where(p)))
    records = []
    for path in paths:
        for folder in path.relative_to(run_dir).parents:  # tasks/, tasks/<id>/, trial-<n>/
            if folder != Path("."):
                check_readable_folder(run_dir, run_dir / folder)
        record = _read_json(path)
        status = record.get("status")
        if status not in STATUSES:
            raise InvalidRunInputError(
                f"{path}: unknown status {status!r} (expected one of {', '.join(STATUSES)})"
            )
        task_id, trial = where(path)
        record.setdefault("task_id", task_id)
        record.setdefault("trial", trial)
        records.append((path.parent, record))
    return records


def read_trials(run_dir: Path) -> dict[str, list[TaskOutcome]]:
    """Every trial's final record, grouped by task (in the run's task order).

    A run without ``--trials`` has one trial per task: its ``execution.json``.

    Raises:
        InvalidRunInputError: as :func:`read_executions`.
    """
    grouped: dict[str, list[TaskOutcome]] = {}
    for record in read_records(run_dir):
        item = TaskOutcome.from_execution(record)
        grouped.setdefault(item.task_id, []).append(item)
    return grouped


def read_records(run_dir: Path) -> list[TaskExecution]:
    """Every final task record, parsed (:meth:`evals.results.records.TaskExecution.from_json`), in
    the order of :func:`read_executions`.

    Raises:
        InvalidRunInputError: as :func:`read_executions`, or a record that does not parse (the
            message names the file).
    """
    return [_parse(folder / "execution.json", doc) for folder, doc in read_execution_files(run_dir)]


def missing_trials(run_dir: Path) -> list[str]:
    """The trials of a finished run that ``metadata.json`` lists (its tasks times its trials)
    and that have no ``execution.json``: a lost or deleted record, left out of every figure.
    Empty while the run is running (its pending trials have no record yet).

    The readers of a run (``view``, ``compare``) say these, so a missing record is never
    omitted silently.
    """
    metadata = read_metadata(run_dir)
    if metadata.get("status") in (None, "running"):
        return []
    recorded = metadata.get("trials")
    trials = recorded if isinstance(recorded, int) else 1
    found = {(str(r["task_id"]), int(r["trial"])) for _, r in read_execution_files(run_dir)}
    return [trial_key(str(tid), n) for tid in _metadata_task_ids(run_dir)
            for n in range(1, max(trials, 1) + 1) if (str(tid), n) not in found]


def missing_line(run: str, missing: list[str]) -> str:
    """The one sentence saying a run's missing records (:func:`missing_trials`)."""
    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    return (f"{run}: {len(missing)} trial(s) listed in metadata.json have no execution.json "
            f"({shown}); they are left out of every figure: resume the run to record them")


def _parse(path: Path, document: dict[str, Any]) -> TaskExecution:
    try:
        return TaskExecution.from_json(document)
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidRunInputError(
            f"{path}: not a task record ({type(exc).__name__}: {exc}); fix or move the file, "
            "then try again"
        ) from exc


def _metadata_task_ids(run_dir: Path) -> list[str]:
    path = run_dir / "metadata.json"
    if not path.is_file():
        return []
    ids = _read_json(path).get("task_ids") or []
    return [str(t) for t in ids]


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


def _counts(items: list[TaskOutcome]) -> dict[str, Any]:
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


def aggregate(items: list[TaskOutcome]) -> dict[str, Any]:
    """The counts, rates and tables every summary shares (see the module docstring)."""
    attempted = [t for t in items if t.attempted]
    by_domain: dict[str, dict[str, Any]] = {}
    for domain in sorted({t.domain for t in items}):
        counts = _counts([t for t in items if t.domain == domain])
        for key in ("outcomes", "counted", "agent_errors", "success_rate_outcomes_only",
                    "avg_score_outcomes_only", "success_rate_all_errors_as_failures"):
            counts.pop(key)  # the headline figures only (the run's keep the rest)
        by_domain[domain] = counts
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
               base_task: Any = None) -> dict[str, Any]:
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
    listed: dict[str, Any] = {}
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


def compute_summary(run_dir: Path | str) -> dict[str, Any]:
    """The run's summary (the ``summary.json`` document), computed from its task records.

    Quarantined workers are read from ``metadata.json`` (``"quarantined_workers"``: names), where
    the runner records them; tasks listed in the metadata without a record yet are reported as
    ``task_ids_pending``.

    Raises:
        InvalidRunInputError: the folder is not a run folder or a record is unreadable.
    """
    path = Path(run_dir)
    metadata = read_metadata(path)
    documents = read_execution_files(path)
    records = [_parse(folder / "execution.json", doc) for folder, doc in documents]
    items = [TaskOutcome.from_execution(r) for r in records]
    quarantined = sorted(str(w) for w in metadata.get("quarantined_workers") or [])
    workers: dict[str, dict[str, Any]] = {}
    for item in items:
        if item.worker is None:
            continue
        entry = workers.setdefault(item.worker, {"tasks": 0, "errors": 0, "quarantined": False})
        entry["tasks"] += 1
        entry["errors"] += item.status == "error"
    for record in records:
        # Failed attempts count against the worker they happened on, even when the task was
        # finished elsewhere (or by no worker at all): a worker that lost every task it took
        # must not show 0 errors.
        for attempt in record.previous_attempts:
            if isinstance(attempt.worker, str) and attempt.worker:
                entry = workers.setdefault(
                    attempt.worker, {"tasks": 0, "errors": 0, "quarantined": False})
                entry["errors"] += 1
    lost_hosts = [dict(h) for h in metadata.get("quarantined_hosts") or []]
    for name in [*quarantined, *(str(n) for h in lost_hosts for n in h.get("workers") or [])]:
        workers.setdefault(name, {"tasks": 0, "errors": 0, "quarantined": False})
        workers[name]["quarantined"] = True
    recorded = {t.task_id for t in items}
    multi = _by_pool(metadata, records)
    trials = metadata.get("trials")
    return {
        "run": metadata.get("run", path.name),
        "status": metadata.get("status"),
        "agent": metadata.get("agent"),
        "answer_visible_agents": list(metadata.get("answer_visible_agents") or []),
        "pool": metadata.get("pool"),
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
        "task_ids_pending": [t for t in _metadata_task_ids(path) if t not in recorded],
        # run --rerun-errors: each session's reopened tasks (their earlier attempts are kept)
        "reruns": list(metadata.get("reruns") or []),
        "rejected_actions": sum(r.rejected_actions for r in records),
        "resets": reset_summary([doc for _, doc in documents]),
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


def _by_pool(metadata: Mapping[str, Any], records: list[TaskExecution]) -> dict[str, Any]:
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


def write_summary(run_dir: Path | str) -> dict[str, Any]:
    """Compute the summary and write it to ``<run_dir>/summary.json`` atomically; return it."""
    from oa_vm import atomic_write_json

    summary = compute_summary(run_dir)
    atomic_write_json(Path(run_dir) / "summary.json", summary)
    return summary


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


def format_summary(summary: Mapping[str, Any]) -> str:
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
            [
                domain,
                str(d["attempts"]),
                str(d["successes"]),
                str(d["failures"]),
                str(d["errors"]),
                fmt_rate(d["success_rate"]),
                fmt_interval(domain_ci.get(domain), rate=True),
                fmt_num(d["avg_score"]),
            ]
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
            [
                name,
                str(row.get("cloud")),
                "n/a" if row.get("price_per_hour") is None else f"{row['price_per_hour']:g}",
                str(row["workers"]),
                str(row["tasks"]),
                str(row["successes"]),
                str(row["failures"]),
                str(row["errors"]),
                f"{float(row['worker_seconds']) / 3600:.3f}",
                f"${float(row['total_usd']):.4f}",
            ]
            for name, row in by_pool.items()
        ]
        headers = ["pool", "cloud", "$/hour", "workers", "tasks", "success", "failure",
                   "errors", "worker-hours", "cost"]
        lines += ["", table(headers, rows, align="ll" + "r" * 8)]
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


def _rate_note(summary: Mapping[str, Any]) -> str:
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


def _statistics_lines(summary: Mapping[str, Any]) -> list[str]:
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


def _cost_lines(summary: Mapping[str, Any]) -> list[str]:
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
