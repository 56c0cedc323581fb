"""The reset before each task: a clean machine (a snapshot put back) or WAA's stock reset.

``--reset`` chooses, per run:

- ``clean``: every worker restores the snapshot of its whole machine (memory and disk) taken once,
  before each task; a worker that cannot makes the run fail in one line before any task runs;
- ``stock``: WAA's own reset (close every window, clear the task files): state a task leaves in
  the registry, an app's settings or a browser profile stays for the next;
- ``clean-or-stock`` (the default): ``clean`` where the worker can, ``stock`` elsewhere.

Each task's record says which one ran (``reset``), how long it took (``reset_s``) and, for
``clean``, a fingerprint proving the machine is the clean one (``fingerprint``):

1. once per worker, when its host holds no recorded snapshot, a random token is written into the
   guest (``C:\\oa-vm\\clean-token.txt``) and the snapshot is taken with that token recorded on the
   host; a simulated worker, which saves its state at start, is first put back to that state;
2. after every restore the token is read back from the guest and compared with the host's, and
   a marker written into the guest after the previous snapshot or restore
   (``C:\\oa-vm\\after-snapshot.txt``) must be gone; then the marker is written again.

The dispatcher calls :meth:`WorkerReset.before_task` once per attempt, before the task's setup.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from evals.errors import InvalidRunInputError
from evals.results.records import ErrorType, Resets, Summary, TaskExecution

if TYPE_CHECKING:
    from evals.run.pools import RunPool
    from oa_vm import PoolRecord, Provider, SnapshotControl, WorkerConnection

log = logging.getLogger(__name__)

GUEST_DIR = "C:\\oa-vm"
TOKEN_FILE = f"{GUEST_DIR}\\clean-token.txt"
MARKER_FILE = f"{GUEST_DIR}\\after-snapshot.txt"


class ResetMode(StrEnum):
    """What ``--reset`` asks for."""

    CLEAN = "clean"
    STOCK = "stock"
    CLEAN_OR_STOCK = "clean-or-stock"


DEFAULT_RESET = ResetMode.CLEAN_OR_STOCK


class ResetFailed(Exception):
    """The reset before a task failed; the task's record is an error of ``error_type``."""

    def __init__(self, error_type: ErrorType, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message


@dataclass
class ResetDone:
    """One finished reset, to be written into the task's record."""

    kind: str
    seconds: float
    fingerprint: dict[str, Any] | None = None

    def apply(self, execution: TaskExecution) -> None:
        """Write ``reset``, ``reset_s`` and ``fingerprint`` into ``execution``."""
        execution.reset = self.kind
        execution.reset_s = round(self.seconds, 3)
        execution.fingerprint = self.fingerprint


def fingerprint_ok(fingerprint: Mapping[str, Any] | None) -> bool:
    """True when the guest showed the snapshot's token and the marker was gone."""
    return bool(fingerprint) and bool(fingerprint.get("ok"))  # type: ignore[union-attr]


def _waa_failure(exc: Exception, what: str) -> ResetFailed:
    """The worker failing (unreachable, 5xx: try another worker) or refusing (a setup error)."""
    from waa_client.errors import ServerError, WaaError

    if isinstance(exc, WaaError) and (exc.is_infrastructure or isinstance(exc, ServerError)):
        return ResetFailed(ErrorType.INFRASTRUCTURE, f"{what}: {exc}")
    return ResetFailed(ErrorType.SETUP, f"{what} failed: {exc}")


class WorkerReset:
    """The reset of one worker (by its run name); one task at a time, like the worker itself.

    Args:
        kind: ``clean`` or ``stock`` (decided before the run by :func:`plan_resets`).
        resolve: For ``clean``: gives the snapshot control of a connection (called again when
            the worker's connection is replaced, e.g. by ``--repair``).
        fallback_reason: Why a ``clean-or-stock`` run resets this worker the stock way.
        may_fall_back: ``clean-or-stock``: when the worker's first clean snapshot cannot be
            taken (QEMU refuses it, the host has no way), reset it the stock way from then on,
            in one logged line naming the worker, instead of failing its tasks.
    """

    def __init__(
        self,
        kind: str,
        resolve: Callable[[WorkerConnection], SnapshotControl] | None = None,
        fallback_reason: str | None = None,
        may_fall_back: bool = False,
    ) -> None:
        self.kind = kind
        self.resolve = resolve
        self.fallback_reason = fallback_reason
        self.may_fall_back = may_fall_back
        self.qemu: dict[str, Any] | None = None  # the worker's QEMU, as its host's check saw it
        self._connection: WorkerConnection | None = None
        self._control: SnapshotControl | None = None

    def before_task(
        self, worker: WorkerConnection, fence: Callable[[], None] = lambda: None
    ) -> ResetDone:
        """Reset ``worker`` for the next task.

        ``fence`` is the run's lease check (``evals.run.dispatcher``), asked before each call that
        changes the worker: a controller that woke from a freeze must not restore a desktop
        another run is using. The snapshot control's requests carry the worker clients' lease
        generation (``waa_client.FENCE_HEADER``) as theirs do.

        Raises:
            ResetFailed: the reset could not be done (the task gets an error record).
            oa_vm.model.lease.LeaseLostError, oa_vm.model.lease.PoolRemovingError: ``fence``
            refused.
        """
        began = time.monotonic()
        fence()
        if self.kind == ResetMode.STOCK:
            try:
                worker.waa.close_all()
                worker.waa.clear_task_files()
            except Exception as exc:  # mapped like the stock reset in evals.run.agent_loop
                raise _waa_failure(exc, "resetting the worker") from exc
            return ResetDone("stock", time.monotonic() - began)
        from oa_vm import SnapshotError

        try:
            control = self._ensure_snapshot(worker)
        except SnapshotError as exc:
            if not self.may_fall_back:
                raise ResetFailed(ErrorType.INFRASTRUCTURE, f"clean reset failed: {exc}") from exc
            self.kind, self.may_fall_back = ResetMode.STOCK, False
            self.fallback_reason = f"the clean snapshot could not be taken: {exc}"
            log.warning("worker %s: %s; resetting it the stock way from now on", worker.name,
                        self.fallback_reason)
            return self.before_task(worker, fence)
        try:
            fence()
            restored = control.restore()
        except SnapshotError as exc:
            raise ResetFailed(ErrorType.INFRASTRUCTURE, f"clean reset failed: {exc}") from exc
        fingerprint = self._fingerprint(worker, restored.token)
        if restored.seconds is not None:
            fingerprint["restore_s"] = restored.seconds
        if restored.clock_skew_s is not None:  # the guest's clock, resynced after the restore
            fingerprint["clock_skew_s"] = restored.clock_skew_s
        return ResetDone("clean", time.monotonic() - began, fingerprint)

    def _ensure_snapshot(self, worker: WorkerConnection) -> SnapshotControl:
        """The worker's control; takes the tokened snapshot the first time it is missing."""
        if self._control is not None and self._connection is worker:
            _carry_fence(self._control, worker)
            return self._control
        assert self.resolve is not None, "a clean reset needs a snapshot control"
        control = self.resolve(worker)
        _carry_fence(control, worker)
        held = control.check()
        if not held.token:
            if held.snapshot:
                # a simulated worker's state at start (no token yet): take from there
                control.restore()
            token = secrets.token_hex(8)
            try:
                worker.scoring.setup([
                    {"type": "create_folder", "parameters": {"path": GUEST_DIR}},
                    {"type": "create_file", "parameters": {"path": TOKEN_FILE, "content": token}},
                ], timeout=None)  # see _write_marker
            except Exception as exc:
                raise _waa_failure(exc, "writing the snapshot's fingerprint") from exc
            control.take(token)
            self._write_marker(worker)
        self._control, self._connection = control, worker
        return control

    def _write_marker(self, worker: WorkerConnection) -> None:
        try:
            # A file of a few bytes: the run's read timeout (timeout=None), not setup's default
            # of 600 s for downloads, which let a worker that hung here stall its lease, and the
            # run with it, for ten minutes per attempt.
            worker.scoring.setup([{"type": "create_file", "parameters": {
                "path": MARKER_FILE, "content": "written after the clean snapshot"}}],
                timeout=None)
        except Exception as exc:
            raise _waa_failure(exc, "writing the after-snapshot marker") from exc

    def _fingerprint(self, worker: WorkerConnection, expected: str | None) -> dict[str, Any]:
        """Read the token and look for the marker, then write the marker for the next restore."""
        from waa_client.errors import NotFoundError

        try:
            token: str | None = worker.waa.file(TOKEN_FILE).decode("utf-8", "replace").strip()
        except NotFoundError:
            token = None
        except Exception as exc:
            raise _waa_failure(exc, "reading the snapshot's fingerprint") from exc
        try:
            worker.waa.file(MARKER_FILE)
            marker_gone = False
        except NotFoundError:
            marker_gone = True
        except Exception as exc:
            raise _waa_failure(exc, "looking for the after-snapshot marker") from exc
        self._write_marker(worker)
        ok = bool(expected) and token == expected and marker_gone
        return {"token": token, "expected": expected, "marker_gone": marker_gone, "ok": ok}


def _carry_fence(control: SnapshotControl, worker: WorkerConnection) -> None:
    """Send ``worker``'s lease generation with the control's requests too (an HTTP control:
    a simulated worker's, which refuses an earlier holder's restore like any other request)."""
    from waa_client.http import HttpClient

    if isinstance(control, HttpClient):
        control.fence_token = worker.scoring.fence_token


def plan_resets(mode: ResetMode | str, pools: Sequence[RunPool], *,
                left_out: bool = False) -> dict[str, WorkerReset]:
    """Decide each worker's reset before any task runs (asks every worker's host once).

    ``left_out`` (``run --repair``): the workers left out at the start
    (:attr:`evals.run.pools.RunPool.left_out`) get a plan too, for when they are replaced:
    ``clean`` where their pool's workers can restore, unchecked (their first restore takes the
    snapshot, as any worker's; ``clean-or-stock`` falls back then if it cannot).

    Raises:
        InvalidRunInputError: ``--reset clean`` and a worker that cannot restore (one line,
            naming the worker and what to do).
    """
    from oa_vm import Capability, get_provider

    mode = ResetMode(mode)
    plans: dict[str, WorkerReset] = {}
    if mode is ResetMode.STOCK:
        return {name: WorkerReset("stock") for p in pools
                for name in [*(w.name for w in p.workers), *(p.left_out if left_out else [])]}

    checks: list[tuple[str, Callable[[], str | None]]] = []
    for pool in pools:
        provider = get_provider(pool.record.cloud)
        for connection in pool.workers:
            if Capability.CLEAN_RESET not in provider.capabilities:
                checks.append((connection.name, _refusal(
                    f"{pool.record.cloud} workers cannot restore a snapshot")))
                continue
            resolve = _resolver(provider, pool.record)
            plans[connection.name] = WorkerReset(
                "clean", resolve, may_fall_back=mode is ResetMode.CLEAN_OR_STOCK)
            checks.append((connection.name, _checker(resolve, connection,
                                                     plans[connection.name])))
        for name in pool.left_out if left_out else []:  # asked nothing: they do not answer
            if Capability.CLEAN_RESET in provider.capabilities:
                plans[name] = WorkerReset("clean", _resolver(provider, pool.record),
                                          may_fall_back=mode is ResetMode.CLEAN_OR_STOCK)
            elif mode is ResetMode.CLEAN:
                checks.append((name, _refusal(
                    f"{pool.record.cloud} workers cannot restore a snapshot")))
            else:
                plans[name] = WorkerReset("stock", fallback_reason=(
                    f"{pool.record.cloud} workers cannot restore a snapshot"))
    with ThreadPoolExecutor(max_workers=min(16, max(1, len(checks)))) as executor:
        reasons = dict(zip([n for n, _ in checks], executor.map(lambda c: c[1](), checks),
                           strict=True))
    for name, reason in reasons.items():
        if reason is None:
            continue
        if mode is ResetMode.CLEAN:
            raise InvalidRunInputError(
                f"--reset clean: worker {name} cannot restore a clean snapshot ({reason}); "
                "use --reset clean-or-stock to fall back to WAA's stock reset, or --reset stock"
            )
        plans[name] = WorkerReset("stock", fallback_reason=reason)
        # said once per worker, when the run starts (the record and metadata.json keep it)
        log.warning("worker %s cannot restore a clean snapshot (%s); resetting it the stock "
                    "way", name, reason)
    return plans


def _refusal(reason: str) -> Callable[[], str | None]:
    return lambda: reason


def _resolver(provider: Provider, record: PoolRecord) -> Callable[[WorkerConnection],
                                                                   SnapshotControl]:
    """The snapshot control of a connection of ``record`` (named ``<pool>/<worker>`` or not)."""
    from evals.run.pools import split
    from oa_vm import SnapshotError

    def resolve(connection: WorkerConnection) -> SnapshotControl:
        bare = split(connection.name)[1]
        worker = next((w for w in record.workers if w.name == bare), None)
        if worker is None:
            raise SnapshotError(f"{connection.name} is not in the pool's record",
                                unsupported=True)
        return provider.snapshot_control(record, worker, connection)

    return resolve


def _checker(
    resolve: Callable[[WorkerConnection], SnapshotControl], connection: WorkerConnection,
    plan: WorkerReset,
) -> Callable[[], str | None]:
    """Asks the worker's host whether it can restore: None, or why not (a cloud worker's QEMU
    command line and CPU flags are kept on ``plan`` for the run's metadata)."""
    from oa_vm import SnapshotError

    def check() -> str | None:
        try:
            plan.qemu = resolve(connection).check().qemu
        except SnapshotError as exc:
            return str(exc)
        return None

    return check


def describe_plan(plans: Mapping[str, WorkerReset]) -> dict[str, Any]:
    """The run's reset plan for ``metadata.json``: ``{"clean": [...], "stock": [...], ...}``,
    with each cloud worker's QEMU command line and ``-cpu`` value under ``qemu``."""
    return {
        "clean": sorted(n for n, p in plans.items() if p.kind == "clean"),
        "stock": sorted(n for n, p in plans.items() if p.kind == "stock"),
        "fallbacks": {n: p.fallback_reason for n, p in sorted(plans.items())
                      if p.fallback_reason},
        "qemu": {n: {"cpu": p.qemu.get("cpu"), "cmdline": p.qemu.get("cmdline")}
                 for n, p in sorted(plans.items()) if p.qemu},
    }


def reset_summary(records: Iterable[TaskExecution]) -> Resets:
    """The run's resets for ``summary.json``: counts, durations, and whether the fingerprints
    agree (every clean reset showed its worker's one snapshot token, with the marker gone).

    ``fingerprints_agree`` is None when no task had a clean reset.
    """
    import statistics

    kinds: dict[str, list[float]] = {}
    counts: dict[str, int] = {}
    bad: list[str] = []
    tokens: dict[str, set[str]] = {}
    unrecorded = 0
    for record in records:
        kind = record.reset
        if not isinstance(kind, str):
            unrecorded += 1
            continue
        seconds = record.reset_s
        kinds.setdefault(kind, [])
        counts[kind] = counts.get(kind, 0) + 1
        if isinstance(seconds, int | float):
            kinds[kind].append(float(seconds))
        fingerprint = record.fingerprint
        if kind != ResetMode.CLEAN or record.error_type is not None and not fingerprint:
            continue
        if not fingerprint_ok(fingerprint):
            bad.append(record.task_id)
        token = (fingerprint or {}).get("expected")
        if isinstance(token, str):
            tokens.setdefault(str(record.worker), set()).add(token)
    split_workers = sorted(w for w, t in tokens.items() if len(t) > 1)
    checked = len(kinds.get(ResetMode.CLEAN, []))  # clean resets that finished
    agree = None if not checked and not bad else not bad and not split_workers
    warning = None
    if agree is False:
        parts = []
        if bad:
            parts.append(f"{len(bad)} clean reset(s) did not show the clean machine "
                         f"({', '.join(sorted(bad)[:5])}{', ...' if len(bad) > 5 else ''})")
        if split_workers:
            parts.append(f"worker(s) {', '.join(split_workers)} restored different snapshots")
        warning = "fingerprints disagree: " + "; ".join(parts)
    return {
        "counts": dict(sorted(counts.items())),
        "unrecorded": unrecorded,
        "seconds": {
            k: {"median": round(statistics.median(v), 3), "max": round(max(v), 3)}
            for k, v in sorted(kinds.items()) if v
        },
        "fingerprints_checked": checked,
        "fingerprints_bad": sorted(bad),
        "fingerprints_agree": agree,
        "warning": warning,
    }


def reset_lines(summary: Summary) -> list[str]:
    """The summary's reset lines (empty for a run recorded before resets were)."""
    resets = summary.get("resets")
    if not resets or not resets["counts"]:
        return []
    parts = []
    for kind, n in resets["counts"].items():
        timing = resets["seconds"].get(kind)
        extra = f" (median {timing['median']:.2f} s, max {timing['max']:.2f} s)" if timing else ""
        parts.append(f"{kind} {n}{extra}")
    lines = ["", "Resets: " + ", ".join(parts)]
    if resets["warning"]:
        lines.append(f"WARNING: {resets['warning']}")
    elif resets["fingerprints_agree"]:
        lines.append(f"Fingerprints: all {resets.get('fingerprints_checked', 0)} clean resets "
                     "showed their worker's snapshot, with the after-snapshot marker gone")
    return lines
