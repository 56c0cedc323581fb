"""The public Python API: run an agent on WAA tasks from Python, in the reference tool's shape.

::

    from evals import BenchmarkAgent, BenchmarkAction, WAASimulatedAdapter
    from evals import evaluate_agent_on_benchmark, compute_metrics

    class MyAgent(BenchmarkAgent):
        def act(self, observation, task, history=None):
            return BenchmarkAction(type="done")

    results = evaluate_agent_on_benchmark(MyAgent(), WAASimulatedAdapter(num_tasks=5))
    print(compute_metrics(results)["success_rate"])

An adapter says where tasks run: :class:`WAASimulatedAdapter` starts its own local pool of
simulated workers (no cloud, no Windows), :class:`WAALiveAdapter` speaks to one real worker by
URL (directly or through a tunnel). Tasks run one after another on one worker through the same
agent loop as ``openadapt-evals run`` (:func:`evals.run.agent_loop.run_task`), so a result means the
same thing here as in a sweep: scored by WAA's checker, or an explicit error with its type. For
many tasks on many workers, with retries, resume and cost caps, use ``openadapt-evals run``.
:class:`evals.WAAMockAdapter` (module :mod:`evals.compat.synthetic_mock`) is the reference tool's
synthetic mock, in-process, for testing agent plumbing: its invented tasks are played through
the adapter's own ``reset``/``step``/``evaluate`` and never recorded as a run.

Where the simulated adapter's pool lives: in the current oa-vm home (``$OA_VM_HOME``, default
``~/.oa-vm``), under a fresh name ``mock-<hex>``. A temporary home was considered and rejected:
if the process were killed before cleaning up, its worker processes would be recorded nowhere a
user looks; in the real home, ``oa-vm pool-list`` shows them and ``oa-vm pool-cleanup`` removes
them. The adapter removes its pool on :meth:`WAASimulatedAdapter.close`, on leaving a ``with``
block, and at interpreter exit, whichever comes first.
"""

from __future__ import annotations

import atexit
import base64
import binascii
import contextlib
import logging
import secrets
import sys
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

import oa_vm
from evals.agents.base import (
    EXECUTE,
    WAIT,
    BenchmarkAction,
    BenchmarkAgent,
    BenchmarkObservation,
    BenchmarkTask,
    parse_action,
    public_task_json,
)
from evals.agents.builtin import call_reset
from evals.errors import RunExistsError
from evals.results.records import (
    ErrorType,
    RunFolder,
    RunStatus,
    TaskExecution,
    TaskStatus,
    now_iso,
    versions,
)
from oa_vm.kit.redact import redact_text, register_url_secrets
from waa_client.catalog import WAA_DOMAINS as SUITE_DOMAINS
from waa_client.catalog import Catalog, TaskRef, check_known, check_not_synthetic
from waa_client.errors import (
    UnknownTaskError,
    WaaError,
    WorkerTimeoutError,
    WorkerUnreachableError,
)
from waa_client.scoring import ScoringClient
from waa_client.waa import WaaClient

log = logging.getLogger(__name__)

DEFAULT_MAX_STEPS = 15
"""WAA's own step limit: the live adapter's default, as ``openadapt-evals run`` uses."""
REFERENCE_MAX_STEPS = 50
"""The reference tool's default for :func:`evaluate_agent_on_benchmark` and
:class:`EvaluationConfig`, kept so code written against it takes as many steps here."""

WAA_DOMAINS: list[str] = list(SUITE_DOMAINS)
"""The twelve domains of WAA's task suite (its ``evaluation_examples_windows`` folders), in the
order WAA lists them."""


@dataclass
class BenchmarkResult:
    """How one task ended (the reference tool's fields, plus ``domain`` and ``status``).

    Attributes:
        task_id: The task's index ID.
        success: True only when WAA's checker said so.
        score: The checker's score; ``0.0`` when the task ended in error (see ``status``: an
            error is not a failure and is kept out of success rates).
        steps: The trajectory, ``(observation, action)`` per step (observations carry the
            window title and step index; screenshots stay in the run folder).
        num_steps: How many steps the agent took.
        error: What went wrong, for errors.
        reason: The checker's explanation, for outcomes.
        error_type: ``infrastructure``, ``setup``, ``agent``, ``evaluation`` or ``timeout``.
        total_time_seconds: Wall time of the task, setup and scoring included.
        domain: The task's domain.
        status: ``success``, ``failure`` (both scored outcomes) or ``error``; derived from
            ``success`` and ``error_type``/``error`` when not given.
        execution: The full record (steps, actions, results), as ``execution.json`` holds it.
        agent_traceback: For ``error_type="agent"`` from an agent that raised: its traceback
            as Python prints it (bounded), which ``error`` sums up in one line.
    """

    task_id: str
    success: bool
    score: float
    steps: list[tuple[BenchmarkObservation, BenchmarkAction]] = field(default_factory=list)
    num_steps: int = 0
    error: str | None = None
    reason: str | None = None
    error_type: str | None = None
    total_time_seconds: float = 0.0
    domain: str = ""
    status: str = ""
    execution: TaskExecution | None = field(default=None, repr=False, compare=False)
    agent_traceback: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.status:
            if self.error_type or self.error:
                self.status = TaskStatus.ERROR.value
            else:
                self.status = (TaskStatus.SUCCESS if self.success else TaskStatus.FAILURE).value
        if not self.num_steps and self.steps:
            self.num_steps = len(self.steps)

    @classmethod
    def from_execution(cls, execution: TaskExecution) -> BenchmarkResult:
        """The result a task record stands for: the one derivation from the record (what each
        field comes from: :data:`RESULT_FROM_RECORD`; the whole record stays in
        ``execution``)."""
        status = TaskStatus(execution.status)
        trajectory = []
        for step in execution.steps:
            if not step.action:
                continue
            try:
                action = parse_action(step.action)
            except ValueError:
                continue
            observation = BenchmarkObservation(window_title=step.window_title, step=step.index,
                                               last_error=step.error)
            trajectory.append((observation, action))
        return cls(
            task_id=execution.task_id,
            domain=execution.domain,
            success=status is TaskStatus.SUCCESS,
            score=float(execution.score) if execution.score is not None else 0.0,
            steps=trajectory,
            num_steps=len(execution.steps),
            status=status.value,
            error=execution.error_message,
            error_type=None if execution.error_type is None else str(execution.error_type.value),
            reason=execution.reason,
            total_time_seconds=float(execution.duration_s or 0.0),
            execution=execution,
            agent_traceback=execution.agent_traceback,
        )


RESULT_FROM_RECORD: dict[str, str] = {
    "task_id": "task_id",
    "domain": "domain",
    "status": "status",  # and success
    "score": "score",  # 0.0 for an error
    "steps": "num_steps",  # and the trajectory, steps
    "error_message": "error",
    "error_type": "error_type",
    "reason": "reason",
    "duration_s": "total_time_seconds",
    "agent_traceback": "agent_traceback",
}
"""Which :class:`BenchmarkResult` field each :class:`evals.results.records.TaskExecution` field
becomes (the reference tool's names)."""
RESULT_LEAVES_OUT = frozenset({
    "instruction", "infeasible", "worker", "attempts", "started_at", "ended_at", "last_action",
    "cost", "previous_attempts", "reset", "reset_s", "fingerprint", "trial", "egress",
    "reward_components", "task_traceback", "state_diff",
})
"""Record fields the reference's result has no field for (``result.execution`` holds them)."""


class BenchmarkAdapter(ABC):
    """Where tasks run: a catalog of tasks and one worker's clients.

    Contract: :meth:`catalog` and :meth:`clients` may start things (processes, connections) on
    first use and must be cheap afterwards; :meth:`close` releases everything and is idempotent.
    """

    name = "waa"
    live = True
    in_process = False
    """True for adapters without a worker (the synthetic mock): :func:`evaluate_agent_on_benchmark`
    plays them through their own ``reset``/``step``/``evaluate`` and records no run folder."""
    step_pause_s = 0.0
    task_timeout_s: float | None = None

    @abstractmethod
    def catalog(self) -> Catalog:
        """The tasks this adapter can run."""

    @abstractmethod
    def clients(self) -> tuple[WaaClient, ScoringClient]:
        """The WAA server and scoring server clients of the worker tasks run on."""

    def interactive_waa(self) -> WaaClient:
        """The WAA server client :meth:`reset` and :meth:`step` use: the tasks' by default."""
        return self.clients()[0]

    @property
    def worker_name(self) -> str | None:
        """The name records give the worker (``None`` when unknown)."""
        return None

    def default_task_ids(self) -> list[str]:
        """Tasks run when the caller names none: every task of the catalog."""
        return self.catalog().task_ids()

    def select(self, task_ids: Sequence[str] | None) -> list[TaskRef]:
        """The tasks to run, validated (unknown or, on a live worker, synthetic IDs raise).

        Raises:
            UnknownTaskError: some IDs are unknown (all are listed).
            SyntheticTaskError: a live adapter was given mock/toy IDs.
        """
        ids = list(task_ids) if task_ids is not None else self.default_task_ids()
        if not ids:
            return []
        return self.catalog().select(",".join(ids), live=self.live)

    # -- the reference tool's interactive interface ---------------------------------------------

    benchmark_type = "interactive"
    supports_parallel = False
    max_steps: int = DEFAULT_MAX_STEPS
    """Steps per task in the interactive interface: :meth:`step` says ``done`` once a task
    took this many (or the task's own ``time_limit_steps``), as the reference's adapters do."""

    def list_tasks(self, domain: str | None = None) -> list[BenchmarkTask]:
        """The adapter's tasks (its default selection), optionally of one domain."""
        tasks = [self.load_task(task_id) for task_id in self.default_task_ids()]
        return [t for t in tasks if domain is None or t.domain == domain]

    def load_task(self, task_id: str) -> BenchmarkTask:
        """One task by ID, in the public view agents get (no evaluator, no reference solution;
        ``reset``/``evaluate`` read the full task from the catalog).

        Raises:
            KeyError: no such task (as the reference tool raises).
            SyntheticTaskError: a mock/toy ID on a live adapter, before the worker is asked
                (as the reference's live adapter).
        """
        if self.live:
            check_not_synthetic([task_id])
        catalog = self.catalog()
        known_or_key_error(task_id, catalog.task_ids(), source=catalog.source)
        ref = catalog.ref(task_id)
        return BenchmarkTask(task_id=ref.task_id, domain=ref.domain,
                             instruction=ref.instruction, infeasible=None,
                             raw=public_task_json(catalog.load(task_id)),
                             time_limit_steps=self.max_steps)

    def reset(self, task: BenchmarkTask) -> BenchmarkObservation:
        """Reset the worker and set ``task`` up (WAA's stock reset); the first observation.

        A read of the observation that fails leaves its part empty (see :meth:`step`).

        Raises:
            AdapterConnectionError: the worker could not be reached (a ``RuntimeError``, as
                the reference raises, and a ``WorkerUnreachableError``).
            WaaError: the worker refused the reset or a setup step (not turned into a score).
        """
        waa, scoring = self.interactive_waa(), self.clients()[1]
        with _reached("reset(task)", waa, scoring):
            raw = self.catalog().load(task.task_id)
            waa.close_all()
            waa.clear_task_files()
            scoring.setup(raw.get("config") or [])
        self._episode = _Episode(task=task, raw=raw)
        return self._observe(0)

    def step(self, action: BenchmarkAction) -> tuple[BenchmarkObservation, bool, dict[str, Any]]:
        """Play one action; ``(observation, done, info)``. ``done`` is True after ``done`` or
        ``fail``, and once the task took :attr:`max_steps` steps (the task's
        ``time_limit_steps`` when it has one); a refused action is reported in
        ``info["error"]`` and the next observation's ``last_error``, as in the agent loop.

        As the reference's adapter: a read of the screenshot or of the accessibility tree
        that fails or times out is logged and leaves that part of the observation ``None``.

        Raises:
            RuntimeError: :meth:`reset` was not called.
            AdapterConnectionError: the worker could not be reached to play the action (a
                ``RuntimeError`` and a ``WorkerUnreachableError``).
        """
        episode = self._episode
        if episode is None:
            raise RuntimeError("call reset(task) before step()")
        episode.steps += 1
        info: dict[str, Any] = {"step": episode.steps, "result": None, "error": None}
        if action.ends_task:
            episode.last_action = action.to_string()
            return self._observe(episode.steps), True, info
        limit = episode.task.time_limit_steps or self.max_steps
        if action.type == WAIT:
            time.sleep(1.0)
            return self._observe(episode.steps), episode.steps >= limit, info
        waa = self.interactive_waa()
        try:
            with _reached("step(action)", waa):
                if action.type == EXECUTE:
                    info["result"] = waa.execute(str(action.command), shell=False)
                else:
                    info["result"] = waa.execute_windows(action.to_pyautogui(episode.tree))
            episode.last_action = action.to_string()
        except AdapterConnectionError:
            raise
        except (WaaError, ValueError) as exc:
            info["error"] = str(exc)
        observation = self._observe(episode.steps)
        observation.last_result, observation.last_error = info["result"], info["error"]
        return observation, episode.steps >= limit, info

    def evaluate(self, task: BenchmarkTask) -> BenchmarkResult:
        """Score the worker's state with WAA's checker. A checker or worker that fails gives a
        result with ``status="error"`` (never a silent 0 counted as a failure)."""
        episode = self._episode if self._episode and self._episode.task.task_id == task.task_id \
            else _Episode(task=task, raw=self.catalog().load(task.task_id))
        _, scoring = self.clients()
        try:
            verdict = scoring.evaluate(episode.raw, episode.last_action)
        except WaaError as exc:
            kind = "infrastructure" if exc.is_infrastructure else "evaluation"
            return BenchmarkResult(task_id=task.task_id, success=False, score=0.0,
                                   num_steps=episode.steps, error=str(exc), error_type=kind,
                                   domain=task.domain)
        return BenchmarkResult(task_id=task.task_id, success=bool(verdict["success"]),
                               score=float(verdict["score"]), num_steps=episode.steps,
                               reason=str(verdict.get("reason", "")), domain=task.domain)

    _episode: _Episode | None = None

    def _observe(self, index: int) -> BenchmarkObservation:
        waa = self.interactive_waa()
        obs: dict[str, Any] = {}
        tree: str | None = None
        png: bytes | None = None
        # as the reference's adapter: a failed read is logged and its part left empty, so a
        # hung worker costs the caller's loop one timeout per read, never an exception
        try:
            obs = waa.observe()
            image = obs.get("image")
            png = base64.b64decode(image) if isinstance(image, str) and image else None
        except (WaaError, binascii.Error, ValueError) as exc:
            log.error("screenshot request error: %s", redact_text(str(exc)))
        try:
            tree = waa.accessibility()
        except WaaError as exc:
            log.error("accessibility tree request error: %s", redact_text(str(exc)))
        if self._episode is not None:
            self._episode.tree = tree
        title = obs.get("window_title")
        return BenchmarkObservation(
            screenshot=png,
            screenshot_path=self._save_screenshot(png, index) if png else None,
            accessibility_tree=tree,
            window_title=title if isinstance(title, str) else None,
            step=index,
            viewport=_png_size(png) or ((1280, 720) if not self.live else None),
            raw_observation={k: v for k, v in obs.items() if k != "image"},
        )

    _screens: Any = None
    _shots = 0

    def _save_screenshot(self, png: bytes, index: int) -> str:
        """The screenshot as a file (the reference's ``screenshot_path``), in a folder of this
        adapter's that is removed with it (or when the process exits)."""
        if self._screens is None:
            self._screens = tempfile.TemporaryDirectory(prefix="evals-screens-")
            self._shots = 0
        self._shots += 1  # every observation keeps its own file, across resets too
        path = Path(self._screens.name) / f"{self._shots:05d}_step{index:03d}.png"
        path.write_bytes(png)
        return str(path)

    def close(self) -> None:  # noqa: B027 - optional hook: adapters that own nothing skip it
        """Release what the adapter started. Idempotent."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AdapterConnectionError(WorkerUnreachableError, RuntimeError):
    """An adapter's ``reset``/``step`` could not reach its worker.

    Both errors at once: the reference's ``RuntimeError`` ("Cannot connect to WAA server"), so
    code written for it (``except RuntimeError``) catches it, and this project's
    ``WorkerUnreachableError`` (``is_infrastructure``), so ``except WaaError`` does too. The
    client's own error is its ``__cause__``.
    """

    @classmethod
    def of(cls, call: str, exc: WaaError, bases: Sequence[str]) -> AdapterConnectionError:
        """The error ``call`` raises for the infrastructure error ``exc`` of the client whose
        base URL (one of ``bases``, the first when ``exc`` names none) it names."""
        worker = next((b for b in bases if exc.url and exc.url.startswith(b)),
                      exc.url or bases[0])
        why = (f"HTTP {exc.status}" if exc.status is not None
               else "timed out" if isinstance(exc, WorkerTimeoutError) else "no connection")
        return cls(f"{call}: the WAA worker at {worker} could not be reached ({why}); check "
                   f"it is up and its tunnel is open, then call {call} again",
                   url=exc.url or worker, status=exc.status)


@contextlib.contextmanager
def _reached(call: str, *clients: WaaClient | ScoringClient) -> Iterator[None]:
    """Turns an infrastructure :class:`WaaError` met in ``call`` into the
    :class:`AdapterConnectionError` the interactive interface raises (others pass as they
    are: the worker answered)."""
    try:
        yield
    except WaaError as exc:
        if not exc.is_infrastructure or isinstance(exc, AdapterConnectionError):
            raise
        raise AdapterConnectionError.of(call, exc, [c.base_url for c in clients]) from exc


def _png_size(png: bytes | None) -> tuple[int, int] | None:
    """``(width, height)`` from a PNG's header, or None when it is not a PNG."""
    if not png or len(png) < 24 or png[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


@dataclass
class _Episode:
    """The task being played through :meth:`BenchmarkAdapter.reset`/``step``."""

    task: BenchmarkTask
    raw: dict[str, Any]
    steps: int = 0
    last_action: str = ""
    tree: str | None = None


@dataclass
class WAALiveConfig:
    """How to reach one real worker.

    Attributes:
        server_url: The WAA server (guest :5000), usually a tunnel's local end.
        evaluate_url: The scoring server; by default the reference's: ``server_url``'s host on
            port 5050 (a tunnel's local end when ``server_url`` is one).
        connect_timeout: Seconds to open a connection.
        read_timeout: Seconds to wait for an answer.
        step_pause_s: Pause after each action (WAA's stock loop waits 3 s for the UI).
        task_timeout_s: A task taking longer ends as ``error/timeout``.
        a11y_backend, screen_width, screen_height, max_steps, waa_examples_path: The reference
            tool's settings, accepted and kept (the worker reports its own screen size; the
            task catalog is the scoring server's).
        action_delay: The reference's name for ``step_pause_s`` (wins when given; reads back
            the pause in force).
        timeout: The reference's name for ``read_timeout`` (wins when given; reads back the
            timeout in force).
        evaluate_timeout, evaluate_retries, evaluate_retry_base_delay, lightweight,
        clean_desktop, force_tray_icons, reapply_clean_desktop_each_reset, waa_image_version,
        strict_setup_readiness, setup_readiness_retries, focus_check_method: The reference
            tool's settings, accepted with its defaults and kept; scoring retries follow the
            project's one retry policy, and the desktop is put back by the worker's reset.
    """

    server_url: str = "http://127.0.0.1:5001"
    evaluate_url: str | None = None
    connect_timeout: float = 5.0
    read_timeout: float = 60.0
    step_pause_s: float = 3.0
    task_timeout_s: float = 900.0
    a11y_backend: str = "uia"
    screen_width: int = 1280
    screen_height: int = 720
    max_steps: int = DEFAULT_MAX_STEPS
    action_delay: float | None = None
    timeout: float | None = None
    waa_examples_path: str | None = None
    evaluate_timeout: float = 180.0
    evaluate_retries: int = 3
    evaluate_retry_base_delay: float = 5.0
    lightweight: bool = True
    clean_desktop: bool = False
    force_tray_icons: bool = False
    reapply_clean_desktop_each_reset: bool = False
    waa_image_version: str | None = None
    strict_setup_readiness: bool = False
    setup_readiness_retries: int = 3
    focus_check_method: str = "win32"

    def __post_init__(self) -> None:
        # The reference's code reads config.action_delay and config.timeout: both names carry
        # the value in force, whichever name set it.
        if self.action_delay is None:
            self.action_delay = self.step_pause_s
        self.step_pause_s = self.action_delay
        if self.timeout is None:
            self.timeout = self.read_timeout
        self.read_timeout = self.timeout
        if self.evaluate_url is None:  # the reference's fallback: the same host, port 5050
            parts = urlsplit(self.server_url)
            host = f"[{parts.hostname}]" if ":" in (parts.hostname or "") else parts.hostname
            self.evaluate_url = f"{parts.scheme or 'http'}://{host or '127.0.0.1'}:5050"


class WAALiveAdapter(BenchmarkAdapter):
    """One real WAA worker by URL; the task catalog is the one its scoring server holds."""

    name = "waa-live"
    live = True

    def __init__(self, config: WAALiveConfig | None = None, **options: Any) -> None:
        """Prepare clients for ``config`` (or ``WAALiveConfig(**options)``, e.g.
        ``server_url=...``); nothing is contacted until the first task."""
        self.config = config or WAALiveConfig(**options)
        assert self.config.evaluate_url is not None  # set by the config
        register_url_secrets(self.config.server_url)  # a capability in them: masked everywhere
        register_url_secrets(self.config.evaluate_url)
        self.max_steps = self.config.max_steps
        self.step_pause_s = self.config.step_pause_s
        self.task_timeout_s = self.config.task_timeout_s
        connect, read = self.config.connect_timeout, self.config.read_timeout
        self._waa = WaaClient(self.config.server_url, connect_timeout=connect, read_timeout=read)
        # reset()/step() send each request once, as the reference: a caller's loop with its
        # own time budget waits at most config.timeout per read (tasks run keep the retries)
        self._waa_once = WaaClient(self.config.server_url, connect_timeout=connect,
                                   read_timeout=read, retries=0)
        self._scoring = ScoringClient(
            self.config.evaluate_url, connect_timeout=connect, read_timeout=read
        )
        self._catalog: Catalog | None = None

    def catalog(self) -> Catalog:
        """The scoring server's task index (read once)."""
        if self._catalog is None:
            self._catalog = Catalog.from_scoring(self._scoring)
        return self._catalog

    def default_task_ids(self) -> list[str]:
        """None, as the reference's live adapter: a worker's whole catalog is WAA's 154 tasks,
        each paid for with a model's calls, so a live run names its tasks (``task_ids``)."""
        return []

    def clients(self) -> tuple[WaaClient, ScoringClient]:
        """The worker's clients."""
        return self._waa, self._scoring

    def interactive_waa(self) -> WaaClient:
        """The worker's WAA client without retries."""
        return self._waa_once

    @property
    def worker_name(self) -> str | None:
        """The WAA server's URL (a live worker has no other name here)."""
        return self.config.server_url

    def close(self) -> None:
        """Close the HTTP sessions."""
        self._waa.close()
        self._waa_once.close()
        self._scoring.close()


class WAASimulatedAdapter(BenchmarkAdapter):
    """A local pool of simulated workers running the real local task suite (WAA task JSON,
    scored by the real checker), started on first use and removed when done.

    This is what the reference tool's ``WAAMockAdapter`` is used for, made meaningful: an
    agent's results here are real outcomes on the simulated desktop. (``WAAMockAdapter`` here
    is the reference's synthetic in-process mock, for testing agent plumbing only.) See the
    module docstring for where the pool lives and when it is removed.
    """

    name = "waa-simulated"
    live = False

    def __init__(
        self,
        num_tasks: int | None = 20,
        domains: Sequence[str] | None = None,
        *,
        faults: dict[str, str] | None = None,
        ready_timeout_s: float = 120.0,
        task_timeout_s: float = 300.0,
        step_pause_s: float = 0.0,
    ) -> None:
        """Describe the pool; it starts on first use.

        Args:
            num_tasks: Run the first ``num_tasks`` local tasks when none are named (20, the
                reference's default; all if None). Named tasks are always found.
            domains: Only tasks of these WAA domains (``notepad``, ``settings``...); all if
                None.

        Raises:
            ValueError: ``num_tasks`` below 1, or a domain WAA does not have.
            faults: Fault knobs of the simulated worker (``latency``, ``error-rate``...).
            ready_timeout_s: How long the worker may take to come up.
            task_timeout_s: A task taking longer ends as ``error/timeout``.
            step_pause_s: Pause after each action (the simulated desktop needs none).
        """
        if num_tasks is not None and (isinstance(num_tasks, bool) or num_tasks < 1):
            raise ValueError(f"num_tasks must be a whole number of at least 1, not {num_tasks}")
        unknown = [d for d in domains or () if d not in WAA_DOMAINS]
        if unknown:
            # The reference's mock makes up tasks for any domain ("browser", "office"); here
            # tasks are real, so a domain WAA does not have would silently select nothing.
            raise ValueError(f"unknown WAA domain(s) {', '.join(map(repr, unknown))}; "
                             f"use some of: {', '.join(WAA_DOMAINS)}")
        self.num_tasks = num_tasks
        self.domains = list(domains) if domains is not None else None
        self.faults = dict(faults or {})
        self.ready_timeout_s = ready_timeout_s
        self.task_timeout_s = task_timeout_s
        self.step_pause_s = step_pause_s
        self.pool_name: str | None = None
        self._lock = threading.Lock()
        self._stack = contextlib.ExitStack()
        self._conn: Any = None
        self._catalog: Catalog | None = None
        self._closed = False

    def _start(self) -> Any:
        """Create, wait for and connect to the pool (once)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("this WAASimulatedAdapter was closed; create a new one")
            if self._conn is not None:
                return self._conn
            name = f"mock-{secrets.token_hex(4)}"
            # Registered before creating, so even a create interrupted halfway is cleaned up.
            atexit.register(self.close)
            self.pool_name = name
            try:
                oa_vm.create_pool(name=name, cloud="local", workers=1, faults=self.faults,
                                ttl_hours=4.0)
                oa_vm.wait_pool(name, timeout_s=self.ready_timeout_s)
                workers = self._stack.enter_context(oa_vm.connect(name))
            except BaseException:
                # A pool that never became usable is removed at once, not at exit.
                self._stack.close()
                self.pool_name = None
                _remove_pool(name)
                raise
            self._conn = workers[0]
            return self._conn

    def catalog(self) -> Catalog:
        """The local task suite, as the worker's scoring server lists it."""
        if self._catalog is None:
            self._catalog = Catalog.from_scoring(self._start().scoring)
        return self._catalog

    def select(self, task_ids: Sequence[str] | None) -> list[TaskRef]:
        """As :meth:`BenchmarkAdapter.select`, but named IDs are checked against the local
        suite's folder before the pool is made: a misspelt ID costs no pool."""
        if task_ids and self._conn is None:
            _local_suite().resolve(",".join(task_ids), live=False)
        return super().select(task_ids)

    def load_task(self, task_id: str) -> BenchmarkTask:
        """As :meth:`BenchmarkAdapter.load_task`; an unknown ID costs no pool (see
        :meth:`select`)."""
        if self._conn is None:
            known_or_key_error(task_id, _local_suite().task_ids(), source="the local suite")
        return super().load_task(task_id)

    def default_task_ids(self) -> list[str]:
        """The first ``num_tasks`` local tasks of ``domains`` (all when None)."""
        catalog = self.catalog()
        ids = catalog.task_ids()
        if self.domains is not None:
            wanted = set(self.domains)
            ids = [t for t in ids if catalog.ref(t).domain in wanted]
        return ids if self.num_tasks is None else ids[: self.num_tasks]

    def clients(self) -> tuple[WaaClient, ScoringClient]:
        """The local worker's clients."""
        conn = self._start()
        return conn.waa, conn.scoring

    @property
    def worker_name(self) -> str | None:
        """The worker's name in its pool (as a sweep's records name it), once the pool is up."""
        return None if self._conn is None else str(self._conn.name)

    def close(self) -> None:
        """Disconnect and remove the pool (its processes and its record). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._stack.close()
            name, self.pool_name = self.pool_name, None
        atexit.unregister(self.close)
        if name is not None:
            _remove_pool(name)


def _remove_pool(name: str) -> None:
    """Remove the adapter's pool; never raises (it runs while an error may be on its way out
    of ``_start`` or a ``with`` block): a failure is said on stderr with what to run."""
    oa_vm.remove_temporary_pool(
        name, lambda line: print(f"WAASimulatedAdapter: {line}", file=sys.stderr, flush=True))


@dataclass
class EvaluationConfig:
    """The reference tool's evaluation settings, as :func:`evaluate_agent_on_benchmark` reads
    them.

    Attributes:
        max_steps: Steps per task at most.
        parallel: Accepted for compatibility; tasks run one after another on the adapter's one
            worker (``openadapt-evals sweep`` runs many workers).
        save_trajectories: Keep ``(observation, action)`` pairs in each result's ``steps``.
        verbose: Accepted for compatibility (progress goes to the run folder's records).
        on_step: Called as ``on_step(observation, action, step_index)`` with each action the
            agent chooses (before the worker runs it).
        on_task_complete: Called with each result as soon as its task ends.
        save_execution_traces: Record a run folder (``output_dir/run_name``).
        model_id: Recorded in the run folder's metadata.
        output_dir: Where run folders go.
        run_name: The run folder's name (default: ``eval-<UTC time>``).
        enable_live_tracking, live_tracking_file: Accepted for compatibility; the run folder is
            what ``openadapt-evals view`` shows while a run goes on.
        done_gate, done_gate_max_overrides, done_gate_threshold: The reference's option to
            score a task when the agent says ``done`` and send it back if the score is low.
            Accepted off only: it hands the checker's verdict to the agent mid-task (an agent
            sees no evaluator data here), so ``done_gate=True`` is refused.

    Raises:
        ValueError: ``done_gate=True``.
    """

    max_steps: int = REFERENCE_MAX_STEPS
    parallel: int = 1
    save_trajectories: bool = True
    verbose: bool = True
    on_step: Callable[..., None] | None = None
    on_task_complete: Callable[[BenchmarkResult], None] | None = None
    save_execution_traces: bool = True
    model_id: str = "unknown"
    output_dir: str = "benchmark_results"
    run_name: str | None = None
    enable_live_tracking: bool = True
    live_tracking_file: str = "benchmark_live.json"
    done_gate: bool = False
    done_gate_max_overrides: int = 3
    done_gate_threshold: float = 1.0

    def __post_init__(self) -> None:
        if self.done_gate:
            raise ValueError(
                "done_gate is not supported: it would tell the agent the checker's score "
                "mid-task; leave it off (the checker scores once, when the task ends)")


def evaluate_agent_on_benchmark(
    agent: BenchmarkAgent,
    adapter: BenchmarkAdapter,
    task_ids: Sequence[str] | None = None,
    max_steps: int = REFERENCE_MAX_STEPS,
    parallel: int = 1,
    config: EvaluationConfig | None = None,
    *,
    run_dir: Path | str | None = None,
    on_result: Callable[[BenchmarkResult], None] | None = None,
) -> list[BenchmarkResult]:
    """Run ``agent`` on tasks one after another and return one result per task, in order.

    Every task ends with a result: a scored outcome, or an error with its type (nothing is
    dropped). IDs are validated before the first task starts.

    Args:
        agent: The agent.
        adapter: Where tasks run (:class:`WAASimulatedAdapter`, :class:`WAALiveAdapter`).
        task_ids: Tasks to run (default: the adapter's, see its ``default_task_ids``).
        max_steps: Steps per task at most (``config.max_steps`` wins when a config is given).
        parallel: Accepted for the reference's signature; tasks run one at a time here.
        config: The reference tool's :class:`EvaluationConfig`.
        run_dir: When given, also record a run folder there (records, screenshots,
            ``summary.json``) that ``openadapt-evals view`` can show. Never for the synthetic
            :class:`evals.WAAMockAdapter` (refused; a config's ``save_execution_traces`` is
            ignored for it), whose scores are not benchmark results.
        on_result: Called with each result as soon as its task ends.

    Raises:
        UnknownTaskError: some IDs are unknown to the adapter's catalog (all are listed).
        SyntheticTaskError: mock/toy IDs were given to a live adapter.
        ValueError: ``max_steps`` below 1, or ``run_dir`` for the synthetic mock.
    """
    asked_for_folder = run_dir is not None
    if config is not None:
        max_steps = config.max_steps
        on_result = on_result or config.on_task_complete
        if config.on_step is not None:
            agent = _StepNotifier(agent, config.on_step)
        if run_dir is None and config.save_execution_traces:
            from evals.run.runner import default_run_name

            run_dir = Path(config.output_dir) / (config.run_name or default_run_name("eval"))
    from evals.run.agent_loop import run_task
    from evals.run.settings import RunConfig

    if max_steps < 1:
        raise ValueError(f"max_steps must be at least 1, not {max_steps}")
    if adapter.in_process:
        # A synthetic mock's scores must never sit beside real runs: no run folder, ever. The
        # reference's default config asks for traces, so that request is dropped, not refused;
        # an explicit run_dir is refused, as it can only be a mistake.
        if asked_for_folder:
            raise ValueError(f"{type(adapter).__name__} is a synthetic mock: its results are "
                             "not recorded as a run; drop run_dir, or use WAASimulatedAdapter")
        save = config.save_trajectories if config is not None else True
        return [_play_in_process(agent, adapter, task, max_steps, save, on_result)
                for task in _in_process_tasks(adapter, task_ids)]
    try:
        refs = adapter.select(task_ids)
    except WorkerUnreachableError as exc:
        if not task_ids:
            raise
        # as the reference: a worker that cannot be reached ends each task as an error (an
        # infrastructure one here, kept out of the rates), the run's list still returned
        if adapter.live:
            check_not_synthetic(task_ids)
        return [_unreached(task_id, exc, on_result) for task_id in task_ids]
    recorder = _Recorder(Path(run_dir), adapter, agent, refs, max_steps) if run_dir else None
    waa, scoring = adapter.clients() if refs else (None, None)
    # a negative pause never paused: the run's config refuses one, so it is given as none
    options = RunConfig(pool=None, selection="all", agent=type(agent).__name__,
                        max_steps=max_steps, step_pause_s=max(0.0, adapter.step_pause_s))
    results = []
    for ref in refs:
        assert waa is not None and scoring is not None
        task = adapter.catalog().load(ref.task_id)
        deadline = (time.monotonic() + adapter.task_timeout_s
                    if adapter.task_timeout_s is not None else None)
        execution = run_task(
            waa, scoring, task, ref.task_id, agent, options,
            deadline=deadline,
            record_dir=recorder.task_dir(ref.task_id, task) if recorder else None,
            domain=ref.domain,
        )
        if execution.worker is None:
            execution.worker = adapter.worker_name
        if recorder:
            recorder.record(execution)
        result = BenchmarkResult.from_execution(execution)
        if config is not None and not config.save_trajectories:
            result.steps = []
        results.append(result)
        if on_result is not None:
            on_result(result)
    if recorder:
        recorder.finish()
    return results


def _unreached(task_id: str, exc: WorkerUnreachableError,
               on_result: Callable[[BenchmarkResult], None] | None) -> BenchmarkResult:
    """The result of a task whose worker could not be reached to read its catalog."""
    result = BenchmarkResult(task_id=task_id, success=False, score=0.0, error=str(exc),
                             error_type=ErrorType.INFRASTRUCTURE.value)
    if on_result is not None:
        on_result(result)
    return result


API_HINT = "list the known ones with adapter.list_tasks()"
"""What to do next, in a refusal of the Python API."""


def _local_suite() -> Catalog:
    """The local suite a simulated pool will serve, read from its folder (no pool needed)."""
    from oa_vm import local_tasks_dir

    return Catalog.from_folder(local_tasks_dir())


def known_or_key_error(task_id: str, known: Collection[str], *, source: str) -> None:
    """:func:`waa_client.catalog.check_known` for the reference's interface, which raises
    ``KeyError`` for a task it does not have."""
    try:
        check_known([task_id], known, source=source, hint=API_HINT)
    except UnknownTaskError as exc:
        raise KeyError(str(exc)) from None


def _in_process_tasks(adapter: BenchmarkAdapter,
                      task_ids: Sequence[str] | None) -> list[BenchmarkTask]:
    """The tasks of an in-process adapter; every unknown ID is listed before anything runs."""
    if task_ids is None:
        return adapter.list_tasks()
    tasks, unknown = [], []
    for task_id in task_ids:
        try:
            tasks.append(adapter.load_task(task_id))
        except KeyError:
            unknown.append(task_id)
    if unknown:
        check_known(unknown, [t.task_id for t in adapter.list_tasks()],
                    source=type(adapter).__name__, hint=API_HINT)
    return tasks


def _play_in_process(
    agent: BenchmarkAgent,
    adapter: BenchmarkAdapter,
    task: BenchmarkTask,
    max_steps: int,
    save_trajectories: bool,
    on_result: Callable[[BenchmarkResult], None] | None,
) -> BenchmarkResult:
    """One task of an in-process adapter, as the reference's loop plays it: the agent acts
    until ``done``/``fail``, the adapter says done, or the step limit (the task's own
    ``time_limit_steps`` first); ``done``/``fail`` are not sent to the adapter, so
    ``num_steps`` counts the actions it played (0 for an agent that says ``done`` at once).
    An agent that raises ends the task as ``status="error"``, ``error_type="agent"``."""
    from evals.run.agent_loop import agent_traceback

    started = time.monotonic()
    trajectory: list[tuple[BenchmarkObservation, BenchmarkAction]] = []
    played: list[BenchmarkAction] = []
    limit = task.time_limit_steps or max_steps
    error: str | None = None
    raised: str | None = None
    try:
        call_reset(agent, task)
    except Exception as exc:  # an agent's failure is its task's result
        error, raised = f"{type(exc).__name__}: {exc}", agent_traceback(exc)
    observation = adapter.reset(task)
    while error is None and len(played) < limit:
        try:
            action = agent.act(observation, task, list(played))
        except Exception as exc:
            error, raised = f"{type(exc).__name__}: {exc}", agent_traceback(exc)
            break
        trajectory.append((observation, action))
        if action.ends_task:
            break
        observation, done, _ = adapter.step(action)
        played.append(action)
        if done:
            break
    if error is not None:
        result = BenchmarkResult(task_id=task.task_id, success=False, score=0.0,
                                 num_steps=len(played), error=error, error_type="agent",
                                 domain=task.domain, agent_traceback=raised)
    else:
        result = adapter.evaluate(task)
        result.num_steps = len(played)
    result.steps = trajectory if save_trajectories else []
    result.total_time_seconds = time.monotonic() - started
    if on_result is not None:
        on_result(result)
    return result


class _StepNotifier(BenchmarkAgent):
    """Wraps an agent to call ``EvaluationConfig.on_step`` with each action it chooses."""

    def __init__(self, agent: BenchmarkAgent, on_step: Callable[..., None]) -> None:
        self.agent = agent
        self.on_step = on_step
        self.sees_answers = agent.sees_answers  # type: ignore[misc]  # the wrapped agent's opt-in

    def reset(self, task: BenchmarkTask | None = None) -> None:
        if task is not None:
            call_reset(self.agent, task)

    def act(self, observation: BenchmarkObservation, task: BenchmarkTask,
            history: Sequence[BenchmarkAction] | None = None) -> BenchmarkAction:
        action = self.agent.act(observation, task, history)
        self.on_step(observation, action, observation.step)
        return action


class _Recorder:
    """Writes what the API ran as a run folder, in the same format as ``openadapt-evals run``."""

    def __init__(
        self,
        path: Path,
        adapter: BenchmarkAdapter,
        agent: BenchmarkAgent,
        refs: Sequence[TaskRef],
        max_steps: int,
    ) -> None:
        self.folder = RunFolder(path)
        if self.folder.exists():
            raise RunExistsError(str(path))
        self.records: dict[str, TaskExecution] = {}  # the summary's: never read back from disk
        self.folder.write_metadata({
            "run": path.name,
            "pool": getattr(adapter, "pool_name", None),
            "cloud": "local" if not adapter.live else None,
            "agent": type(agent.agent if isinstance(agent, _StepNotifier) else agent).__name__,
            "selection": ",".join(r.task_id for r in refs),
            "task_ids": [r.task_id for r in refs],
            "max_steps": max_steps,
            "max_attempts": 1,
            "task_timeout_s": adapter.task_timeout_s,
            "max_cost_usd": None,
            "price_per_hour": None,
            "versions": versions(),
            "started_at": now_iso(),
            "ended_at": None,
            "status": RunStatus.RUNNING.value,
        })

    def task_dir(self, task_id: str, task: dict[str, Any]) -> Path:
        self.folder.clear_steps(task_id)
        self.folder.write_task(task_id, task)
        return self.folder.task_dir(task_id)

    def record(self, execution: TaskExecution) -> None:
        self.folder.write_execution(execution)
        self.records[execution.key] = execution

    def finish(self) -> None:
        from evals.run.metrics import summarize

        ended = self.folder.update_metadata(ended_at=now_iso(), status=RunStatus.FINISHED.value)
        summary = summarize(ended, self.records.values(), run=self.folder.path.name)
        self.folder.write_summary(summary)


def compute_domain_metrics(
    results: Sequence[BenchmarkResult], tasks: Sequence[BenchmarkTask] | None = None
) -> dict[str, dict[str, Any]]:
    """:func:`evals.run.metrics.compute_metrics` per domain. The domain is the task's (from
    ``tasks``, as the reference takes them) or the result's own ``domain``."""
    from evals.run.metrics import compute_metrics

    domains = {t.task_id: t.domain for t in tasks or ()}
    grouped: dict[str, list[BenchmarkResult]] = {}
    for result in results:
        domain = domains.get(result.task_id) or result.domain or "unknown"
        grouped.setdefault(domain, []).append(result)
    return {domain: compute_metrics(items) for domain, items in grouped.items()}
