"""One run over several pools (``run --pool a --pool b``): naming, leases, connections, routing.

A run given several pools connects to the ready workers of all of them, reads and checks the
tasks on each, takes every pool's lease (in name order, so two multi-pool runs cannot each hold
one pool and wait for the other's) and hands the union to one dispatcher, with one queue and
one ledger. Worker names repeat across pools (every local pool has a ``worker-0``), so in a
multi-pool run a worker is named ``<pool>/<worker>`` wherever it is recorded or shown; pool
names cannot hold a ``/``, so the name splits back unambiguously. A single-pool run keeps bare
worker names, as long as it runs on the pool it started on: a session on another pool (a resume,
``--rerun-errors``), or on one of a multi-pool run's pools, names its workers ``<pool>/<worker>``
too, so none is taken for the earlier pool's worker of the same name (its fingerprints, its
quarantine); a bare name then means a worker of the run's first pool (:func:`session_pools`,
:func:`namer`).

Repairs (``--repair``) and drain notices are per pool: :class:`PoolRouter` sends a qualified
worker name to its own pool's :class:`evals.run.repair.WorkerRepairer` or
:class:`oa_vm.reach.drain.DrainWatch`, under the worker's bare name.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import oa_vm
from evals.errors import EvalsError, InvalidRunInputError
from oa_vm.kit.validate import twice_problem

if TYPE_CHECKING:
    from evals.results.records import RunMetadata, TaskExecution
    from oa_vm import Hold, PoolRecord, WorkerConnection

SEPARATOR = "/"
T = TypeVar("T")


def qualify(pool: str, worker: str) -> str:
    """``<pool>/<worker>``: a worker's name in a multi-pool run."""
    return f"{pool}{SEPARATOR}{worker}"


def split(name: str) -> tuple[str | None, str]:
    """``(pool, worker)`` of a qualified name; ``(None, name)`` for a bare one."""
    pool, sep, worker = name.partition(SEPARATOR)
    return (pool, worker) if sep else (None, name)


def check_pool_names(names: Sequence[str]) -> None:
    """Refuse a pool given twice (one line naming it).

    Raises:
        InvalidRunInputError: a name repeats.
    """
    if twice := twice_problem("--pool", list(names), "pool"):
        raise InvalidRunInputError(f"{twice} (--pool a --pool b)")


@dataclass
class RunPool:
    """One pool of a run: its record (as when the run started) and its ready workers."""

    record: PoolRecord
    workers: list[WorkerConnection]
    left_out: dict[str, str] = field(default_factory=dict)
    """Workers of the record that were not ready when the run connected (a process gone, a
    host lost, one still booting), by the name the run gives them: their state and phase. The
    run goes on without them and reports them as quarantined (:func:`say_left_out`)."""
    silent: list[str] = field(default_factory=list)
    """Those of :attr:`left_out` that were ready but did not answer a probe (hung), by their
    bare names: ``oa-vm pool-repair`` replaces them only when named (``--worker``)."""

    @property
    def name(self) -> str:
        """The pool's name."""
        return self.record.name

    @property
    def price_per_hour(self) -> float | None:
        """A worker's $/hour, by oa-vm's one rule (:func:`oa_vm.pool_price`)."""
        return oa_vm.pool_price(self.record)

    def describe(self) -> dict[str, Any]:
        """The pool's entry in ``metadata.json`` (``pools``)."""
        return {
            "name": self.record.name,
            "cloud": self.record.cloud,
            "price_per_hour": self.price_per_hour,
            "egress": self.record.settings.get("egress"),
            "workers": [w.name for w in self.workers],
        }


def load_ready(names: Sequence[str]) -> list[PoolRecord]:
    """Each pool's record, checked usable (exists, not being created or deleted).

    Raises:
        oa_vm.errors.OaVmError: a pool is unknown, or is being created or deleted (names it).
    """

    records = []
    for name in names:
        record = oa_vm.load_pool(oa_vm.resolve_name(name))
        oa_vm.refuse_unsettled(record)
        records.append(record)
    return records


@contextlib.contextmanager
def hold_pools(
    names: Sequence[str], run: str, *, wait_s: float = 0.0
) -> Iterator[dict[str, Hold]]:
    """Hold every pool's lease for the block, taken in name order (no deadlock between two
    multi-pool runs); if one is refused, those taken are released and its error is raised.
    ``wait_s`` (``--wait-for-pool``) bounds the wait for all of them together. Yields each
    pool's :class:`oa_vm.model.lease.Hold` (the fence of the run's writes), by pool name.

    Raises:
        oa_vm.errors.PoolBusyError: another live run holds one of them (the error names it).
    """
    import time

    from oa_vm import hold_pool

    deadline = time.monotonic() + wait_s  # one wait for them all, not one per pool
    with contextlib.ExitStack() as stack:
        holds = {}
        for name in sorted(names):
            left = max(0.0, deadline - time.monotonic())
            holds[name] = stack.enter_context(hold_pool(name, run, wait_s=left))
        yield holds


@contextlib.contextmanager
def hold_for(pool: str, command: str) -> Iterator[None]:
    """Hold ``pool``'s lease for the block, for a command that resets or drives its workers
    outside a run (``audit-verifier``, ``study ui-change``), so no run shares them meanwhile.

    Raises:
        EvalsError: a run holds the pool (named; the command does not wait for it).
    """
    from oa_vm import hold_pool
    from oa_vm.errors import PoolBusyError

    with contextlib.ExitStack() as held:
        try:
            held.enter_context(hold_pool(pool, command))
        except PoolBusyError as exc:  # its own words offer a run's --wait-for-pool
            raise EvalsError(f"pool {pool!r} is in use by {exc.holder}; run {command} once "
                             "it ends, or on another pool") from None
        yield


PROBE_TIMEOUT_S = 5.0
"""How long a worker's two servers are waited for to answer one ``/probe`` each (its WAA server
and its scoring server, asked at once; every worker of every pool at once at a run's start): a
worker one of whose servers does not answer by then (its process hung, its guest frozen, its
scoring server down) cannot take a task (:func:`unanswered`)."""


def unanswered(workers: Sequence[WorkerConnection]) -> list[str | None]:
    """Ask each worker's WAA server and scoring server one ``/probe``, all at once, each answer
    waited for :data:`PROBE_TIMEOUT_S` at most; for each worker, why it cannot take a task (its
    WAA server's failure first, else its scoring server's, said ``scoring server: ...``), or
    None when both answer. A run's start leaves out such a worker (:func:`connect_pools`); the
    dispatcher takes a host none of whose workers answers for gone."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    from waa_client.errors import WaaError, WorkerTimeoutError, WorkerUnreachableError

    def why(probe: Callable[..., object]) -> str | None:
        try:
            probe(deadline=time.monotonic() + PROBE_TIMEOUT_S)
        except WorkerTimeoutError:
            return f"no answer within {PROBE_TIMEOUT_S:g}s"
        except WorkerUnreachableError:
            return "unreachable"
        except WaaError as exc:  # it answers, with an error: no better for a task
            return f"its probe failed ({type(exc).__name__})"
        return None

    if not workers:
        return []
    probes = [probe for w in workers for probe in (w.waa.probe, w.scoring.probe)]
    # threads, not one per probe: a pool of hundreds asks 64 at a time
    with ThreadPoolExecutor(max_workers=min(64, len(probes))) as executor:
        answers = list(executor.map(why, probes))
    return [waa or (f"scoring server: {scoring}" if scoring else None)
            for waa, scoring in zip(answers[::2], answers[1::2], strict=True)]


@contextlib.contextmanager
def connect_pools(
    names: Sequence[str], *, connect_timeout: float, read_timeout: float, qualified: bool = False
) -> Iterator[list[RunPool]]:
    """Connect to the ready workers of every pool and ask each once whether it answers (one
    ``/probe``, all at once, bounded by :data:`PROBE_TIMEOUT_S`); with more than one pool (or
    ``qualified``) their connections are named ``<pool>/<worker>``. A worker not ready, or that
    does not answer, is in its pool's :attr:`RunPool.left_out`; so is every worker of a pool
    of a multi-pool run that has none ready (the pool is kept, with no workers: it is still one
    of the run's pools). Everything opened is closed on exit.

    Raises:
        oa_vm.errors.PoolNotReadyError: no pool has a worker that answers (names each pool and
            its workers), or a pool is paused.
    """
    from oa_vm import WorkerState
    from oa_vm.errors import PoolNotReadyError

    named = len(names) > 1 or qualified
    with contextlib.ExitStack() as stack:
        pools = []
        for name in names:
            try:
                workers = stack.enter_context(
                    oa_vm.connect(name, connect_timeout=connect_timeout,
                                  read_timeout=read_timeout))
            except PoolNotReadyError:
                # a dead pool of several is left out as its dead workers are; paused is refused
                if len(names) < 2 or any(w.state == WorkerState.PAUSED
                                         for w in oa_vm.load_pool(name).workers):
                    raise
                workers = []
            record = oa_vm.load_pool(name)
            used = {w.name for w in workers}
            left_out = {qualify(name, w.name) if named else w.name:
                        w.state.value + (f": {w.phase}" if w.phase else "")
                        for w in record.workers if w.name not in used}
            if named:
                for worker in workers:
                    renamed_connection(qualify(name, worker.name), worker)
            pools.append(RunPool(record, workers, left_out))
        _leave_out_silent(pools)
        if not any(pool.workers for pool in pools):
            raise PoolNotReadyError("; ".join(
                f"pool {p.name!r} has no worker that answers ("
                + ", ".join(f"{split(n)[1]}: {why}" for n, why in p.left_out.items())
                + ")" for p in pools) + f"; run {_repairs(pools)}")
        yield pools


def _leave_out_silent(pools: Sequence[RunPool]) -> None:
    """Ask every connected worker's two servers one ``/probe`` (:func:`unanswered`): a worker
    that does not answer moves to its pool's ``left_out`` and ``silent``."""
    asked = [(pool, worker) for pool in pools for worker in pool.workers]
    answers = unanswered([worker for _, worker in asked])
    for (pool, worker), why in zip(asked, answers, strict=True):
        if why is not None:
            pool.workers.remove(worker)
            pool.left_out[worker.name] = why
            pool.silent.append(split(worker.name)[1])


def _repairs(pools: Sequence[RunPool]) -> str:
    """The ``oa-vm pool-repair`` command(s) that bring back the pools' left-out workers (a
    worker that is up but does not answer is replaced only when named with ``--worker``)."""
    return " or ".join(
        f"'oa-vm pool-repair --pool {pool.name}"
        + "".join(f" --worker {w}" for w in pool.silent) + "'"
        for pool in pools if pool.left_out)


def say_left_out(pools: Sequence[RunPool]) -> list[str]:
    """Say in one warning which workers (and which pools of a multi-pool run: those left with
    none) the run goes without (:attr:`RunPool.left_out`) and how to bring them back; returns
    their names (the run records them as quarantined)."""
    left = {name: why for pool in pools for name, why in pool.left_out.items()}
    if left:
        total = sum(len(pool.record.workers) for pool in pools)
        empty = [repr(pool.name) for pool in pools if not pool.workers]
        without = (f", and without pool{'s' if len(empty) > 1 else ''} {', '.join(empty)} "
                   "(none of its workers answers)" if empty else "")
        logging.getLogger(__name__).warning(
            "%d of %d worker(s) do not answer and the run goes on without them%s: %s; %s "
            "brings them back", len(left), total, without,
            ", ".join(f"{name} ({why})" for name, why in left.items()), _repairs(pools))
    return list(left)


def workers_changed(pools: Sequence[RunPool]) -> bool:
    """Whether a pool's record now lists its workers otherwise than when the run connected to
    them: a run reads its pools before it takes their leases (:func:`evals.run.runner.
    run_evaluation`), and meanwhile another run's repair or a pause may have changed them."""
    return any(oa_vm.load_pool(p.name).workers != p.record.workers for p in pools)


class PoolRouter(Generic[T]):
    """Sends a call about a qualified worker to the per-pool handler, under its bare name.

    Args:
        handlers: Pool name -> a callable taking a bare worker name (a ``WorkerRepairer``, a
            ``DrainWatch``).
        rename: Applied to what a handler returned (e.g. name a repaired connection
            ``<pool>/<worker>`` again); not applied to ``None``.
    """

    def __init__(
        self,
        handlers: Mapping[str, Callable[[str], T | None]],
        rename: Callable[[str, T], T] | None = None,
    ) -> None:
        self.handlers = dict(handlers)
        self.rename = rename

    def __call__(self, worker: str) -> T | None:
        """The answer of the worker's own pool's handler (None for a worker of no pool)."""
        pool, bare = split(worker)
        handler = self.handlers.get(pool or "")
        if handler is None:
            return None
        answer = handler(bare)
        if answer is None or self.rename is None:
            return answer
        return self.rename(worker, answer)


def renamed_connection(name: str, connection: WorkerConnection) -> WorkerConnection:
    """``connection``, named ``name``: a pool's workers as a run over several pools names them
    when it connects, and a repaired worker keeps its qualified name. Its host is its pool's
    too (two pools' "worker-0" hosts are not one machine; a worker without a host is its own,
    under its bare name)."""
    pool, bare = split(name)
    connection.name = name
    if pool is not None:
        connection.host = qualify(pool, connection.host or bare)
    return connection


def summary_fields(pools: Sequence[RunPool]) -> RunMetadata:
    """``metadata.json``'s pool keys for a run over several pools.

    ``pool`` holds the names joined by ``+`` (``a+b``: never a pool name, so nothing mistakes
    it for one), ``cloud`` the clouds the same way (one name when they agree) and
    ``price_per_hour`` the common price, or ``None`` when they differ; ``pools`` lists each
    pool with its cloud, price and (qualified) workers.
    """
    clouds = list(dict.fromkeys(p.record.cloud for p in pools))
    prices = {p.price_per_hour for p in pools}
    return {
        "pool": "+".join(p.name for p in pools),
        "cloud": "+".join(clouds),
        "price_per_hour": next(iter(prices)) if len(prices) == 1 else None,
        "pools": [p.describe() for p in pools],
    }


def recorded_pool_names(metadata: Mapping[str, Any]) -> list[str] | None:
    """The pools a multi-pool run was started on (``None`` for a single-pool run)."""
    entries = metadata.get("pools")
    if not isinstance(entries, list):
        return None
    return [str(e.get("name")) for e in entries if isinstance(e, dict)]


def session_pools(metadata: RunMetadata) -> list[str]:
    """The pool each session of a run ran on (a multi-pool session's ``a+b``), the first session
    first; for a run of an earlier release, the pool its metadata names."""
    sessions = metadata.get("sessions")
    if isinstance(sessions, list):
        return [str(s["pool"]) for s in sessions if isinstance(s, dict) and s.get("pool")]
    return [str(metadata["pool"])] if metadata.get("pool") else []


def namer(metadata: RunMetadata) -> Callable[[str], str]:
    """A worker's name as a run that has run on several pools shows it: a bare name (a worker of
    the run's first pool) qualified by that pool; any other name as it is."""
    pools = session_pools(metadata)
    first = pools[0] if pools else ""
    if len(set(pools)) < 2 or "+" in first:  # one pool throughout, or named so from the start
        return lambda name: name
    return lambda name: name if SEPARATOR in name else qualify(first, name)


def record_namer(metadata: RunMetadata) -> Callable[[TaskExecution], TaskExecution]:
    """A task's record as a run that has run on several pools shows it: its worker and its
    earlier attempts' workers named by :func:`namer` (the record on disk keeps the bare names
    its session gave them). For every reader that shows a record's workers beside the
    summary's (the run page, the exports)."""
    from dataclasses import replace

    named = namer(metadata)

    def record(found: TaskExecution) -> TaskExecution:
        return replace(found, worker=found.worker and named(found.worker), previous_attempts=[
            replace(p, worker=p.worker and named(p.worker)) for p in found.previous_attempts])

    return record


def host_namer(metadata: RunMetadata) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """A ``quarantined_hosts`` entry as a run that has run on several pools shows it: an entry
    of the run's first pool (its workers' names bare) has its host and its workers named by
    :func:`namer`, as a later session names a host and its workers (:func:`renamed_connection`);
    any other entry as it is."""
    named = namer(metadata)

    def entry(lost: Mapping[str, Any]) -> dict[str, Any]:
        workers = [str(w) for w in lost.get("workers") or []]
        if any(SEPARATOR in w for w in workers):  # a later session's: named when recorded
            return dict(lost)
        host = lost.get("host")
        return {**lost, "host": named(host) if isinstance(host, str) else host,
                "workers": [named(w) for w in workers]}

    return entry


def highest_price(pools: Sequence[RunPool]) -> float | None:
    """The dearest pool's price (what estimates of a task's cost use), or None if none is
    priced."""
    prices = [p.price_per_hour for p in pools if p.price_per_hour is not None]
    return max(prices) if prices else None


@dataclass
class Selected:
    """The tasks a selection names, as every pool of the run serves them."""

    refs: list[Any]  # waa_client.catalog.TaskRef, in the selection's order
    tasks: dict[str, dict[str, Any]]


def select_tasks(pools: Sequence[RunPool], selection: str) -> Selected:
    """Resolve ``selection`` through the workers of the run's pools and load the tasks.

    One pool: read from its workers (:class:`evals.run.failover.FailoverScoring`), synthetic IDs
    refused on a cloud pool, as always. Several pools: the selection is resolved on each, and
    refused on all of them if any is a cloud pool ("live": WAA's real tasks only; a local pool
    serves the local suite); then every pool must name the same tasks, in the same order, with
    the same JSON, or the run is refused in one line: a mix of a local and a cloud pool, or of
    pools built from different task sets, would otherwise run different tasks under one ID.

    Raises:
        waa_client.errors.CatalogError: unknown or synthetic IDs (a multi-pool message names the
            pool whose catalog refused them).
        InvalidRunInputError: the pools disagree on the selected tasks (names the pools, the
            first task that differs).
    """
    from typing import cast

    from evals.tasks import is_cua_selection, is_openapps_selection

    if is_cua_selection(selection) or is_openapps_selection(selection):
        return _select_here(pools, selection)

    from evals.run.failover import FailoverScoring
    from waa_client.catalog import Catalog
    from waa_client.errors import CatalogError

    live = any(not oa_vm.cloud_facts(p.record.cloud).simulated for p in pools)
    first: tuple[str, Selected] | None = None
    for pool in [p for p in pools if p.workers]:  # a pool left out serves nothing
        catalog = Catalog.from_scoring(
            cast("Any", FailoverScoring([w.scoring for w in pool.workers])),
            source=f"pool {pool.name!r}",
        )
        try:
            refs = catalog.select(selection, live=live)
        except CatalogError as exc:
            if len(pools) > 1 and catalog.source not in exc.message:  # say which pool refused
                exc.message = f"pool {pool.name!r}: {exc.message}"
                exc.args = (exc.message,)
            raise
        chosen = Selected(refs, {r.task_id: catalog.load(r.task_id) for r in refs})
        if first is None:
            first = (pool.name, chosen)
            continue
        _same_tasks(first, (pool.name, chosen))
    assert first is not None, "a run has at least one pool"
    return first[1]


def _select_here(pools: Sequence[RunPool], selection: str) -> Selected:
    """A selection of files on this machine (Cua-Bench modules, an OpenApps-style config): the
    same for every pool, refused on a pool whose workers lack the simulated desktop it needs."""
    from typing import cast

    from evals.tasks import is_cua_selection
    from evals.tasks.cua_bench import check_selection, select_cua
    from evals.tasks.kinds import check_runs_on
    from evals.tasks.openapps import select_openapps

    variants = (check_selection(selection, agent="", pools=[p.name for p in pools])
                if is_cua_selection(selection) else None)
    for pool in pools:
        check_runs_on(pool.record.cloud, f"pool {pool.name!r} ({pool.record.cloud})", selection,
                      variants)
    if variants is not None:
        return Selected(*select_cua(variants))
    return Selected(*cast("Any", select_openapps(selection)))


def _same_tasks(a: tuple[str, Selected], b: tuple[str, Selected]) -> None:
    (name_a, sel_a), (name_b, sel_b) = a, b
    ids_a = [r.task_id for r in sel_a.refs]
    ids_b = [r.task_id for r in sel_b.refs]
    hint = ("run each pool separately, or select tasks both serve alike (e.g. explicit IDs of "
            "WAA tasks on pools of the same image)")
    if ids_a != ids_b:
        only_a = [t for t in ids_a if t not in set(ids_b)]
        only_b = [t for t in ids_b if t not in set(ids_a)]
        what = (
            f"{len(only_a)} only on {name_a!r}, {len(only_b)} only on {name_b!r}"
            if only_a or only_b else "the same tasks in another order"
        )
        raise InvalidRunInputError(
            f"pools {name_a!r} and {name_b!r} resolve the selection to different tasks "
            f"({len(ids_a)} vs {len(ids_b)}: {what}); {hint}"
        )
    differ = [t for t in ids_a if sel_a.tasks[t] != sel_b.tasks[t]]
    if differ:
        raise InvalidRunInputError(
            f"pools {name_a!r} and {name_b!r} serve {len(differ)} of the selected task(s) "
            f"differently (first: {differ[0]}); {hint}"
        )
