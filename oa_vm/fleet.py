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

On a cloud that ends its pools itself (:attr:`Capability.CLOUD_EXPIRY`: AWS's terminate
schedule, Azure's deleter and daily shutdown time), pause (its ``keep_days``), resume and extend
move the expiry in the cloud first (the pool's program runs again; AWS hosts' own power-off timers
follow: a running host's over SSH, a stopped one's from its expiry tag when it boots), and
the record takes it only once the cloud did: the record never promises a later expiry than the
cloud keeps. An expiry the cloud cannot keep (a running Azure pool's: more than 24 hours ahead)
is refused before anything runs.

A run holds its pool's lease (:mod:`oa_vm.model.lease`). **pause** would stop the workers under it,
so it is refused while a live run holds the lease (``force`` overrides), and holds the lease
itself while it stops them. **resume**, **repair** and **extend** are allowed during a run:
resume and extend take nothing away, and repair is what ``run --repair`` itself calls while
holding the lease (a user's ``pool-repair`` during a run replaces lost workers the run would
otherwise quarantine; it never touches a worker that is alive, unless named, and naming one is
refused, as a pause is, while another's run holds the lease, unless ``force``).

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

import contextlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from oa_vm import api
from oa_vm.clouds import facts, get_provider, load_pool
from oa_vm.clouds.base import (
    Capability,
    CloudExpiryOps,
    ExpiryLimit,
    FleetOps,
    Progress,
    Provider,
    no_progress,
)
from oa_vm.cost.pool_cost import paused_price_of
from oa_vm.errors import (
    InvalidInputError,
    PoolNotReadyError,
    ProviderUnavailableError,
    ProvisioningError,
    listing,
)
from oa_vm.kit.durations import LONGEST_S, format_duration
from oa_vm.kit.validate import twice_problem
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


class _CloudExpiry:
    """A cloud pool's expiry, which its cloud enforces (:attr:`Capability.CLOUD_EXPIRY`): the
    limit, asked before anything is written or run (no engine needed), and the fleet
    operations that move it (``ops``: the caller's, as tests give a stand-in engine; else the
    provider's, which checks its extra and engine)."""

    def __init__(self, limit: ExpiryLimit, ops: FleetOps | None, provider: Provider | None):
        self.limit, self._ops, self._provider = limit, ops, provider

    def ops(self) -> CloudExpiryOps:
        """The fleet operations (raises ``ProviderUnavailableError``: no extra or engine)."""
        ops = self._ops
        if ops is None:
            assert self._provider is not None
            ops = self._provider.fleet_ops()
        if not isinstance(ops, CloudExpiryOps):
            raise ProviderUnavailableError("this cloud's fleet operations cannot move its expiry")
        return ops


def _cloud_expiry(record: PoolRecord, ops: FleetOps | None) -> _CloudExpiry | None:
    """How the pool's cloud enforces its expiry, or None when the expiry lives in the record
    (and on the hosts, :func:`_tell_hosts`) only."""
    if ops is not None:
        return _CloudExpiry(ops, ops, None) if isinstance(ops, CloudExpiryOps) else None
    try:
        provider = get_provider(record.cloud)
    except (InvalidInputError, ProviderUnavailableError):
        return None
    if Capability.CLOUD_EXPIRY not in provider.capabilities or not isinstance(
            provider, ExpiryLimit):
        return None
    return _CloudExpiry(provider, None, provider)


def _when(expires_at: datetime | None) -> str:
    """An expiry in a message: UTC, to the second."""
    return "never" if expires_at is None else f"{expires_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"


def _not_moved(record: PoolRecord, what: str, exc: ProvisioningError, again: str) -> (
        ProvisioningError):
    """One line: the cloud did not take the new expiry, the record keeps the old one, and the
    command to run again."""
    why = " ".join(str(exc).split()).removeprefix(f"pool {record.name!r}: ")
    return ProvisioningError(
        f"pool {record.name!r}: {what}; its expiry did not move in the cloud, and the record "
        f"keeps {_when(record.expires_at)} ({why}); run '{again}' again"
    )


def _check_latest(cloud: _CloudExpiry, record: PoolRecord, expires_at: datetime, now: datetime,
                  fix: Callable[[timedelta], str], what: str = "") -> None:
    """Refuse an expiry the cloud cannot keep (Azure: 24 hours ahead), before anything is
    written or run: one line, ``what`` is wrong (by default: when the pool would expire), the
    cloud's rule, and ``fix(room)``, what to do with the ``room`` left."""
    limit = cloud.limit.latest_expiry(record, now)
    if limit is not None and expires_at > limit[0]:
        latest, rule = limit
        what = what or f"pool {record.name!r} would expire at {_when(expires_at)}"
        raise InvalidInputError(
            f"{what}: {rule}; {fix(max(latest - now - timedelta(minutes=5), timedelta(0)))}")


def _load(name: str | None) -> PoolRecord:
    record = load_pool(api.resolve_name(name))
    state.refuse_unsettled(record)
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
        ProvisioningError: a cloud that ends its pools itself did not take the paused expiry
            (the pool was not paused; its record keeps its expiry).

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
        if not isinstance(ops, CloudExpiryOps):
            record = _check_pausable(_load(record.name))  # as it is now that the lease is ours
            return _pause(record, ops, keep_days, progress)
        from oa_vm.model.lease import fleet_lock

        with fleet_lock(record.name):  # one program run at a time (pool-extend's, resume's)
            record = _check_pausable(_load(record.name))
            return _pause_in_cloud(record, ops, keep_days, progress)


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
    record.expires_at = now + timedelta(days=keep_days) + max(carried, timedelta(0))
    _mark_paused(record, now, loaded)
    _tell_hosts(record, progress)
    return record


def _pause_in_cloud(record: PoolRecord, ops: CloudExpiryOps, keep_days: float,
                    progress: Progress) -> PoolRecord:
    """:func:`_pause` for a cloud that ends its pools itself: AWS terminates a paused pool's
    stopped instances at its paused expiry, and Azure's deleter removes its resource group
    then, so the program takes that expiry as the machines stop. The cloud first, then the
    record: if the update fails, the record keeps the expiry it had, and the error says so."""
    going = [w.name for w in record.workers if w.name in replaced_by(record)]
    loaded = record.expires_at
    now = state.utcnow()
    record.expires_at = now + timedelta(days=keep_days)
    try:
        if going:  # replaced draining workers are retired, not kept paused
            ops.repair(record, progress, going)
        record = ops.pause(record, progress)
    except ProvisioningError as exc:
        record.expires_at = loaded
        raise _not_moved(record, "it was not paused", exc,
                         f"oa-vm pool-pause --pool {record.name}") from exc
    except BaseException:
        record.expires_at = loaded
        raise
    finally:
        state.save_after(record, loaded)
    _mark_paused(record, now, record.expires_at)
    return record


def _mark_paused(record: PoolRecord, now: datetime, loaded: datetime | None) -> None:
    """Record the pause that began at ``now`` (with what the paused pool costs a day) and save
    the record (over one whose expiry is still ``loaded``, as :func:`state.save_after`)."""
    pauses = list(record.provider_data.get("pauses") or [])
    pauses.append({
        "from": state.format_time(now), "to": None,
        "per_day": paused_price_of(record, facts(record.cloud).billing),
    })
    record.provider_data["pauses"] = pauses
    record.state = PoolState.PAUSED
    record.provider_data.pop(EXTENDED_WHILE_PAUSED, None)
    state.save_after(record, loaded)


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

    The pool expires ``ttl_hours`` after the resume (plus what ``pool-extend`` added while it
    was paused), as a new pool would; on a cloud that ends its pools itself, the cloud takes
    that expiry as the workers start (AWS's hosts set their power-off timers to it as they
    boot, from their expiry tag: nothing to do afterwards, waiting or not).

    Raises:
        InvalidInputError: the cloud cannot keep the new expiry (Azure: more than 24 hours
            ahead); nothing was started or written.
        ProvisioningError: the cloud did not take it (the pool stays paused, its record as it
            was).
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

    cloud = _cloud_expiry(record, ops)
    if cloud is not None:  # refused before anything is run or written
        _check_resume_expiry(cloud, record, ttl_hours, state.utcnow())
    ops = ops or fleet_ops(record.cloud, Capability.RESUME)
    with fleet_lock(record.name):  # cleanup wins: see repair_pool
        if removing(record.name):
            raise PoolRemovingError(record.name)
        record = _load(record.name)
        loaded = record.expires_at
        kept = dict(record.provider_data)
        now = state.utcnow()
        if cloud is not None:
            _check_resume_expiry(cloud, record, ttl_hours, now)  # as it is now, locked
        pauses = list(record.provider_data.get("pauses") or [])
        if pauses and pauses[-1].get("to") is None:
            pauses[-1] = {**pauses[-1], "to": state.format_time(now)}
        record.provider_data["pauses"] = pauses
        # what pool-extend added while the pool was paused is added, not replaced
        extended = float(record.provider_data.pop(EXTENDED_WHILE_PAUSED, 0) or 0)
        record.expires_at = now + timedelta(hours=ttl_hours, seconds=max(0.0, extended))
        try:
            # a cloud's kill switch takes the new expiry as the workers start (the program)
            ops.resume(record, progress)
        except ProvisioningError as exc:
            if cloud is None:
                raise
            # the cloud did not take it: the record stays paused, with its expiry
            record.expires_at, record.provider_data = loaded, kept
            raise _not_moved(record, "it was not resumed", exc,
                             f"oa-vm pool-resume --pool {record.name}") from exc
        finally:
            state.save_after(record, loaded)  # an extension made meanwhile is kept
        _tell_hosts(record, progress)
    if not wait:
        return record
    return api.wait_pool(record.name, timeout_s=timeout_s, on_update=on_update)


def _check_resume_expiry(cloud: _CloudExpiry, record: PoolRecord, ttl_hours: float,
                         now: datetime) -> None:
    """Refuse a resume whose expiry (``ttl_hours`` plus what ``pool-extend`` added while the
    pool was paused) the cloud cannot keep."""
    extended = max(0.0, float(record.provider_data.get(EXTENDED_WHILE_PAUSED, 0) or 0))

    def fix(room: timedelta) -> str:
        left = max(room.total_seconds() - extended, 60.0)
        return f"pass --ttl {format_duration(left // 60 * 60)} or less" + (
            f" (the {format_duration(extended)} pool-extend added while it was paused come "
            "on top)" if extended else "")

    _check_latest(cloud, record, now + timedelta(hours=ttl_hours, seconds=extended), now, fix)


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
    force: bool = False,
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

    Named ``workers`` are replaced even while they work, so, as a pause, that is refused while
    another live process (a run) holds the pool's lease, unless ``force`` (then ``progress`` says
    whose workers it replaces); the lease is held meanwhile. A run's own repair (``fence``) and
    a repair of the lost workers alone are not refused.

    Raises:
        InvalidInputError: a named worker is not in the pool.
        PoolInUseError: ``workers`` are named, a live run holds the pool's lease and ``force``
            is false (nothing was started).
        PoolNotReadyError: the pool is paused (resume it instead), or a worker was lost again
            while waiting.
        PoolRemovingError: ``pool-cleanup`` has begun (nothing was started).
        LeaseLostError: ``fence`` refused (nothing was started).
    """
    from oa_vm.model.lease import (
        PoolRemovingError,
        describe,
        fleet_lock,
        guard_pool,
        removing,
        save_fenced,
    )

    found = _load(name)  # a name with no record is refused as every command refuses it
    pool = found.name
    if workers:  # refused before the lock: bad input leaves nothing behind (a repair keeps names)
        if twice := twice_problem("--worker", workers, "worker"):  # as --pool in a run
            raise InvalidInputError(twice)
        known = {w.name for w in found.workers}
        unknown = [w for w in workers if w not in known]
        if unknown:
            raise InvalidInputError(
                f"pool {pool!r} has no worker {listing(unknown)} "
                f"(workers: {listing(sorted(known))})"
            )
    # a named worker is stopped whatever it is doing: not from under another's run
    guard = (guard_pool(pool, "pool-repair", force=force) if workers and fence is None
             else contextlib.nullcontext(None))
    with guard as overridden, fleet_lock(pool):
        if overridden is not None:
            progress(f"pool {pool!r} is in use by {describe(overridden)}; replacing "
                     f"{listing(workers or [])} anyway (--force)")
        if removing(pool):
            raise PoolRemovingError(pool)
        record = _load(pool)
        loaded = record.expires_at
        state.refuse_paused(record)  # pool-resume starts every worker
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


def extend_pool(name: str | None, *, by_s: float, progress: Progress = no_progress,
                ops: FleetOps | None = None) -> PoolRecord:
    """Move the pool's expiry ``by_s`` seconds later (from now, if it has already passed).

    On a cloud that ends its pools itself (AWS's schedule, Azure's daily shutdown time), the
    pool's program runs again with the new expiry, then the running hosts' power-off timers
    are re-armed over SSH; only then does the record take it (see :func:`_extend_in_cloud`).

    Raises:
        InvalidInputError: ``by_s`` is not positive, or the cloud cannot keep the new expiry
            (Azure: more than 24 hours ahead); nothing was run or written.
        ProvisioningError: the cloud did not take the new expiry (the record keeps the old).
        PoolNotReadyError: a cloud pool being created or removed, or whose create failed
            before it had workers (nothing was run or written).
        PoolRemovingError: ``pool-cleanup`` has begun (nothing was written).
    """
    if not by_s > 0:
        raise InvalidInputError("the extension must be more than zero")
    resolved = api.resolve_name(name)
    from oa_vm.model.lease import save_fenced

    cloud = _cloud_expiry(load_pool(resolved), ops)
    if cloud is not None:
        return _extend_in_cloud(resolved, by_s, cloud, progress)
    with state.locked(resolved):  # read-modify-write: parallel extends must all count
        record = state.load(resolved)
        record.expires_at = _extended(record, by_s, state.utcnow())
        save_fenced(record)  # never brings back the record of a pool being removed
    _tell_hosts(record, progress)
    return record


def _extended(record: PoolRecord, by_s: float, now: datetime) -> datetime:
    """The expiry ``by_s`` seconds after the record's (or ``now``, if it has passed); a paused
    pool keeps the extension for ``pool-resume`` to add (:data:`EXTENDED_WHILE_PAUSED`)."""
    _refuse_past_longest(record, by_s, now)
    base = (record.expires_at if record.expires_at is not None and record.expires_at > now
            else now)
    if record.state == PoolState.PAUSED:
        record.provider_data[EXTENDED_WHILE_PAUSED] = by_s + float(
            record.provider_data.get(EXTENDED_WHILE_PAUSED, 0) or 0)
    return base + timedelta(seconds=by_s)


def _extend_in_cloud(pool: str, by_s: float, cloud: _CloudExpiry,
                     progress: Progress) -> PoolRecord:
    """:func:`extend_pool` on a cloud that ends its pools itself.

    The order: the limit first (nothing run or written), then the cloud, then the record. The
    record must never say a later expiry than the cloud enforces, or the pool would be
    terminated (AWS) or deallocated (Azure) mid-run while ``pool-status`` promises more time;
    so the program runs first, and the record takes the new expiry only once it succeeded. If
    the update fails, the record keeps the old expiry and the error says to run the extend
    again (a failed update may have moved the schedule already: the cloud then keeps the pool
    longer than the record says, never shorter). Under the fleet lock: one program run at a
    time (a resume's, a pause's, another extend's), and ``pool-cleanup`` waits for it.
    """
    from oa_vm.model.lease import PoolRemovingError, fleet_lock, removing, save_fenced

    record = _extendable(state.load(pool))
    _check_extension(cloud, record, by_s, state.utcnow())
    ops = cloud.ops()
    with fleet_lock(pool):
        if removing(pool):
            raise PoolRemovingError(pool)
        record = _extendable(state.load(pool))  # as it is now that the lock is ours
        now = state.utcnow()
        _check_extension(cloud, record, by_s, now)
        loaded = record.expires_at
        record.expires_at = _extended(record, by_s, now)
        try:
            ops.move_expiry(record, progress)
        except ProvisioningError as exc:
            record.expires_at = loaded
            raise _not_moved(record, "the extension was not made", exc,
                             f"oa-vm pool-extend --pool {pool} --by {format_duration(by_s)}"
                             ) from exc
        # The program ran for minutes: take the expiry into the record as it is now (pool-wait
        # or a run may have saved it meanwhile), not the copy read before.
        with state.locked(pool):
            current = state.load(pool)
            current.expires_at = record.expires_at
            if EXTENDED_WHILE_PAUSED in record.provider_data:
                current.provider_data[EXTENDED_WHILE_PAUSED] = record.provider_data[
                    EXTENDED_WHILE_PAUSED]
            save_fenced(current)  # never brings back the record of a pool being removed
    return current


def _extendable(record: PoolRecord) -> PoolRecord:
    """A cloud pool whose program can run again: not being created or removed, and not a
    create that failed before it had workers (its record holds no settings to run it with).

    Raises:
        PoolNotReadyError: one line, what to do instead.
    """
    state.refuse_unsettled(record)
    if record.state == PoolState.FAILED and not record.workers:
        raise PoolNotReadyError(
            f"pool {record.name!r} failed before it had workers: there is nothing to extend; "
            f"'oa-vm pool-cleanup --pool {record.name}' removes what is left")
    return record


def _refuse_past_longest(record: PoolRecord, by_s: float, now: datetime) -> None:
    """Refuse an extension that would move the expiry (or, for a paused pool, what
    ``pool-resume`` adds) more than ten years ahead, as every duration is refused past that
    (:data:`LONGEST_S`): extensions of ten years each, one after another, ran the date past
    the year 9999 and into an ``OverflowError``."""
    base = (record.expires_at if record.expires_at is not None and record.expires_at > now
            else now)
    ahead = (base - now).total_seconds() + by_s
    if record.state == PoolState.PAUSED:
        ahead = by_s + float(record.provider_data.get(EXTENDED_WHILE_PAUSED, 0) or 0)
    if ahead > LONGEST_S:
        room = max(LONGEST_S - (ahead - by_s), 0.0) // 60 * 60
        advice = (f"extend it by at most {format_duration(room)}" if room >= 60
                  else "it already expires as late as it can")
        raise InvalidInputError(f"pool {record.name!r} would expire more than "
                                f"{format_duration(LONGEST_S)} (ten years) from now; {advice}")


def _check_extension(cloud: _CloudExpiry, record: PoolRecord, by_s: float,
                     now: datetime) -> None:
    """Refuse an extension the cloud cannot keep: a running pool's new expiry past the limit;
    a paused one's (whose deallocated or stopped machines the limit does not concern) once
    what ``pool-resume`` adds would leave less than an hour of running time."""
    _refuse_past_longest(record, by_s, now)
    if record.state == PoolState.PAUSED:
        carried = by_s + float(record.provider_data.get(EXTENDED_WHILE_PAUSED, 0) or 0)
        hour = timedelta(hours=1)

        def fix_paused(room: timedelta) -> str:
            left = max(room - hour - timedelta(seconds=carried - by_s), timedelta(0))
            return (f"extend it by at most {format_duration(left.total_seconds() // 60 * 60)} "
                    "now, or after the resume")

        _check_latest(cloud, record, now + timedelta(seconds=carried) + hour, now, fix_paused,
                      f"pool {record.name!r} is paused: pool-resume would add the "
                      f"{format_duration(carried)} extended meanwhile to its --ttl")
        return
    base = record.expires_at if record.expires_at is not None and record.expires_at > now \
        else now

    def fix(room: timedelta) -> str:
        left = max(room - (base - now), timedelta(0)).total_seconds() // 60 * 60
        if left < 60:
            return "it already expires as late as it can: extend it again later"
        return f"extend it by at most {format_duration(left)} now, and again later if needed"

    _check_latest(cloud, record, base + timedelta(seconds=by_s), now, fix)
