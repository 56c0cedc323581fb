"""Running a selection of tasks on one pool or several: the public entry point.

:func:`run_evaluation` checks everything a user can get wrong before it dispatches anything (the
agent, the run folder, the pools, every task ID), takes each pool's lease, then hands the tasks
to a :class:`evals.run.dispatcher.Dispatcher` (one loop per worker, leasing from the run's durable
queue; what happens to a task that goes wrong, and why a controller killed at any moment loses
nothing that finished, is described there) and writes the run's metadata and summary when it
ends.
"""

from __future__ import annotations

import contextlib
import contextvars
import fcntl
import functools
import itertools
import os
import re
import socket
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import oa_vm
from evals.agents import AgentFactory, BenchmarkAgent
from evals.agents.base import tasks_for_agent
from evals.errors import (
    InvalidRunInputError,
    ResumeMismatchError,
    RunExistsError,
    RunLockedError,
    SshPathLost,
)
from evals.results.agent_failures import agent_failures, describe
from evals.results.events import EventSink, RunEvent, Snapshot
from evals.results.ledger import Ledger, default_token_pricer
from evals.results.records import (
    RunFolder,
    RunMetadata,
    RunStatus,
    Summary,
    TaskExecution,
    TaskInfo,
    TaskStatus,
    now_iso,
    results_root,
    versions,
)
from evals.results.trials import trial_key
from evals.run.dispatcher import Dispatcher
from evals.run.metrics import summarize
from evals.run.paths import DEFAULT_PATIENCE_S, patience_s
from evals.run.queue import TaskQueue
from evals.run.reset import WorkerReset, describe_plan, plan_resets
from evals.run.settings import (
    DEFAULT_QUARANTINE_AFTER,
    DEFAULT_TASK_TIMEOUT_S,
    RunConfig,
    check_settings,
    current_settings,
)
from evals.run.variations import add_variations, read_variations
from oa_vm.errors import PoolNotFoundError
from oa_vm.kit import safe_fs
from oa_vm.kit.safe_fs import LOCAL_FILE_ERRORS, WriteFailedError, partial_write
from waa_client.inputs import check_id

if TYPE_CHECKING:
    from evals.run.pools import RunPool
    from evals.run.repair import WorkerRepairer
    from oa_vm import Hold, WorkerConnection
    from waa_client.variations import Variation

# The dispatcher's and the config's names are also exported here, where they lived before.
__all__ = [
    "DEFAULT_EXPECTED_SECONDS",
    "DEFAULT_QUARANTINE_AFTER",
    "DEFAULT_TASK_TIMEOUT_S",
    "Checked",
    "Dispatcher",
    "EventSink",
    "RunConfig",
    "RunEvent",
    "RunResult",
    "Snapshot",
    "default_run_name",
    "drop_unused",
    "estimate_seconds",
    "health_warning",
    "KEPT_WORKER_LOGS",
    "hold_run",
    "nothing_left",
    "resumed_cap",
    "reserve_run_name",
    "run_evaluation",
    "run_lock",
]

DEFAULT_EXPECTED_SECONDS = 120.0
RERUN_ERROR_TYPES = ("infrastructure", "setup", "timeout")
"""Errors that were not the agent's doing: what ``run --rerun-errors`` runs again."""
_SLEEP_COMMAND = re.compile(r"^\s*sleep\s+([0-9]+(?:\.[0-9]+)?)\s*$")


# --- results -----------------------------------------------------------------------------------


@dataclass
class RunResult:
    """How a run ended.

    Attributes:
        run_dir: The run folder.
        status: ``finished`` or ``budget_stopped`` (an interrupted run raises instead).
        counts: Final records by status (``success``, ``failure``, ``error``, ``not_run``).
        not_run: Tasks a budget cap kept from running.
        quarantined: Workers that were quarantined.
        spent_usd: The run's spend (earlier sessions of a resumed run included).
        cap_usd: The cap, if any.
        unpriced_models: Models whose tokens could not be priced (counted as $0).
        warning: Why the run is not a result (:func:`health_warning`), or ``None``.
        fail_on_errors: Whether any error is to end the command with exit code 4.
        agent_failed: The tasks the agent ended by raising, in one line
            (:func:`evals.results.agent_failures.describe`), or ``None``.
        agent_errors: How many tasks those are.
        blames_agent: The warning is the agent's doing (:func:`blames_agent`), not the pool's.
        summary: The run's summary (:func:`evals.run.metrics.summarize`), computed from the
            records the run held when it ended: the ``summary.json`` it wrote, and what the
            command prints.
        settled: A resumed run that had nothing left to run (:func:`nothing_left`): it was
            ended from its records, without a pool.
    """

    run_dir: Path
    status: RunStatus
    counts: dict[str, int]
    not_run: list[str]
    quarantined: list[str]
    spent_usd: float
    cap_usd: float | None
    unpriced_models: list[str] = field(default_factory=list)
    warning: str | None = None
    fail_on_errors: bool = False
    agent_failed: str | None = None
    agent_errors: int = 0
    blames_agent: bool = False
    summary: Summary = field(default_factory=dict)  # type: ignore[assignment]  # a hand-made one
    settled: bool = False


def health_warning(
    counts: Mapping[str, int], *, lost_all: bool, agent_errors: int = 0,
    agent_failed: str | None = None,
) -> str | None:
    """Why a run that went to the end is still not a result, or ``None`` when it is one.

    A run is unhealthy when every worker was lost or quarantined, or when more than half of its
    tasks ended in error (their success rate would describe a handful of tasks, or nothing).
    When the agent's own errors (``agent_errors`` tasks, told by ``agent_failed``) are what
    makes it so, the warning says so instead (:func:`blames_agent`): it is no pool's fault.
    """
    total = sum(counts.values())
    errors = counts.get(TaskStatus.ERROR.value, 0)
    if lost_all:
        return f"every worker was lost or quarantined ({errors} of {total} task(s) in error)"
    if total and errors * 2 > total:
        if agent_failed and blames_agent(counts, lost_all=False, agent_errors=agent_errors):
            return f"{errors} of {total} task(s) ended in error; {agent_failed}"
        return f"{errors} of {total} task(s) ended in error"
    return None


def blames_agent(counts: Mapping[str, int], *, lost_all: bool, agent_errors: int) -> bool:
    """True when the agent's errors are what spoils the run: without them the rest would not
    (no worker lost, and the other errors at most half the tasks). An agent's exception never
    quarantines a worker (:mod:`evals.run.dispatcher`), so it cannot have lost the pool either."""
    total = sum(counts.values())
    others = counts.get(TaskStatus.ERROR.value, 0) - agent_errors
    return agent_errors > 0 and not lost_all and others * 2 <= total


# --- estimates ---------------------------------------------------------------------------------


def estimate_seconds(task: Mapping[str, Any], *, step_pause_s: float = 0.0) -> float:
    """A task's expected duration, from what it holds (used to order tasks and to budget).

    A scripted reference solution gives the best guess (its ``sleep`` commands, a little per
    step, and the pause after each action sent); otherwise the number of setup steps and
    metrics gives a rough one on top of :data:`DEFAULT_EXPECTED_SECONDS`. Only the order and the
    rough size matter: the ledger corrects the scale from what finished tasks took.
    """
    solution = task.get("reference_solution")
    config = task.get("config")
    setup_steps = len(config) if isinstance(config, list) else 0
    if isinstance(solution, list) and solution:
        sleeps = 0.0
        sent = 0
        for action in solution:
            text = action.strip() if isinstance(action, str) else ""
            match = _SLEEP_COMMAND.match(text)
            if match:
                sleeps += float(match.group(1))
            if text.upper() not in ("DONE", "FAIL", "WAIT"):
                sent += 1
        pauses = step_pause_s * sent
        return round(1.0 + sleeps + pauses + 0.5 * len(solution) + 0.5 * setup_steps, 3)
    evaluator = task.get("evaluator")
    funcs = evaluator.get("func") if isinstance(evaluator, dict) else None
    metrics = len(funcs) if isinstance(funcs, list) else 1
    return round(DEFAULT_EXPECTED_SECONDS + 10.0 * setup_steps + 5.0 * metrics, 3)


# --- the run folder lock -----------------------------------------------------------------------


_HELD_AROUND: contextvars.ContextVar[Path | None] = contextvars.ContextVar(
    "run_held_around", default=None)
"""The run folder whose lock a command holds around its run (:func:`hold_run`)."""


@contextlib.contextmanager
def hold_run(folder: RunFolder) -> Iterator[None]:
    """Hold the run's lock around more than the run itself (a sweep: from before its pool is
    made or reused until it is removed), so that a second command on the same run is refused
    in one line before it touches that pool; the run inside takes the lock as already its own.

    Raises:
        RunLockedError: another live process holds it.
    """
    with run_lock(folder):
        token = _HELD_AROUND.set(folder.path.resolve())
        try:
            yield
        finally:
            _HELD_AROUND.reset(token)


@contextlib.contextmanager
def run_lock(folder: RunFolder) -> Iterator[None]:
    """Hold the run's lock (one controller per run); the OS drops it if the process dies.
    Inside :func:`hold_run` of the same folder it is held already.

    Raises:
        RunLockedError: another live process holds it.
    """
    if _HELD_AROUND.get() is not None and _HELD_AROUND.get() == folder.path.resolve():
        yield
        return
    # 0600, never through a symlink planted as .lock (it is truncated below)
    handle: IO[str] = os.fdopen(folder.open_private(".lock"), "a+", encoding="utf-8")
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunLockedError(str(folder.path)) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{socket.gethostname()} pid {os.getpid()}\n")
        handle.flush()
        yield
    finally:
        handle.close()


# --- the public entry point ---------------------------------------------------------------------


_DEFAULT_NAME = re.compile(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*-\d{4}-\d{2}-\d{2}T\d{6}Z?(?:-\d+)?")
"""What :func:`default_run_name` makes (then ``-2``, ``-3``...; a name an older release made at a
whole second ends in ``Z``): the only names whose empty, unheld folders :func:`reserve_run_name`
removes as reservations of dead processes."""
RESERVATION_MARGIN_S = 60.0
"""How old (its mtime) an empty reserved folder must be before it can be taken for a dead
process's: a reservation is made (``mkdir``) a moment before it is held (``flock``)."""
_HELD: dict[Path, int] = {}
"""The folders this process reserved: each one's open descriptor, its ``flock`` held."""


def default_run_name(agent: str, results: Path | None = None) -> str:
    """``<agent>-<UTC time>``, safe as a folder name; with ``results`` (the results folder),
    the first of it, ``<name>-2``, ``<name>-3``... that names nothing there (:func:`free_name`)."""
    stamp = now_iso()[:19].replace(":", "")  # to the second, whole seconds too (no "Z" then)
    agent_part = re.sub(r"[^A-Za-z0-9]+", "-", agent).strip("-") or "agent"
    name = f"{agent_part}-{stamp}"
    return name if results is None else free_name(results, name)


def reserve_run_name(agent: str, results: Path) -> str:
    """A default run name (:func:`default_run_name`) whose folder is made here, alone: ``mkdir``
    fails for a name another process took since it was chosen, and the next is tried, so runs
    started in the same second never share a folder (the name is chosen before the run makes
    its folder). The folder stays empty until the run writes to it, and an empty run folder is
    one that starts afresh (:func:`unstarted_folder`); :func:`drop_unused` removes it if the
    run never starts.

    The folder is held (an exclusive ``flock`` on the folder itself, no file in it) until
    :func:`drop_unused` or the process's end, so the kernel lets go of it when the process dies,
    however it dies. The empty reservations of dead processes in ``results`` (SIGKILL, out of
    memory, a crash: no ``drop_unused`` ran) are removed first (:func:`_drop_dead`).

    Raises:
        oa_vm.kit.safe_fs.WriteFailedError: the folder could not be made.
    """
    safe_fs.ensure_dir(results)
    _drop_dead(results)
    while True:
        name = default_run_name(agent, results)
        try:
            os.mkdir(results / name, 0o700)
            fd = os.open(results / name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except FileExistsError:
            continue  # taken since it was chosen
        except OSError as exc:
            raise WriteFailedError(results / name, exc) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            # taken for a dead one's by a clock far off: it removes the folder; take another
            os.close(fd)
            continue
        _HELD[results / name] = fd
        return name


def _drop_dead(results: Path) -> None:
    """Remove each folder in ``results`` that a process reserved and died holding: named as
    :func:`default_run_name` names (a user's own empty folder keeps its name), not a symlink,
    empty, older than :data:`RESERVATION_MARGIN_S` (one just made may not be held yet), and
    held by nobody. ``rmdir`` never removes a folder with content; anything that fails leaves
    the folder as it is."""
    try:
        names = [entry.name for entry in os.scandir(results)
                 if _DEFAULT_NAME.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for name in names:
        with contextlib.suppress(OSError):
            fd = os.open(results / name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            try:
                held = os.fstat(fd)
                if time.time() - held.st_mtime < RESERVATION_MARGIN_S:
                    continue
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a live owner: BlockingIOError
                now = os.lstat(results / name)
                if (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):  # the one locked
                    os.rmdir(results / name)
            finally:
                os.close(fd)


def drop_unused(folder: Path, made: Path | None = None) -> None:
    """Remove a reserved run folder still empty (:func:`reserve_run_name`: the run was refused,
    or only planned), then each folder above it up to ``made`` (the first the reservation made,
    if any) while empty; the folder's hold is let go either way."""
    try:
        with contextlib.suppress(OSError):
            folder.rmdir()  # only an empty folder: a run that started keeps its folder
            for above in folder.parents:
                if made is None or made not in (above, *above.parents):
                    break
                above.rmdir()
    finally:
        fd = _HELD.pop(folder, None)
        if fd is not None:
            os.close(fd)


def free_name(results: Path, name: str) -> str:
    """``name``, or ``name-2``, ``name-3``... the first that names nothing in ``results``: two
    runs of one agent started in the same second each get a folder of their own (the second was
    refused as "exists", as if it were a resume without ``--resume``)."""
    taken = (candidate for n in itertools.count(1)
             if not os.path.lexists(results / (candidate := name if n == 1 else f"{name}-{n}")))
    return next(taken)


def _check_resume(folder: RunFolder, config: RunConfig) -> RunMetadata:
    from evals.results.run_reader import read_metadata

    # unreadable metadata is said so, not compared as empty ("started with --tasks ''")
    metadata = read_metadata(folder.path)
    for option, recorded, given in (
        ("--tasks", str(metadata.get("selection", "")), config.selection),
        ("--agent", str(metadata.get("agent", "")), config.agent),
        # runs from before trials: 1
        ("--trials", str(int(metadata.get("trials") or 1)), str(config.trials)),
    ):
        if recorded != given:
            raise ResumeMismatchError(str(folder.path), option, recorded, given)
    return metadata


_FIRST_MOMENT = frozenset({".lock", "queue.sqlite", "queue.sqlite-wal", "queue.sqlite-shm",
                           "queue.sqlite-journal", "sweep-pool.json"})
"""What a run folder holds before its metadata: the lock, the queue (with SQLite's rollback
journal while the new queue turns to WAL), a sweep's pool record; beside them, what a write of
the metadata killed before its rename leaves (:func:`oa_vm.kit.safe_fs.partial_write`)."""
KEPT_WORKER_LOGS = "worker-logs-"
"""The start of the folder name where a failed sweep keeps its pool's worker logs (then the
pool's name): it may come before the metadata too, when the pool failed before the run began."""


def unstarted_folder(folder: RunFolder) -> bool:
    """A run folder killed or failed in its first moments: no metadata, and nothing but what a
    run (or its sweep) writes before it (a folder holding anything else is not ours to reuse)."""
    if not folder.path.is_dir() or folder.exists():
        return False
    try:
        return all(entry.name in _FIRST_MOMENT or entry.name.startswith(KEPT_WORKER_LOGS)
                   or partial_write(entry.name, folder.metadata_path.name)
                   for entry in folder.path.iterdir())
    except OSError:
        return False


def check_run_folder(
    config: RunConfig, run_name: str | None = None
) -> tuple[RunFolder, bool, RunMetadata]:
    """The run's folder checked against ``resume``, reading only: the folder, whether it is a
    run killed in its first moments (it starts afresh), and a resumed run's metadata.

    Raises:
        InvalidRunInputError: ``resume`` and there is no such run.
        RunExistsError: the run exists and ``resume`` is not given.
        ResumeMismatchError: ``resume`` with another selection, agent or number of trials.
    """
    folder = RunFolder(results_root(config.results_dir) / (run_name or config.run_name or ""))
    # A folder without metadata is a run killed in its first moments (before anything was
    # dispatched): it can be resumed or reused, and starts afresh.
    unstarted = unstarted_folder(folder)
    if config.resume and not folder.exists() and not unstarted:
        raise InvalidRunInputError(
            f"there is no run {folder.path} to resume; check --run-name and --results-dir"
        )
    if not config.resume and folder.path.exists() and not unstarted:
        raise RunExistsError(str(folder.path))
    previous = _check_resume(folder, config) if config.resume and not unstarted else {}
    return folder, unstarted, previous


def resumed_cap(
    previous: RunMetadata, given: float | None
) -> tuple[float | None, str | None]:
    """The cap of a resumed run and what to say about it: the run's own cap is kept unless
    ``--max-cost-usd`` gives a new one (the cap is part of the run), and a change is said."""
    recorded = previous.get("max_cost_usd")
    before = float(recorded) if isinstance(recorded, int | float) else None
    if given is None:
        if before is None:
            return None, None
        return before, f"keeping the run's cap of ${before:g} (--max-cost-usd changes it)"
    if before is None:
        return given, f"the run had no cap; capping it at ${given:g} from now on"
    if given != before:
        return given, f"changing the run's cap from ${before:g} to ${given:g}"
    return given, None


@dataclass(frozen=True)
class Checked:
    """What the checks before a run (:func:`evals.run.prechecks.check_before_run`) built and
    read, handed to :func:`run_evaluation`, which builds, asks and reads none of it again.

    Attributes:
        agents: The run's agents, the first one built (an ``http`` agent's server probed).
        variations: The ``--variations`` file, read and checked (``None``: none given).
        changes: The recorded settings a resumed run changes (``--allow-change``), checked.
    """

    agents: AgentFactory
    variations: Mapping[str, Variation] | None = None
    changes: list[dict[str, Any]] = field(default_factory=list)


def run_evaluation(
    config: RunConfig, *, on_event: EventSink | None = None, checked: Checked | None = None
) -> RunResult:
    """Run (or resume) a selection of tasks on a pool and write the run folder.

    Nothing is dispatched, no lock or lease is taken and the run folder is not touched until the
    options, the agent, the pool and every task ID were checked.

    With several pools (``config.pools``) every pool is checked and leased first, the tasks
    must be the same on all of them, and one dispatcher runs the union of their workers
    (:mod:`evals.run.pools`).

    ``checked``: what the command's checks built and read (:class:`Checked`: the agents, an
    ``http`` agent's server probed, the variations, a resumed run's settings); the run uses it
    and asks nothing again. Without it (a Python caller) the run builds, probes and reads
    itself, once.

    Raises:
        InvalidRunInputError: bad options, an unknown agent, a run that exists without
            ``resume`` (or is missing with it), ``resume`` with another selection, agent or
            set of pools, a task the agent cannot play, a pool given twice, pools that serve
            different tasks, an ``http`` agent whose server does not answer (exit code 2).
        oa_vm.errors.OaVmError: a pool is unknown, not ready, or held by another run.
        waa_client.errors.CatalogError: unknown or synthetic task IDs (all listed; exit code 2).
        RunLockedError: another process runs this run now.
        KeyboardInterrupt: Ctrl-C; the run is marked ``interrupted`` and can be resumed.
    """
    from evals.run.pools import (
        connect_pools,
        hold_pools,
        load_ready,
        session_pools,
        workers_changed,
    )

    path_patience_s = patience_s()
    run_name = config.run_name or default_run_name(config.agent, results_root(config.results_dir))
    folder, unstarted, previous = check_run_folder(config, run_name)
    if config.resume:
        # one killed before its metadata starts afresh (nothing ran: no errors to run again)
        config = replace(config, resume=not unstarted,
                         rerun_errors=config.rerun_errors and not unstarted,
                         max_cost_usd=resumed_cap(previous, config.max_cost_usd)[0])
    if checked is not None and checked.agents.makes(config.agent, config.agent_options):
        make_agent, variations, changes = checked.agents, checked.variations, checked.changes
    else:
        # Python callers have no command to check first: an http agent's server that does
        # not answer is refused here, before any lease, rather than ending every task in error.
        make_agent = build_agents(config, "agent_options.agent_url")
        variations = read_variations(config.variations) if config.variations else None
        changes = check_resume_settings(folder, config, make_agent.first) if config.resume else []

    if config.resume:
        # nothing left to run: ended from its records, before any pool is read or leased
        settled = _end_settled(folder, config, previous)
        if settled is not None:
            return settled
        _check_queue(folder)  # before any lease, as every check that reads the pools below
    names = _resolve_pools(config, previous)
    try:
        load_ready(names)  # every pool exists and is usable before any lease is taken
    except PoolNotFoundError as exc:
        if not config.resume or len(names) < 2 or config.pool_names():
            raise
        left = " ".join(f"--pool {n}" for n in names if n != exc.name)
        raise InvalidRunInputError(f"run {folder.path}'s pool {exc.name!r} is gone; resume it "
                                   f"on the others with {left} --allow-change pools") from None
    first = session_pools(previous)[:1] if config.resume else []
    connect = functools.partial(connect_pools, names, connect_timeout=config.connect_timeout_s,
                                read_timeout=config.read_timeout_s,
                                # off the run's first pool: workers told apart from its own
                                qualified=bool(first) and first != ["+".join(names)])
    with contextlib.ExitStack() as stack:
        # The pools are read and every task checked before anything is written (the run's
        # lock, a lease, the folder): a selection they refuse leaves them and the results as
        # they were. Reading a catalog, and asking whether a worker can restore, change
        # nothing on the workers, so neither needs a lease.
        reading = stack.enter_context(contextlib.ExitStack())
        pools = reading.enter_context(connect())
        tasks, infos = _checked_tasks(folder, config, pools, variations, previous, make_agent)
        # asks every worker whether it can restore: --reset clean fails here, before any task
        resets = plan_resets(config.reset, pools, left_out=config.repair)
        if config.resume:
            # Taken before any pool lease: a resume refused because another controller (a
            # stalled one included) runs this run must not take over, then drop, its lease.
            stack.enter_context(run_lock(folder))
        holds = stack.enter_context(hold_pools(names, run_name, wait_s=config.wait_for_pool_s))
        if workers_changed(pools):
            # changed while this run waited for the lease (another run's repair, a pause):
            # the workers as they are now, asked again whether they can restore
            reading.close()
            pools = stack.enter_context(connect())
            resets = plan_resets(config.reset, pools, left_out=config.repair)
        return _run_in_folder(
            folder, config, pools, tasks, infos, make_agent, previous, on_event, resets,
            fence=_fence(list(holds.values())), fence_token=_fence_token(holds),
            changes=changes, locked=config.resume, path_patience_s=path_patience_s,
        )


def build_agents(config: RunConfig, agent_url_option: str) -> AgentFactory:
    """The run's agents (the one built first), an ``http`` agent's server probed once.

    Raises:
        InvalidRunInputError: as :class:`evals.agents.AgentFactory`, or the server does not
            answer (the refusal names ``agent_url_option``).
    """
    from evals.agents.http import probe_agent_server

    agents = AgentFactory(config.agent, config.agent_options)
    probe_agent_server(config.agent, config.agent_options.agent_url, option=agent_url_option)
    return agents


def check_resume_settings(
    folder: RunFolder, config: RunConfig, agent: BenchmarkAgent
) -> list[dict[str, Any]]:
    """A resumed run's settings checked against those it recorded (:mod:`evals.run.settings`);
    returns the changes ``--allow-change`` allowed.

    Raises:
        ResumeMismatchError: a recorded setting differs without ``--allow-change``.
    """
    from evals.results.run_reader import read_metadata
    from evals.run.manifest import read_manifest

    return check_settings(str(folder.path), config, agent, read_manifest(folder.path),
                          read_metadata(folder.path))


def _checked_tasks(
    folder: RunFolder, config: RunConfig, pools: list[RunPool],
    variations: Mapping[str, Variation] | None, previous: RunMetadata, make_agent: AgentFactory,
) -> tuple[dict[str, dict[str, Any]], dict[str, TaskInfo]]:
    """The selected tasks, read from the pools' workers and checked, and what each is: the
    catalog's refusals (unknown or synthetic IDs), a resumed run's tasks that differ, an ID
    against the one ID rule, a task the agent cannot play."""
    from evals.run.pools import select_tasks

    selected = select_tasks(pools, config.selection)
    if variations is not None:
        selected = add_variations(selected, variations)
    refs = selected.refs
    task_ids = [r.task_id for r in refs]
    if config.resume and list(previous.get("task_ids") or []) != task_ids:
        raise ResumeMismatchError(
            str(folder.path), "--tasks (the tasks it names now differ)",
            ",".join(previous.get("task_ids") or []), ",".join(task_ids),
        )
    tasks = selected.tasks
    infos = {r.task_id: TaskInfo(r.task_id, r.domain, r.instruction, r.infeasible) for r in refs}
    for tid in task_ids:  # the one ID rule, before anything is written: no '#' (the
        check_id("task ID", tid)  # trial separator), no path, a length bound
    agent = make_agent.first
    agent.check_tasks(tasks_for_agent(agent, tasks))
    return tasks, infos


def _fence_token(holds: Mapping[str, Hold]) -> Callable[[str], str | None]:
    """The lease generation a worker's requests carry, by worker name (``<pool>/<worker>`` in a
    multi-pool run): the worker refuses requests of an earlier holder (``oa_vm.model.lease``)."""
    from evals.run.pools import split

    def token(worker: str) -> str | None:
        pool, _ = split(worker)
        hold = holds.get(pool) if pool is not None else next(iter(holds.values()), None)
        return None if hold is None or hold.generation is None else str(hold.generation)

    return token


def _fence(holds: list[Hold]) -> Callable[[], None]:
    """One check for every pool lease the run holds (the dispatcher's ``fence``)."""

    def check() -> None:
        for hold in holds:
            hold.check()

    return check


def _resolve_pools(config: RunConfig, previous: RunMetadata) -> list[str]:
    """The run's pool names, resolved (none given: the only pool; resuming a multi-pool run
    without ``--pool``: its own pools). A resumed run's pools were checked against its own with
    its other settings (:mod:`evals.run.settings`)."""
    from evals.run.pools import recorded_pool_names

    names = config.pool_names()
    recorded = recorded_pool_names(previous) if config.resume else None
    if not names and recorded:
        names = recorded
    return [oa_vm.resolve_name(n) for n in names] if names else [oa_vm.resolve_name(None)]


def _ledger(pools: list[RunPool], cap_usd: float | None) -> Ledger:
    """The run's ledger: one pool's price, or each worker priced at its own pool's."""
    from evals.run.pools import highest_price

    if len(pools) == 1:
        return Ledger(pools[0].price_per_hour, cap_usd, default_token_pricer())
    return Ledger(
        highest_price(pools), cap_usd, default_token_pricer(),
        worker_pools={w.name: p.name for p in pools for w in p.workers},
        pool_prices={p.name: p.price_per_hour for p in pools},
    )


@dataclass(frozen=True)
class PoolHelpers:
    """What a run's dispatcher gets from its pools for repairs and drain notices.

    Attributes:
        repairers: The repairers to close when the run ends (none without ``--repair``).
        repair: The dispatcher's ``repair``: a worker's replacement, through its own pool
            (None without ``--repair``).
        draining: The dispatcher's ``draining``: a worker's drain notice, read through its own
            pool (pools whose provider declares no ``DRAIN`` capability are not watched).
    """

    repairers: list[WorkerRepairer]
    repair: Callable[[str], WorkerConnection | None] | None
    draining: Callable[[str], object | None] | None


def _per_pool_helpers(
    pools: list[RunPool], config: RunConfig, fence: Callable[[], None] | None = None
) -> PoolHelpers:
    """The repairers, the dispatcher's ``repair`` and ``draining``: each worker is repaired,
    and watched for drain notices, through its own pool."""
    from evals.run.pools import PoolRouter, renamed_connection, split
    from oa_vm import Capability, DrainWatch, get_provider

    watches = {p.name: DrainWatch(p.name) for p in pools
               if Capability.DRAIN in get_provider(p.record.cloud).capabilities}
    repairers: dict[str, WorkerRepairer] = {}
    if config.repair:
        from evals.run.repair import WorkerRepairer

        repairers = {
            # given its pool's drain check, it replaces a worker under notice right away
            p.name: WorkerRepairer(p.name, config, draining=watches.get(p.name), fence=fence)
            for p in pools
        }
    if len(pools) == 1 and all(split(w.name)[0] is None for w in pools[0].workers):
        name = pools[0].name
        return PoolHelpers(list(repairers.values()), repairers.get(name), watches.get(name))
    repair = PoolRouter(repairers, renamed_connection) if repairers else None
    draining: PoolRouter[object] | None = PoolRouter(watches) if watches else None
    return PoolHelpers(list(repairers.values()), repair, draining)


def _check_queue(folder: RunFolder) -> None:
    """A resumed run's queue checked, read only (:func:`evals.run.queue.check_resumable`).

    Raises:
        InvalidRunInputError: ``queue.sqlite`` is not a readable queue of this run.
    """
    import sqlite3

    from evals.run.queue import check_resumable

    try:
        check_resumable(folder.queue_path)
    except (sqlite3.DatabaseError, ValueError) as exc:
        raise _unreadable(folder, exc) from exc


def _unreadable(folder: RunFolder, exc: Exception) -> InvalidRunInputError:
    return InvalidRunInputError(
        f"run {folder.path}: its queue {folder.queue_path.name} is unreadable ({exc}); "
        "it cannot be resumed: start a new run with another --run-name"
    )


def _open_queue(
    folder: RunFolder, config: RunConfig, owner: str, tasks: Mapping[str, dict[str, Any]]
) -> TaskQueue:
    """The run's queue, filled and recovered; an unreadable one is reported in one line.

    Raises:
        InvalidRunInputError: ``queue.sqlite`` is not a readable queue (nothing was changed).
        oa_vm.kit.safe_fs.WriteFailedError: its disk refused the queue's writes (full,
            read-only); the queue is whole and the same command runs once the disk is fixed.
    """
    import sqlite3

    queue: TaskQueue | None = None
    try:
        # made 0600 before SQLite opens it (SQLite gives its -wal and -shm files the same mode)
        os.close(folder.open_private(folder.queue_path.name))
        queue = TaskQueue(
            folder.queue_path, owner=owner, lease_seconds=config.lease_seconds,
            max_attempts=config.max_attempts,
        )
        given = config.expected_seconds or {}
        pause = config.step_pause_s
        queue.add([
            (trial_key(tid, trial), given.get(tid) or estimate_seconds(task, step_pause_s=pause))
            for tid, task in tasks.items()
            for trial in range(1, config.trials + 1)
        ])
        queue.recover()
        queue.records()
    except WriteFailedError:
        # the disk refused the queue's writes (full, read-only): the queue itself is fine
        if queue is not None:
            queue.close()
        raise
    except (sqlite3.DatabaseError, ValueError) as exc:
        if queue is not None:
            queue.close()
        raise _unreadable(folder, exc) from exc
    return queue


@contextlib.contextmanager
def _resumable(folder: RunFolder) -> Iterator[None]:
    """Around a run in its folder: a write the disk refused once the run has started (its
    ``metadata.json`` is there) says to continue it with ``--resume``, since running the same
    command again would find the run's name taken. Finished tasks are in the queue, kept."""
    try:
        yield
    except WriteFailedError as exc:
        if not folder.exists():
            raise  # nothing started: the same command again starts it
        raise exc.then_do("continue the run with --resume (finished tasks are kept)") from exc


def _mark_interrupted(
    folder: RunFolder, queue: TaskQueue, ledger: Ledger, exc: BaseException
) -> None:
    """``metadata.json`` marked interrupted (with why, when the pool lease was lost) and the
    summary of what was recorded, for a run whose dispatch ``exc`` stopped. Best effort against
    the run folder's disk: a disk that refused the run's writes (``exc``) may refuse these too,
    and nothing here may replace the error that stopped the run; ``metadata.json`` left
    ``running`` is continued by ``--resume`` all the same."""
    from evals.run.dispatcher import FENCE_ERRORS

    try:
        ended = folder.update_metadata(
            status=RunStatus.INTERRUPTED.value, ended_at=now_iso(), cost=ledger.totals())
        if isinstance(exc, (*FENCE_ERRORS, SshPathLost)):  # the pool or its path lost: why
            ended = folder.update_metadata(stopped=str(exc))
    except LOCAL_FILE_ERRORS:
        return
    _summary_of_interrupted(folder, queue, ended, said=isinstance(exc, LOCAL_FILE_ERRORS))


def _summary_of_interrupted(
    folder: RunFolder, queue: TaskQueue, metadata: RunMetadata, *, said: bool = False
) -> None:
    """An interrupted run still gets its ``summary.json`` (of what was recorded): a Ctrl-C that
    lands as the last task ends leaves a finished set of records, and without a summary the
    reader had to resume the run (a pool made for nothing) to get one. Best effort: nothing
    here may hide the interrupt itself. ``said``: the run stopped because its folder refused a
    write, which its error line says; a summary the same disk refused is not said again."""
    import logging

    try:
        committed = queue.records()
        folder.sync_executions(committed)
        records = (TaskExecution.from_json(doc) for doc in committed.values())
        folder.write_summary(summarize(metadata, records, run=folder.path.name))
    except Exception as exc:  # a summary is a convenience; the interrupt must go on
        if not (said and isinstance(exc, LOCAL_FILE_ERRORS)):
            logging.getLogger("evals").warning(
                "no summary for the interrupted run %s: %s", folder.path.name, exc)


def _reopen_errors(folder: RunFolder, queue: TaskQueue) -> list[str]:
    """Reopen the run's tasks that ended in a :data:`RERUN_ERROR_TYPES` error; their records
    and screenshots move to ``<task folder>/attempt-<n>/`` (kept, never replaced; ``n`` counts
    the task's earlier attempts). Returns the reopened keys."""
    keys = queue.reopen_errors(RERUN_ERROR_TYPES)
    for key in keys:
        folder.set_aside(key, len(queue.history(key)))
    return keys


def _write_manifest(
    folder: RunFolder, config: RunConfig, pools: list[RunPool],
    tasks: Mapping[str, dict[str, Any]], agent: BenchmarkAgent,
    changes: list[dict[str, Any]], resets: Mapping[str, WorkerReset] | None = None,
) -> None:
    """``manifest.json`` (:mod:`evals.run.manifest`) at the run's start; a resumed run keeps the
    one it started with, its ``settings`` updated by the changes ``--allow-change`` allowed
    (each appended to ``setting_changes``)."""
    from evals.run.manifest import MANIFEST, build_manifest, write_manifest

    if (folder.path / MANIFEST).is_file():
        _record_changes(folder, changes)
        return
    write_manifest(folder, build_manifest(
        run=folder.path.name, selection=config.selection, tasks=tasks, pools=pools,
        agent_spec=config.agent, agent=agent, agent_options=config.agent_options,
        trials=config.trials, settings=current_settings(config, agent),
        qemu=describe_plan(resets or {})["qemu"],
    ))


def _record_changes(folder: RunFolder, changes: list[dict[str, Any]]) -> None:
    """A resumed run's manifest (when it has one) with the changes ``--allow-change``
    allowed: its ``settings`` updated, each change appended to ``setting_changes``."""
    from evals.run.manifest import read_manifest, write_manifest

    manifest = read_manifest(folder.path)
    if manifest is None or not changes:
        return
    settings = manifest.get("settings")
    if not isinstance(settings, dict):  # a run from before settings were recorded
        settings = {}
    # the pools are the metadata's, not a setting compare weighs (pool names say nothing of it)
    settings.update({c["setting"]: c["to"] for c in changes if c["setting"] != "pools"})
    manifest["settings"] = settings
    at = now_iso()
    manifest["setting_changes"] = [*(manifest.get("setting_changes") or []),
                                   *({"at": at, **c} for c in changes)]
    write_manifest(folder, manifest)


def _run_in_folder(
    folder: RunFolder,
    config: RunConfig,
    pools: list[RunPool],
    tasks: dict[str, dict[str, Any]],
    infos: dict[str, TaskInfo],
    make_agent: AgentFactory,
    previous: RunMetadata,
    on_event: EventSink | None,
    resets: Mapping[str, WorkerReset] | None = None,
    *,
    fence: Callable[[], None] | None = None,
    fence_token: Callable[[str], str | None] | None = None,
    changes: list[dict[str, Any]] | None = None,
    locked: bool = False,
    path_patience_s: float = DEFAULT_PATIENCE_S,
) -> RunResult:
    from evals.run.pools import host_namer, namer, say_left_out, session_pools, summary_fields

    task_ids = list(tasks)
    workers = [w for p in pools for w in p.workers]
    first = pools[0].record  # a multi-pool run's pool keys are set from summary_fields below
    pool, cloud, price_per_hour = first.name, first.cloud, pools[0].price_per_hour
    # a name of our choosing is never another run's folder, not even one killed at its start
    unstarted = not config.resume and config.run_name is not None and unstarted_folder(folder)
    while not config.resume and not unstarted:
        try:
            folder.create()  # 0700 whatever the umask; refuses a symlinked or foreign folder
            break
        except FileExistsError:
            if config.run_name is not None:
                raise RunExistsError(str(folder.path)) from None
            # our default name, taken since it was chosen (a run started in the same second)
            folder = RunFolder(folder.path.parent / default_run_name(config.agent,
                                                                     folder.path.parent))
    # a resumed run's lock is taken before its pool leases (run_evaluation)
    with contextlib.nullcontext() if locked else run_lock(folder), _resumable(folder):
        if unstarted:
            if folder.exists():  # another controller started it meanwhile
                raise RunExistsError(str(folder.path))
            # Killed before its metadata: nothing was dispatched; its queue starts again.
            # (SQLite's journal too: left beside a new queue it would be rolled back into it)
            for entry in list(folder.path.iterdir()):
                if entry.name.startswith("queue.sqlite") or partial_write(
                        entry.name, folder.metadata_path.name):
                    entry.unlink(missing_ok=True)
        # a new run's previous metadata is empty: nothing quarantined before; workers that do
        # not answer now are quarantined from the start (the dispatcher's own, which --repair
        # may bring back)
        left_out = say_left_out(pools)
        earlier_quarantined = [str(w) for w in previous.get("quarantined_workers") or []]
        earlier_hosts = [h for h in previous.get("quarantined_hosts") or [] if isinstance(h, dict)]
        metadata: RunMetadata = {
            "run": folder.path.name,
            "pool": pool,
            "cloud": cloud,
            "agent": config.agent,
            # Agents that opted in to the tasks' answers (evals.agents.base.sees_answers).
            "answer_visible_agents": [config.agent] if make_agent.first.sees_answers else [],
            "selection": config.selection,
            "task_ids": task_ids,
            "trials": config.trials,
            "variations": str(config.variations) if config.variations is not None else None,
            "max_steps": config.max_steps,
            "max_attempts": config.max_attempts,
            "task_timeout_s": config.task_timeout_s,
            "max_cost_usd": config.max_cost_usd,
            "price_per_hour": price_per_hour,
            "versions": versions(),
            "workers": [w.name for w in workers],
            "started_at": previous.get("started_at") or now_iso(),
            "ended_at": None,
            "status": RunStatus.RUNNING.value,
            "quarantined_workers": sorted({*earlier_quarantined, *left_out}),
            "quarantined_hosts": earlier_hosts,
            "reset": {"mode": config.reset, **describe_plan(resets or {})},
        }
        if len(pools) > 1:
            metadata.update(summary_fields(pools))  # pool "a+b", and each pool in "pools"
        # the pool of each session (a run of an earlier release: its first is the pool named)
        earlier_sessions = list(previous.get("sessions") or [
            {"pool": p, "started_at": previous.get("started_at")} for p in session_pools(previous)])
        if (earlier_sessions and isinstance(previous.get("pools"), list)
                and previous.get("pool") != metadata["pool"]):
            # the top-level pools are this session's: the last session's go with it, so a
            # pool left behind keeps its cloud, price and workers on record
            earlier_sessions[-1] = {**earlier_sessions[-1], "pools": previous["pools"]}
        metadata["sessions"] = [*earlier_sessions,
                                {"pool": metadata["pool"], "started_at": now_iso()}]
        named = namer(metadata)  # bare names of the run's first pool, once it ran on another
        earlier_workers = [named(str(w)) for w in previous.get("workers") or []]
        metadata.update(_used_workers(metadata, earlier_workers, metadata["workers"]))
        earlier_quarantined = [named(w) for w in earlier_quarantined]
        metadata["quarantined_workers"] = [named(w) for w in metadata["quarantined_workers"]]
        metadata["quarantined_hosts"] = earlier_hosts = [
            *map(host_namer(metadata), earlier_hosts)]
        if config.resume:
            metadata["resumed_at"] = [*previous.get("resumed_at", []), now_iso()]
            if previous.get("reruns"):
                metadata["reruns"] = list(previous["reruns"])
        owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        # The queue is opened and checked before metadata.json is touched: a --resume that
        # fails here leaves the run exactly as it was (a finished run is not marked running).
        queue = _open_queue(folder, config, owner, tasks)
        try:
            if config.rerun_errors:
                metadata["reruns"] = [*metadata.get("reruns", []), {
                    "at": now_iso(), "error_types": list(RERUN_ERROR_TYPES),
                    "tasks": _reopen_errors(folder, queue),
                }]
            folder.write_metadata(metadata)
            for tid, task in tasks.items():
                folder.write_task(tid, task)
            _write_manifest(folder, config, pools, tasks, make_agent.first, changes or [], resets)
            ledger = _ledger(pools, config.max_cost_usd)
            done = queue.records()
            ledger.carry(r.get("cost") or {} for r in done.values())
            # Attempts an earlier controller left running (killed, frozen) ran on a worker:
            # billed to their tasks, from their lease's start to its last heartbeat.
            for tid, cut in queue.interrupted_seconds().items():
                for worker_name, seconds in cut:
                    ledger.charge(tid, seconds, [], worker=worker_name or None)
            if metadata.get("reruns"):
                # What the attempts reopened by --rerun-errors spent stays spent, in their
                # task's account: its next record (each record's cost counts every attempt of
                # its task, the last rerun's included) and the summary agree with the ledger.
                for key in queue.task_ids():
                    if key in done:
                        continue
                    reruns = [h for h in queue.history(key) if h.get("reason") == "rerun"
                              and isinstance(h.get("cost"), dict)]
                    if reruns:
                        ledger.carry_task(key, reruns[-1]["cost"])
            # The queue is the source of truth: restore a copy lost, cut short or left stale
            # by a crash (the dispatcher writes execution.json without fsync).
            folder.sync_executions(done)
            helpers = _per_pool_helpers(pools, config, fence)
            dispatcher = Dispatcher(
                folder, queue, ledger, workers, tasks, infos, make_agent, config, on_event,
                repair=helpers.repair,
                draining=helpers.draining,
                fence=fence,
                fence_token=fence_token,
                resets=resets,
                path_patience_s=path_patience_s,
                left_out=left_out,
            )
            try:
                outcome = dispatcher.run()
            except BaseException as exc:
                _mark_interrupted(folder, queue, ledger, exc)
                raise
            finally:
                for repairer in helpers.repairers:
                    repairer.close()
            quarantined = sorted({*earlier_quarantined, *map(named, outcome.quarantined)})
            lost_hosts = [*earlier_hosts, *outcome.quarantined_hosts]
            status = RunStatus.BUDGET_STOPPED if outcome.budget_stopped else RunStatus.FINISHED
            # the queue commits TaskExecution.to_json() documents: read back as records
            committed = queue.records()
            # execution.json was written without fsync during the run: one that is missing or
            # differs from the queue's record is rewritten (with fsync); one lost after this,
            # in a power cut, is restored by --resume
            folder.sync_executions(committed)
            records = {k: TaskExecution.from_json(v) for k, v in committed.items()}
        finally:
            queue.close()
        out = {*outcome.quarantined, *(n for h in outcome.quarantined_hosts for n in h["workers"])}
        lost_all = bool(outcome.workers) and out >= set(outcome.workers)
        ending = _Ending.of(config.agent, records, lost_all=lost_all)
        ending_fields: RunMetadata = {
            "status": status.value, "ended_at": now_iso(), "quarantined_workers": quarantined,
            "quarantined_hosts": lost_hosts, "cost": ledger.totals(), "warning": ending.warning,
            "warning_cause": ending.warning_cause}
        ending_fields.update(_used_workers(metadata, earlier_workers, outcome.workers))
        ended = folder.update_metadata(**ending_fields)
        # the files are for resuming and for readers: the summary is of the records held here
        summary = summarize(ended, records.values(), run=folder.path.name)
        folder.write_summary(summary)
    return ending.result(
        summary=summary,
        run_dir=folder.path,
        status=status,
        quarantined=quarantined,
        spent_usd=ledger.spent(),
        cap_usd=config.max_cost_usd,
        unpriced_models=sorted(ledger.unpriced_models),
    )


def _used_workers(metadata: RunMetadata, earlier: Sequence[str],
                  used: Sequence[str]) -> RunMetadata:
    """``metadata.json``'s ``workers`` (and each pool's, in ``pools``): the workers of the
    run's earlier sessions (``earlier``, named as this session names them), then this
    session's ``used`` ones not among them. At a session's start ``used`` is the workers that
    answered; as it ends, every worker it dispatched to, those left out at the start that
    ``--repair`` brought back included. A resumed run so keeps every worker it ever ran on."""
    from evals.run.pools import namer, split

    named = namer(metadata)
    used = list(dict.fromkeys([*earlier, *map(named, used)]))
    changes: RunMetadata = {"workers": used}
    if isinstance(metadata.get("pools"), list):  # a multi-pool run's names are qualified
        changes["pools"] = [{**entry, "workers": [n for n in used
                                                  if split(n)[0] == entry.get("name")]}
                            for entry in metadata["pools"]]
    return changes


@dataclass(frozen=True)
class _Ending:
    """What a run's final records say of it: the counts by status, whether it is a result
    (:func:`health_warning`) and the agent's part in it; one reckoning for a run that ends
    after its dispatch and for one resumed with nothing left to run (:func:`_end_settled`)."""

    records: Mapping[str, TaskExecution]
    counts: dict[str, int]
    warning: str | None
    agent_failed: str | None
    agent_errors: int
    blames_agent: bool

    @classmethod
    def of(cls, agent: str, records: Mapping[str, TaskExecution], *, lost_all: bool) -> _Ending:
        counts = {**{s.value: 0 for s in TaskStatus},
                  **Counter(final.status.value for final in records.values())}
        failures = agent_failures(records.values())
        agent_errors = sum(len(keys) for keys in failures.values())
        agent_failed = describe(agent, failures) if failures else None
        warning = health_warning(
            counts, lost_all=lost_all, agent_errors=agent_errors, agent_failed=agent_failed
        )
        blamed = warning is not None and blames_agent(
            counts, lost_all=lost_all, agent_errors=agent_errors
        )
        return cls(records, counts, warning, agent_failed, agent_errors, blamed)

    @property
    def warning_cause(self) -> str | None:
        """``metadata.json``'s ``warning_cause``: the run page's banner says "the agent
        failed", not "unhealthy run", when the agent is to blame."""
        if self.warning is None:
            return None
        return "agent" if self.blames_agent else "workers"

    def result(self, *, summary: Summary, run_dir: Path, status: RunStatus,
               quarantined: list[str], spent_usd: float, cap_usd: float | None,
               unpriced_models: list[str], settled: bool = False) -> RunResult:
        """The run's :class:`RunResult`."""
        return RunResult(
            summary=summary, warning=self.warning, run_dir=run_dir, status=status,
            counts=self.counts,
            not_run=[k for k, r in self.records.items() if r.status is TaskStatus.NOT_RUN],
            quarantined=quarantined, spent_usd=spent_usd, cap_usd=cap_usd,
            unpriced_models=unpriced_models, agent_failed=self.agent_failed,
            agent_errors=self.agent_errors, blames_agent=self.blames_agent, settled=settled,
        )


# --- a resumed run with nothing left to run ----------------------------------------------------


def nothing_left(config: RunConfig) -> bool:
    """Whether resuming ``config``'s run would run nothing: every task and trial it recorded
    has its final record, none was kept from running by a budget cap, and (with
    ``rerun_errors``) none ended in an error that is run again (:data:`RERUN_ERROR_TYPES`).
    Such a run needs no pool: :func:`run_evaluation` ends it from its records (its summary
    written, as a finished run's), and a sweep makes none for it. False for a new run and
    for one killed before it started.

    Raises:
        InvalidRunInputError: its metadata or queue is unreadable.
    """
    if not config.resume or not config.run_name:
        return False
    from evals.results.run_reader import read_started

    folder = RunFolder(results_root(config.results_dir) / config.run_name)
    previous = read_started(folder.path)
    return previous is not None and _settled_records(folder, config, previous) is not None


def _settled_records(
    folder: RunFolder, config: RunConfig, previous: RunMetadata
) -> dict[str, dict[str, Any]] | None:
    """The resumed run's final records when it has nothing left to run (else ``None``)."""
    import sqlite3

    from evals.run.queue import settled_records

    trials = int(previous.get("trials") or 1)  # runs from before trials: 1
    keys = [trial_key(str(tid), n) for tid in previous.get("task_ids") or []
            for n in range(1, trials + 1)]
    try:
        return settled_records(folder.queue_path, keys,
                               RERUN_ERROR_TYPES if config.rerun_errors else ())
    except (sqlite3.DatabaseError, ValueError) as exc:
        raise _unreadable(folder, exc) from exc


def _end_settled(
    folder: RunFolder, config: RunConfig, previous: RunMetadata
) -> RunResult | None:
    """End a resumed run that has nothing left to run (:func:`nothing_left`) from its
    records, as a run ends after its dispatch: each ``execution.json`` made a copy of its
    record, the metadata marked finished (an interrupted run whose tasks all ended is), the
    summary written. No pool is read or leased and nothing was run, so the run's records stay
    as they were: its cost, its workers and their quarantine, its pools and its settings (a
    change ``--allow-change`` allowed is recorded only by a resume that runs something: it
    would describe no record). ``None``: something is left to run."""
    if _settled_records(folder, config, previous) is None:
        return None  # said before the lock: a run with work left takes it with its pools
    with run_lock(folder):
        found = _settled_records(folder, config, previous)  # again, as its one controller
        if found is None:
            return None
        folder.sync_executions(found)
        records = {k: TaskExecution.from_json(v) for k, v in found.items()}
        workers = {str(w) for w in previous.get("workers") or []}
        quarantined = [str(w) for w in previous.get("quarantined_workers") or []]
        out = {*quarantined, *(str(n) for h in previous.get("quarantined_hosts") or []
                               if isinstance(h, dict) for n in h.get("workers") or [])}
        ending = _Ending.of(config.agent, records, lost_all=bool(workers) and out >= workers)
        finished = previous.get("status") == RunStatus.FINISHED.value
        ended = folder.write_metadata({
            **previous, "status": RunStatus.FINISHED.value,
            "ended_at": previous.get("ended_at") if finished else now_iso(),
            "warning": ending.warning, "warning_cause": ending.warning_cause,
        })
        summary = summarize(ended, records.values(), run=folder.path.name)
        folder.write_summary(summary)
    cost = previous.get("cost") or {}
    return ending.result(
        summary=summary, run_dir=folder.path, status=RunStatus.FINISHED,
        quarantined=quarantined, spent_usd=float(cost.get("total_usd") or 0.0),
        cap_usd=config.max_cost_usd, unpriced_models=[], settled=True,
    )
