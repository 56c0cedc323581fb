"""The public Python API for pools: what the ``oa-vm`` CLI and ``evals`` call.

Every function returns typed values and raises errors of :mod:`oa_vm.errors`; nothing here prints.
Records are written by this module only (providers return records, they never save them).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oa_vm.clouds import (
    check_name_free,
    every_pool,
    facts,
    get_provider,
    known_clouds,
    load_pool,
    pool_names,
    pool_stacks,
    price_per_hour,
    rents_nothing,
)
from oa_vm.clouds.base import CleanupReport, Plan, PoolSpec, Progress, no_progress
from oa_vm.clouds.local.faults import validate_faults
from oa_vm.clouds.local.memory import MAX_PER_PROCESS
from oa_vm.errors import (
    AmbiguousPoolError,
    CorruptRecordError,
    InvalidInputError,
    OaVmError,
    PoolInUseError,
    PoolNotFoundError,
    PoolNotReadyError,
    ProviderUnavailableError,
    ProvisioningError,
    RecordMissingError,
    StackWithoutRecordError,
    WaitTimeoutError,
    WorkerAccessError,
)
from oa_vm.kit.validate import (
    MAX_PRICE_PER_HOUR_USD,
    read_problem,
    require_number,
    twice_problem,
)
from oa_vm.model import state
from oa_vm.model.state import PoolRecord, PoolState, WorkerState
from oa_vm.reach.connect import WorkerConnection, connect_record

if TYPE_CHECKING:
    from waa_client.catalog import Catalog

__all__ = [
    "WorkerConnection",
    "build_spec",
    "check_available",
    "cleanup_expired",
    "cleanup_pool",
    "connect",
    "create_pool",
    "detect_caller_cidr",
    "list_pools",
    "plan_pool",
    "pool_catalog",
    "pool_cost_so_far",
    "pool_status",
    "resolve_name",
    "wait_pool",
]

DEFAULT_WORKERS = 3
DEFAULT_TTL_HOURS = 4.0
MAX_TTL_HOURS = 24.0 * 365


def owner() -> str:
    """Who creates a pool or an image, for its ``owner`` tag: ``$OA_VM_OWNER``, else the login
    name (``unknown`` when there is none, as in some containers)."""
    env = os.environ.get("OA_VM_OWNER")
    if env:
        return env
    import getpass  # only when creating a pool: read-only commands start faster without it

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def _default_name() -> str:
    """``waa-pool``, or the first free ``waa-pool-N``."""
    taken = set(state.list_names())
    if "waa-pool" not in taken:
        return "waa-pool"
    n = 2
    while f"waa-pool-{n}" in taken:
        n += 1
    return f"waa-pool-{n}"


def build_spec(
    *,
    name: str | None,
    cloud: str | None = None,
    workers: int | None = None,
    size: str | None = None,
    regions: list[str] | None = None,
    spot: bool = False,
    ttl_hours: float = DEFAULT_TTL_HOURS,
    allow_cidrs: list[str] | None = None,
    faults: dict[str, str] | None = None,
    ssh_via: dict[str, Any] | None = None,
    price_per_hour: float | None = None,
    tasks_dir: str | None = None,
    per_process: int = 1,
    egress: str | None = None,
    hosts: list[str] | None = None,
    ssh_key: str | None = None,
    workers_per_host: int = 1,
    image: str | None = None,
    build_image: bool = False,
) -> PoolSpec:
    """Validate what the user asked for and turn it into a :class:`PoolSpec`.

    ``cloud`` has no default: a pool on a cloud that bills is never chosen for the caller.
    ``workers`` left out (None) is :data:`DEFAULT_WORKERS`, or on your own hosts their count
    times ``workers_per_host``, which a ``workers`` given must then equal.

    Raises:
        InvalidInputError: no cloud, or a value out of range (the message says which and why).
    """
    if cloud is None:
        raise InvalidInputError(
            "no cloud chosen: pass cloud='local', 'aws' or 'azure' (aws and azure bill by the hour)"
        )
    given = workers  # None: not given (own hosts count theirs)
    workers = DEFAULT_WORKERS if given is None else given
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InvalidInputError(f"--workers must be a whole number of at least 1, not {workers}")
    get_provider(cloud)  # unknown cloud -> one line listing the known ones
    for option, values in (("--region", regions), ("--allow-cidr", allow_cidrs),
                           ("--host", hosts)):
        # a string is iterable too, and would be taken letter by letter
        if values is not None and (isinstance(values, str) or not all(
                isinstance(v, str) for v in values)):
            raise InvalidInputError(f"{option} must be a list of strings, not {values!r}")
    if twice := twice_problem("--region", list(regions or ()), "region"):
        raise InvalidInputError(twice)  # the plan tried it twice
    takes, limit = facts(cloud).options, facts(cloud).max_workers
    if workers > limit:
        raise InvalidInputError(f"--workers {workers} is more than the limit of {limit}")
    if per_process != 1 and "--per-process" not in takes:
        raise InvalidInputError("--per-process is for local pools (--cloud local)")
    if isinstance(per_process, bool) or not 1 <= per_process <= MAX_PER_PROCESS:
        raise InvalidInputError(
            f"--per-process must be between 1 and {MAX_PER_PROCESS}, not {per_process}"
        )
    require_number("--ttl-hours", ttl_hours, above=0, high=MAX_TTL_HOURS)
    require_number("--price-per-hour", price_per_hour, low=0, high=MAX_PRICE_PER_HOUR_USD)
    if price_per_hour is not None and "--price-per-hour" not in takes:
        raise InvalidInputError("--price-per-hour is for local pools and your own hosts "
                                "(--cloud ssh); cloud pools use the catalog")
    if rents_nothing(cloud):  # free unless priced, as its plan says
        price_per_hour = price_per_hour or 0.0
    workers = _workers_on_hosts(takes, limit, workers, given, list(hosts or []), ssh_key,
                                workers_per_host)
    if "--per-process" in takes and workers_per_host != 1:
        # a local pool's simulated host is a process: N workers per host is N per process
        if per_process not in (1, workers_per_host):
            raise InvalidInputError(
                f"--workers-per-host {workers_per_host} and --per-process {per_process} disagree: "
                "a local pool's simulated host is one process; give one of them")
        per_process, workers_per_host = workers_per_host, 1
    _refuse_options_not_taken(cloud, takes, {
        "--egress": egress, "--fault": faults, "--ssh-via": ssh_via, "--tasks-dir": tasks_dir,
        "--size": size, "--region": regions, "--spot": spot, "--allow-cidr": allow_cidrs,
        "--image": image, "--build-image": build_image})
    if tasks_dir is not None:
        fix = "give a folder in WAA's layout (index files *.json and examples/)"
        problem = read_problem("--tasks-dir", Path(tasks_dir).expanduser(), kind="folder",
                               fix=fix)
        if problem is not None:  # first: resolving a symbolic link loop raises
            raise InvalidInputError(problem)
        folder = Path(tasks_dir).expanduser().resolve()
        if not any(folder.glob("*.json")):
            raise InvalidInputError(
                f"--tasks-dir {tasks_dir}: no WAA index files (*.json) in it; {fix}"
            )
        tasks_dir = str(folder)
    if ssh_via is not None:
        _check_ssh_key(str(ssh_via.get("key_path", "")))
    validate_faults(dict(faults or {}))
    # only None asks for the default: "" is a name, and refused as one
    pool_name = _default_name() if name is None else state.validate_pool_name(name)
    from oa_vm.clouds.egress import parse_egress

    egress_mode, allowlist = parse_egress(egress)
    return PoolSpec(
        name=pool_name,
        cloud=cloud,
        workers=workers,
        owner=owner(),
        expires_at=state.utcnow() + timedelta(hours=ttl_hours),
        size=size,
        regions=list(regions or []),
        spot=spot,
        allow_cidrs=list(allow_cidrs or []),
        faults=dict(faults or {}),
        ssh_via=ssh_via,
        price_per_hour=price_per_hour,
        tasks_dir=tasks_dir,
        per_process=per_process,
        egress=egress_mode,
        egress_allowlist=allowlist,
        hosts=list(hosts or []),
        ssh_key=str(Path(ssh_key).expanduser()) if ssh_key else None,
        workers_per_host=workers_per_host,
        image=image,
        build_image=build_image,
    )


def _refuse_options_not_taken(cloud: str, takes: frozenset[str], given: dict[str, Any]) -> None:
    """Refuse the options of ``given`` (name: value; an empty value is not given) that
    ``cloud`` does not take (its :attr:`~oa_vm.clouds.declared.ProviderFacts.options`), naming
    the clouds that do: never accepted and then ignored (a local pool's ``--size``, a garbage
    ``--allow-cidr`` that nothing would read).

    Raises:
        InvalidInputError: the first such option, with the others that the same clouds take.
    """
    not_taken = [option for option, value in given.items() if value and option not in takes]
    if not not_taken:
        return

    def takers(option: str) -> list[str]:
        return [name for name in known_clouds() if option in facts(name).options]

    clouds = takers(not_taken[0])
    same = [option for option in not_taken if takers(option) == clouds]
    where = (f"{' and '.join(clouds)} pools (--cloud {' or '.join(clouds)})" if clouds
             else "no cloud")
    raise InvalidInputError(f"{' and '.join(same)} {'is' if len(same) == 1 else 'are'} for "
                            f"{where}; leave {'it' if len(same) == 1 else 'them'} out for "
                            f"--cloud {cloud}")


def _workers_on_hosts(takes: frozenset[str], limit: int, workers: int, given: int | None,
                      hosts: list[str], ssh_key: str | None, per_host: int) -> int:
    """The checks of ``--host``, ``--ssh-key`` (for hosts) and ``--workers-per-host``; returns
    the pool's workers (on your own hosts: every host's; a ``--workers`` ``given`` that says
    otherwise is refused, never ignored)."""
    from infra.worker.slots import MAX_SLOTS

    whole = isinstance(per_host, int) and not isinstance(per_host, bool)
    if not whole or not 1 <= per_host <= MAX_SLOTS:
        raise InvalidInputError(
            f"--workers-per-host must be a whole number from 1 to {MAX_SLOTS}, not {per_host}"
        )
    if "--host" not in takes:
        if hosts:
            raise InvalidInputError("--host is for your own hosts (--cloud ssh)")
        # a simulated host is one process (--per-process): it takes any number of workers
        if per_host > 1 and workers % per_host and "--per-process" not in takes:
            hosts_up = -(-workers // per_host)
            if given is None:  # never name a count the user did not type
                # the nearest multiple, a tie rounded up: no fewer workers than the default
                near = max(1, (workers + per_host // 2) // per_host) * per_host
                raise InvalidInputError(
                    f"the default count ({workers} workers) does not fill hosts of {per_host}: "
                    f"every host runs --workers-per-host workers; pass --workers N with N a "
                    f"multiple of {per_host} (the nearest: --workers {near}, "
                    f"{near // per_host} host(s))")
            raise InvalidInputError(
                f"--workers {workers} does not fill hosts of {per_host}: every host runs "
                f"--workers-per-host workers; use --workers {hosts_up * per_host} ({hosts_up} "
                f"host(s)) or --workers {max(1, workers // per_host) * per_host}")
        return workers
    if not hosts:
        raise InvalidInputError("--cloud ssh needs --host user@host[:port] (repeatable)")
    if ssh_key is None:
        raise InvalidInputError("--cloud ssh needs --ssh-key PATH (the key for every --host)")
    _check_ssh_key(ssh_key)
    total = len(hosts) * per_host
    if given is not None and given != total:
        raise InvalidInputError(
            f"--workers {given} disagrees with your hosts: on --cloud ssh the count comes from "
            f"the hosts and --workers-per-host ({len(hosts)} host(s) x {per_host} = {total} "
            "workers); leave --workers out, and change the --host list or --workers-per-host "
            "for another count")
    if total > limit:
        raise InvalidInputError(f"{total} workers is more than the limit of {limit}")
    return total


def _check_ssh_key(key_path: str) -> None:
    """Refuse a key ssh would refuse (missing, unreadable, open to others) before any write."""
    from waa_client.errors import KeyFileError
    from waa_client.ssh import load_private_key

    path = Path(key_path).expanduser()
    problem = read_problem("--ssh-key", path, kind="file", fix="give the private key file")
    if problem is not None:
        raise InvalidInputError(problem)
    try:
        load_private_key(path)
    except KeyFileError as exc:
        raise InvalidInputError(f"--ssh-key: {exc}") from exc


def check_available(cloud: str) -> None:
    """Raise ``ProviderUnavailableError`` (one line, with the fix) if ``cloud`` cannot create
    pools here (a missing extra or engine); nothing is written either way."""
    get_provider(cloud).check_available()


def detect_caller_cidr() -> str:
    """This machine's public address as a /32, to open SSH to it alone."""
    from oa_vm.clouds.netdetect import detect_cidr

    return detect_cidr()


def plan_pool(spec: PoolSpec) -> Plan:
    """What creating ``spec`` would make and cost; no side effects."""
    return get_provider(spec.cloud).plan(spec)


def pool_catalog(spec: PoolSpec) -> Catalog | None:
    """The task catalog the workers of a pool of ``spec`` will have, if known here without
    asking any network: WAA's index files recorded with the prepared image it would start
    from (a cloud provider's ``task_indexes``); task IDs, domains and indexes only, the task
    files stay on the workers. None when not known before the pool exists (a local pool's
    catalog is its task folder)."""
    found = getattr(get_provider(spec.cloud), "task_indexes", None)
    known = found(spec) if found is not None else None
    if known is None:
        return None
    from waa_client.catalog import Catalog

    image_id, indexes = known
    return Catalog.from_indexes(indexes, f"the task catalog of image {image_id}")


def create_pool(
    spec: PoolSpec | None = None, *, progress: Progress = no_progress, **kwargs: Any
) -> PoolRecord:
    """Create a pool and save its record. Accepts a spec, or :func:`build_spec`'s keywords.

    The name is reserved by a ``creating`` record before anything is made, so an interrupted
    create leaves a record that ``pool-cleanup`` can act on. If the provider cannot run here,
    nothing at all is written.

    Raises:
        PoolExistsError: a pool of that name exists.
        CorruptRecordError: one of that name exists, its record unreadable.
        ProviderUnavailableError: the provider cannot run here (nothing written).
        ProvisioningError: creation failed (what was made is removed, the record too).
    """
    if spec is None:
        spec = build_spec(**kwargs)
    provider = get_provider(spec.cloud)
    provider.check_available()
    preflight = getattr(provider, "preflight", None)  # cloud pools: a prepared image, a size
    if preflight is not None:
        preflight(spec)
    check_name_free(spec.name)
    placeholder = PoolRecord(
        name=spec.name, cloud=spec.cloud, state=PoolState.CREATING, created_at=state.utcnow(),
        expires_at=spec.expires_at, owner=spec.owner, price_per_hour=spec.price_per_hour,
    )
    state.save(placeholder)
    state.tombstone(spec.name).unlink(missing_ok=True)  # an old tombstone
    try:
        record = provider.create(spec, progress)
    except (ProvisioningError, InvalidInputError) as exc:
        # The provider removed what it made before raising; drop the reservation too, unless
        # it says something was left that cleanup must still find.
        if getattr(exc, "resources_left", False):
            placeholder.state = PoolState.FAILED
            state.save(placeholder)
        else:
            state.delete(spec.name)
            _remove_pool_dir(spec.name)
        raise
    except BaseException:
        # Interrupted or unexpected: keep a FAILED record (with the workers the provider
        # recorded as it spawned them) so 'pool-cleanup' can still act; a local pool that
        # made nothing leaves nothing behind (no empty pool folder). A cloud pool always keeps
        # its record: resources may exist that only cleanup through the record can find.
        try:
            current = state.load(spec.name)
        except OaVmError:
            current = placeholder
        if not facts(spec.cloud).simulated or current.workers or current.provider_data:
            current.state = PoolState.FAILED
            state.save(current)
        else:
            state.delete(spec.name)
            _remove_pool_dir(spec.name)
        raise
    state.save(record)
    return record


def resolve_name(name: str | None) -> str:
    """The pool meant by ``--name``; when it is left out, the only pool there is.

    Raises:
        PoolNotFoundError: no pool exists at all (the message says how to make one).
        AmbiguousPoolError: several exist (the message lists them).
    """
    if name is not None:
        # An empty or path-like --name must never fall back to "the only pool" or escape the home.
        return state.validate_pool_name(name)
    names = pool_names()
    if not names:
        raise PoolNotFoundError(None)
    if len(names) > 1:
        raise AmbiguousPoolError(names)
    return names[0]


def pool_status(
    name: str | None, *, refresh: bool = False,
    save: Callable[[PoolRecord], object] | None = None,
) -> PoolRecord:
    """The pool's record; refreshed from the provider when asked. A local pool's processes
    are checked always (no network call); asked, its workers are asked too whether they
    answer (:meth:`oa_vm.clouds.local.provider.LocalProvider.refresh`). ``save`` writes a
    changed record (default: :func:`oa_vm.model.lease.save_fenced`, which never recreates a
    pool being removed; a refresh it refuses is simply not saved; a run's repairer gives one
    that also carries its lease)."""
    from oa_vm.model.lease import PoolRemovingError, save_fenced

    record = load_pool(resolve_name(name))
    if refresh or facts(record.cloud).simulated:
        provider = get_provider(record.cloud)
        before = record.to_json()
        record = provider.refresh(record, network=refresh)
        if record.to_json() != before:
            if save is not None:
                save(record)
            else:
                with contextlib.suppress(PoolRemovingError):
                    save_fenced(record)
    return record


def list_pools(*, refresh_local: bool = True) -> list[PoolRecord | CorruptRecordError]:
    """Every pool (corrupt records included, as their error, so a listing can show them)."""
    out: list[PoolRecord | CorruptRecordError] = []
    for item in every_pool():
        if isinstance(item, PoolRecord) and refresh_local and facts(item.cloud).simulated:
            item = get_provider(item.cloud).refresh(item, network=False)
        out.append(item)
    return out


def pool_cost_so_far(record: PoolRecord) -> float | None:
    """$ spent so far by the pool (running and paused time), or None when it has no price."""
    from oa_vm.cost.pool_cost import pool_cost_so_far as cost

    if price_per_hour(record) is None and not record.provider_data.get("pauses"):
        return None
    return cost(record)


def wait_pool(
    name: str | None,
    *,
    timeout_s: float = 4200.0,  # oa_vm.cost.cloud_plan.FIRST_POOL_WAIT_S (a test keeps them equal)
    on_update: Callable[[PoolRecord], None] | None = None,
    workers: Collection[str] | None = None,
    save: Callable[[PoolRecord], object] | None = None,
) -> PoolRecord:
    """Follow every worker (or only ``workers``, e.g. a repair's replacements) through its
    phases until all are ready. ``save`` writes each refresh (default:
    :func:`oa_vm.model.lease.save_fenced`: once ``pool-cleanup`` began, the wait ends with
    :class:`oa_vm.model.lease.PoolRemovingError` instead of bringing the record back).

    Raises:
        WorkerAccessError: a worker's host refused the pool's key or offered a changed host key
            (the message names the worker and says what to do); nothing else is waited for.
        PoolNotReadyError: the pool is paused (nothing is asked of its workers), or a worker
            was lost while waiting (its last log line is given).
        WaitTimeoutError: time ran out; the message names each stuck worker and its phase.
    """
    from oa_vm.model.lease import save_fenced
    from waa_client.poll import poll_until

    save = save or save_fenced
    record = load_pool(resolve_name(name))
    state.refuse_paused(record)  # its stopped workers would be taken for lost
    provider = get_provider(record.cloud)
    interval = float(getattr(provider, "poll_interval_s", 5.0))

    def one_pass() -> PoolRecord | None:
        nonlocal record
        record = provider.refresh(record)
        for index, worker in enumerate(record.workers):
            if worker.state in (WorkerState.READY, WorkerState.LOST, WorkerState.STOPPED,
                                WorkerState.DRAINING):  # a notice is final: never "ready" again
                continue
            try:
                phase, ready = provider.worker_phase(record, index)
            except WorkerAccessError as exc:  # a refused key or a changed host key: stop now
                worker.phase, worker.detail = "ssh refused", str(exc)
                save(record)
                raise WorkerAccessError(
                    f"pool {record.name!r}: worker {worker.name}: {exc}", worker=worker.name
                ) from exc
            worker.phase = phase
            if ready:
                worker.state = WorkerState.READY
        record.state = state.derive_pool_state(record.workers)
        save(record)
        if on_update is not None:
            on_update(record)
        # A draining worker already replaced (oa_vm.fleet) is not waited for: it is going.
        from oa_vm.reach import replacements

        wanted = set(workers) if workers is not None else {
            w.name for w in record.workers
        } - set(replacements.replaced_by(record))
        lost = [w for w in record.workers if w.state in (WorkerState.LOST, WorkerState.DRAINING)
                and w.name in wanted]
        if lost:
            details = "; ".join(f"{w.name}: {w.detail or w.phase}" for w in lost)
            raise PoolNotReadyError(
                # the repair first: removing the whole pool for one lost worker is the last
                # resort, not the next step
                f"pool {record.name!r}: worker lost while waiting ({details}); replace it "
                f"with 'oa-vm pool-repair --pool {record.name}' (or remove the pool: "
                f"'oa-vm pool-cleanup --pool {record.name}')"
            )
        live = [w for w in record.workers if w.state not in (WorkerState.LOST, WorkerState.STOPPED)]
        if not live:
            raise PoolNotReadyError(
                f"pool {record.name!r} has no live worker ({record.state.value}, "
                f"{len(record.workers)} worker(s) recorded); remove it with "
                f"'oa-vm pool-cleanup --pool {record.name}' and create it again"
            )
        done = all(w.state == WorkerState.READY for w in record.workers if w.name in wanted)
        return record if done else None

    if (answer := poll_until(one_pass, timeout_s=timeout_s, interval_s=interval)) is not None:
        return answer
    stuck = "; ".join(
        f"{w.name} stuck at {w.phase or 'start'}"
        + (f" ({w.detail})" if w.detail else "")
        for w in record.workers
        if w.state != WorkerState.READY
    )
    from oa_vm.kit.durations import format_duration

    raise WaitTimeoutError(
        f"pool {record.name!r} not ready after {format_duration(timeout_s)}: {stuck}"
    )


def cleanup_pool(
    name: str | None, *, progress: Progress = no_progress, force: bool = False,
    purge: bool = False,
) -> CleanupReport:
    """Remove everything the pool created, then its record. Idempotent.

    A pool removed earlier gives an empty report saying so; an unknown name raises
    :class:`PoolNotFoundError`; a corrupt record raises :class:`CorruptRecordError` and nothing
    is deleted. A pool whose lease a live run holds (:mod:`oa_vm.model.lease`) is not removed from
    under it: :class:`PoolInUseError`, nothing changed, unless ``force`` (then ``progress``
    says whose pool it removes). A stale lease (its holder gone) never stops a cleanup, and a
    process may remove a pool whose lease it holds itself. While it removes, the pool's lease
    is held, so no run starts on it meanwhile. ``purge``: a pool on your own hosts
    (``--cloud ssh``) also removes each host's image cache; refused for other pools.
    """
    from oa_vm.model.lease import describe, guard_pool

    pool = resolve_name(name)
    if not _removable(pool, purge):
        return CleanupReport(hints=[f"pool {pool!r} was already removed; nothing to remove"])
    state.ensure_pool_dir(pool)  # its lease's home, when the folder was removed by hand
    with guard_pool(pool, "pool-cleanup", force=force) as overridden:
        if overridden is not None:
            progress(f"pool {pool!r} is in use by {describe(overridden)}; "
                     "removing it anyway (--force)")
        record = _record_to_remove(pool)  # as it is now that the lease is ours
        if record.provider_data.get("unrecorded"):
            progress(f"pool {pool!r} has no record, but oa-vm's {record.cloud} state still "
                     "holds what it made: removing that")
        if purge:
            record.settings["purge"] = True  # the provider's destroy reads it
        report = _destroy(record, progress)
    if not report.left:
        # after the lease is given back: its heartbeat must not touch a folder being removed
        _remove_pool_dir(pool)
        report.removed.append(f"removed the record of pool {pool!r}")
    return report


def _removable(pool: str, purge: bool) -> bool:
    """Whether :func:`cleanup_pool` has ``pool`` to remove (False: removed earlier). An unknown
    or corrupt pool, or ``purge`` for a pool not on your own hosts, raises: refused before
    anything is written."""
    try:
        loaded = _record_to_remove(pool)
    except PoolNotFoundError:
        if state.tombstone(pool).exists():
            return False
        raise
    if purge and "--purge" not in facts(loaded.cloud).options:
        raise InvalidInputError("--purge is for pools on your own hosts (--cloud ssh): it "
                                "removes their image cache")
    return True


def _record_to_remove(pool: str) -> PoolRecord:
    """The pool's record; for a folder whose record was removed by hand
    (:class:`oa_vm.errors.RecordMissingError`), a local pool's without workers: all that can
    be found without it is what runs from the folder, which the local provider's destroy
    stops (any ``infra.local`` process whose ``--root`` lies there)."""
    try:
        return state.load(pool)
    except RecordMissingError:
        return PoolRecord(name=pool, cloud="local", state=PoolState.FAILED,
                          created_at=state.utcnow())
    except PoolNotFoundError:
        found = _unrecorded(pool)
        if found is None:
            raise
        return found


def _unrecorded(pool: str) -> PoolRecord | None:
    """A cloud pool whose record (or whole folder) was removed by hand while oa-vm's state of
    its cloud still holds what it made (:class:`oa_vm.clouds.base.StateKeeper`): a record to
    remove it by, or None. Asked only when no record is found. The state's files are read
    first (milliseconds): the cloud's engine, seconds a call, is asked only about a stack they
    hold, never about a name that is a typo."""
    from oa_vm.clouds.base import StateKeeper

    for stack in pool_stacks(pool):
        try:
            provider = get_provider(stack.cloud)
        except ProviderUnavailableError as exc:
            raise ProviderUnavailableError.for_stack(
                pool, stack.cloud, f"that provider: {exc}") from exc
        if isinstance(provider, StateKeeper) and (found := provider.unrecorded(pool)):
            return found
    return None


def cleanup_names(names: Sequence[str], option: str, *, purge: bool = False) -> list[str]:
    """The pools one cleanup removes, each checked as :func:`cleanup_pool` checks it, every one
    before any is removed (the only pool when ``names`` is empty); a name given twice, after
    ``option``, is refused too."""
    pools = [resolve_name(name) for name in names] or [resolve_name(None)]
    if twice := twice_problem(option, pools, "pool"):
        raise InvalidInputError(twice)
    for pool in pools:
        _removable(pool, purge)
    return pools


def remove_temporary_pool(pool: str, say: Progress) -> bool:
    """Remove a pool a command made for itself, whatever ended the command; never raises.

    Called from a ``finally:``, a raising cleanup would replace the error that ended the
    command (its line and its exit status): a failure is said instead, through ``say``, in one
    line that names the pool and the command that finishes the job, as is anything the removal
    left behind. A pool that does not exist (a create that failed removed what it made) is said
    nothing about. A second Ctrl-C or SIGTERM during the removal is ignored (in the main
    thread), so it is not stopped half-way.

    Returns:
        True when the pool is gone (False too while another command's ``pool-cleanup``
        removes it, which is said).
    """
    from oa_vm.kit.signals import signals_ignored
    from oa_vm.model.lease import removing

    finish = f"run 'oa-vm pool-cleanup --pool {pool}'"
    try:
        with signals_ignored():
            report = cleanup_pool(pool)
    except PoolNotFoundError:
        return True
    except PoolInUseError as exc:
        if not removing(pool):
            say(f"could not remove pool {pool}: {exc}; {finish}")
            return False
        # another command's pool-cleanup holds it and removes it: nothing is left to do here
        say(f"pool {pool} is being removed by {exc.holder}")
        return False
    except Exception as exc:  # whatever it is, the command's own error is the one it ends with
        why = str(exc) if isinstance(exc, OaVmError) else f"{type(exc).__name__}: {exc}"
        say(f"could not remove pool {pool}: {why}; {finish}")
        return False
    if report.left:
        say(f"pool {pool}: left behind: {'; '.join(report.left)}; {finish}")
        return False
    return True


def _destroy(record: PoolRecord, progress: Progress) -> CleanupReport:
    """Destroy what the pool made; drop its record (leaving a tombstone) unless something is
    left."""
    pool = record.name
    record.state = PoolState.DELETING
    state.save(record)
    report = get_provider(record.cloud).destroy(record, progress)
    if report.left:
        state.save(record)  # keep the record: something is still billing or present
        return report
    state.atomic_write_json(
        state.tombstone(pool),
        {"name": pool, "cloud": record.cloud, "removed_at": state.format_time(state.utcnow()),
         "removed": report.removed},
    )
    state.delete(pool)
    return report


def cleanup_expired(
    *, progress: Progress = no_progress, force: bool = False
) -> dict[str, CleanupReport]:
    """Clean up every pool past its expiry. A pool a live run holds is skipped (its report's
    ``skipped`` says by whom, and ``progress`` says so too) rather than failing the batch,
    unless ``force``. A record that cannot be read is skipped and reported too (``unreadable``):
    its expiry is unknown, and saying nothing would let a pool bill unseen."""
    reports = {}
    for item in every_pool():
        if isinstance(item, CorruptRecordError):
            name = item.pool
            why = (f"pool {name!r} skipped: {item}"
                   if isinstance(item, RecordMissingError | StackWithoutRecordError)
                   else f"pool {name!r} skipped: its record {item.path} is unreadable "
                        f"({item.reason})")
            progress(why)
            if name in reports:  # a stack named as a record of another cloud: both reported
                name = f"{name} ({getattr(item, 'cloud', 'unknown')} stack)"
            reports[name] = CleanupReport(skipped=why, unreadable=True)
            continue
        if isinstance(item, PoolRecord) and item.is_expired():
            try:
                reports[item.name] = cleanup_pool(item.name, progress=progress, force=force)
            except PoolInUseError as exc:
                why = f"pool {item.name!r} skipped: in use by {exc.holder}"
                progress(why)
                reports[item.name] = CleanupReport(skipped=why)
    return reports


@contextmanager
def connect(
    name: str | None,
    *,
    connect_timeout: float = 5.0,
    read_timeout: float = 60.0,
    only: str | None = None,
) -> Iterator[list[WorkerConnection]]:
    """Clients for the pool's ready workers (tunnels opened as needed, closed on exit).

    Raises:
        PoolNotReadyError: no worker is ready, or the pool is paused.
    """
    record = pool_status(name)
    state.refuse_unsettled(record)
    state.refuse_paused(record)
    with connect_record(
        record, connect_timeout=connect_timeout, read_timeout=read_timeout, only=only
    ) as connections:
        yield connections


def _remove_pool_dir(name: str) -> None:
    """Remove the pool's folder (its key and known_hosts go with it: the pool is gone)."""
    import shutil

    folder = state.pool_dir(name)
    if folder.is_dir():
        shutil.rmtree(folder, ignore_errors=True)
