"""Pool records on disk.

One versioned JSON document per pool at ``$OA_VM_HOME/pools/<name>/pool.json`` (default home
``~/.oa-vm``), beside the pool's own files (SSH key, worker folders, logs). Records are written
atomically (temp file in the same folder, fsync, rename) so a crash leaves either the old record or
the new one, never half of each. JSON only, never pickle: a record written by one version must stay
readable, and one written by a newer, unknown version is refused rather than misread; one of the
wrong types (``"workers": "x"``) is refused whole, naming the field. Folders and files are made
through :mod:`oa_vm.kit.safe_fs` (0700/0600, never through a symlink or into someone else's folder),
and a read-modify-write of a record runs under the pool's lock (:func:`locked`).

Paths come from functions, not import-time constants, so tests redirect them with ``OA_VM_HOME``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from oa_vm.errors import (
    CorruptRecordError,
    InvalidInputError,
    OaVmError,
    PoolNotFoundError,
    PoolNotReadyError,
    RecordMissingError,
)
from oa_vm.kit.validate import name_problem, writable_problem

# typing is not imported at run time: these modules are on pool-status's start-up path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = 1
POOL_NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,38}[a-z0-9]$|^[a-z]$")


class PoolState(StrEnum):
    """Lifecycle of a pool as a whole."""

    CREATING = "creating"
    PROVISIONING = "provisioning"
    READY = "ready"
    DEGRADED = "degraded"  # some workers lost, the rest usable
    FAILED = "failed"
    DELETING = "deleting"
    PAUSED = "paused"  # every worker stopped on purpose; disks kept (oa_vm.fleet)


class WorkerState(StrEnum):
    """Lifecycle of one worker."""

    STARTING = "starting"
    BOOTING = "booting"
    READY = "ready"
    LOST = "lost"  # was started, is gone (process died, instance terminated)
    STOPPED = "stopped"
    PAUSED = "paused"  # stopped by pool-pause, to be started again by pool-resume
    DRAINING = "draining"  # going away (a spot interruption notice): no new task, its own ends


def utcnow() -> datetime:
    """Now, timezone-aware (UTC); records never hold naive timestamps."""
    return datetime.now(UTC)


def parse_time(value: str | None) -> datetime | None:
    """Parse an ISO 8601 timestamp written by :func:`format_time`."""
    if value is None:
        return None
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError(f"timestamp without a timezone: {value!r}")
    return parsed


def format_time(value: datetime | None) -> str | None:
    """ISO 8601 with an explicit offset: how records and ``--json`` hold a time."""
    return None if value is None else value.astimezone(UTC).isoformat()


def show_time(value: datetime | None) -> str:
    """How a line for people says a time: UTC to the second, named (``2026-12-03 15:28:02
    UTC``; ``-`` for none), where the record's ISO form carries microseconds and an offset."""
    return "-" if value is None else value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


class _Record:
    """Value semantics for the record classes below (equality and repr over their fields).

    The records are plain classes rather than dataclasses because ``dataclasses`` imports
    ``inspect`` (and with it ``ast``, ``dis``, ``tokenize``) and generates its methods with
    ``exec`` when the module loads: together a third of the start-up of ``oa-vm pool-status``,
    which reads these records and nothing heavier (docs/performance.md).

    Nor msgspec or pydantic, measured by ``bench/serializers.py`` (two runs, load average 10):
    a 40-worker record round-trips 12 to 25 times faster through msgspec (pydantic: 4 to 9
    times), but a read takes 0.7 ms here, and importing msgspec costs 4.8 / 6.1 times this
    whole module's import (55 / 119 ms against 11 / 19 ms; pydantic 8.5 / 12.3 times), paid by
    every ``pool-status`` before it reads one record. The break-even is past 2,500 workers in
    one pool; the field types are checked by :func:`type_problem`, one table per record.
    """

    FIELDS: tuple[str, ...] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.FIELDS)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self) or not isinstance(other, _Record):
            return NotImplemented
        return self._values() == other._values()

    __hash__ = None  # type: ignore[assignment]  # mutable, as a dataclass without frozen=True

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.FIELDS)
        return f"{type(self).__name__}({inner})"


class SshEndpoint(_Record):
    """How a worker's host is reached over SSH."""

    FIELDS = ("host", "port", "user", "key_path")

    def __init__(self, host: str, port: int, user: str, key_path: str) -> None:
        self.host = host
        self.port = port
        self.user = user
        self.key_path = key_path

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {name: getattr(self, name) for name in self.FIELDS}

    def __str__(self) -> str:
        """``user@host:port``, an IPv6 host in brackets, as ``--host`` takes it."""
        from waa_client.addresses import host_port  # on use: pool-status starts without it

        return f"{self.user}@{host_port(self.host, self.port)}"


class WorkerRecord(_Record):
    """One worker of a pool.

    ``waa_url`` and ``scoring_url`` are the URLs a client on this machine uses when the worker is
    reached directly (local pools). Workers reached over SSH (cloud pools, or local pools registered
    behind an SSH server) also carry ``ssh`` and the ports on the far side of the tunnel
    (``remote_waa_port``, ``remote_scoring_port``); their URLs are then those of the tunnel.
    ``pid_start_mark`` (:func:`oa_vm.kit.process_start.start_mark`, which no clock step moves)
    or, in a record written without one, ``pid_create_time`` identifies, with ``pid``, *our*
    process (PIDs get reused).
    """

    FIELDS = (
        "name", "state", "waa_url", "scoring_url", "pid", "pid_create_time", "pid_start_mark",
        "host", "ssh", "remote_waa_port", "remote_scoring_port", "log_path", "workdir",
        "provider_id", "phase", "detail",
    )

    def __init__(
        self,
        name: str,
        state: WorkerState = WorkerState.STARTING,
        waa_url: str | None = None,
        scoring_url: str | None = None,
        pid: int | None = None,
        pid_create_time: float | None = None,
        pid_start_mark: str | None = None,
        host: str | None = None,
        ssh: SshEndpoint | None = None,
        remote_waa_port: int = 5000,
        remote_scoring_port: int = 5051,
        log_path: str | None = None,
        workdir: str | None = None,
        provider_id: str | None = None,
        phase: str | None = None,
        detail: str | None = None,
    ) -> None:
        self.name = name
        self.state = state
        self.waa_url = waa_url
        self.scoring_url = scoring_url
        self.pid = pid
        self.pid_create_time = pid_create_time
        self.pid_start_mark = pid_start_mark
        self.host = host
        self.ssh = ssh
        self.remote_waa_port = remote_waa_port
        self.remote_scoring_port = remote_scoring_port
        self.log_path = log_path
        self.workdir = workdir
        self.provider_id = provider_id
        self.phase = phase
        self.detail = detail

    # A local worker's URLs carry its pool's capability: once this process knows one, any text
    # quoting it is masked (oa_vm.kit.redact), an error a worker sends back included.
    @property
    def waa_url(self) -> str | None:
        """The WAA server's URL as this machine reaches it."""
        return self._waa_url

    @waa_url.setter
    def waa_url(self, value: str | None) -> None:
        from oa_vm.kit.redact import register_url_secrets  # start-up: no pool, no redaction

        register_url_secrets(value)
        self._waa_url = value

    @property
    def scoring_url(self) -> str | None:
        """The scoring server's URL as this machine reaches it."""
        return self._scoring_url

    @scoring_url.setter
    def scoring_url(self, value: str | None) -> None:
        from oa_vm.kit.redact import register_url_secrets

        register_url_secrets(value)
        self._scoring_url = value

    @property
    def detail(self) -> str | None:
        """What the worker is doing or why it is stuck (a probe's error, its last log line)."""
        return self._detail

    @detail.setter
    def detail(self, value: str | None) -> None:
        # shown by every wait display, pool-status and pool.json: a probe's error or a log
        # line quotes the worker's URL, capability and all, so it is masked once, here
        from oa_vm.kit.redact import redact_text

        self._detail = None if value is None else redact_text(value)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        data = {name: getattr(self, name) for name in self.FIELDS}
        data["state"] = self.state.value
        data["ssh"] = None if self.ssh is None else self.ssh.to_json()
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WorkerRecord:
        """Inverse of :meth:`to_json`; unknown keys are ignored for forward tolerance."""
        values = {k: v for k, v in data.items() if k in cls.FIELDS}
        values["state"] = WorkerState(values.get("state", WorkerState.STARTING))
        if values.get("ssh") is not None:
            values["ssh"] = SshEndpoint(**values["ssh"])
        return cls(**values)


class PoolRecord(_Record):
    """Everything oa-vm knows about one pool; the cloud stays the source of truth for cleanup."""

    FIELDS = (
        "name", "cloud", "state", "created_at", "expires_at", "owner", "settings", "workers",
        "provider_data", "price_per_hour", "version",
    )

    def __init__(
        self,
        name: str,
        cloud: str,
        state: PoolState,
        created_at: datetime,
        expires_at: datetime | None = None,
        owner: str = "",
        settings: dict[str, Any] | None = None,
        workers: list[WorkerRecord] | None = None,
        provider_data: dict[str, Any] | None = None,
        price_per_hour: float | None = None,
        version: int = SCHEMA_VERSION,
    ) -> None:
        self.name = name
        self.cloud = cloud
        self.state = state
        self.created_at = created_at
        self.expires_at = expires_at
        self.owner = owner
        self.settings: dict[str, Any] = {} if settings is None else settings
        self.workers: list[WorkerRecord] = [] if workers is None else workers
        self.provider_data: dict[str, Any] = {} if provider_data is None else provider_data
        self.price_per_hour = price_per_hour
        self.version = version

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (``version`` first, for people reading the file)."""
        return {
            "version": self.version,
            "name": self.name,
            "cloud": self.cloud,
            "state": self.state.value,
            "created_at": format_time(self.created_at),
            "expires_at": format_time(self.expires_at),
            "owner": self.owner,
            "price_per_hour": self.price_per_hour,
            "settings": self.settings,
            "provider_data": self.provider_data,
            "workers": [w.to_json() for w in self.workers],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PoolRecord:
        """Inverse of :meth:`to_json`; raises ``ValueError``, ``KeyError`` or ``TypeError``."""
        created = parse_time(data["created_at"])
        if created is None:
            raise ValueError("created_at is missing")
        return cls(
            version=int(data["version"]),
            name=str(data["name"]),
            cloud=str(data["cloud"]),
            state=PoolState(data["state"]),
            created_at=created,
            expires_at=parse_time(data.get("expires_at")),
            owner=str(data.get("owner", "")),
            price_per_hour=data.get("price_per_hour"),
            settings=dict(data.get("settings") or {}),
            provider_data=dict(data.get("provider_data") or {}),
            workers=[WorkerRecord.from_json(w) for w in data.get("workers", [])],
        )

    def age_seconds(self, now: datetime | None = None) -> float:
        """Seconds since the pool was created."""
        return ((now or utcnow()) - self.created_at).total_seconds()

    def is_expired(self, now: datetime | None = None) -> bool:
        """True once the pool is past its expiry (cloud pools end themselves then)."""
        return self.expires_at is not None and (now or utcnow()) >= self.expires_at

    def by_host(self) -> dict[str, list[WorkerRecord]]:
        """The workers by the machine they run on (a worker's ``host``; a worker without one
        is its own), hosts in the order of their first worker."""
        hosts: dict[str, list[WorkerRecord]] = {}
        for worker in self.workers:
            hosts.setdefault(worker.host or worker.name, []).append(worker)
        return hosts


def refuse_unsettled(record: PoolRecord) -> None:
    """The one rule for every command that uses a pool's workers: a pool still being created,
    or being removed (a removal stopped half-way included), is refused in one line saying what
    ends that state.

    Raises:
        PoolNotReadyError: the pool's record says ``creating`` or ``deleting``.
    """
    finish = f"'oa-vm pool-cleanup --pool {record.name}'"
    if record.state == PoolState.CREATING:
        raise PoolNotReadyError(
            f"pool {record.name!r} is being created; wait for its 'oa-vm pool-create' to end "
            f"(if that was stopped, remove the pool with {finish})")
    if record.state == PoolState.DELETING:
        raise PoolNotReadyError(
            f"pool {record.name!r} is being removed (or its removal was stopped); finish "
            f"removing it with {finish}")


def refuse_paused(record: PoolRecord) -> None:
    """The one rule for every command that needs the pool's workers running (``pool-wait``,
    ``pool-tunnel``, ``pool-repair``, a run, ``tasks --pool``, a run's ``--wait-ready``): a
    paused pool is refused, naming ``pool-resume``, before anything is asked of its stopped
    workers. A wait that asked took them for lost and wrote so into the record, after which the
    pool was neither paused (``pool-resume`` refused it) nor ready.

    Raises:
        PoolNotReadyError: a worker of the pool is paused (as ``pool-resume`` decides).
    """
    paused = [w.name for w in record.workers if w.state == WorkerState.PAUSED]
    if not paused:
        return
    what = "is paused" if len(paused) == len(record.workers) else (
        f"has paused workers ({', '.join(paused)}): a resume did not start them all")
    raise PoolNotReadyError(
        f"pool {record.name!r} {what}; start it again with "
        f"'oa-vm pool-resume --pool {record.name}'"
    )


def derive_pool_state(workers: list[WorkerRecord]) -> PoolState:
    """The pool's state as its workers' states imply it."""
    states = [w.state for w in workers]
    if states and all(s == WorkerState.PAUSED for s in states):
        return PoolState.PAUSED
    if not states or all(s in (WorkerState.LOST, WorkerState.STOPPED) for s in states):
        return PoolState.FAILED
    if WorkerState.LOST in states or WorkerState.DRAINING in states:
        return PoolState.DEGRADED
    if all(s == WorkerState.READY for s in states):
        return PoolState.READY
    return PoolState.PROVISIONING


# --- paths -------------------------------------------------------------------------------------


def home() -> Path:
    """The oa-vm home: ``$OA_VM_HOME`` or ``~/.oa-vm``. Read on every call so tests can redirect."""
    env = os.environ.get("OA_VM_HOME")
    path = Path(env).expanduser() if env else Path.home() / ".oa-vm"
    if path.exists() and not path.is_dir():
        # Otherwise every listing would quietly say "no pools" and every create would fail late.
        raise InvalidInputError(
            f"the oa-vm home {path} is a file, not a folder; point OA_VM_HOME at a folder"
        )
    return path


def home_problem() -> str | None:
    """Why the oa-vm home could not hold a pool's record (``None`` when it can), found before
    any plan is shown or anything is made, naming ``OA_VM_HOME`` as the user set it.

    Raises:
        InvalidInputError: the home is a file (as :func:`home`).
    """
    option = "OA_VM_HOME" if os.environ.get("OA_VM_HOME") else "the oa-vm home (OA_VM_HOME)"
    return writable_problem(option, home(), "point OA_VM_HOME at a folder you can write")


def pools_dir() -> Path:
    """Folder holding one sub-folder per pool."""
    return home() / "pools"


def pool_dir(name: str) -> Path:
    """The folder of one pool (record, key, worker folders, logs); never outside the home.

    Raises:
        InvalidInputError: ``name`` is not a plain name (empty, a path, ``..``).
    """
    problem = name_problem("pool name", name)
    if problem:
        raise InvalidInputError(problem)
    return pools_dir() / name


def removed_dir() -> Path:
    """Tombstones of removed pools, so a second cleanup can say "already removed"."""
    return home() / "removed"


def tombstone(name: str) -> Path:
    """The tombstone a removed pool leaves (:func:`removed_dir`)."""
    return removed_dir() / f"{name}.json"


def record_path(name: str) -> Path:
    """The pool's JSON record."""
    return pool_dir(name) / "pool.json"


WORKERS_DIR = "workers"
"""The folder of a local pool's folder that its workers run from (each process's ``--root``)."""


def workers_dir(name: str) -> Path:
    """Where a local pool's workers run from (:data:`WORKERS_DIR`)."""
    return pool_dir(name) / WORKERS_DIR


def record_missing(name: str) -> bool:
    """Whether the pool's record is gone (removed by hand) while its workers' folder is still
    there, so processes may still run from it."""
    return not record_path(name).exists() and workers_dir(name).is_dir()


def validate_pool_name(name: str) -> str:
    """Pool names end up in cloud resource names and tags: lower-case letters, digits, dashes."""
    if not POOL_NAME_RE.match(name):
        raise InvalidInputError(
            f"invalid pool name {name!r}: use 1-40 lower-case letters, digits and dashes, "
            "starting with a letter (e.g. 'waa-eval')"
        )
    return name


# --- atomic IO ---------------------------------------------------------------------------------


def atomic_write_text(path: Path, text: str, mode: int = 0o600, root: Path | None = None) -> None:
    """Write ``text`` to ``path`` so that readers see the old or the new content, never a mix.

    A thin name for :func:`oa_vm.kit.safe_fs.write_atomic` (temp file, fsync, rename; explicit
    mode; never through a symlink; a failure names ``path``), kept because every record
    writer already calls it.
    """
    from oa_vm.kit import safe_fs  # here, not at the top: read-only commands never load it

    safe_fs.write_atomic(path, text, mode=mode, root=root)


def atomic_write_json(
    path: Path, data: Any, mode: int = 0o600, root: Path | None = None
) -> None:
    """:func:`atomic_write_text` of pretty-printed JSON."""
    # allow_nan=False: NaN/Infinity are not JSON; refusing them keeps every record readable.
    text = json.dumps(data, indent=2, sort_keys=False, allow_nan=False)
    atomic_write_text(path, text + "\n", mode=mode, root=root)


# --- records -----------------------------------------------------------------------------------


def save(record: PoolRecord) -> Path:
    """Write the pool's record atomically, under the pool's lock (:func:`locked`); returns its
    path."""
    path = record_path(record.name)
    made = not os.path.lexists(path.parent)
    # The pool's folder holds its SSH key and logs: private whatever the umask says, and
    # refused when someone else made it first (a squatter could plant the key a cloud uses).
    ensure_pool_dir(record.name)
    try:
        with locked(record.name):
            atomic_write_json(path, record.to_json(), root=home())
    except BaseException:
        if made:  # a full disk must not leave an empty pool folder behind
            with contextlib.suppress(OSError):
                (path.parent / LOCK_NAME).unlink()
                os.rmdir(path.parent)
        raise
    return path


def save_after(record: PoolRecord, loaded_expiry: datetime | None) -> Path:
    """Save a record an operation held across a long step (a repair, a pause, a resume), under
    the pool's lock (:func:`locked`), keeping what ``pool-extend`` did meanwhile.

    The expiry is the one field another command changes while such an operation runs (extend
    takes only :func:`locked`, not the fleet lock, so it never waits for a repair; on a cloud
    that ends its pools itself it takes the fleet lock, so it waits): if the
    stored expiry moved from ``loaded_expiry`` (what the operation read), the move is carried
    into ``record``'s own expiry, so no acknowledged extension is lost.
    """
    with locked(record.name):
        current: PoolRecord | None
        try:
            current = load(record.name)
        except (PoolNotFoundError, CorruptRecordError):
            current = None  # gone or unreadable: the plain save says what it says
        if (current is not None and current.expires_at is not None
                and loaded_expiry is not None and record.expires_at is not None
                and current.expires_at != loaded_expiry):
            record.expires_at += current.expires_at - loaded_expiry
        return save(record)


def save_workers(record: PoolRecord) -> Path:
    """Store ``record``'s workers in the pool's stored record, under its lock, leaving the rest
    as stored (its expiry, which :func:`save_after` merges at the operation's end): what an
    operation started is named at once, whatever stops it next. A record not stored yet (or
    unreadable) is saved whole."""
    with locked(record.name):
        try:
            current = load(record.name)
        except (PoolNotFoundError, CorruptRecordError):
            return save(record)
        current.workers = record.workers
        return save(current)


LOCK_NAME = "pool.lock"
LOCK_WAIT_S = 60.0
_thread_locks: dict[str, Any] = {}
_held: dict[str, list[int]] = {}  # pool -> [fd, depth], for the thread holding its lock


@contextlib.contextmanager
def locked(name: str) -> Iterator[None]:
    """Hold the pool's record lock (``flock`` on ``pool.lock`` beside ``pool.json``).

    A read-modify-write of ``pool.json`` (``load``, change, ``save``) done inside it cannot lose
    another command's update: eight parallel ``pool-extend --by 1h`` move the expiry 8 h. The
    lock is re-entrant within a thread (``save`` takes it too) and dropped by the OS if the
    process dies. A pool without a folder is not locked (and nothing is made): ``load`` then
    says it does not exist.

    Raises:
        OaVmError: another command held the lock for longer than ``LOCK_WAIT_S``.
    """
    import threading

    folder = pool_dir(name)
    guard = _thread_locks.setdefault(name, threading.RLock())
    with guard:
        entry = _held.get(name)
        if entry is not None:  # this thread holds it already
            entry[1] += 1
            try:
                yield
            finally:
                entry[1] -= 1
            return
        if not folder.is_dir():
            yield
            return
        from oa_vm.kit import safe_fs

        fd = safe_fs.open_private(folder / LOCK_NAME)
        try:
            _flock(fd, folder / LOCK_NAME)
            _held[name] = [fd, 1]
            try:
                yield
            finally:
                del _held[name]
        finally:
            os.close(fd)


def _flock(fd: int, path: Path) -> None:
    import fcntl

    def free() -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    if free():  # nearly every save: no import of the poll's package (it loads the HTTP stack)
        return
    from waa_client.poll import poll_until

    if not poll_until(free, timeout_s=LOCK_WAIT_S, interval_s=0.01):
        raise OaVmError(
            f"{path} is held by another oa-vm command (a stopped one?); "
            "let it finish, or end it, and run the command again"
        )


def ensure_pool_dir(name: str) -> Path:
    """The pool's folder, made 0700 (with the home and ``pools/``) and checked from the home
    down: no symlink, nobody else's folder (:func:`oa_vm.kit.safe_fs.ensure_dir`)."""
    from oa_vm.kit import safe_fs

    return safe_fs.ensure_dir(pool_dir(name), root=home())


def exists(name: str) -> bool:
    """Whether a record (valid or not) exists for ``name``."""
    return record_path(name).exists()


def load(name: str) -> PoolRecord:
    """Read one pool's record.

    Raises:
        PoolNotFoundError: there is no record for ``name``.
        CorruptRecordError: the file exists but cannot be read as a pool record; nothing is
            deleted, the message names the file.
    """
    path = record_path(name)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if record_missing(name):
            raise RecordMissingError(path) from None
        raise PoolNotFoundError(name, known=list_names()) from None
    except UnicodeDecodeError as exc:
        raise CorruptRecordError(path, f"not UTF-8 text (byte {exc.start})") from exc
    except OSError as exc:  # a folder, no permission, a disk error: still this pool's record
        raise CorruptRecordError(path, f"cannot be read ({exc.strerror or exc})") from exc
    return _parse(path, text)


def _parse(path: Path, text: str) -> PoolRecord:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CorruptRecordError(path, f"not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(data, dict):
        raise CorruptRecordError(path, "not a JSON object")
    version = data.get("version")
    if not isinstance(version, int):
        raise CorruptRecordError(path, "no schema version")
    if version > SCHEMA_VERSION:
        raise CorruptRecordError(
            path, f"written by a newer oa-vm (schema {version} > {SCHEMA_VERSION}); upgrade oa-vm"
        )
    problem = type_problem(data)
    if problem is None and data.get("name") != path.parent.name:
        # every command finds a pool by its folder: a record naming another pool would be
        # listed, removed and saved under a name no command can then find
        named = json.dumps(data.get("name"))[:40]
        problem = f"it names pool {named}, not its folder's {path.parent.name!r}"
    if problem is not None:
        raise CorruptRecordError(path, problem)
    try:
        return PoolRecord.from_json(data)
    except (KeyError, ValueError, TypeError) as exc:
        raise CorruptRecordError(path, f"malformed record ({exc})") from exc


_STR = (str,)
_OPT_STR = (str, type(None))
_OPT_NUM = (int, float, type(None))
_OPT_DICT = (dict, type(None))
_POOL_TYPES: dict[str, tuple[type, ...]] = {
    "name": _STR, "cloud": _STR, "state": _STR, "created_at": _STR, "expires_at": _OPT_STR,
    "owner": _OPT_STR, "price_per_hour": _OPT_NUM, "settings": _OPT_DICT,
    "provider_data": _OPT_DICT, "workers": (list, type(None)),
}
_WORKER_TYPES: dict[str, tuple[type, ...]] = {
    "name": _STR, "state": _STR, "waa_url": _OPT_STR, "scoring_url": _OPT_STR,
    "pid": (int, type(None)), "pid_create_time": _OPT_NUM, "pid_start_mark": _OPT_STR,
    "host": _OPT_STR, "ssh": _OPT_DICT,
    "remote_waa_port": (int,), "remote_scoring_port": (int,), "log_path": _OPT_STR,
    "workdir": _OPT_STR, "provider_id": _OPT_STR, "phase": _OPT_STR, "detail": _OPT_STR,
}
_SSH_TYPES: dict[str, tuple[type, ...]] = {
    "host": _STR, "port": (int,), "user": _STR, "key_path": _STR,
}


def _field_problem(
    where: str, data: dict[str, Any], types: dict[str, tuple[type, ...]]
) -> str | None:
    for key, allowed in types.items():
        if key not in data:
            continue
        value = data[key]
        # bool is an int to Python, never a count or a port to us
        if isinstance(value, bool) or not isinstance(value, allowed):
            return f"{where}{key} is {json.dumps(value)[:40]}, not {_kind(allowed)}"
    return None


def _kind(allowed: tuple[type, ...]) -> str:
    names = {str: "a string", int: "a whole number", float: "a number", dict: "an object",
             list: "a list"}
    kinds = [names[t] for t in allowed if t in names and not (t is float and int in allowed)]
    return " or ".join(kinds) + (" or null" if type(None) in allowed else "")


def type_problem(data: dict[str, Any]) -> str | None:
    """What is wrong with the types of a pool record's JSON (``"workers": "x"``, ``"pid": -5``),
    or ``None``: a record is refused whole rather than half-used (a negative PID given to
    ``kill`` would signal a whole process group)."""
    problem = _field_problem("", data, _POOL_TYPES)
    if problem is not None:
        return problem
    for i, worker in enumerate(data.get("workers") or []):
        where = f"workers[{i}]."
        if not isinstance(worker, dict):
            return f"workers[{i}] is {json.dumps(worker)[:40]}, not an object"
        problem = _field_problem(where, worker, _WORKER_TYPES)
        if problem is None and isinstance(worker.get("ssh"), dict):
            problem = _field_problem(where + "ssh.", worker["ssh"], _SSH_TYPES)
        if problem is not None:
            return problem
        pid = worker.get("pid")
        if pid is not None and pid <= 0:
            return f"{where}pid is {pid}, not a process ID (a whole number above 0)"
        for key in ("remote_waa_port", "remote_scoring_port"):
            port = worker.get(key)
            if port is not None and not 0 < port < 65536:
                return f"{where}{key} is {port}, not a port (1-65535)"
    return None


def list_names() -> list[str]:
    """Names of all pools that have a record file, sorted."""
    root = pools_dir()
    if not root.is_dir():
        return []
    # a folder whose name is not a plain name was not made by oa-vm: not a pool
    return sorted(
        p.parent.name for p in root.glob("*/pool.json") if name_problem("", p.parent.name) is None
    )


def iter_records() -> Iterator[PoolRecord | CorruptRecordError]:
    """Every pool record; corrupt ones are yielded as their error so listings can show them,
    and so is each pool folder whose record is missing (:func:`record_missing`)."""
    for name in list_names():
        try:
            yield load(name)
        except CorruptRecordError as exc:
            yield exc
    root = pools_dir()
    orphans = root.glob(f"*/{WORKERS_DIR}/") if root.is_dir() else ()
    for name in sorted(p.parent.name for p in orphans):
        if name_problem("", name) is None and record_missing(name):
            yield RecordMissingError(record_path(name))


def delete(name: str) -> None:
    """Remove a pool's record file (the caller removes the rest of its folder)."""
    with contextlib.suppress(FileNotFoundError):
        record_path(name).unlink()
