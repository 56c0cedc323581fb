"""The ``local`` provider: simulated WAA workers as detached processes on this machine.

Each worker is ``python -m infra.local`` bound to 127.0.0.1 on ports it picks itself; it reports
them in a ready file once its servers listen, which avoids the race of choosing free ports here
and binding them there. Its URLs carry the pool's secret as their first path segment (see
:mod:`oa_vm.clouds.local.fleet` and ``docs/local-worker.md``): a request without it is
refused, so another user of this machine cannot drive or write into a worker. Processes start
in their own session so a Ctrl-C in the terminal that created the pool does not take the pool
down with it.

The provider only ever signals processes it started: a PID is trusted only if the process still
has the creation time recorded at start and its command line names this worker's folder (PIDs are
reused by the OS).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from oa_vm.clouds.base import (
    Capability,
    CleanupReport,
    FleetOps,
    Plan,
    PlannedResource,
    PoolSpec,
    Progress,
)
from oa_vm.clouds.egress import describe as describe_egress
from oa_vm.clouds.local.faults import validate_faults
from oa_vm.clouds.local.fleet import (
    LOCAL_EGRESS,
    LocalFleetOps,
    create_grouped,
    entry_urls,
    launch_unit,
    new_record,
    secret_file,
    simulated_host,
    ssh_endpoint,
    worker_name,
)
from oa_vm.clouds.local.memory import memory_problem
from oa_vm.errors import InvalidInputError, ProvisioningError
from oa_vm.kit import safe_fs
from oa_vm.kit.process_start import started_as_recorded
from oa_vm.kit.redact import redact_worker_secrets
from oa_vm.model import state
from oa_vm.model.state import PoolRecord, PoolState, SshEndpoint, WorkerRecord, WorkerState

if TYPE_CHECKING:
    from oa_vm.model.snapshots import SnapshotControl
    from oa_vm.reach.connect import WorkerConnection
    from waa_client.ssh import WorkerTunnel

READY_TIMEOUT_S = 20.0
STOP_GRACE_S = 5.0
PROBE_TIMEOUT_S = 5.0
"""How long a worker's two servers are waited for to answer one ``/probe`` each, as at a run's
start (``evals.run.pools.PROBE_TIMEOUT_S``): a worker that does not answer by then cannot take
a task."""
SILENT = "does not answer"
"""The phase of a worker whose process is there but does not answer (:meth:`LocalProvider.
refresh`)."""


class LocalProvider:
    """Simulated workers on loopback; see the module docstring."""

    name = "local"
    capabilities = frozenset({
        Capability.PAUSE, Capability.RESUME, Capability.REPAIR,
        Capability.DRAIN,  # through each worker's host-status file (oa_vm.reach.drain)
        Capability.CLEAN_RESET,  # infra.local.snapshot: the simulated desktop saved after start
    })

    def __init__(self) -> None:
        self._answered: set[tuple[str, int | None]] = set()
        """Workers (name, pid) this provider found answering: not asked again by it."""

    def fleet_ops(self) -> FleetOps:
        """Pause, resume and repair of the pool's processes
        (:class:`~oa_vm.clouds.local.fleet.LocalFleetOps`)."""
        return LocalFleetOps(self)

    def snapshot_control(
        self, record: PoolRecord, worker: WorkerRecord, connection: WorkerConnection
    ) -> SnapshotControl:
        """The simulated worker's snapshot endpoints, on its scoring server."""
        from oa_vm.model.snapshots import HttpSnapshotControl

        scoring = connection.scoring
        return HttpSnapshotControl(connection.scoring_url, connect_timeout=scoring.connect_timeout,
                                   read_timeout=scoring.read_timeout)
    poll_interval_s = 0.2

    def check_available(self) -> None:
        """Always available: it needs nothing but this Python."""

    def preflight(self, spec: PoolSpec) -> None:
        """Refuse a pool this machine's memory cannot hold, before anything is shown or started
        (:mod:`oa_vm.clouds.local.memory`). Not at :func:`oa_vm.api.build_spec`: a spec also
        names a pool that runs already (a resumed sweep's), whose workers hold their memory.

        Raises:
            InvalidInputError: the workers need more memory than is available.
        """
        problem = memory_problem(spec.workers, spec.per_process)
        if problem:
            raise InvalidInputError(problem)

    def plan(self, spec: PoolSpec) -> Plan:
        """N worker processes on 127.0.0.1; free unless a pretend price was given. A plan of
        workers this machine cannot hold is refused (:meth:`preflight`): it is a plan for this
        machine.

        Raises:
            InvalidInputError: the workers need more memory than is available.
        """
        self.preflight(spec)
        resources = [
            PlannedResource(
                type="local:process",
                name=worker_name(i),
                inputs={
                    "command": "python -m infra.local",
                    "host": "127.0.0.1",
                    "faults": dict(spec.faults),
                    "reached_via": "ssh" if spec.ssh_via else "loopback",
                },
            )
            for i in range(spec.workers)
        ]
        per_hour = spec.price_per_hour * spec.workers if spec.price_per_hour else 0.0
        notes = ["simulated workers: nothing is created outside this machine",
                 describe_egress(spec.egress or LOCAL_EGRESS, spec.egress_allowlist)]
        if spec.price_per_hour:
            notes.append(f"pretend price ${spec.price_per_hour:g}/h per worker (for cost tests)")
        return Plan("local", None, None, spec.workers, per_hour, resources, notes)

    # -- create ----------------------------------------------------------------------------

    def create(self, spec: PoolSpec, progress: Progress) -> PoolRecord:
        """Start the worker processes and wait (briefly) for each to report its ports."""
        validate_faults(spec.faults)
        if spec.per_process > 1:
            return create_grouped(self, spec, spec.per_process, progress)
        pool_dir = state.pool_dir(spec.name)
        record = new_record(spec)
        ssh = ssh_endpoint(spec.ssh_via)
        try:
            self._spawn_all(spec, record, pool_dir, ssh, progress)
        except BaseException:
            # Ctrl-C, a closed pipe, any failure: stop what was started before passing it on.
            self.stop_all(record)
            if record.workers:
                state.save(record)
            raise
        record.state = PoolState.PROVISIONING
        return record

    def _spawn_all(
        self,
        spec: PoolSpec,
        record: PoolRecord,
        pool_dir: Path,
        ssh: SshEndpoint | None,
        progress: Progress,
    ) -> None:
        for i in range(spec.workers):
            name = worker_name(i)
            workdir = state.workers_dir(spec.name) / name
            log_path = pool_dir / "logs" / f"{name}.log"
            safe_fs.ensure_dir(workdir, root=pool_dir)
            safe_fs.ensure_dir(log_path.parent, root=pool_dir)
            worker = WorkerRecord(
                name=name, workdir=str(workdir), log_path=str(log_path), ssh=ssh,
                host=name,  # its simulated host: its own process (simulated_host)
            )
            try:
                # Recorded as it starts (launch_unit): a command stopped or killed from here
                # on leaves a record that names the process, so 'pool-cleanup' stops it.
                self._launch(worker, record, spec.faults, spec.tasks_dir, secret_file(spec.name))
            except OSError as exc:  # create stops what was started
                raise ProvisioningError(f"could not start {name}: {exc}") from exc
            progress(f"started {name} (pid {worker.pid})")
        self._await_ports(record, progress)

    def _launch(
        self, worker: WorkerRecord, record: PoolRecord, faults: dict[str, str],
        tasks_dir: str | None, secret: Path,
    ) -> None:
        launch_unit([worker], faults, tasks_dir, secret, record=record, save=True)

    def _await_ports(self, record: PoolRecord, progress: Progress) -> None:
        from waa_client.poll import poll_until

        pending = list(record.workers)

        def all_listening() -> bool:
            for worker in list(pending):
                if _read_ready(worker):
                    # The URLs are capabilities: 'pool-status --json' gives them whole.
                    progress(redact_worker_secrets(f"{worker.name} listening: WAA "
                                                   f"{worker.waa_url}, scoring "
                                                   f"{worker.scoring_url}"))
                    pending.remove(worker)
                elif not self.is_ours(worker):  # create stops the others
                    raise ProvisioningError(
                        f"{worker.name} exited during start-up: {_log_tail(worker)} "
                        f"(log: {worker.log_path})"
                    )
            return not pending

        # Workers still pending are reported by pool-wait, which keeps following them.
        poll_until(all_listening, timeout_s=READY_TIMEOUT_S, interval_s=0.05)

    # -- observe ---------------------------------------------------------------------------

    def refresh(self, record: PoolRecord, *, network: bool = True) -> PoolRecord:
        """Read the workers again: a worker whose process is gone (or is no longer ours) is
        ``LOST``; with ``network``, each live worker is asked too (:func:`_ask`), and what it
        answers is recorded:

        - both its servers answer: ``READY`` (a worker never waited for is ready once it
          answers; one reached over SSH is left to :meth:`worker_phase`, which checks its path);
        - a ready worker whose process is there but does not answer (frozen, hung) is ``LOST``,
          as a cloud marks a worker its host no longer reports: ``pool-repair`` replaces it,
          ``pool-wait`` stops at it, a run leaves it out;
        - a worker not ready yet that does not answer, or answers an error, keeps waiting, the
          step and the reason in its phase and detail, as a booting cloud worker.

        Paused, stopped, lost and draining workers are not asked (a draining worker's notice is
        final), nor, by one provider (one command, one ``pool-wait``), a worker it found
        answering already: a wait asks each worker until it answers, as it always did, and a
        worker's fault knobs count its requests. Without ``network`` nothing but this machine's
        processes is read, so a plain ``pool-status`` stays fast.
        """
        for worker in record.workers:
            if worker.host in (None, "127.0.0.1"):  # recorded before simulated hosts
                worker.host = simulated_host(worker)
            if worker.state in (WorkerState.STOPPED, WorkerState.LOST, WorkerState.PAUSED):
                continue
            if (gone := _not_ours(worker)) is not None:
                worker.state = WorkerState.LOST
                worker.phase = gone
                worker.detail = _log_tail(worker)
            elif worker.waa_url is None:
                _read_ready(worker)
        if network:
            asked = [w for w in record.workers if w.waa_url and w.scoring_url and (
                w.state == WorkerState.READY
                or (w.state == WorkerState.BOOTING and w.ssh is None))
                and (w.name, w.pid) not in self._answered]
            for worker, (step, error) in zip(asked, _ask(asked), strict=True):
                _record_answer(worker, step, error)
                if worker.state == WorkerState.READY:
                    self._answered.add((worker.name, worker.pid))
        if record.state != state.PoolState.DELETING:  # a removal stopped half-way stays one
            record.state = state.derive_pool_state(record.workers)
        return record

    def worker_phase(self, record: PoolRecord, index: int) -> tuple[str, bool]:
        """process up, listening, WAA /probe, scoring /probe (through SSH if so registered).

        A worker reached directly was asked by the refresh that begins each pass of
        :func:`oa_vm.api.wait_pool`: its phase is what it answered then (asked again, a
        worker that does not answer would cost each pass :data:`PROBE_TIMEOUT_S` more).
        """
        worker = record.workers[index]
        if (gone := _not_ours(worker)) is not None:
            worker.state = WorkerState.LOST
            return gone, False
        if worker.waa_url is None and not _read_ready(worker):
            return "process started", False
        if worker.ssh is None:
            return worker.phase or "listening", worker.state == WorkerState.READY
        from waa_client.errors import WaaError

        try:
            tunnel = _open_tunnel(record, worker)
        except WaaError as exc:
            worker.detail = str(exc)
            return "ssh tunnel", False
        try:
            step, error = _ask_one(tunnel.local_waa_url, tunnel.local_scoring_url)
        finally:
            tunnel.stop()
        if error is not None:
            worker.detail = str(error)
            return step, False
        worker.detail = None
        worker.state = WorkerState.READY
        return "ready", True

    # -- destroy ---------------------------------------------------------------------------

    def destroy(self, record: PoolRecord, progress: Progress) -> CleanupReport:
        """Stop our processes (never anyone else's) and remove the pool's folder."""
        report = CleanupReport()
        for line in self.stop_all(record):
            report.removed.append(line)
            progress(line)
        pool_dir = state.pool_dir(record.name)
        for line in _stop_strays(pool_dir):
            report.removed.append(line)
            progress(line)
        for sub in (state.WORKERS_DIR, "logs"):
            target = pool_dir / sub
            if target.exists():
                shutil.rmtree(target, ignore_errors=True)
                report.removed.append(f"removed {target}")
                progress(f"removed {target}")
        return report

    def stop_all(self, record: PoolRecord) -> list[str]:
        ours: dict[str, psutil.Process] = {}
        lines = {}
        for worker in record.workers:
            if worker.pid is None:
                continue
            try:
                if self.is_ours(worker):
                    ours[worker.name] = psutil.Process(worker.pid)
            except psutil.NoSuchProcess:
                pass
            if worker.name not in ours:
                lines[worker.name] = f"{worker.name}: process {worker.pid} already gone"
            worker.state = WorkerState.STOPPED
        # every worker is signalled before any is waited for: they stop side by side
        killed = _end_all(list(ours.values()))
        for name, proc in ours.items():
            lines[name] = (f"{name}: killed process {proc.pid} (did not stop on SIGTERM)"
                           if proc.pid in killed else f"{name}: stopped process {proc.pid}")
            _reap(proc.pid)
        return [lines[w.name] for w in record.workers if w.name in lines]

    def stop_worker(self, worker: WorkerRecord) -> str:
        assert worker.pid is not None
        try:
            if not _end(psutil.Process(worker.pid)):
                return f"{worker.name}: killed process {worker.pid} (did not stop on SIGTERM)"
        except psutil.NoSuchProcess:
            return f"{worker.name}: process {worker.pid} already gone"
        _reap(worker.pid)
        return f"{worker.name}: stopped process {worker.pid}"

    @staticmethod
    def is_ours(worker: WorkerRecord) -> bool:
        """True if ``worker.pid`` is still the process this provider started for ``worker``.

        PID plus the start time recorded at launch identifies the process; the command line is
        checked as well when the kernel shows one (it is briefly empty right after exec).
        """
        return _not_ours(worker) is None


def _not_ours(worker: WorkerRecord) -> str | None:
    """Why ``worker.pid`` is not the process started for ``worker`` (the lost worker's phase,
    so that a loss says which of these it was), or None when it is."""
    if worker.pid is None:
        return "no process recorded"
    _reap(worker.pid)
    try:
        proc = psutil.Process(worker.pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return "process gone (exited)"
        if not started_as_recorded(worker.pid, worker.pid_start_mark, worker.pid_create_time,
                                   proc.create_time):
            return "process gone (its PID runs another process now)"
        cmdline = proc.cmdline()
    except psutil.NoSuchProcess:
        return "process gone"
    except psutil.Error as exc:
        return f"process not readable ({type(exc).__name__})"
    if not cmdline:
        known = worker.pid_create_time is not None or worker.pid_start_mark is not None
        return None if known else "process not identified"
    if "infra.local" in cmdline and (worker.workdir or "") in cmdline:
        return None
    return "process gone (its PID runs another command now)"


def _stop_strays(pool_dir: Path) -> list[str]:
    """Stop worker processes of this pool that its record does not name (a command killed
    between spawning a worker and recording it): any ``infra.local`` process of ours whose
    ``--root`` lies in the pool's folder."""
    prefix = str(pool_dir.resolve()) + os.sep
    lines = []
    for proc in psutil.process_iter(["pid", "cmdline", "uids"]):
        try:
            cmdline = proc.info.get("cmdline") or []
            uids = proc.info.get("uids")
            if uids is not None and uids.real != os.getuid():
                continue
            if "infra.local" not in cmdline or "--root" not in cmdline:
                continue
            root = cmdline[cmdline.index("--root") + 1]
            if not (str(Path(root).resolve()) + os.sep).startswith(prefix):
                continue
            if proc.status() == psutil.STATUS_ZOMBIE:
                _reap(proc.pid)
                continue
            _end(proc)
        except (psutil.Error, IndexError, OSError):
            continue
        _reap(proc.pid)
        lines.append(f"stopped stray worker process {proc.pid} of {pool_dir.name}")
    return lines


def _end(proc: psutil.Process) -> bool:
    """SIGTERM, then SIGKILL after :data:`STOP_GRACE_S`; True if SIGTERM was enough.

    Raises:
        psutil.NoSuchProcess: the process was already gone.
    """
    proc.send_signal(signal.SIGCONT)  # raises NoSuchProcess for a process already gone
    return not _end_all([proc])


def _end_all(procs: list[psutil.Process]) -> set[int]:
    """SIGTERM every process, then SIGKILL those still there after :data:`STOP_GRACE_S`;
    returns the pids that needed SIGKILL.

    A process that exited counts as gone once it is a zombie: a worker another command started
    is not our child, and its parent (often PID 1) reaps it when it gets to it (seen taking
    seconds), while ``psutil.Process.wait`` waited for the reaping.
    """
    from waa_client.poll import poll_until

    def signal_all(sig: int) -> None:
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                proc.send_signal(signal.SIGCONT)  # a stopped process cannot act on SIGTERM
                proc.send_signal(sig)

    def left() -> list[psutil.Process]:
        return [proc for proc in procs if not _exited(proc)]

    signal_all(signal.SIGTERM)
    if poll_until(lambda: not left(), timeout_s=STOP_GRACE_S, interval_s=0.02):
        return set()
    stubborn = left()
    procs = stubborn
    signal_all(signal.SIGKILL)
    poll_until(lambda: not left(), timeout_s=STOP_GRACE_S, interval_s=0.02)
    return {proc.pid for proc in stubborn}


def _exited(proc: psutil.Process) -> bool:
    """True once ``proc`` is gone or a zombie waiting to be reaped."""
    try:
        # is_running is False for a pid the system gave to another process since
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def _reap(pid: int) -> None:
    """Collect our own exited child so it does not linger as a zombie in long-lived callers."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _read_ready(worker: WorkerRecord) -> bool:
    """Fill the worker's URLs from its ready file; False while the file is not there yet."""
    if worker.workdir is None:
        return False
    try:
        data = json.loads((Path(worker.workdir) / "ready.json").read_text(encoding="utf-8"))
        # a process serving several workers lists them all; provider_id names this one's slot
        entry = next((e for e in data["workers"] if e.get("name") == worker.provider_id),
                     data["workers"][0])
        waa_port, scoring_port = int(entry["waa_port"]), int(entry["scoring_port"])
        urls = entry_urls(entry)
    except (FileNotFoundError, json.JSONDecodeError, KeyError, IndexError, TypeError, ValueError):
        return False
    worker.waa_url, worker.scoring_url = urls
    worker.remote_waa_port = waa_port
    worker.remote_scoring_port = scoring_port
    if worker.state == WorkerState.STARTING:
        worker.state = WorkerState.BOOTING
        worker.phase = "listening"
    return True


def _ask_one(waa_url: str, scoring_url: str) -> tuple[str, Exception | None]:
    """One ``/probe`` of the worker's WAA server, then (once it answered) one of its scoring
    server, each waited for :data:`PROBE_TIMEOUT_S` at most: ``("ready", None)``, or the step
    that failed (``"waa probe"``, ``"scoring probe"``) and its error (a ``waa_client`` error).
    One try each, one after the other, as ``pool-wait`` always asked: a worker's fault knobs
    count its requests (``docs/local-worker.md``)."""
    import time

    from waa_client import ScoringClient, WaaClient
    from waa_client.errors import WaaError

    step = "waa probe"
    try:
        for kind, url in ((WaaClient, waa_url), (ScoringClient, scoring_url)):
            with kind(url, retries=0, connect_timeout=PROBE_TIMEOUT_S,
                      read_timeout=PROBE_TIMEOUT_S) as client:
                client.probe(deadline=time.monotonic() + PROBE_TIMEOUT_S)
            step = "scoring probe"
    except WaaError as exc:
        return step, exc
    return "ready", None


def _ask(workers: list[WorkerRecord]) -> list[tuple[str, Exception | None]]:
    """:func:`_ask_one` for each worker at its recorded URLs, the workers all at once."""
    from concurrent.futures import ThreadPoolExecutor

    if not workers:
        return []
    # threads, not one per worker: a pool of hundreds asks 64 at a time (as a run's start does)
    with ThreadPoolExecutor(max_workers=min(64, len(workers))) as executor:
        return list(executor.map(lambda w: _ask_one(w.waa_url or "", w.scoring_url or ""),
                                 workers))


def _record_answer(worker: WorkerRecord, step: str, error: Exception | None) -> None:
    """What :meth:`LocalProvider.refresh` records of a worker's answer (see there)."""
    from waa_client.errors import WorkerTimeoutError, WorkerUnreachableError

    if error is None:
        worker.state, worker.phase, worker.detail = WorkerState.READY, "ready", None
        return
    server = "WAA server" if step == "waa probe" else "scoring server"
    if not isinstance(error, WorkerUnreachableError):  # it answers, with an error
        worker.phase, worker.detail = step, str(error)
        return
    silent = (f"its {server} does not answer within {PROBE_TIMEOUT_S:g}s"
              if isinstance(error, WorkerTimeoutError) else
              f"its {server} cannot be reached ({error})")
    if worker.state == WorkerState.READY:
        worker.state, worker.phase = WorkerState.LOST, SILENT
        worker.detail = f"its process (pid {worker.pid}) runs but {silent} (frozen or hung?)"
    else:
        worker.phase, worker.detail = step, silent


def _log_tail(worker: WorkerRecord) -> str:
    """The last non-empty line of the worker's log, for error messages."""
    if not worker.log_path:
        return "no log"
    try:
        lines = Path(worker.log_path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "no log"
    tail = [line for line in lines if line.strip()]
    return tail[-1].strip() if tail else "log is empty"




def _open_tunnel(record: PoolRecord, worker: WorkerRecord) -> WorkerTunnel:
    """A one-off tunnel for a readiness probe of a worker reached over SSH."""
    from oa_vm.reach.connect import tunnel_for

    tunnel = tunnel_for(record, worker)
    tunnel.start()
    return tunnel
