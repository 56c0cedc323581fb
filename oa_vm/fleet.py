"""Fleet operations on existing pools: pause, resume, repair, extend.

- **pause** stops every worker but keeps its disk (AWS: instances stopped; Azure: deallocated;
  local: processes stopped, folders kept). A paused pool costs only what it keeps (see
  :mod:`oa_vm.cost.pool_cost`) and gets a new expiry, ``keep_days`` ahead: paused pools expire too,
  and ``pool-cleanup --expired`` removes them, unless ``pool-extend`` moves the expiry.
- **resume** starts the workers again and waits for them (a warm start: the image and the
  Windows disk are already there).
- **repair** replaces lost workers (terminated, evicted, killed) under the same names. A worker
  that is *draining* (a spot notice: the cloud ends it soon) is replaced at once, before it ends,
  by a new worker under a new name (the next number: ``worker-3``, ``<pool>-w3``), because the
  old name is still in use (its process or instance, its folder or cloud resources); the
  draining worker keeps finishing its current task. A later repair *retires* it (stops it,
  removes it from the pool's record, and on a cloud from the program, which deletes what is
  left of it) once it has ended (lost), once its notice's time is past (an evicted Azure VM is
  deallocated, not deleted, so it never shows as lost), or when it is named (``run --repair``
  names it once its last task has finished). ``provider_data["replaced_by"]`` keeps who
  replaced whom.
- **extend** moves the expiry of a pool, paused or not.

A run holds its pool's lease (:mod:`oa_vm.model.lease`). **pause** would stop the workers under it,
so it is refused while a live run holds the lease (``force`` overrides), and holds the lease
itself while it stops them. **resume**, **repair** and **extend** are allowed during a run:
resume and extend take nothing away, and repair is what ``run --repair`` itself calls while
holding the lease (a user's ``pool-repair`` during a run replaces lost workers the run would
otherwise quarantine; it never touches a worker that is alive, unless named).

Cleanup wins: once ``pool-cleanup`` has begun (:mod:`oa_vm.model.lease`), repair and resume start
nothing and extend writes nothing (:class:`oa_vm.model.lease.PoolRemovingError`); their check,
start and
save happen under :func:`oa_vm.model.lease.fleet_lock`, which the cleanup takes after marking the
pool.

Like :mod:`oa_vm.api`, every function returns records and raises :mod:`oa_vm.errors`; nothing
prints. Records are saved after every step, so an interrupted operation leaves a record that
says what is running.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from oa_vm import api
from oa_vm.clouds import facts, get_provider
from oa_vm.clouds.base import Capability, FleetOps, Progress, no_progress
from oa_vm.cost.pool_cost import paused_price_of
from oa_vm.errors import InvalidInputError, PoolNotReadyError, ProviderUnavailableError
from oa_vm.model import state
from oa_vm.model.state import PoolRecord, PoolState, WorkerState
from oa_vm.reach.replacements import replaced_by, successor

DEFAULT_KEEP_DAYS = 7.0


def fleet_ops(cloud: str, need: Capability) -> FleetOps:
    """The provider of ``cloud``'s pause/resume/repair, once it declared ``need``.

    Raises:
        ProviderUnavailableError: the provider does not declare ``need`` (one line: what to do
            instead), or cannot run here (a missing extra).
    """
    provider = get_provider(cloud)
    if need not in provider.capabilities:
        raise ProviderUnavailableError(
            f"{need.value} is not available for {cloud} pools; use pool-cleanup and pool-create"
        )
    return provider.fleet_ops()


def _tell_hosts(record: PoolRecord, progress: Progress) -> None:
    """The record's expiry moved: hosts that run it themselves are told
    (:attr:`Capability.HOST_EXPIRY`). A cloud this installation cannot load has no host to
    tell: the record's expiry, already saved, stands."""
    try:
        provider = get_provider(record.cloud)
    except (InvalidInputError, ProviderUnavailableError):
        return
    if Capability.HOST_EXPIRY in provider.capabilities:
        provider.move_expiry(record, progress)


def _load(name: str | None) -> PoolRecord:
    record = state.load(api.resolve_name(name))
    if record.state in (PoolState.CREATING, PoolState.DELETING):
        raise PoolNotReadyError(
            f"pool {record.name!r} is {record.state.value}; wait for it to finish first"
        )
    return record


def pause_pool(
    name: str | None,
    *,
    keep_days: float = DEFAULT_KEEP_DAYS,
    progress: Progress = no_progress,
    ops: FleetOps | None = None,
    force: bool = False,
) -> PoolRecord:
    """Stop every worker of the pool, keeping its disks; the pool expires ``keep_days`` later.
    Draining workers that were already replaced are retired first, not paused.

    A run holding the pool's lease (:mod:`oa_vm.model.lease`) would lose its workers: the pause is
    refused unless ``force`` (then ``progress`` says whose workers it stops). While it pauses,
    the pool's lease is held, so no run starts on workers being stopped.

    Raises:
        PoolNotReadyError: the pool is being created or removed, or is already paused.
        PoolInUseError: a live run holds the pool's lease and ``force`` is false (nothing
            changed).
        InvalidInputError: ``keep_days`` is not positive.
        ProviderUnavailableError: the pool's cloud cannot pause.

    ``ops`` replaces the provider's :meth:`~oa_vm.clouds.base.Provider.fleet_ops` (tests
    give one with a stand-in engine).
    """
    from oa_vm.model.lease import describe, guard_pool

    if not keep_days > 0:
        raise InvalidInputError(f"--keep-days must be more than 0, not {keep_days}")
    record = _check_pausable(_load(name))
    ops = ops or fleet_ops(record.cloud, Capability.PAUSE)
    with guard_pool(record.name, "pool-pause", force=force) as overridden:
        if overridden is not None:
            progress(f"pool {record.name!r} is in use by {describe(overridden)}; "
                     "pausing it anyway (--force)")
        record = _check_pausable(_load(record.name))  # as it is now that the lease is ours
        return _pause(record, ops, keep_days, progress)


EXTENDED_WHILE_PAUSED = "extended_while_paused_s"
"""``provider_data`` key: seconds ``pool-extend`` added while the pool was paused, which
``pool-resume`` adds to the expiry it sets (an extension is never replaced)."""


def _check_pausable(record: PoolRecord) -> PoolRecord:
    if record.state == PoolState.PAUSED:
        raise PoolNotReadyError(
            f"pool {record.name!r} is already paused; resume it with "
            f"'oa-vm pool-resume --pool {record.name}'"
        )
    return record


def _pause(record: PoolRecord, ops: FleetOps, keep_days: float,
           progress: Progress) -> PoolRecord:
    going = [w.name for w in record.workers if w.name in replaced_by(record)]
    loaded = record.expires_at
    try:
        if going:  # replaced draining workers are retired, not kept paused
            ops.repair(record, progress, going)
        record = ops.pause(record, progress)
    finally:
        state.save_after(record, loaded)  # an extension made meanwhile is kept
    # ... and added to the paused expiry set below, not replaced by it
    carried = (record.expires_at - loaded if record.expires_at is not None and loaded is not None
               else timedelta(0))
    loaded = record.expires_at
    now = state.utcnow()
    pauses = list(record.provider_data.get("pauses") or [])
    pauses.append({
        "from": state.format_time(now), "to": None,
        "per_day": paused_price_of(record, facts(record.cloud).billing),
    })
    record.provider_data["pauses"] = pauses
    record.expires_at = now + timedelta(days=keep_days) + max(carried, timedelta(0))
    record.state = PoolState.PAUSED
    record.provider_data.pop(EXTENDED_WHILE_PAUSED, None)
    state.save_after(record, loaded)
    _tell_hosts(record, progress)
    return record


def resume_pool(
    name: str | None,
    *,
    ttl_hours: float = api.DEFAULT_TTL_HOURS,
    wait: bool = True,
    timeout_s: float = 1800.0,
    progress: Progress = no_progress,
    on_update: Callable[[PoolRecord], None] | None = None,
    ops: FleetOps | None = None,
) -> PoolRecord:
    """Start a paused pool's workers again (same names, same disks), then wait for them.

    The pool expires ``ttl_hours`` after the resume, as a new pool would.

    Raises:
        PoolNotReadyError: the pool is not paused, or a worker was lost while waiting.
        WaitTimeoutError: ``wait`` and the workers were not ready in ``timeout_s``.
        PoolRemovingError: ``pool-cleanup`` has begun (nothing was started).
    """
    if not ttl_hours > 0:
        raise InvalidInputError(f"--ttl-hours must be more than 0, not {ttl_hours}")
    record = _load(name)
    if not any(w.state == WorkerState.PAUSED for w in record.workers):
        raise PoolNotReadyError(
            f"pool {record.name!r} is not paused ({record.state.value}); nothing to resume"
        )
    from oa_vm.model.lease import PoolRemovingError, fleet_lock, removing

    ops = ops or fleet_ops(record.cloud, Capability.RESUME)
    with fleet_lock(record.name):  # cleanup wins: see repair_pool
        if removing(record.name):
            raise PoolRemovingError(record.name)
        record = _load(record.name)
        loaded = record.expires_at
        now = state.utcnow()
        pauses = list(record.provider_data.get("pauses") or [])
        if pauses and pauses[-1].get("to") is None:
            pauses[-1] = {**pauses[-1], "to": state.format_time(now)}
        record.provider_data["pauses"] = pauses
        # what pool-extend added while the pool was paused is added, not replaced
        extended = float(record.provider_data.pop(EXTENDED_WHILE_PAUSED, 0) or 0)
        record.expires_at = now + timedelta(hours=ttl_hours, seconds=max(0.0, extended))
        try:
            ops.resume(record, progress)
        finally:
            state.save_after(record, loaded)  # an extension made meanwhile is kept
        _tell_hosts(record, progress)
    if not wait:
        return record
    return api.wait_pool(record.name, timeout_s=timeout_s, on_update=on_update)


def repair_pool(
    name: str | None,
    *,
    workers: list[str] | None = None,
    wait: bool = True,
    timeout_s: float = 1800.0,
    progress: Progress = no_progress,
    on_update: Callable[[PoolRecord], None] | None = None,
    ops: FleetOps | None = None,
    fence: Callable[[], None] | None = None,
) -> tuple[PoolRecord, list[str]]:
    """Replace the pool's lost workers (or the named ``workers``) under the same names; start a
    replacement under a new name for each draining worker, and retire the replaced draining
    workers that can go (see the module docstring).

    Returns the record and the names of the workers started (recreated or new; empty when
    nothing was lost or draining). With ``wait``, waits for those (and for the replacements of
    the named workers) to be ready, not for the rest of the pool.

    Cleanup wins: the check that the pool is not being removed, the start and the record's save
    happen under :func:`oa_vm.model.lease.fleet_lock`, which ``pool-cleanup`` takes after marking
    the pool, and every later save (while waiting) is refused once the cleanup began; ``fence`` (a
    run's :meth:`oa_vm.model.lease.Hold.check`) is asked before anything starts, so a run whose
    lease was taken over repairs nothing.

    Raises:
        InvalidInputError: a named worker is not in the pool.
        PoolNotReadyError: the pool is paused (resume it instead), or a worker was lost again
            while waiting.
        PoolRemovingError: ``pool-cleanup`` has begun (nothing was started).
        LeaseLostError: ``fence`` refused (nothing was started).
    """
    from oa_vm.model.lease import PoolRemovingError, fleet_lock, removing, save_fenced

    pool = api.resolve_name(name)
    with fleet_lock(pool):
        if removing(pool):
            raise PoolRemovingError(pool)
        record = _load(pool)
        loaded = record.expires_at
        if record.state == PoolState.PAUSED:
            raise PoolNotReadyError(
                f"pool {record.name!r} is paused; 'oa-vm pool-resume --pool {record.name}' "
                "starts every worker"
            )
        if workers:
            known = {w.name for w in record.workers}
            unknown = [w for w in workers if w not in known]
            if unknown:
                raise InvalidInputError(
                    f"pool {record.name!r} has no worker {', '.join(unknown)} "
                    f"(workers: {', '.join(sorted(known))})"
                )
        if fence is not None:
            fence()
        ops = ops or fleet_ops(record.cloud, Capability.REPAIR)
        try:
            replaced = ops.repair(record, progress, list(workers) if workers else None)
        finally:
            # Not fenced: a cleanup that began meanwhile waits for this lock, then loads this
            # record and removes what was started. An extension made meanwhile is kept.
            state.save_after(record, loaded)
    present = {w.name: w for w in record.workers}
    targets = sorted(
        name for name in {*replaced, *(successor(record, w) for w in workers or [])}
        if name in present and present[name].state != WorkerState.READY
    )
    if not targets or not wait:
        return record, replaced

    def save(current: PoolRecord) -> None:
        save_fenced(current, fence)

    record = api.wait_pool(record.name, timeout_s=timeout_s, on_update=on_update,
                           workers=targets, save=save)
    return record, replaced


def extend_pool(name: str | None, *, by_s: float,
                progress: Progress = no_progress) -> PoolRecord:
    """Move the pool's expiry ``by_s`` seconds later (from now, if it has already passed).

    Raises:
        InvalidInputError: ``by_s`` is not positive.
        PoolRemovingError: ``pool-cleanup`` has begun (nothing was written).
    """
    if not by_s > 0:
        raise InvalidInputError("the extension must be more than zero")
    resolved = api.resolve_name(name)
    from oa_vm.model.lease import save_fenced

    with state.locked(resolved):  # read-modify-write: parallel extends must all count
        record = state.load(resolved)
        now = state.utcnow()
        if not facts(record.cloud).simulated:
            # the expiry the instances were made with is in their cloud-init: kept for repairs
            record.provider_data.setdefault(
                "program_expires_at", state.format_time(record.expires_at)
            )
        base = (record.expires_at if record.expires_at is not None and record.expires_at > now
                else now)
        record.expires_at = base + timedelta(seconds=by_s)
        if record.state == PoolState.PAUSED:  # pool-resume adds it to the expiry it sets
            record.provider_data[EXTENDED_WHILE_PAUSED] = by_s + float(
                record.provider_data.get(EXTENDED_WHILE_PAUSED, 0) or 0)
        save_fenced(record)  # never brings back the record of a pool being removed
    _tell_hosts(record, progress)
    return record
