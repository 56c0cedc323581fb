"""Draining workers: a worker about to go away (a spot interruption notice) takes no new task.

On an AWS spot worker, ``spot_watch.sh`` (run by ``oa-vm-spot-watch.service``) polls the
instance metadata and, on the two-minute warning, writes ``state=draining`` with the notice's
``action`` and ``action_time`` into the host's status file, the one ``pool-wait`` reads. On an
Azure Spot worker ``spot_watch_azure.sh`` does the same on a Scheduled Events ``Preempt``
(``action=preempt``, ``action_time`` its ``NotBefore``). This module reads that file back:

- over SSH for workers reached that way, in spot pools only (the same status file and parser
  as ``pool-wait``, :mod:`oa_vm.reach.host_status`);
- from ``<worker folder>/host-status`` for workers reached directly (local pools). A local
  worker gets no spot notice; the file is the seam through which a test, or a user who wants a
  local worker out of a running sweep, marks it draining: write ``state=draining`` (and a
  ``message=``) into it.

A status that cannot be read (SSH down, no file) never means draining: only a notice does.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path

from oa_vm.kit.env_knobs import seconds
from oa_vm.model import state
from oa_vm.model.state import PoolRecord, WorkerRecord, WorkerState
from oa_vm.reach import host_status
from oa_vm.reach.host_status import RemoteRunner

log = logging.getLogger(__name__)

LOCAL_STATUS_NAME = "host-status"
DRAINING = "draining"
DEFAULT_CHECK_INTERVAL_S = 15.0
"""How often one worker's status is read during a run (AWS gives two minutes' notice)."""


def check_interval_s() -> float:
    """Seconds between two status reads of one worker in a run: ``$OA_VM_DRAIN_CHECK_S``, else
    :data:`DEFAULT_CHECK_INTERVAL_S` (read by :mod:`oa_vm.kit.env_knobs`: the console scripts
    refuse a value that is not a number of seconds >= 0)."""
    return seconds("OA_VM_DRAIN_CHECK_S", DEFAULT_CHECK_INTERVAL_S)


@dataclass(frozen=True)
class DrainNotice:
    """Why a worker is draining: the host's message, the notice's action and its time."""

    message: str
    action: str = ""
    action_time: str = ""


def notice_from_status(status: dict[str, str]) -> DrainNotice | None:
    """The notice in a parsed status file (``state=draining``), or None."""
    if status.get("state") != DRAINING:
        return None
    return DrainNotice(
        message=status.get("message") or "draining",
        action=status.get("action", ""),
        action_time=status.get("action_time", ""),
    )


def local_status_path(worker: WorkerRecord) -> Path | None:
    """Where a directly reached worker's status is read (None without a worker folder)."""
    return Path(worker.workdir) / LOCAL_STATUS_NAME if worker.workdir else None


def read_status(record: PoolRecord, worker: WorkerRecord, runner: RemoteRunner | None = None
                ) -> dict[str, str]:
    """The worker's host status (empty when there is none or it cannot be read).

    Args:
        record: the worker's pool (its known_hosts pins the worker's host key).
        worker: the worker.
        runner: a :class:`oa_vm.reach.host_status.RemoteRunner` (paramiko by default).
    """
    if worker.ssh is None:
        path = local_status_path(worker)
        try:
            text = path.read_text(encoding="utf-8") if path is not None else ""
        except OSError:
            return {}
        return host_status.parse_status(text)
    if runner is None:
        from oa_vm.reach.connect import known_hosts_path

        runner = host_status.ParamikoRunner(known_hosts_path(record.name))
    try:
        result = runner.run(worker.ssh, host_status.read_status_command(
                                host_status.RemoteCommands.for_worker(worker.remote_waa_port)),
                            host_status.COMMAND_TIMEOUT_S)
    except host_status.RemoteUnreachableError as exc:
        log.info("could not read %s's status: %s", worker.name, exc)
        return {}
    return host_status.parse_status(result.output)


_NOTICE_AT = re.compile(r" at (.+?); no new task$")


def notice_time(worker: WorkerRecord) -> datetime | None:
    """When the cloud ends a draining worker, from its notice (AWS's ISO time, Azure's
    ``NotBefore``), or None when the notice gives none (e.g. a local worker marked by hand)."""
    match = _NOTICE_AT.search(worker.detail or "")
    if worker.state != WorkerState.DRAINING or match is None:
        return None
    text = match.group(1)
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)  # "Mon, 19 Sep 2016 18:29:47 GMT"
        except (TypeError, ValueError):
            return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def mark_draining(worker: WorkerRecord, notice: DrainNotice) -> None:
    """Record the notice on the worker: state ``draining``, phase and detail say why."""
    worker.state = WorkerState.DRAINING
    worker.phase = DRAINING
    worker.detail = notice.message


class DrainWatch:
    """Answers "is this worker draining?" for a run, reading each worker's status at most once
    per ``interval_s`` while it is not (the dispatch loops ask before every lease; a worker
    under notice is asked once more only, after its replacement).

    Args:
        pool: the pool's name (its record is read again when a worker is not known, e.g. after
            a repair).
        interval_s: seconds between two reads of one worker's status.
        runner: how remote commands run (paramiko with the pool's known_hosts by default).
    """

    def __init__(self, pool: str, *, interval_s: float | None = None,
                 runner: RemoteRunner | None = None) -> None:
        self.pool = pool
        self.interval_s = check_interval_s() if interval_s is None else interval_s
        self.runner = runner
        self._checked: dict[str, tuple[float, DrainNotice | None]] = {}
        self._loaded: tuple[float, PoolRecord] | None = None
        self._lock = threading.Lock()

    def _record(self, now: float, *, fresh: bool = False) -> PoolRecord:
        """The pool's record, read again at most once per ``interval_s`` (a pool of hundreds
        of workers is not parsed for every lease)."""
        with self._lock:
            if fresh or self._loaded is None or now - self._loaded[0] >= self.interval_s:
                self._loaded = (now, state.load(self.pool))
            return self._loaded[1]

    def __call__(self, worker: str) -> DrainNotice | None:
        """The worker's drain notice, or None (also when its status cannot be read)."""
        now = time.monotonic()
        with self._lock:
            cached = self._checked.get(worker)
        if cached is not None and now - cached[0] < self.interval_s:
            return cached[1]
        notice: DrainNotice | None = None
        try:
            record = self._record(now)
            found = next((w for w in record.workers if w.name == worker), None)
            if found is None:  # e.g. added since: read the record again
                record = self._record(now, fresh=True)
                found = next((w for w in record.workers if w.name == worker), None)
            # Only spot hosts get notices: no SSH session to the others for nothing.
            if found is not None and (found.ssh is None or record.settings.get("spot")):
                notice = notice_from_status(read_status(record, found, self.runner))
        except Exception as exc:  # a failed read must not stop a run: not draining
            log.info("could not check whether %s is draining: %s", worker, exc)
        if notice is None:  # a notice is read again each time: a replacement clears it
            with self._lock:
                self._checked[worker] = (now, notice)
        return notice
