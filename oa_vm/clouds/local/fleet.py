"""Fleet operations of the ``local`` provider: several workers per process, pause, resume, repair.

A local pool's unit of work is a process (``python -m infra.local``). By default each worker has
its own; with ``per_process`` > 1 a process serves several workers (``infra.local --count``), so a
pool of hundreds of workers costs tens of interpreters. Workers of one process share its PID and
its ``--root`` folder (their ``workdir``, which is how :meth:`LocalProcesses.is_ours` recognises
the process); each one's slot in the process is named by ``provider_id`` (the name
``infra.local`` gives it, e.g. ``group-2-7``), which picks its entry in the ready file.

Pausing stops a pool's processes and marks its workers ``paused``; their folders (the simulated
desktops, ``drive_c``) stay, so resuming starts the same processes again on the same folders.
Repairing restarts the processes whose workers were lost (killed, crashed), under the same names.
Processes are only ever signalled after :meth:`LocalProcesses.is_ours` said they are ours.

Every process of a pool gets the pool's secret (made once, kept 0600 in the pool's folder as
:data:`SECRET_FILE`) through ``--secret-file``, never on its command line; each worker's URLs in
the record (read from its process's ready file) carry it as their first path segment.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import psutil

from oa_vm.clouds.base import PoolSpec, Progress
from oa_vm.errors import InvalidInputError, ProvisioningError
from oa_vm.kit import safe_fs
from oa_vm.kit.process_start import start_mark
from oa_vm.model import state
from oa_vm.model.state import PoolRecord, PoolState, SshEndpoint, WorkerRecord, WorkerState

LOCAL_EGRESS = "none"
"""The simulated guest has no internet: its setup steps ship their files (docs/security.md)."""
GROUP_READY_TIMEOUT_S = 120.0  # a process of many workers on a busy machine starts slowly
SECRET_FILE = "worker-secret"



class LocalProcesses(Protocol):
    """What this module needs of the local provider (:class:`oa_vm.clouds.local.provider.
    LocalProvider`): a protocol, so the provider's module imports this one and not the reverse.
    """

    def is_ours(self, worker: WorkerRecord) -> bool:
        """The worker's PID runs the process recorded for it."""
        ...

    def stop_worker(self, worker: WorkerRecord) -> str:
        """Stop one worker's process; a line saying what was done."""
        ...

    def stop_all(self, record: PoolRecord) -> list[str]:
        """Stop every process of the pool that is ours; what was done."""
        ...

    def refresh(self, record: PoolRecord) -> PoolRecord:
        """The record with the processes' states read again."""
        ...


def worker_name(index: int) -> str:
    """Stable worker names within a pool."""
    return f"worker-{index}"


def ssh_endpoint(ssh_via: dict[str, object] | None) -> SshEndpoint | None:
    """The SSH endpoint of ``--ssh-via`` (None without one).

    Raises:
        InvalidInputError: a part is missing or not a number.
    """
    if not ssh_via:
        return None
    try:
        return SshEndpoint(
            host=str(ssh_via["host"]), port=int(str(ssh_via["port"])),
            user=str(ssh_via["user"]), key_path=str(ssh_via["key_path"]),
        )
    except (KeyError, ValueError) as exc:
        raise InvalidInputError(
            f"--ssh-via needs host, port, user and key ({exc}); e.g. "
            "--ssh-via user@127.0.0.1:2222 --ssh-key ~/.ssh/id_ed25519"
        ) from exc


def secret_file(pool: str) -> Path:
    """The pool's secret file, made (0600, never through a symlink) when it does not exist yet.

    The secret has the form ``cap-<40 hex digits>`` (160 random bits), which
    :func:`oa_vm.kit.redact.redact_worker_secrets` recognises; the worker process checks the file
    itself (its mode, its content) and refuses to start on a bad one, saying why in its log.
    """
    path = state.pool_dir(pool) / SECRET_FILE
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    safe_fs.create_once(path, f"cap-{secrets.token_hex(20)}\n".encode("ascii"))
    return path


def entry_urls(entry: dict[str, object]) -> tuple[str, str]:
    """A worker's ``(waa_url, scoring_url)`` from its ready-file entry.

    The URLs there carry the secret; a process of an older version lists only ports (and
    wants no secret).
    """
    host = str(entry.get("host", "127.0.0.1"))
    waa = entry.get("waa_url") or f"http://{host}:{int(str(entry['waa_port']))}"
    scoring = entry.get("scoring_url") or f"http://{host}:{int(str(entry['scoring_port']))}"
    return str(waa), str(scoring)


def simulated_host(worker: WorkerRecord) -> str:
    """The simulated host a local worker runs on: its process (``workers/<name>``'s folder
    name: ``worker-3`` alone, ``group-1`` with several workers per process), whose end ends
    every worker it serves, as a machine's end ends every worker on it."""
    return Path(worker.workdir).name if worker.workdir else worker.name


def group_name(index: int) -> str:
    """The ``--name`` of the ``index``-th process of a pool with several workers per process."""
    return f"group-{index}"


def units(record: PoolRecord) -> list[list[WorkerRecord]]:
    """The pool's workers grouped by the process that serves them (same ``workdir``)."""
    grouped: dict[str, list[WorkerRecord]] = {}
    for worker in record.workers:
        grouped.setdefault(worker.workdir or worker.name, []).append(worker)
    return list(grouped.values())


def _unit_args(
    workers: list[WorkerRecord], faults: dict[str, str], tasks_dir: str | None, secret: Path
) -> list[str]:
    first = workers[0]
    assert first.workdir is not None
    ready = Path(first.workdir) / "ready.json"
    if len(workers) == 1 and first.provider_id is None:
        name = first.name
        count: list[str] = []
    else:
        name = Path(first.workdir).name
        count = ["--count", str(len(workers))]
    args = [sys.executable, "-m", "infra.local", "--name", name, "--root", first.workdir,
            "--ready-file", str(ready), "--host", "127.0.0.1", "--secret-file", str(secret),
            *count]
    for key, value in faults.items():
        args += ["--fault", f"{key}={value}"]
    if tasks_dir is not None:
        args += ["--tasks", tasks_dir]
    return args


def launch_unit(
    workers: list[WorkerRecord], faults: dict[str, str], tasks_dir: str | None, secret: Path,
    *, record: PoolRecord, save: bool = False, save_workers: bool = False,
) -> None:
    """Start the process serving ``workers`` (one process, ``--count`` of them when several),
    with the pool's ``secret`` file (:func:`secret_file`), and list them in ``record`` (added
    when missing; the record saved too with ``save``, for a create that has no other save;
    with ``save_workers``, only the workers of the stored record are replaced by ``record``'s:
    a resume or a repair, which saves the rest at its end, merging an extension made
    meanwhile (:func:`oa_vm.model.state.save_after`)).

    The one rule of every local start: Ctrl-C, SIGTERM and SIGHUP wait from the moment the
    process is started until ``record`` names it with its PID
    (:func:`oa_vm.kit.signals.signals_deferred`), so a command stopped at any moment leaves no
    process that no record names; whoever handles the stop (the create's clean-up, a fleet
    operation's save) finds it there. The ready file is removed first so a stale one is never
    read as the new process's ports.
    """
    from oa_vm.kit.signals import signals_deferred

    first = workers[0]
    assert first.workdir is not None and first.log_path is not None
    safe_fs.ensure_dir(Path(first.workdir))
    safe_fs.ensure_dir(Path(first.log_path).parent)
    with contextlib.suppress(FileNotFoundError):
        (Path(first.workdir) / "ready.json").unlink()
    log = safe_fs.open_private(Path(first.log_path))  # 0600: a log may quote requests
    with signals_deferred():
        try:
            proc = subprocess.Popen(  # fixed argv, no shell
                _unit_args(workers, faults, tasks_dir, secret), stdin=subprocess.DEVNULL,
                stdout=log, stderr=log, start_new_session=True, close_fds=True,
            )
        finally:
            os.close(log)
        created: float | None = None
        with contextlib.suppress(psutil.Error):
            created = psutil.Process(proc.pid).create_time()
        mark = start_mark(proc.pid)
        for worker in workers:
            worker.pid = proc.pid
            worker.pid_create_time = created
            worker.pid_start_mark = mark
            worker.waa_url = worker.scoring_url = None
            worker.state = WorkerState.STARTING
            worker.phase = "process started"
            worker.detail = None
            if not any(listed is worker for listed in record.workers):
                record.workers.append(worker)
        if save:
            state.save(record)
        elif save_workers:
            state.save_workers(record)


def read_unit_ready(workers: list[WorkerRecord]) -> bool:
    """Fill each worker's URLs from its process's ready file; False while it is not written."""
    first = workers[0]
    if first.workdir is None:
        return False
    try:
        data = json.loads((Path(first.workdir) / "ready.json").read_text(encoding="utf-8"))
        entries = {str(e["name"]): e for e in data["workers"]}
        listed = list(entries.values())
        found = []
        for worker in workers:
            entry = entries.get(worker.provider_id or "") if worker.provider_id else listed[0]
            if entry is None:
                return False
            ports = int(entry["waa_port"]), int(entry["scoring_port"])
            found.append((worker, ports, entry_urls(entry)))
    except (FileNotFoundError, json.JSONDecodeError, KeyError, IndexError, TypeError,
            ValueError):
        return False
    for worker, (waa_port, scoring_port), (waa_url, scoring_url) in found:
        worker.remote_waa_port, worker.remote_scoring_port = waa_port, scoring_port
        worker.waa_url, worker.scoring_url = waa_url, scoring_url
        if worker.state == WorkerState.STARTING:
            worker.state = WorkerState.BOOTING
            worker.phase = "listening"
    return True


def await_units(
    provider: LocalProcesses, pending: list[list[WorkerRecord]], progress: Progress,
    timeout_s: float = GROUP_READY_TIMEOUT_S,
) -> None:
    """Wait until every process in ``pending`` wrote its ready file.

    Raises:
        ProvisioningError: a process exited during start-up, or time ran out.
    """
    from waa_client.poll import poll_until

    left = list(pending)

    def all_listening() -> bool:
        for unit in list(left):
            if read_unit_ready(unit):
                names = unit[0].name if len(unit) == 1 else f"{unit[0].name}..{unit[-1].name}"
                progress(f"{names} listening (pid {unit[0].pid})")
                left.remove(unit)
            elif not provider.is_ours(unit[0]):
                raise ProvisioningError(
                    f"{unit[0].name} exited during start-up (log: {unit[0].log_path})"
                )
        return not left

    if not poll_until(all_listening, timeout_s=timeout_s, interval_s=0.1):
        raise ProvisioningError(
            f"{len(left)} worker process(es) not listening after {timeout_s:g} s; see "
            f"{left[0][0].log_path}"
        )


def new_record(spec: PoolSpec, **settings: Any) -> PoolRecord:
    """A local pool's record as its create begins; ``settings`` are added to the spec's."""
    return PoolRecord(
        name=spec.name, cloud="local", state=PoolState.CREATING, created_at=state.utcnow(),
        expires_at=spec.expires_at, owner=spec.owner, price_per_hour=spec.price_per_hour,
        settings={"workers": spec.workers, "faults": dict(spec.faults), "ssh_via": spec.ssh_via,
                  "tasks_dir": spec.tasks_dir, **settings, "egress": spec.egress or LOCAL_EGRESS,
                  "egress_allowlist": spec.egress_allowlist},
    )


def create_grouped(
    provider: LocalProcesses, spec: PoolSpec, per_process: int, progress: Progress
) -> PoolRecord:
    """Create a local pool with ``per_process`` workers in each process (``infra.local --count``).

    Workers keep the usual names (``worker-0``...); process ``g`` serves workers
    ``g * per_process`` onwards in folders under ``workers/group-g``.
    """

    pool_dir = state.pool_dir(spec.name)
    record = new_record(spec, per_process=per_process)
    ssh = ssh_endpoint(spec.ssh_via)
    pending: list[list[WorkerRecord]] = []
    try:
        for group in range((spec.workers + per_process - 1) // per_process):
            gname = group_name(group)
            workdir = state.workers_dir(spec.name) / gname
            log_path = pool_dir / "logs" / f"{gname}.log"
            first = group * per_process
            members = [
                WorkerRecord(
                    name=worker_name(first + slot), workdir=str(workdir), log_path=str(log_path),
                    host=gname, ssh=ssh, provider_id=f"{gname}-{slot}",
                )
                for slot in range(min(per_process, spec.workers - first))
            ]
            launch_unit(members, spec.faults, spec.tasks_dir, secret_file(spec.name),
                        record=record, save=True)
            pending.append(members)
            progress(f"started {gname}: {members[0].name}..{members[-1].name} (pid "
                     f"{members[0].pid})")
        await_units(provider, pending, progress)
    except OSError as exc:
        provider.stop_all(record)
        raise ProvisioningError(f"could not start the worker processes: {exc}") from exc
    except BaseException:
        # Ctrl-C, a closed pipe, any failure: stop what was started before passing it on, and
        # save the record that says so, as a pool of one worker per process does
        provider.stop_all(record)
        if record.workers:
            state.save(record)
        raise
    record.state = PoolState.PROVISIONING
    return record


# -- pause, resume, repair ---------------------------------------------------------------------


def _stop_unit(provider: LocalProcesses, unit: list[WorkerRecord]) -> str:
    first = unit[0]
    if first.pid is None or not provider.is_ours(first):
        return f"{first.name}: no process to stop"
    return provider.stop_worker(first)


def pause(provider: LocalProcesses, record: PoolRecord, progress: Progress) -> PoolRecord:
    """Stop every process of the pool; workers become ``paused``, their folders stay."""
    for unit in units(record):
        progress(_stop_unit(provider, unit))
        for worker in unit:
            worker.state = WorkerState.PAUSED
            worker.phase = "paused"
            worker.pid = None
            worker.pid_create_time = None
            worker.pid_start_mark = None
            worker.waa_url = worker.scoring_url = None  # the ports close with the process
    record.state = state.derive_pool_state(record.workers)
    return record


def _clear_drain_notices(unit: list[WorkerRecord]) -> None:
    """A replacement starts without its predecessor's drain notice (:mod:`oa_vm.reach.drain`)."""
    from oa_vm.reach.drain import local_status_path

    for worker in unit:
        path = local_status_path(worker)
        if path is not None:
            path.unlink(missing_ok=True)


def _restart(
    provider: LocalProcesses, record: PoolRecord, wanted: Callable[[list[WorkerRecord]], bool],
    progress: Progress, verb: str,
) -> list[str]:
    faults = dict(record.settings.get("faults") or {})
    tasks_dir = record.settings.get("tasks_dir")
    started: list[list[WorkerRecord]] = []
    for unit in units(record):
        if not wanted(unit):
            continue
        _stop_unit(provider, unit)  # a process half alive (some slots lost) is replaced whole
        if verb == "replaced":
            _clear_drain_notices(unit)
        # saved as soon as it names the process: a resume or repair stopped (Ctrl-C, SIGTERM,
        # SIGHUP) right after the start left a process no record named, and each retry another
        launch_unit(unit, faults, tasks_dir, secret_file(record.name), record=record,
                    save_workers=True)
        started.append(unit)
        progress(f"{verb} {unit[0].name}" + (f"..{unit[-1].name}" if len(unit) > 1 else "")
                 + f" (pid {unit[0].pid})")
    await_units(provider, started, progress)
    record.state = state.derive_pool_state(record.workers)
    return [w.name for unit in started for w in unit]


def resume(provider: LocalProcesses, record: PoolRecord, progress: Progress) -> list[str]:
    """Start every paused process again on its folders; returns the workers started."""
    return _restart(
        provider, record, lambda unit: any(w.state == WorkerState.PAUSED for w in unit),
        progress, "resumed",
    )


def _read_notices(record: PoolRecord) -> None:
    """Ready workers whose ``host-status`` says draining become ``DRAINING`` (the local seam of
    a spot notice, :mod:`oa_vm.reach.drain`)."""
    from oa_vm.reach.drain import mark_draining, notice_from_status, read_status

    for worker in record.workers:
        if worker.state == WorkerState.READY and worker.ssh is None:
            notice = notice_from_status(read_status(record, worker))
            if notice is not None:
                mark_draining(worker, notice)


def _retire(provider: LocalProcesses, record: PoolRecord, names: list[str],
            progress: Progress) -> None:
    """Stop replaced draining workers and remove them from the record (their folders stay
    until ``pool-cleanup``)."""
    from oa_vm.reach import replacements

    for name in names:
        worker = next(w for w in record.workers if w.name == name)
        if worker.pid is not None and provider.is_ours(worker):
            provider.stop_worker(worker)
        record.workers.remove(worker)
        progress(f"retired {name} (replaced by {replacements.successor(record, name)})")


def _start_replacement(record: PoolRecord, draining: WorkerRecord, faults: dict[str, str],
                       tasks_dir: str | None, progress: Progress) -> WorkerRecord:
    """A new worker (next number, its own folder and process) for a draining one, which is left
    running."""
    from oa_vm.reach import replacements

    name = replacements.next_worker_name(record)
    pool_dir = state.pool_dir(record.name)
    new = WorkerRecord(name=name, workdir=str(state.workers_dir(record.name) / name),
                       log_path=str(pool_dir / "logs" / f"{name}.log"), host=name,
                       ssh=draining.ssh)
    launch_unit([new], faults, tasks_dir, secret_file(record.name), record=record,
                save_workers=True)
    replacements.add_replacement(record, draining.name, name)
    progress(f"started {name} to replace draining {draining.name} (pid {new.pid})")
    return new


def repair(provider: LocalProcesses, record: PoolRecord, progress: Progress,
           names: list[str] | None = None) -> list[str]:
    """Repair the pool; returns the workers started (restarted under their names, or new).

    - a lost worker (or one in ``names``) has its process restarted under its name;
    - a draining worker (its ``host-status`` says so) gets a replacement under a new name
      while it keeps running; once replaced, it is retired when its process ended or it is
      named (see :mod:`oa_vm.fleet`).

    Pools of several workers per process restart a draining worker's process instead (one
    slot of a process cannot be stopped alone).
    """
    from oa_vm.reach import replacements

    provider.refresh(record)
    _read_notices(record)
    if any(len(unit) > 1 for unit in units(record)):
        def wanted(unit: list[WorkerRecord]) -> bool:
            if names is not None:
                return any(w.name in names for w in unit)
            return any(w.state in (WorkerState.LOST, WorkerState.DRAINING) for w in unit)

        return _restart(provider, record, wanted, progress, "replaced")

    _retire(provider, record, replacements.to_retire(record, names), progress)
    faults = dict(record.settings.get("faults") or {})
    tasks_dir = record.settings.get("tasks_dir")
    chain = replacements.replaced_by(record)

    def lost(unit: list[WorkerRecord]) -> bool:
        worker = unit[0]
        if worker.state == WorkerState.DRAINING or worker.name in chain:
            return False  # replaced under a new name instead, or retired above
        return worker.state == WorkerState.LOST or (names is not None and worker.name in names)

    started = _restart(provider, record, lost, progress, "replaced")
    new = [_start_replacement(record, record_worker, faults, tasks_dir, progress)
           for record_worker in [w for w in record.workers
                                 if w.name in replacements.needs_replacement(record)]]
    await_units(provider, [[w] for w in new], progress)
    record.state = state.derive_pool_state(record.workers)
    return started + [w.name for w in new]


class LocalFleetOps:
    """The :class:`~oa_vm.clouds.base.FleetOps` of a local pool: its processes stopped,
    started again and replaced by ``provider`` (see the module docstring)."""

    def __init__(self, provider: LocalProcesses) -> None:
        self.provider = provider

    def pause(self, record: PoolRecord, progress: Progress) -> PoolRecord:
        """Stop the pool's processes; their folders stay (:func:`pause`)."""
        return pause(self.provider, record, progress)

    def resume(self, record: PoolRecord, progress: Progress) -> list[str]:
        """Start the paused processes again on their folders (:func:`resume`)."""
        return resume(self.provider, record, progress)

    def repair(self, record: PoolRecord, progress: Progress, names: list[str] | None) -> list[str]:
        """Restart lost processes, replace draining workers (:func:`repair`)."""
        return repair(self.provider, record, progress, names)
