"""The durable task queue of a run: SQLite in WAL mode at ``<run>/queue.sqlite``.

One row per task. A task is ``pending`` (waiting), ``leased`` (a worker runs it; the lease carries
an owner and an expiry that a heartbeat pushes forward) or ``done`` (its final record is committed
in the row). Every state change is one ``BEGIN IMMEDIATE`` transaction, so a controller killed at
any point leaves each task in exactly one of those states, and a finished task's record is never
lost or redone.

Trade-offs accepted:

- One controller per run (the runner holds a file lock); leases exist so that a controller that
  died mid-task is detected, not to share a run between machines.
- Fencing: an attempt is identified by its lease owner and its attempt number (``attempts`` as
  leased), and every write that ends an attempt (:meth:`TaskQueue.complete`,
  :meth:`TaskQueue.release`, :meth:`TaskQueue.give_back`) carries that lease and is refused
  (:class:`AttemptFencedError`) when the row no longer holds it. A controller never reclaims its own
  expired leases: a controller frozen past ``lease_seconds`` (a laptop asleep) wakes with its
  attempts still in flight, and its idle loops must not hand those tasks out a second time.
  Only an earlier controller's leases are reclaimed (:meth:`TaskQueue.recover`, or once expired).
- An attempt cut short by the controller dying is not held against the task (``recover`` gives
  the attempt back), because it says nothing about the task or the worker.
- Each thread opens its own connection (SQLite connections are not meant to be shared between
  threads); ``synchronous=FULL`` costs a little per commit and keeps commits across power loss.
- Except a lease (:meth:`TaskQueue.lease`), committed at ``synchronous=NORMAL``: no fsync, in
  the lock every worker's next lease waits on. The WAL is one file written in commit order, so
  the next fsynced commit (a final record, a release, the heartbeat every few seconds) makes the
  lease durable too; a power cut can only lose the leases granted since then. Such a task reads
  as pending instead of leased, and is run again on ``--resume`` as a task taken back by
  :meth:`TaskQueue.recover` is (its attempt given back either way); only the billing of that
  cut attempt's seconds is lost.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from evals.results.records import AttemptRecord, TaskExecution, TaskStatus
from evals.results.trials import SEPARATOR, split_key
from oa_vm.kit.env_knobs import seconds
from oa_vm.kit.safe_fs import WriteFailedError

SCHEMA_VERSION = 1
INTERRUPTED = "interrupted"
"""The ``reason`` of a history entry for an attempt cut short by its controller stopping."""
DEFAULT_LEASE_SECONDS = 60.0
LEASE_ENV = "OA_EVALS_TASK_LEASE_S"
"""Replaces :data:`DEFAULT_LEASE_SECONDS` for a run (a controller on a link slow enough that
its heartbeat may miss a minute; drills that freeze a controller past its leases)."""
DEFAULT_MAX_ATTEMPTS = 3

def task_lease_seconds() -> float:
    """How long a task lease outlives a silent controller: ``$OA_EVALS_TASK_LEASE_S`` when it
    is a number of seconds above 0, else :data:`DEFAULT_LEASE_SECONDS` (read by
    :mod:`oa_vm.kit.env_knobs`: the console scripts refuse another value)."""
    return seconds(LEASE_ENV, DEFAULT_LEASE_SECONDS)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    task_id TEXT PRIMARY KEY,
    position INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'leased', 'done')),
    attempts INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_expires_at REAL,
    lease_started_at REAL,
    expected_seconds REAL NOT NULL,
    last_worker TEXT,
    final_status TEXT,
    record TEXT,
    history TEXT NOT NULL DEFAULT '[]',
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_by_status ON tasks (status, expected_seconds);
CREATE INDEX IF NOT EXISTS tasks_in_lease_order ON tasks (status, expected_seconds DESC, position);
CREATE INDEX IF NOT EXISTS tasks_by_expiry ON tasks (status, lease_expires_at);
"""


_CANDIDATE = "SELECT task_id, attempts, expected_seconds, last_worker FROM tasks"
_LEASE_ORDER = "ORDER BY expected_seconds DESC, position ASC LIMIT 1"


# SQLite's primary result codes for a write the disk refused (sqlite3.h): SQLITE_READONLY,
# SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN. The queue's content is fine; its disk is not.
_DISK_CODES = {8: errno.EROFS, 10: errno.EIO, 13: errno.ENOSPC, 14: errno.EACCES}


@contextmanager
def disk_errors(path: Path) -> Iterator[None]:
    """Around SQLite calls on the queue at ``path``: a write its disk refused (full, read-only,
    failing) becomes :class:`oa_vm.kit.safe_fs.WriteFailedError` naming the file, as every other
    write of the run does, instead of a ``sqlite3.OperationalError`` that reads like a damaged
    queue; any other error passes unchanged."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        code = _DISK_CODES.get(getattr(exc, "sqlite_errorcode", 0) & 0xFF)
        if code is None:
            raise
        # a full disk in the system's words; the others in SQLite's ("attempt to write a
        # readonly database", "disk I/O error"), which say more than errno's
        reason = os.strerror(code) if code == errno.ENOSPC else str(exc)
        raise WriteFailedError(path, OSError(code, reason)) from exc


class AttemptFencedError(LookupError):
    """A write that ends an attempt was refused: the row no longer holds that attempt's lease
    (it was reclaimed, given back, or the task is done)."""


@dataclass(frozen=True)
class InterruptedAttempt:
    """An attempt an earlier controller left leased (it was killed or frozen), given back by
    :meth:`TaskQueue.recover`; its worker time is still to be billed."""

    task_id: str
    worker: str
    started_at: float
    seconds: float


class QueueStatus(StrEnum):
    """The state of a row."""

    PENDING = "pending"
    LEASED = "leased"
    DONE = "done"


class ReleaseOutcome(StrEnum):
    """What :meth:`TaskQueue.release` did with the task."""

    RETRY = "retry"  # back to pending, another worker may take it
    FINAL = "final"  # attempts used up: the given final record was committed


@dataclass(frozen=True)
class QueuedTask:
    """A task as the queue hands it out."""

    task_id: str
    attempts: int
    expected_seconds: float
    last_worker: str | None


class TaskQueue:
    """The run's queue. Safe to use from many threads (one connection per thread).

    Args:
        path: the SQLite file (created if missing).
        owner: this controller's identity; lease owners are ``<owner>/<worker>``.
        lease_seconds: how long a lease lives without a heartbeat.
        max_attempts: attempts a task gets before an infrastructure failure becomes final.
    """

    def __init__(
        self,
        path: Path,
        *,
        owner: str,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.path = path
        self.owner = owner
        self.lease_seconds = lease_seconds
        self.max_attempts = max_attempts
        self._local = threading.local()
        self.interrupted: list[InterruptedAttempt] = []  # filled by recover()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        with disk_errors(path):
            conn = self._conn()
            conn.executescript(_SCHEMA)
            _migrate_trials(conn)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    # --- connections ------------------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            # check_same_thread=False only so close() can close every thread's connection;
            # each connection is still used by the one thread that opened it.
            with disk_errors(self.path):
                conn = sqlite3.connect(
                    self.path, timeout=30.0, isolation_level=None, check_same_thread=False
                )
                try:
                    conn.row_factory = sqlite3.Row
                    conn.execute("PRAGMA journal_mode = WAL")
                    conn.execute("PRAGMA synchronous = FULL")
                    conn.execute("PRAGMA busy_timeout = 30000")
                except BaseException:
                    conn.close()
                    raise
            self._local.conn = conn
            with self._all_lock:
                self._all.append(conn)
        return conn

    @contextmanager
    def _tx(self, *, durable: bool = True) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        with disk_errors(self.path):
            # synchronous is the connection's: set only when this thread's last commit differed
            mode = "FULL" if durable else "NORMAL"
            if getattr(self._local, "synchronous", "FULL") != mode:
                conn.execute(f"PRAGMA synchronous = {mode}")
                self._local.synchronous = mode
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                # SQLite has already rolled back a transaction its disk refused (a full disk):
                # a second ROLLBACK would fail and hide why
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def close(self) -> None:
        """Close every connection this queue opened (call once the threads using it ended)."""
        with self._all_lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()

    def _lease_owner(self, worker: str) -> str:
        return f"{self.owner}/{worker}"

    # --- filling and recovering ---------------------------------------------------------------

    def add(self, tasks: Sequence[tuple[str, float]]) -> int:
        """Add ``(task_id, expected_seconds)`` rows that are not there yet; returns how many.

        ``task_id`` may be a trial's key (:func:`evals.results.trials.trial_key`); the row's
        ``trial`` column is set from it.
        """
        now = time.time()
        added = 0
        with self._tx() as conn:
            start = conn.execute("SELECT COALESCE(MAX(position), -1) + 1 FROM tasks").fetchone()[0]
            for offset, (task_id, expected) in enumerate(tasks):
                cur = conn.execute(
                    "INSERT OR IGNORE INTO tasks (task_id, position, status, expected_seconds,"
                    " updated_at, trial) VALUES (?, ?, 'pending', ?, ?, ?)",
                    (task_id, start + offset, float(expected), now, split_key(task_id)[1]),
                )
                added += cur.rowcount
        return added

    def spread_trials(self, task_id: str, worker: str) -> int:
        """Ask that the task's other pending trials go to other workers than ``worker``.

        Marks them as last run on ``worker``, which :meth:`peek_next` already serves after the
        others (the same preference that sends a retry elsewhere); with one worker left they
        still run there. Returns how many rows were marked.
        """
        base, _ = split_key(task_id)
        with self._tx() as conn:
            cur = conn.execute(
                "UPDATE tasks SET last_worker=? WHERE status='pending' AND last_worker IS NULL"
                " AND (task_id=? OR (trial > 1 AND substr(task_id, 1, ?)=?))",
                (worker, base, len(base) + len(SEPARATOR), base + SEPARATOR),
            )
            return cur.rowcount

    def recover(self) -> int:
        """Take back leases held by earlier controllers; returns how many tasks went to pending.

        Call while holding the run's lock (no other controller is alive). The interrupted attempt
        is given back (it says nothing about the task), and kept in :attr:`interrupted` so its
        worker time can be billed. Tasks a budget cap kept from running are pending again, so a
        resumed run with a higher cap runs them.
        """
        now = time.time()
        with self._tx() as conn:
            others = f"{self.owner}/%"
            rows = conn.execute(
                "SELECT task_id, attempts, history, lease_owner, lease_started_at,"
                " lease_expires_at FROM tasks"
                " WHERE status='leased' AND (lease_owner IS NULL OR lease_owner NOT LIKE ?)",
                (others,),
            ).fetchall()
            # The earlier controller's last sign of life: its latest lease or commit (every one
            # stamps updated_at), or a row's last heartbeat, whichever is later.
            last_seen = conn.execute("SELECT MAX(updated_at) FROM tasks").fetchone()[0]
            self.interrupted = []
            for row in rows:
                cut = _interrupted(row, now, self.lease_seconds, last_seen)
                if cut is None:
                    continue
                self.interrupted.append(cut)
                # Kept in the history, so a task that is interrupted again before it ends is
                # still billed for this attempt on the next resume (interrupted_seconds).
                history = json.loads(row["history"])
                history.append(AttemptRecord(
                    int(row["attempts"]), cut.worker, None,
                    "interrupted: the controller stopped during this attempt",
                    _iso(cut.started_at), _iso(cut.started_at + cut.seconds),
                ).to_json(reason=INTERRUPTED, worker_seconds=round(cut.seconds, 3)))
                conn.execute("UPDATE tasks SET history=? WHERE task_id=?",
                             (json.dumps(history), cut.task_id))
            cur = conn.execute(
                "UPDATE tasks SET status='pending', lease_owner=NULL, lease_expires_at=NULL,"
                " lease_started_at=NULL, attempts=MAX(attempts - 1, 0), updated_at=?"
                " WHERE status='leased' AND (lease_owner IS NULL OR lease_owner NOT LIKE ?)",
                (now, others),
            )
            moved = cur.rowcount
            cur = conn.execute(
                "UPDATE tasks SET status='pending', final_status=NULL, record=NULL,"
                " updated_at=? WHERE status='done' AND final_status='not_run'",
                (now,),
            )
            return moved + cur.rowcount

    def reopen_errors(self, error_types: Sequence[str]) -> list[str]:
        """Put done rows whose final record is an error of one of ``error_types`` back to
        pending, for ``run --rerun-errors``; returns their keys, in selection order.

        Nothing is replaced: the final record is appended to the row's history (with
        ``reason`` ``"rerun"``), so the new final record lists it among its earlier attempts,
        and the row gets a fresh count of attempts.
        """
        now = time.time()
        reopened = []
        with self._tx() as conn:
            rows = conn.execute(
                "SELECT task_id, record, history FROM tasks WHERE status='done'"
                " AND final_status='error' ORDER BY position"
            ).fetchall()
            for row in rows:
                record = json.loads(row["record"] or "{}")
                if record.get("error_type") not in error_types:
                    continue
                history = json.loads(row["history"])
                entry = TaskExecution.from_json(record).attempt().to_json(
                    reason="rerun", cost=record.get("cost") or {})
                last = history[-1] if history else {}
                if all(last.get(k) == entry[k] for k in ("attempt", "worker", "started_at")):
                    # a final attempt given back by release() is in the history already: it
                    # is marked, not listed twice
                    history[-1] = {**last, **entry}
                else:
                    history.append(entry)
                conn.execute(
                    "UPDATE tasks SET status='pending', final_status=NULL, record=NULL,"
                    " attempts=0, last_worker=NULL, history=?, updated_at=? WHERE task_id=?",
                    (json.dumps(history), now, row["task_id"]),
                )
                reopened.append(str(row["task_id"]))
        return reopened

    # --- leasing ------------------------------------------------------------------------------

    def _reclaim_expired(self, conn: sqlite3.Connection, now: float) -> None:
        # Only another controller's leases: our own may have expired while we were frozen, and
        # their attempts are still running here (fencing, see the module docstring).
        conn.execute(
            "UPDATE tasks SET status='pending', lease_owner=NULL, lease_expires_at=NULL,"
            " lease_started_at=NULL, updated_at=? WHERE status='leased' AND lease_expires_at < ?"
            " AND (lease_owner IS NULL OR lease_owner NOT LIKE ?)",
            (now, now, f"{self.owner}/%"),
        )

    def peek_next(self, worker: str) -> QueuedTask | None:
        """The task to hand ``worker`` next, without leasing it (then :meth:`lease` it).

        Longest expected first; a task that just failed on ``worker`` comes after the others, so
        a retry goes to another worker whenever another one is asking.
        """
        conn = self._conn()
        now = time.time()
        mine = f"{self.owner}/%"
        expired = conn.execute(
            "SELECT 1 FROM tasks WHERE status='leased' AND lease_expires_at < ?"
            " AND (lease_owner IS NULL OR lease_owner NOT LIKE ?) LIMIT 1", (now, mine)
        ).fetchone()
        if expired is None:
            # The usual case, in two index lookups (tasks_in_lease_order) instead of sorting
            # every pending row: about 2 ms per lease with 3,000 tasks, in the controller's
            # busiest lock. First a task that did not just fail here, else one that did.
            row = conn.execute(
                f"{_CANDIDATE} WHERE status='pending' AND (last_worker IS NULL OR last_worker != ?)"
                f" {_LEASE_ORDER}",
                (worker,),
            ).fetchone()
            if row is None:
                row = conn.execute(f"{_CANDIDATE} WHERE status='pending' {_LEASE_ORDER}").fetchone()
            return None if row is None else _queued(row)
        # Leases of a silent controller ran out: they are candidates too (lease() reclaims them).
        row = conn.execute(
            f"{_CANDIDATE} WHERE status='pending' OR (status='leased' AND lease_expires_at < ?"
            " AND (lease_owner IS NULL OR lease_owner NOT LIKE ?))"
            " ORDER BY (last_worker IS NOT NULL AND last_worker = ?) ASC,"
            " expected_seconds DESC, position ASC LIMIT 1",
            (now, mine, worker),
        ).fetchone()
        return None if row is None else _queued(row)

    def lease(self, task_id: str, worker: str) -> QueuedTask | None:
        """Lease one pending task to ``worker``; ``None`` if it is no longer pending.

        Committed without fsync (``synchronous=NORMAL``, see the module docstring): durable
        with the next fsynced commit of this queue.
        """
        now = time.time()
        with self._tx(durable=False) as conn:
            self._reclaim_expired(conn, now)
            cur = conn.execute(
                "UPDATE tasks SET status='leased', attempts=attempts + 1, lease_owner=?,"
                " lease_expires_at=?, lease_started_at=?, updated_at=?"
                " WHERE task_id=? AND status='pending'",
                (self._lease_owner(worker), now + self.lease_seconds, now, now, task_id),
            )
            if cur.rowcount != 1:
                return None
            row = conn.execute(f"{_CANDIDATE} WHERE task_id=?", (task_id,)).fetchone()
        return _queued(row)

    def heartbeat(self) -> int:
        """Push forward the expiry of this controller's leases; returns how many."""
        now = time.time()
        with self._tx() as conn:
            cur = conn.execute(
                "UPDATE tasks SET lease_expires_at=? WHERE status='leased'"
                " AND lease_owner LIKE ?",
                (now + self.lease_seconds, f"{self.owner}/%"),
            )
            return cur.rowcount

    # --- ending -------------------------------------------------------------------------------

    def release(
        self,
        task_id: str,
        worker: str,
        reason: str,
        *,
        attempt: dict[str, Any],
        final_record: dict[str, Any],
        lease: QueuedTask | None = None,
    ) -> ReleaseOutcome:
        """Give a task back after an infrastructure error or a timeout on ``worker``.

        ``attempt`` (worker, error, times) is appended to the task's history either way. If the
        task has attempts left it goes back to pending; otherwise ``final_record`` (with the
        history filled in) is committed as its final record, in the same transaction.

        Raises:
            AttemptFencedError: the task is not leased to ``worker`` (for that attempt, when
                ``lease`` is given) any more; nothing was written.
        """
        now = time.time()
        with self._tx() as conn:
            row = conn.execute(
                "SELECT attempts, history FROM tasks WHERE task_id=? AND status='leased'"
                " AND lease_owner=?",
                (task_id, self._lease_owner(worker)),
            ).fetchone()
            if row is None or (lease is not None and row["attempts"] != lease.attempts):
                raise AttemptFencedError(f"task {task_id} is not leased to {worker}")
            history = json.loads(row["history"])
            history.append({**attempt, "reason": reason})
            if row["attempts"] < self.max_attempts:
                conn.execute(
                    "UPDATE tasks SET status='pending', lease_owner=NULL, lease_expires_at=NULL,"
                    " lease_started_at=NULL, last_worker=?, history=?, updated_at=?"
                    " WHERE task_id=?",
                    (worker, json.dumps(history), now, task_id),
                )
                return ReleaseOutcome.RETRY
            self._finish(conn, task_id, final_record, history=json.dumps(history), now=now)
            return ReleaseOutcome.FINAL

    def complete(
        self,
        task_id: str,
        record: dict[str, Any],
        *,
        lease: QueuedTask | None = None,
        worker: str | None = None,
    ) -> None:
        """Commit a task's final record (the ``execution.json`` document) and mark it done.

        Given the attempt's ``lease`` (and its ``worker``), the commit is fenced: it happens only
        while the row still holds that lease. Without, any task not done yet is finished (a
        leftover given its record at the end of a run).

        Raises:
            AttemptFencedError: the lease was lost, or the task is done; nothing written.
        """
        with self._tx() as conn:
            if lease is not None:
                assert worker is not None, "a fenced commit names the attempt's worker"
                row = conn.execute(
                    "SELECT 1 FROM tasks WHERE task_id=? AND status='leased' AND lease_owner=?"
                    " AND attempts=?",
                    (task_id, self._lease_owner(worker), lease.attempts),
                ).fetchone()
            else:
                row = conn.execute(
                    "SELECT 1 FROM tasks WHERE task_id=? AND status!='done'", (task_id,)
                ).fetchone()
            if row is None:
                raise AttemptFencedError(
                    f"task {task_id} is no longer held by this attempt (taken over or done)"
                )
            self._finish(conn, task_id, record, history=None, now=time.time())

    def give_back(self, task_id: str, worker: str, lease: QueuedTask,
                  why: str = "interrupted: the run lost its pool during this attempt") -> bool:
        """Give an attempt's lease back without a result (the controller is stopping: the run's
        pool lease was lost; or the SSH path to its worker went down, :mod:`evals.run.paths`);
        the attempt is not counted, but its worker time is kept in the history as interrupted
        (``why``), to be billed on resume. False if the lease was not ours."""
        now = time.time()
        with self._tx() as conn:
            row = conn.execute(
                "SELECT history, lease_started_at FROM tasks WHERE task_id=? AND status='leased'"
                " AND lease_owner=? AND attempts=?",
                (task_id, self._lease_owner(worker), lease.attempts),
            ).fetchone()
            if row is None:
                return False
            history = json.loads(row["history"])
            started = float(row["lease_started_at"] or now)
            history.append(AttemptRecord(
                lease.attempts, worker, None,
                why, _iso(started), _iso(now),
            ).to_json(reason=INTERRUPTED, worker_seconds=round(max(0.0, now - started), 3)))
            conn.execute(
                "UPDATE tasks SET status='pending', lease_owner=NULL, lease_expires_at=NULL,"
                " lease_started_at=NULL, attempts=MAX(attempts - 1, 0), history=?, updated_at=?"
                " WHERE task_id=?",
                (json.dumps(history), now, task_id),
            )
            return True

    def _finish(
        self,
        conn: sqlite3.Connection,
        task_id: str,
        record: dict[str, Any],
        *,
        history: str | None,
        now: float,
    ) -> None:
        cur = conn.execute(
            "UPDATE tasks SET status='done', final_status=?, record=?, lease_owner=NULL,"
            " lease_expires_at=NULL, lease_started_at=NULL, history=COALESCE(?, history),"
            " updated_at=? WHERE task_id=? AND status!='done'",
            (str(record["status"]), json.dumps(record), history, now, task_id),
        )
        if cur.rowcount != 1:
            raise AttemptFencedError(f"task {task_id} is unknown or already done")

    # --- reading ------------------------------------------------------------------------------

    def task_ids(self) -> list[str]:
        """All task IDs in selection order."""
        rows = self._conn().execute("SELECT task_id FROM tasks ORDER BY position").fetchall()
        return [str(r["task_id"]) for r in rows]

    def ids_with_status(self, status: QueueStatus) -> list[str]:
        """Task IDs in a queue state, in selection order."""
        rows = self._conn().execute(
            "SELECT task_id FROM tasks WHERE status=? ORDER BY position", (status.value,)
        ).fetchall()
        return [str(r["task_id"]) for r in rows]

    def unfinished(self) -> bool:
        """Whether any task is still pending or leased (one index lookup, not a count of every
        row: the dispatch loops ask while they idle)."""
        row = self._conn().execute(
            "SELECT 1 FROM tasks WHERE status IN ('pending', 'leased') LIMIT 1"
        ).fetchone()
        return row is not None

    def interrupted_seconds(self) -> dict[str, list[tuple[str, float]]]:
        """Per unfinished task, the ``(worker, seconds)`` of its attempts interrupted by a
        controller that stopped (killed, frozen), to bill on resume: they ran on a worker."""
        out: dict[str, list[tuple[str, float]]] = {}
        rows = self._conn().execute(
            "SELECT task_id, history FROM tasks WHERE status != 'done'"
        ).fetchall()
        for row in rows:
            for entry in json.loads(row["history"]):
                if entry.get("reason") == INTERRUPTED:
                    out.setdefault(str(row["task_id"]), []).append(
                        (str(entry.get("worker") or ""), float(entry.get("worker_seconds") or 0))
                    )
        return out

    def history(self, task_id: str) -> list[dict[str, Any]]:
        """The earlier attempts of a task that were released (oldest first)."""
        row = self._conn().execute(
            "SELECT history FROM tasks WHERE task_id=?", (task_id,)
        ).fetchone()
        return [] if row is None else list(json.loads(row["history"]))

    def records(self) -> dict[str, dict[str, Any]]:
        """Every committed final record, by task ID, in selection order."""
        rows = self._conn().execute(
            "SELECT task_id, final_status, record FROM tasks WHERE status='done' ORDER BY position"
        ).fetchall()
        return {str(r["task_id"]): _final_record(r) for r in rows}


def check_resumable(path: Path) -> None:
    """A resumed run's queue, read without a write (before the run takes anything): it must be
    a queue (without it, finished tasks would run again) whose committed records this version
    reads.

    Raises:
        sqlite3.DatabaseError: missing, not SQLite, or without the queue's table.
        ValueError: a committed record is missing or has a final status this version does not
            write.
    """
    with _reading(path) as conn:
        for done in conn.execute(
            "SELECT task_id, final_status, record FROM tasks WHERE status='done'"
        ):
            _final_record(done)


def settled_records(
    path: Path, keys: Sequence[str], rerun_types: Sequence[str] = ()
) -> dict[str, dict[str, Any]] | None:
    """The committed records of a queue a resume would run nothing from, read without a
    write; ``None`` when it would run something: a key of ``keys`` (the run's tasks and
    trials) without a final record, a row pending or leased, a task a budget cap kept from
    running (:meth:`TaskQueue.recover` puts it back), or an error of one of ``rerun_types``
    (``--rerun-errors``: :meth:`TaskQueue.reopen_errors` puts it back).

    Raises:
        sqlite3.DatabaseError, ValueError: as :func:`check_resumable`.
    """
    with _reading(path) as conn:
        if conn.execute("SELECT 1 FROM tasks WHERE status != 'done' LIMIT 1").fetchone():
            return None
        rows = conn.execute(
            "SELECT task_id, final_status, record FROM tasks ORDER BY position").fetchall()
        records = {str(row["task_id"]): _final_record(row) for row in rows}
    if not set(keys) <= records.keys():
        return None
    for record in records.values():
        if record.get("status") == TaskStatus.NOT_RUN.value or (
                record.get("status") == TaskStatus.ERROR.value
                and record.get("error_type") in rerun_types):
            return None
    return records


@contextmanager
def _reading(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the queue at ``path``, checked to hold the queue's table.

    Raises:
        sqlite3.DatabaseError: missing, not SQLite, or without the queue's table.
    """
    if not path.is_file():
        raise sqlite3.DatabaseError("the file is missing")
    # Closed cleanly (no write-ahead log beside it), the file is the whole queue: read as
    # immutable, SQLite makes no -wal and -shm files (read-only, it would, and leave them).
    mode = "mode=ro" if path.with_name(f"{path.name}-wal").exists() else "immutable=1"
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?{mode}", uri=True)
    try:
        conn.row_factory = sqlite3.Row
        row = conn.execute(
            "SELECT COUNT(*) FROM sqlite_master WHERE type='table' AND name='tasks'"
        ).fetchone()
        if not row or row[0] != 1:
            raise sqlite3.DatabaseError("it holds no task queue")
        yield conn
    finally:
        conn.close()


def _iso(epoch: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch, UTC).isoformat()


def _interrupted(
    row: sqlite3.Row, now: float, lease_seconds: float, last_seen: float | None
) -> InterruptedAttempt | None:
    """The attempt behind an earlier controller's lease: from its start to the controller's last
    sign of life (the lease's last heartbeat, i.e. its expiry less the lease's length, or
    ``last_seen``, whichever is later; never past now)."""
    started, expires, owner = row["lease_started_at"], row["lease_expires_at"], row["lease_owner"]
    if started is None or expires is None:
        return None
    last_beat = min(now, max(float(expires) - lease_seconds, float(last_seen or 0.0)))
    worker = str(owner or "").split("/", 1)[-1]  # owners are "<controller>/<worker>"
    return InterruptedAttempt(str(row["task_id"]), worker, float(started),
                              max(0.0, last_beat - float(started)))


# --- migration 1 -> trials --------------------------------------------------------------------
#
# Added with ``--trials K``: rows are keyed by task and trial. The ``task_id`` column (the
# primary key) holds the trial's key (the task's ID for trial 1, ``<id>#<n>`` for trial n; see
# evals.results.trials) and the ``trial`` column its number. A queue from before has no ``trial``
# column: it is added here, every row being trial 1, so its run still resumes. The column's
# presence is the migration's marker (it runs once, and is a no-op on a queue that has it); it
# does not change ``user_version``, which the queue's own schema changes own.


def _migrate_trials(conn: sqlite3.Connection) -> None:
    columns = {str(row[1]) for row in conn.execute("PRAGMA table_info(tasks)")}
    if "trial" not in columns:
        conn.execute("ALTER TABLE tasks ADD COLUMN trial INTEGER NOT NULL DEFAULT 1")


def _queued(row: sqlite3.Row) -> QueuedTask:
    return QueuedTask(
        task_id=str(row["task_id"]),
        attempts=int(row["attempts"]),
        expected_seconds=float(row["expected_seconds"]),
        last_worker=row["last_worker"],
    )


def _final_record(row: sqlite3.Row) -> dict[str, Any]:
    """A committed record, refused (``ValueError``) when its final status is not one this
    version writes: read before anything of the run is rewritten, so a resume stops first."""
    from evals.results.records import TaskStatus

    known = {s.value for s in TaskStatus}
    record = json.loads(row["record"]) if row["record"] is not None else None
    if not isinstance(record, dict):
        raise ValueError(f"task {row['task_id']} is done without a record")
    for status in (row["final_status"], record.get("status")):
        if status not in known:
            raise ValueError(
                f"task {row['task_id']} has the final status {status!r}, not one of "
                f"{', '.join(sorted(known))}"
            )
    return dict(record)
