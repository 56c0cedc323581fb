"""The run folder: metadata, the task as run, one final execution record per task, screenshots.

Layout (the contract the summary and the viewer read)::

    <root>/<run>/metadata.json
    <root>/<run>/queue.sqlite                      (evals.run.queue, the runner's own)
    <root>/<run>/tasks/<task_id>/task.json
    <root>/<run>/tasks/<task_id>/execution.json
    <root>/<run>/tasks/<task_id>/step_000.png ...  (the observation before each action)

Every JSON file is written atomically (temp file, fsync, rename), so a crash leaves the old file or
the new one. ``execution.json`` is a copy of what the queue committed; the queue stays the source
of truth, and a resumed run rewrites a missing copy from it.
"""

from __future__ import annotations

import copy
import gzip
import json
import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from datetime import UTC, datetime
from enum import StrEnum
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any, TypedDict, Unpack

from evals.results.trials import split_key, trial_folder, trial_key
from oa_vm import atomic_write_json
from oa_vm.kit import safe_fs
from oa_vm.kit.redact import redact_json, redact_text

# where runs live: one rule, shared with oa-vm doctor; re-exported for the run commands
from oa_vm.kit.results_dir import DEFAULT_RESULTS_DIR as DEFAULT_RESULTS_DIR
from oa_vm.kit.results_dir import RESULTS_ENV as RESULTS_ENV
from oa_vm.kit.results_dir import results_root as results_root
from waa_client.inputs import id_problem

_UNSET: Any = object()


class TaskStatus(StrEnum):
    """A task's final status: an outcome (success/failure), an error, or not run (budget)."""

    SUCCESS = "success"
    FAILURE = "failure"
    ERROR = "error"
    NOT_RUN = "not_run"


class ErrorType(StrEnum):
    """Why a task ended in ``error`` (or ``not_run``)."""

    INFRASTRUCTURE = "infrastructure"
    SETUP = "setup"
    AGENT = "agent"
    EVALUATION = "evaluation"
    TIMEOUT = "timeout"
    BUDGET = "budget"
    TASK = "task"
    """The task's own code failed (a Cua-Bench module's function raised, hung or returned no
    rewards): neither the worker's nor the agent's; never retried."""


def task_folder_name(task_id: str) -> str:
    """The folder of a task ID under ``tasks/``: the ID itself, or for a Cua-Bench variant
    (``<module-dir>/<index>``) the two parts joined by ``~`` (a character no ID part has).

    Raises:
        ValueError: an ID that could escape the folder or is no plain name.
    """
    problem = id_problem("task ID", task_id)
    if problem:
        raise ValueError(problem)
    return "~".join(task_id.split("/"))


def task_id_of_folder(name: str) -> str:
    """Inverse of :func:`task_folder_name`."""
    return name.replace("~", "/")


class RunStatus(StrEnum):
    """A run's status in ``metadata.json``."""

    RUNNING = "running"
    FINISHED = "finished"
    INTERRUPTED = "interrupted"
    BUDGET_STOPPED = "budget_stopped"


def now_iso() -> str:
    """Now as an ISO 8601 UTC timestamp (records never hold naive times)."""
    return datetime.now(UTC).isoformat()


@dataclass
class StepRecord:
    """One step of the agent loop: the observation's screenshot, the action and its result."""

    index: int
    action: dict[str, Any]
    started_at: str
    duration_s: float = 0.0
    screenshot: str | None = None
    window_title: str | None = None
    result: dict[str, Any] | None = None
    error: str | None = None
    usage: dict[str, Any] | None = None
    rejected: bool = False
    """The worker refused or failed the step's action (the reason is in ``error``)."""
    tree: str | None = None
    """The accessibility tree the agent was given, as a file beside the screenshot
    (``step_NNN.tree.xml.gz``, :func:`save_tree`); left out of the JSON when not recorded."""
    tree_truncated: bool = False
    """The tree was longer than :data:`TREE_LIMIT_BYTES` and its file holds the first part."""


@dataclass
class CostRecord:
    """What one task cost: worker time priced per worker-hour plus the model tokens it used."""

    worker_seconds: float = 0.0
    vm_usd: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    model_usd: float = 0.0
    total_usd: float = 0.0
    by_pool: dict[str, dict[str, float]] = field(default_factory=dict)
    """Multi-pool runs: ``{pool: {"worker_seconds", "vm_usd"}}``, what each pool billed (attempts
    on several pools happen when a task is retried elsewhere). Left out of the JSON when empty, so
    single-pool records keep their shape."""


@dataclass
class AttemptRecord:
    """An attempt that did not end the task (retried elsewhere); kept for the post-mortem.

    The one form of an attempt: an entry of the queue's history is its :meth:`to_json` (with the
    queue's ``reason`` and what it bills), a record's ``previous_attempts`` are read back from
    those entries by :meth:`from_json`, and a record's own attempt is
    :meth:`TaskExecution.attempt`."""

    attempt: int
    worker: str | None
    error_type: str | None
    error_message: str | None
    started_at: str | None
    ended_at: str | None

    @property
    def failed(self) -> bool:
        """Whether the attempt ended in an error of its own (it has a type: infrastructure,
        setup, timeout...), counted among its worker's errors as a final error is
        (``summary.json``'s ``workers``, and whatever else judges workers). False for an
        attempt cut short without a result (its controller stopped: killed, or its pool lease
        lost; or the SSH path to its worker went down; the queue's ``reason`` ``interrupted``,
        an ``error_message`` ``interrupted: ...`` and no type): nobody's fault, it counts
        nowhere but in what it billed."""
        return self.error_type is not None

    def to_json(self, **extra: Any) -> dict[str, Any]:
        """The attempt as a JSON object, with ``extra`` keys after its own."""
        return {**_plain(self), **extra}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AttemptRecord:
        """Inverse of :meth:`to_json` (other keys ignored, missing ones ``None``)."""
        return cls(**_known(cls, data, missing=None))


@dataclass
class TaskExecution:
    """The final record of one task (``tasks/<task_id>/execution.json``).

    ``score`` and ``reason`` are the checker's, set only for outcomes; an error carries
    ``error_type`` and ``error_message`` instead.
    """

    task_id: str
    domain: str
    instruction: str
    infeasible: bool
    status: TaskStatus
    score: float | None = None
    error_type: ErrorType | None = None
    error_message: str | None = None
    reason: str | None = None
    worker: str | None = None
    attempts: int = 0
    started_at: str | None = None
    ended_at: str | None = None
    duration_s: float = 0.0
    last_action: str | None = None
    steps: list[StepRecord] = field(default_factory=list)
    cost: CostRecord = field(default_factory=CostRecord)
    previous_attempts: list[AttemptRecord] = field(default_factory=list)
    reset: str | None = None
    """How the worker was reset before the task: ``clean`` (a snapshot of the whole machine
    put back) or ``stock`` (WAA's close windows and clear files); see :mod:`evals.run.reset`."""
    reset_s: float | None = None
    """Seconds the reset took (for ``clean``: the restore, WAA answering, the fingerprint)."""
    fingerprint: dict[str, Any] | None = None
    """``clean`` only: ``{"token", "expected", "marker_gone", "ok", ...}``, read from the guest
    after the restore (:func:`evals.run.reset.fingerprint_ok`)."""
    trial: int = 1  # which of the task's trials (evals.results.trials); left out of the JSON when 1
    egress: str | None = None
    """What the worker's guest could reach during the task (its pool's egress mode, see
    docs/security.md); left out of the JSON when unknown (pools from before egress modes)."""
    agent_traceback: str | None = None
    """``error/agent`` from a raising agent: its traceback as Python prints it (bounded, see
    :data:`evals.run.agent_loop.TRACEBACK_LIMIT`); left out of the JSON when there is none."""
    reward_components: list[float] | None = None
    """A Cua-Bench variant's rewards as its ``evaluate_task`` returned them (``score`` is their
    mean); left out of the JSON for other tasks."""
    state_diff: list[dict[str, Any]] | None = None
    """An OpenApps-style task's apps' state, before the agent against after
    (``[{"path", "before", "after"}]``, :func:`evals.tasks.openapps.classes.state_diff`); left out
    of the JSON for other tasks."""
    task_traceback: str | None = None
    """``error/task``: the traceback of what the task's module raised, from its own frames on;
    left out of the JSON when there is none."""

    @property
    def key(self) -> str:
        """The trial's key (:func:`evals.results.trials.trial_key`): the task ID for trial 1."""
        return trial_key(self.task_id, self.trial)

    @property
    def is_outcome(self) -> bool:
        """True for success/failure (scored by the checker)."""
        return self.status in (TaskStatus.SUCCESS, TaskStatus.FAILURE)

    def attempt(self) -> AttemptRecord:
        """This record's own attempt, as its task's history keeps it once the task runs again."""
        error_type = None if self.error_type is None else self.error_type.value
        return AttemptRecord(self.attempts, self.worker, error_type, self.error_message,
                             self.started_at, self.ended_at)

    @property
    def rejected_actions(self) -> int:
        """Actions the worker refused or failed in this task."""
        return sum(1 for step in self.steps if step.rejected)

    def to_json(self) -> dict[str, Any]:
        """The ``execution.json`` document (a copy: nothing in it is shared with the record)."""
        data: dict[str, Any] = _plain(self)
        data["status"] = self.status.value
        data["error_type"] = None if self.error_type is None else self.error_type.value
        if not self.cost.by_pool:
            del data["cost"]["by_pool"]  # single-pool records keep their shape
        if self.trial == 1:
            del data["trial"]  # records of runs without trials keep their shape
        # nor do records of pools from before egress modes, of agents that did not raise, of
        # tasks other than Cua-Bench variants and OpenApps-style ones
        for optional in ("egress", "agent_traceback", "reward_components", "task_traceback",
                         "state_diff"):
            if data[optional] is None:
                del data[optional]
        for step in data["steps"]:  # steps without a recorded tree keep their shape
            if step["tree"] is None:
                del step["tree"], step["tree_truncated"]
        # the one serializer of a record (execution.json, the queue, the page): no text a
        # worker or an exception produced crosses it with a credential (oa_vm.kit.redact)
        return dict(redact_json(data))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TaskExecution:
        """Inverse of :meth:`to_json`: the one parser of an ``execution.json`` document (the
        queue's committed record is the same document).

        Records of older runs load: a key the document lacks takes the field's default, and a
        key this version does not know is ignored (at the top level and in steps, cost and
        attempts). A field added to the record with a default needs nothing here unless its
        JSON form differs from its value (an enum, a nested record).

        Raises:
            KeyError: no ``task_id`` or ``status``.
            ValueError, TypeError: a value of the wrong kind (an unknown status, steps that are
                not a list of objects...).
        """
        values = _known(cls, data)
        error_type = data.get("error_type")
        values.update(
            task_id=str(data["task_id"]),
            domain=str(data.get("domain") or ""),
            instruction=str(data.get("instruction") or ""),
            infeasible=bool(data.get("infeasible", False)),
            status=TaskStatus(data["status"]),
            error_type=None if error_type is None else ErrorType(error_type),
            attempts=int(data.get("attempts") or 0),
            duration_s=float(data.get("duration_s") or 0.0),
            steps=[_step(i, step) for i, step in enumerate(data.get("steps") or [])],
            cost=CostRecord(**_known(CostRecord, data.get("cost") or {})),
            previous_attempts=[AttemptRecord.from_json(a)
                               for a in data.get("previous_attempts") or []],
            trial=int(data.get("trial") or 1),
        )
        return cls(**values)


_STEP_REQUIRED = frozenset({"index", "action", "started_at"})


def _step(index: int, data: Mapping[str, Any]) -> StepRecord:
    """A step of a record; index, action and start are always written, but a hand-made
    record may lack them."""
    values = _known(StepRecord, data)
    if not _STEP_REQUIRED.issubset(values):
        values = {"index": index, "action": {}, "started_at": "", **values}
    return StepRecord(**values)


def _known(cls: type, data: Mapping[str, Any], missing: Any = _UNSET) -> dict[str, Any]:
    """The items of ``data`` that are fields of the dataclass ``cls`` (a record written by
    another version may hold more); with ``missing``, absent fields take it.

    Raises:
        TypeError: ``data`` is not an object.
    """
    if type(data) is not dict and not isinstance(data, Mapping):  # the ABC check is slow
        raise TypeError(f"expected an object for {cls.__name__}, got {type(data).__name__}")
    known = _KNOWN.get(cls)
    if known is None:  # dataclasses.fields() per call made from_json several times slower
        known = _KNOWN[cls] = frozenset(f.name for f in fields(cls))
    if missing is not _UNSET:
        return {n: data.get(n, missing) for n in known}
    if known.issuperset(data):  # the usual case: a record of this version
        return dict(data)
    return {k: v for k, v in data.items() if k in known}


_KNOWN: dict[type, frozenset[str]] = {}


_FIELDS: dict[type, tuple[str, ...]] = {}
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _plain(value: Any) -> Any:
    """What :func:`dataclasses.asdict` makes of a record, a few times faster.

    ``asdict`` copies every value it does not know with ``copy.deepcopy``, which for a task of
    a few steps (actions, results, usage as small dicts) cost about 0.1 ms, twice per task, in
    the controller's busiest path. JSON-shaped values are copied here directly; anything else
    goes to ``deepcopy`` as before.
    """
    cls = type(value)
    if cls in _SCALARS:
        return value
    if cls is dict:
        return {k: v if type(v) in _SCALARS else _plain(v) for k, v in value.items()}
    if cls is list:
        return [v if type(v) in _SCALARS else _plain(v) for v in value]
    if cls is tuple:
        return tuple(_plain(v) for v in value)
    names = _FIELDS.get(cls)
    if names is None and is_dataclass(value) and not isinstance(value, type):
        names = _FIELDS[cls] = tuple(f.name for f in fields(value))
    if names is not None:
        plain = {}
        for name in names:
            v = getattr(value, name)
            plain[name] = v if type(v) in _SCALARS else _plain(v)
        return plain
    return copy.deepcopy(value)


@dataclass(frozen=True)
class TaskInfo:
    """What a record needs to know about a task before it runs."""

    task_id: str
    domain: str
    instruction: str
    infeasible: bool


def error_execution(
    info: TaskInfo, error_type: ErrorType, message: str, *, status: TaskStatus = TaskStatus.ERROR
) -> TaskExecution:
    """A final record for a task that ended (or never started) in error."""
    now = now_iso()
    return TaskExecution(
        task_id=info.task_id,
        domain=info.domain,
        instruction=info.instruction,
        infeasible=info.infeasible,
        status=status,
        error_type=error_type,
        error_message=message,
        started_at=None if status is TaskStatus.NOT_RUN else now,
        ended_at=None if status is TaskStatus.NOT_RUN else now,
    )


def versions() -> dict[str, str]:
    """Versions recorded in ``metadata.json``."""
    try:
        oa_vm_version = importlib_metadata.version("oa-vm")
    except importlib_metadata.PackageNotFoundError:
        oa_vm_version = "unknown"
    return {"oa_vm": oa_vm_version, "python": platform.python_version()}


class RunMetadata(TypedDict, total=False):
    """``metadata.json``: what a run was started with and how it stands. Written by
    :meth:`RunFolder.write_metadata`, read by :func:`evals.results.run_reader.read_metadata`;
    every key may be missing (runs of older releases, and of the reference's API, lack some)."""

    run: str
    pool: str | None  # a multi-pool run's names joined by "+" (evals.run.pools.summary_fields)
    cloud: str | None
    agent: str
    answer_visible_agents: list[str]
    selection: str
    task_ids: list[str]
    trials: int
    variations: str | None
    max_steps: int
    max_attempts: int
    task_timeout_s: float | None
    max_cost_usd: float | None
    price_per_hour: float | None
    versions: dict[str, str]
    workers: list[str]
    pools: list[dict[str, Any]]  # a multi-pool run's: each pool's name, cloud, price, workers
    started_at: str | None
    resumed_at: list[str]
    sessions: list[dict[str, Any]]  # {"pool", "started_at"} per session, the first first
    ended_at: str | None
    status: str
    stopped: str  # why a run lost its pool lease
    quarantined_workers: list[str]
    quarantined_hosts: list[dict[str, Any]]  # {"host", "workers", "reason"}
    reset: dict[str, Any]
    reruns: list[dict[str, Any]]  # --rerun-errors: {"at", "error_types", "tasks"} per session
    cost: dict[str, Any]
    warning: str | None
    warning_cause: str | None


class Counts(TypedDict):
    """A run's counts and rates (:func:`evals.run.metrics.aggregate`; see that module)."""

    attempts: int
    outcomes: int
    counted: int
    successes: int
    failures: int
    errors: int
    agent_errors: int
    not_run: int
    success_rate: float | None
    avg_score: float | None
    success_rate_outcomes_only: float | None
    avg_score_outcomes_only: float | None
    success_rate_all_errors_as_failures: float | None


class Aggregate(Counts):
    """:class:`Counts` with the run's tables (:func:`evals.run.metrics.aggregate`)."""

    avg_steps: float | None
    by_domain: dict[str, dict[str, Any]]
    by_error_type: dict[str, int]
    cost: dict[str, float]


class Listed(TypedDict, total=False):
    """What a summary lists for some runs only: a multi-pool run's rows, each task's trials of a
    run of several (:func:`evals.run.metrics.summarize`)."""

    by_pool: dict[str, dict[str, Any]]
    trials_by_task: dict[str, list[dict[str, Any]]]


class Statistics(Listed):
    """The run's intervals, pass@k and flaky tasks (:func:`evals.run.metrics.statistics`)."""

    trials: int
    success_rate_ci: dict[str, Any] | None
    mean_score_ci: dict[str, Any] | None
    success_rate_ci_outcomes_only: dict[str, Any] | None
    by_domain_ci: dict[str, dict[str, Any] | None]
    pass_at_k: dict[str, Any]
    pass_all_k: dict[str, Any]
    flaky_tasks: list[dict[str, Any]]


class Resets(TypedDict):
    """How the run's workers were reset (:func:`evals.run.reset.reset_summary`)."""

    counts: dict[str, int]
    unrecorded: int
    seconds: dict[str, dict[str, float]]  # per kind: {"median", "max"}
    fingerprints_checked: int
    fingerprints_bad: list[str]
    fingerprints_agree: bool | None
    warning: str | None


class Summary(Aggregate, Statistics):
    """``summary.json``: made by :func:`evals.run.metrics.summarize` (the one maker, from the
    metadata and the records), written by :meth:`RunFolder.write_summary`. Read back from disk
    by nothing: every reader computes it from the records as they stand."""

    run: str | None
    status: str | None
    agent: str | None
    answer_visible_agents: list[str]
    pool: str | None
    session_pools: list[str]
    price_per_hour: float | None
    workers: dict[str, dict[str, Any]]
    quarantined_workers: list[str]
    quarantined_hosts: list[dict[str, Any]]
    task_ids_not_run: list[str]
    task_ids_pending: list[str]
    reruns: list[dict[str, Any]]
    rejected_actions: int
    resets: Resets
    goal_styles: list[dict[str, Any]]


METADATA_FILE, EXECUTION_FILE, SUMMARY_FILE = "metadata.json", "execution.json", "summary.json"
"""The run's record files: written here, read by :mod:`evals.results.run_reader` only (a test
scans the code for their names)."""


class RunFolder:
    """Writes one run folder. Task IDs become folder names, so they are checked first."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def create(self) -> None:
        """Make the run folder (and the results folder above it), 0700 whatever the umask.

        Raises:
            FileExistsError: the run folder exists already (another run's name).
            oa_vm.kit.safe_fs.UnsafePathError: the results folder is a symlink or someone else's.
        """
        safe_fs.ensure_dir(self.path.parent)
        if os.path.lexists(self.path):
            raise FileExistsError(str(self.path))
        safe_fs.ensure_dir(self.path, root=self.path.parent)

    def ensure(self) -> Path:
        """The run folder, made if missing, checked (not a symlink, ours): for a resumed run."""
        return safe_fs.ensure_dir(self.path, root=self.path.parent)

    def open_private(self, name: str, append: bool = True) -> int:
        """A file descriptor on ``<run>/<name>`` (0600, never through a symlink)."""
        self.ensure()
        return safe_fs.open_private(self.path / name, append=append)

    @property
    def metadata_path(self) -> Path:
        """``metadata.json``."""
        return self.path / METADATA_FILE

    @property
    def queue_path(self) -> Path:
        """``queue.sqlite``."""
        return self.path / "queue.sqlite"

    def exists(self) -> bool:
        """Whether the run was started before (it has metadata)."""
        return self.metadata_path.is_file()

    def task_dir(self, task_id: str) -> Path:
        """``tasks/<task_id>/``; refuses IDs that could escape the folder.

        Given a trial's key (:mod:`evals.results.trials`), the trial's folder: ``tasks/<task_id>/``
        for trial 1, ``tasks/<task_id>/trial-<n>/`` for trial ``n``.
        """
        base, trial = split_key(task_id)
        name = task_folder_name(base)
        sub = trial_folder(trial)
        return self.path / "tasks" / name / sub if sub else self.path / "tasks" / name

    def write_metadata(self, data: RunMetadata) -> RunMetadata:
        """Replace ``metadata.json`` (credentials in its texts masked, :mod:`oa_vm.kit.redact`);
        returns the document as written. The one writer; the reader is
        :func:`evals.results.run_reader.read_metadata`."""
        written: RunMetadata = redact_json(data)
        atomic_write_json(self.metadata_path, written, root=self.path)
        self._metadata = written
        return written

    def update_metadata(self, **changes: Unpack[RunMetadata]) -> RunMetadata:
        """Merge ``changes`` into the ``metadata.json`` this folder wrote last (never read back:
        a run's metadata is its controller's alone) and return the document as written."""
        return self.write_metadata({**self._metadata, **changes})

    @property
    def summary_path(self) -> Path:
        """``summary.json``."""
        return self.path / SUMMARY_FILE

    def write_summary(self, summary: Summary) -> None:
        """Replace ``summary.json`` (atomically): the one writer of the run's summary."""
        atomic_write_json(self.summary_path, summary, root=self.path)

    def write_task(self, task_id: str, task: dict[str, Any]) -> None:
        """``tasks/<task_id>/task.json``: the task as it is run."""
        atomic_write_json(self.task_dir(task_id) / "task.json", task, root=self.path)

    def write_execution(
        self,
        execution: TaskExecution,
        document: dict[str, Any] | None = None,
        *,
        durable: bool = True,
    ) -> None:
        """``tasks/<task_id>/execution.json``; ``document`` is ``execution.to_json()`` when the
        caller already made it (the runner commits the same document to the queue first).

        ``durable=False`` (the dispatcher's per-task write, once the queue has committed the
        record) skips the two fsyncs: the file is still replaced atomically, and
        :meth:`sync_executions` at the run's end and on ``--resume`` rewrites it from the queue
        if a power cut lost it.
        """
        data = execution.to_json() if document is None else document
        self._write_execution_document(execution.key, data, durable=durable)

    def _write_execution_document(
        self, key: str, data: Mapping[str, Any], *, durable: bool
    ) -> None:
        # the same text as oa_vm.model.state.atomic_write_json; NaN/Infinity refused (not JSON)
        text = json.dumps(data, indent=2, sort_keys=False, allow_nan=False) + "\n"
        safe_fs.write_atomic(
            self.task_dir(key) / EXECUTION_FILE, text, root=self.path, durable=durable
        )

    def sync_executions(self, records: Mapping[str, Mapping[str, Any]]) -> list[str]:
        """Make every ``execution.json`` a copy of its committed record (``records``: the
        queue's, by task key); returns the keys whose file was missing, unreadable or different
        and is now rewritten (with fsyncs). Called when a run ends and when it is resumed."""
        rewritten = []
        for key, record in records.items():
            current = safe_fs.read_json_object(self.task_dir(key) / EXECUTION_FILE)
            if current != record:
                self._write_execution_document(key, record, durable=True)
                rewritten.append(key)
        return rewritten

    def set_aside(self, key: str, number: int) -> None:
        """Move a task's record and its steps' files to ``<task folder>/attempt-<number>/``
        (kept, never replaced), before the task runs again."""
        source = self.task_dir(key)
        target = source / f"attempt-{number}"
        target.mkdir(parents=True, exist_ok=True)
        for path in [source / EXECUTION_FILE, *step_files(source)]:
            if path.is_file():
                path.replace(target / path.name)

    def clear_steps(self, task_id: str) -> None:
        """Remove a previous attempt's screenshots before a new attempt writes its own."""
        folder = self.task_dir(task_id)
        for path in step_files(folder):
            path.unlink(missing_ok=True)


TREE_LIMIT_BYTES = 2_000_000
"""Bytes of a step's accessibility tree (UTF-8 XML) kept in its file: a UI Automation tree of a
busy desktop runs to megabytes, and a run of hundreds of tasks keeps one per step."""
TREE_SUFFIX = ".tree.xml.gz"


def step_files(folder: Path) -> list[Path]:
    """The evidence of an attempt's steps in ``folder`` (screenshots and trees): what moves
    aside or goes together when another attempt of the task starts. The one rule for it."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("step_*")
                  if p.is_file() and (p.suffix == ".png" or p.name.endswith(TREE_SUFFIX)))


def save_tree(folder: Path, index: int, tree: str, root: Path | None = None) -> tuple[str, bool]:
    """Write ``step_<index>.tree.xml.gz`` (gzip of the tree's first :data:`TREE_LIMIT_BYTES`
    bytes) into ``folder``, as :func:`save_screenshot` writes the screenshot; returns the file
    name and whether the tree was cut."""
    # the tree is text the worker produced, as a record's is: no credential crosses into a file
    # (oa_vm.kit.redact; a capability URL in an address bar would otherwise be kept)
    data = redact_text(tree).encode("utf-8", errors="replace")
    truncated = len(data) > TREE_LIMIT_BYTES
    if truncated:  # cut on a character boundary, so the text still decodes
        data = data[:TREE_LIMIT_BYTES].decode("utf-8", errors="ignore").encode("utf-8")
    name = f"step_{index:03d}{TREE_SUFFIX}"
    if not os.path.isdir(folder):
        safe_fs.ensure_dir(folder, root=root or folder)
    # mtime 0: the same tree gives the same bytes (level 6: the XML shrinks about tenfold)
    safe_fs.write_file(folder / name, gzip.compress(data, compresslevel=6, mtime=0))
    return name, truncated


def read_tree(folder: Path, name: str) -> str:
    """The text of a tree file written by :func:`save_tree`."""
    return gzip.decompress((folder / name).read_bytes()).decode("utf-8")


def save_screenshot(folder: Path, index: int, png: bytes, root: Path | None = None) -> str:
    """Write ``step_<index>.png`` into ``folder`` (made if missing, 0700, checked down from
    ``root``); returns the file name. The file is 0600 and never written through a symlink."""
    name = f"step_{index:03d}.png"
    if not os.path.isdir(folder):  # the task's first screenshot: made once, not per step
        safe_fs.ensure_dir(folder, root=root or folder)
    safe_fs.write_file(folder / name, png)
    return name
