"""Mutation run over the fences and what they guard: hand-written mutations, one at a time.

The modules: ``oa_vm/model/lease.py`` (the pool's lease and its fence), ``evals/run/queue.py`` (the
attempt fence of the task queue), ``evals/run/reset.py`` and ``oa_vm/model/snapshots.py`` (the clean
reset's proof), ``oa_vm/clouds/pulumi/reset.py`` (``reset.sh`` over SSH),
``oa_vm/kit/safe_fs.py`` (writes never through a link or into a device), ``oa_vm/kit/redact.py``
(secrets out of text) and ``evals/report/compare.py`` (the paired comparison). The mutations were
written from the code alone, before its tests were read: each is an edit a real change could
make (a dropped condition, a dropped argument, a swapped side), not one the tests were shaped
around.

Each mutant replaces one exact snippet (it must occur exactly once) and runs only its module's
tests (``pytest -x``: the first failure kills it), with a per-mutant timeout (a timeout counts as
killed: the suite noticed, by hanging; it is reported apart). A mutant whose snippet is no longer
in the module (the code moved on) is reported ``stale`` and left out of the rate, so the run
can be repeated after other changes land; rewrite those mutants against the new code. One that
cannot change behaviour is marked ``equivalent`` with the reason, and left out too.

Run from the repository root (the modules are edited in place and always restored; the run
refuses to start if one of them has uncommitted changes, so ``git checkout`` undoes an
interrupted run)::

    .venv/bin/python -m bench.mutate_fences                 # every module
    .venv/bin/python -m bench.mutate_fences --area queue
    .venv/bin/python -m bench.mutate_fences --id q3 --id l8
    .venv/bin/python -m bench.mutate_fences --list          # the mutants, run nothing

It prints one line per mutant and a table per module; ``--json PATH`` writes the results.
"""

# ruff: noqa: E501  (the snippets quote whole lines of the modules they mutate)

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parents[1]
MUTANT_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Mutant:
    """One change: in ``path``, ``old`` (exactly once) becomes ``new``."""

    id: str
    area: str
    path: str
    old: str
    new: str
    what: str
    equivalent: str = ""
    """Why the change cannot alter behaviour (then it is not counted), or empty."""


AREA_TESTS: dict[str, list[str]] = {}  # filled below the mutants

L, Q, R = "oa_vm/model/lease.py", "evals/run/queue.py", "evals/run/reset.py"
S, C, F = "oa_vm/model/snapshots.py", "oa_vm/clouds/pulumi/reset.py", "oa_vm/kit/safe_fs.py"
D, P = "oa_vm/kit/redact.py", "evals/report/compare.py"

MUTANTS: list[Mutant] = [
    # -- lease: the pool's lease and its fence --------------------------------------------------
    Mutant("l1", "lease", L,
           "        return not isinstance(recorded, (int, float)) or abs(started - recorded) < 1.0",
           "        return True",
           "a reused pid counts as the holder still alive (the pool is held for ever)"),
    Mutant("l2", "lease", L, "    return (now or time.time()) - beat < stale_after_s()",
           "    return True", "another host's lease never goes stale"),
    Mutant("l3", "lease", L,
           "        if (current is not None and not _ours(current, token) and holder_alive(current)\n"
           "                and not take_over):",
           "        if (current is not None and not _ours(current, token) and holder_alive(current)\n"
           "                ):",
           "pool-cleanup --force cannot take the lease from a live run"),
    Mutant("l4", "lease", L,
           "        if not _ours(current, token):\n            return False\n"
           "        assert current is not None\n",
           "        if current is None:\n            return False\n",
           "the heartbeat refreshes whatever lease is on file (a taken-over holder keeps beating "
           "the new holder's lease and never learns it lost)"),
    Mutant("l5", "lease", L,
           "    with _locked(pool):\n        if _ours(read_lease(pool), token):",
           "    with _locked(pool):\n        if read_lease(pool) is not None:",
           "a holder giving its lease back removes whoever holds it now"),
    Mutant("l6", "lease", L,
           "            if seen is not None and seen == self._verified:",
           "            if self._verified is not None:",
           "Hold.check trusts its first verification for ever"),
    Mutant("l7", "lease", L,
           "            if seen is not None and seen == self._verified:\n"
           "                if self._removing_file.exists():\n"
           "                    raise PoolRemovingError(self.pool)\n                return",
           "            if seen is not None and seen == self._verified:\n                return",
           "a verified lease skips the cleanup's marker"),
    Mutant("l8", "lease", L,
           "            if current is not None and _ours(current, self.token):",
           "            if current is not None:",
           "Hold.check accepts any lease on file, not only its own"),
    Mutant("l9", "lease", L,
           "                    if hold is not None:\n"
           "                        hold._lose(read_lease(pool))\n",
           "",
           "a heartbeat that finds the lease taken over does not mark the hold lost"),
    Mutant("l10", "lease", L, "    every = min(HEARTBEAT_S, stale_after_s() / 4.0)",
           "    every = HEARTBEAT_S",
           "the heartbeat ignores a staleness limit shorter than 40 s"),
    Mutant("l11", "lease", L, "        with contextlib.suppress(OSError):\n"
           "            release(pool, token)", "        pass",
           "a finished run keeps its lease (the next run waits for staleness)"),
    Mutant("l12", "lease", L, "            if fence is not None:\n                fence()\n", "",
           "save_fenced never calls the fence (a taken-over run saves a record that drops a "
           "worker)"),
    Mutant("l13", "lease", L,
           "            if removing(pool):\n                raise PoolRemovingError(pool)\n"
           "            if fence",
           "            if fence",
           "save_fenced writes after pool-cleanup began"),
    Mutant("l14", "lease", L,
           "        try_acquire(pool, operation, token, operation=operation, take_over=True)",
           "        pass",
           "a forced pool-cleanup leaves the run's lease in place (the run keeps writing)"),
    Mutant("l15", "lease", L,
           "    if holder is not None and held_by_this_process(holder):",
           "    if holder is not None and False:",
           "a run acting on its own pool is refused by its own lease"),
    Mutant("l16", "lease", L,
           '        state.atomic_write_text(state.pool_dir(pool) / REMOVING, f"{os.getpid()}\\n")',
           "        pass",
           "pool-cleanup does not mark the pool as being removed"),
    Mutant("l17", "lease", L, "    with fleet_lock(pool):\n        yield\n", "    yield\n",
           "pool-cleanup does not wait for a repair in progress"),
    Mutant("l18", "lease", L,
           "        if proc.status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):\n"
           "            return None\n",
           "",
           "a zombie controller holds its pool for ever"),
    Mutant("l19", "lease", L, "    return value if value > 0 else STALE_AFTER_S",
           "    return value", "a zero or negative staleness limit is taken as given"),
    Mutant("l20", "lease", L,
           "    if not state.exists(pool):\n        return False  # never recreate",
           "    if False:\n        return False  # never recreate",
           "the heartbeat of a removed pool recreates its folder"),
    # -- queue: the attempt fence -----------------------------------------------------------------
    Mutant("q1", "queue", Q,
           "\" lease_started_at=NULL, updated_at=? WHERE status='leased' AND lease_expires_at < ?\"\n"
           "            \" AND (lease_owner IS NULL OR lease_owner NOT LIKE ?)\",\n"
           "            (now, now, f\"{self.owner}/%\"),",
           "\" lease_started_at=NULL, updated_at=? WHERE status='leased' AND lease_expires_at < ?\",\n"
           "            (now, now),",
           "the controller reclaims its own expired leases (after a freeze, a task runs twice)"),
    Mutant("q2", "queue", Q,
           "\"SELECT 1 FROM tasks WHERE task_id=? AND status='leased' AND lease_owner=?\"\n"
           "                    \" AND attempts=?\",\n"
           "                    (task_id, self._lease_owner(worker), lease.attempts),",
           "\"SELECT 1 FROM tasks WHERE task_id=? AND status='leased' AND lease_owner=?\",\n"
           "                    (task_id, self._lease_owner(worker)),",
           "a fenced commit ignores the attempt number (a stale attempt on the same worker "
           "commits over the current one)"),
    Mutant("q3", "queue", Q,
           "\"SELECT 1 FROM tasks WHERE task_id=? AND status='leased' AND lease_owner=?\"\n"
           "                    \" AND attempts=?\",\n"
           "                    (task_id, self._lease_owner(worker), lease.attempts),",
           "\"SELECT 1 FROM tasks WHERE task_id=? AND status='leased'\"\n"
           "                    \" AND attempts=?\",\n"
           "                    (task_id, lease.attempts),",
           "a fenced commit ignores the worker"),
    Mutant("q4", "queue", Q,
           "            if row is None or (lease is not None and row[\"attempts\"] != lease.attempts):",
           "            if row is None:",
           "a release ignores the attempt number"),
    Mutant("q5", "queue", Q,
           "reason=INTERRUPTED, worker_seconds=round(max(0.0, now - started), 3)))",
           "reason=INTERRUPTED, worker_seconds=0.0))",
           "attempts given back when the pool is lost are billed 0 s"),
    Mutant("q6", "queue", Q,
           "\" lease_started_at=NULL, attempts=MAX(attempts - 1, 0), history=?, updated_at=?\"",
           "\" lease_started_at=NULL, history=?, updated_at=?\"",
           "an attempt given back (pool lost) is counted against the task"),
    Mutant("q7", "queue", Q,
           "\" AND lease_owner=? AND attempts=?\",\n"
           "                (task_id, self._lease_owner(worker), lease.attempts),",
           "\" AND lease_owner=?\",\n"
           "                (task_id, self._lease_owner(worker)),",
           "give_back ignores the attempt number"),
    Mutant("q8", "queue", Q,
           "\" WHERE status='leased' AND (lease_owner IS NULL OR lease_owner NOT LIKE ?)\",\n"
           "                (now, others),",
           "\" WHERE status='leased' AND ? IS NOT NULL\",\n                (now, others),",
           "recover takes back this controller's own leases too"),
    Mutant("q9", "queue", Q,
           "\" lease_started_at=NULL, attempts=MAX(attempts - 1, 0), updated_at=?\"",
           "\" lease_started_at=NULL, updated_at=?\"",
           "recover counts the interrupted attempt against the task"),
    Mutant("q10", "queue", Q, "                self.interrupted.append(cut)\n", "",
           "recover does not keep the interrupted attempts to bill"),
    Mutant("q11", "queue", Q,
           "    last_beat = min(now, max(float(expires) - lease_seconds, float(last_seen or 0.0)))",
           "    last_beat = min(now, float(expires) - lease_seconds)",
           "an interrupted attempt billed to its last heartbeat only, not the controller's last "
           "sign of life"),
    Mutant("q12", "queue", Q,
           "    last_beat = min(now, max(float(expires) - lease_seconds, float(last_seen or 0.0)))",
           "    last_beat = max(float(expires) - lease_seconds, float(last_seen or 0.0))",
           "an interrupted attempt billed past now"),
    Mutant("q13", "queue", Q,
           "\"UPDATE tasks SET lease_expires_at=? WHERE status='leased'\"\n"
           "                \" AND lease_owner LIKE ?\",",
           "\"UPDATE tasks SET lease_expires_at=? WHERE status='leased'\"\n"
           "                \" AND ? IS NOT NULL\",",
           "the heartbeat pushes forward every controller's leases"),
    Mutant("q14", "queue", Q, "            if row[\"attempts\"] < self.max_attempts:",
           "            if row[\"attempts\"] <= self.max_attempts:",
           "a task gets one attempt more than max_attempts"),
    Mutant("q15", "queue", Q,
           "\" updated_at=? WHERE task_id=? AND status!='done'\",",
           "\" updated_at=? WHERE task_id=?\",",
           "a done task's record can be replaced",
           equivalent="both callers select the row as not done (complete) or leased (release) "
                      "in the same transaction first"),
    Mutant("q16", "queue", Q, "            self._reclaim_expired(conn, now)\n", "",
           "an earlier controller's expired leases are never reclaimed"),
    Mutant("q17", "queue", Q,
           "\" lease_expires_at=?, lease_started_at=?, updated_at=?\"\n"
           "                \" WHERE task_id=? AND status='pending'\",",
           "\" lease_expires_at=?, lease_started_at=?, updated_at=?\"\n"
           "                \" WHERE task_id=?\",",
           "a task already leased can be leased again"),
    Mutant("q18", "queue", Q,
           "WHERE status='pending' AND (last_worker IS NULL OR last_worker != ?)",
           "WHERE status='pending' AND (last_worker IS NULL OR last_worker = ?)",
           "a retry prefers the worker it just failed on"),
    # -- reset: the clean reset's proof ---------------------------------------------------------
    Mutant("r1", "reset", R,
           "        ok = bool(expected) and token == expected and marker_gone",
           "        ok = bool(expected) and token == expected",
           "a clean reset counted clean with the after-snapshot marker still there"),
    Mutant("r2", "reset", R,
           "        ok = bool(expected) and token == expected and marker_gone",
           "        ok = bool(expected) and marker_gone",
           "a clean reset counted clean whatever token the guest shows"),
    Mutant("r3", "reset", R,
           "        if self._control is not None and self._connection is worker:",
           "        if self._control is not None:",
           "the snapshot control is cached across a replaced connection"),
    Mutant("r4", "reset", R,
           "            if held.snapshot:\n"
           "                # a simulated worker's state at start (no token yet): take from there\n"
           "                control.restore()\n",
           "",
           "the simulated worker is not put back to its start state before the token"),
    Mutant("r5", "reset", R, "        self._write_marker(worker)\n        ok =", "        ok =",
           "the marker is not written again after a restore (the next restore proves nothing)"),
    Mutant("r6", "reset", R, "            control.take(token)\n            self._write_marker(worker)",
           "            control.take(token)",
           "no marker after the first snapshot (the first restore proves nothing)"),
    Mutant("r7", "reset", R, "        if not held.token:", "        if True:",
           "the snapshot is taken again for every connection (a dirty machine becomes 'clean')"),
    Mutant("r8", "reset", R,
           "    if isinstance(exc, WaaError) and (exc.is_infrastructure or isinstance(exc, "
           "ServerError)):",
           "    if isinstance(exc, WaaError) and exc.is_infrastructure:",
           "a worker answering 5xx during the reset blames the task's setup"),
    Mutant("r9", "reset", R, "        if mode is ResetMode.CLEAN:\n            raise",
           "        if False:\n            raise",
           "--reset clean silently falls back to stock"),
    Mutant("r10", "reset", R,
           "        except NotFoundError:\n            marker_gone = True",
           "        except NotFoundError:\n            marker_gone = False",
           "the marker is never seen as gone"),
    Mutant("r11", "reset", R,
           "    return bool(fingerprint) and bool(fingerprint.get(\"ok\"))",
           "    return bool(fingerprint)",
           "any fingerprint counts as a good one in the summary"),
    Mutant("r12", "reset", R,
           "    split_workers = sorted(w for w, t in tokens.items() if len(t) > 1)",
           "    split_workers = sorted(w for w, t in tokens.items() if len(t) > 2)",
           "a worker that restored two different snapshots goes unnoticed"),
    # -- snapshots: the simulated worker's snapshot control -------------------------------------
    Mutant("s1", "snapshots", S,
           "worker): it cannot restore\", unsupported=True) from exc",
           "worker): it cannot restore\", unsupported=False) from exc",
           "a worker without snapshot endpoints is a failure, not 'cannot restore'",
           equivalent="no caller reads SnapshotError.unsupported: plan_resets falls back on "
                      "any SnapshotError at its check"),
    Mutant("s2", "snapshots", S,
           "        data = self._snapshot_call(\"GET\", \"/oa-vm/snapshot\")\n"
           "        return SnapshotState(bool(data.get(\"snapshot\")),",
           "        data = self._snapshot_call(\"GET\", \"/oa-vm/snapshot\")\n"
           "        return SnapshotState(True,",
           "a worker without a snapshot reads as holding one",
           equivalent="a simulated worker always holds its start state (taken when it starts); "
                      "the answer is never false"),
    Mutant("s3", "snapshots", S,
           "        return Restored(data.get(\"token\"), data.get(\"seconds\"))",
           "        return Restored(None, data.get(\"seconds\"))",
           "a restore forgets the token the host recorded"),
    Mutant("s4", "snapshots", S, "{\"token\": token})", "{\"token\": None})",
           "the take does not record the token"),
    Mutant("s5", "snapshots", S,
           "        except WaaError as exc:\n            raise SnapshotError(str(exc)) from exc\n",
           "",
           "a failed take or restore escapes as a WaaError (the reset maps only SnapshotError)"),
    Mutant("s6", "snapshots", S,
           "        data = self._snapshot_call(\"POST\", \"/oa-vm/restore\", {})",
           "        data = self._snapshot_call(\"GET\", \"/oa-vm/snapshot\")",
           "a restore that does nothing (asks, never restores)"),
    # -- cloud_reset: reset.sh over SSH -----------------------------------------------------------
    Mutant("c1", "cloud_reset", C,
           "            result = self.runner.run(self.ssh, command, SSH_TIMEOUT_S)",
           "            result = self.runner.run(self.ssh, command, None)  # type: ignore[arg-type]",
           "reset.sh over SSH without a timeout"),
    Mutant("c2", "cloud_reset", C, "(\"sudo\", \"-n\", self.script, *slot, *args)",
           "(\"sudo\", self.script, *slot, *args)",
           "sudo may prompt for a password (and wait for ever)"),
    Mutant("c3", "cloud_reset", C,
           "        if result.status == 3 or (result.status == 127 and not answer):",
           "        if result.status == 3:",
           "a host without reset.sh is a failure, not 'cannot restore'"),
    Mutant("c4", "cloud_reset", C, "        if result.status != 0 or not answer.get(\"ok\"):",
           "        if result.status != 0:",
           "a reset.sh that exits 0 with ok: false counts as done"),
    Mutant("c5", "cloud_reset", C,
           "        return SnapshotState(bool(data.get(\"token\")), data.get(\"token\"),",
           "        return SnapshotState(True, data.get(\"token\"),",
           "a host without a snapshot reads as holding one"),
    Mutant("c6", "cloud_reset", C,
           "            seconds = float(seconds) + float(data[\"wait_s\"])",
           "            seconds = float(seconds)",
           "the restore's time leaves out the wait for WAA"),
    Mutant("c7", "cloud_reset", C,
           "        except RemoteUnreachableError as exc:\n"
           "            raise SnapshotError(f\"cannot reach the worker's host: {exc}\") from exc",
           "        except RemoteUnreachableError:\n            raise",
           "an unreachable host escapes as another error (the reset maps only SnapshotError)"),
    Mutant("c8", "cloud_reset", C, "json.loads(lines[-1]) if lines else {}",
           "json.loads(lines[0]) if lines else {}",
           "the first line of reset.sh's output read as its answer, not the last"),
    # -- safe_fs: never through a link, never into a device -------------------------------------
    Mutant("f1", "safe_fs", F,
           "    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK",
           "    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK",
           "open_private without O_NOFOLLOW (a link swapped in after the check is followed)"),
    Mutant("f2", "safe_fs", F,
           "        if not stat.S_ISREG(os.fstat(fd).st_mode):\n"
           "            raise UnsafePathError(path, _NOT_REGULAR)\n",
           "",
           "open_private trusts what it opened (a pipe or device swapped in after the check)"),
    Mutant("f3", "safe_fs", F,
           "give a path in a folder\")\n    check_dir(parent, own_link=True)\n",
           "give a path in a folder\")\n",
           "an existing parent folder is not checked (another user's folder, a planted link)"),
    Mutant("f4", "safe_fs", F,
           "        if folder not in missing:\n            check_dir(folder, own_link=folder == top)",
           "        if folder not in missing:\n            pass",
           "ensure_dir does not check the folders that already exist"),
    Mutant("f5", "safe_fs", F,
           "    if stat.S_ISLNK(info.st_mode) and own_link and info.st_uid in (os.geteuid(), 0):",
           "    if stat.S_ISLNK(info.st_mode) and own_link:",
           "a root's symlink planted by another user is accepted"),
    Mutant("f6", "safe_fs", F,
           "        check_dir(Path(os.path.realpath(path)))\n        return",
           "        return",
           "a root's own symlink is accepted whatever it points at"),
    Mutant("f7", "safe_fs", F, "    if info.st_uid not in (os.geteuid(), 0):",
           "    if info.st_uid < 0:",
           "a folder owned by another user is accepted"),
    Mutant("f8", "safe_fs", F, "    if not stat.S_ISREG(info.st_mode):\n",
           "    if stat.S_ISDIR(info.st_mode):\n",
           "the regular-file check lets a device or a pipe through"),
    Mutant("f9", "safe_fs", F, "        if exc.errno == errno.ELOOP:", "        if False:",
           "a link swapped in after the check is reported as a failed write, not refused"),
    Mutant("f10", "safe_fs", F,
           "        if not append:\n            os.ftruncate(fd, 0)\n", "",
           "append=False no longer truncates"),
    # -- redact: secrets out of text ------------------------------------------------------------
    Mutant("d1", "redact", D, "key=len, reverse=True)", "key=len)",
           "registered secrets replaced shortest first (a longer one that contains it leaks)"),
    Mutant("d2", "redact", D,
           "_SIGNATURE = r\"(?i)(\\b(?:sig|signature)\\s*=\\s*)",
           "_SIGNATURE = r\"(?i)(\\b(?:signature)\\s*=\\s*)",
           "a SAS sig= value outside a URL's query is not masked"),
    Mutant("d3", "redact", D,
           "r\"(?i)(token|key|secret|pass|pwd|auth|sig|signature|credential|session|code)\"",
           "r\"(?i)(token|key|secret|pass|pwd|auth|signature|credential|session|code)\"",
           "a SAS sig= value in a URL is not masked"),
    Mutant("d4", "redact", D, "    if value and len(value) >= MIN_SECRET_LEN:", "    if value:",
           "a short registered value masks ordinary words"),
    Mutant("d5", "redact", D, "        netloc = f\"{MASK}@{shown}\"", "        pass",
           "a URL's user and password shown"),
    Mutant("d6", "redact", D, "    text = redact_worker_secrets(text)\n", "",
           "a worker's capability URL shown"),
    Mutant("d7", "redact", D, "    text = _rx.BEARER.sub(lambda m: m.group(1) + MASK, text)\n", "",
           "a bearer token shown"),
    Mutant("d8", "redact", D,
           "    r\"(?!s)[\\w-]{0,64}[\\\"']?\\s*[:=]\\s*[\\\"']?)([^\\s\\\"',;&}]{4,})\"",
           "    r\"[\\w-]{0,64}[\\\"']?\\s*[:=]\\s*[\\\"']?)([^\\s\\\"',;&}]{4,})\"",
           "counts such as tokens_in masked as if credentials"),
    Mutant("d9", "redact", D, "        return MASK if \"@\" in url else url", "        return url",
           "an unparsable URL with credentials shown whole"),
    Mutant("d10", "redact", D, "    text = _rx.AUTH_HEADER.sub(lambda m: m.group(1) + MASK, text)\n",
           "", "an Authorization header's value shown"),
    # -- compare: the paired comparison ---------------------------------------------------------
    Mutant("p1", "compare", P,
           "    better = [t for t in tasks if order(t, 1) > order(t, 0)]",
           "    better = [t for t in tasks if order(t, 1) < order(t, 0)]",
           "better-in-B lists the tasks that got worse"),
    Mutant("p2", "compare", P,
           "    b = math.fsum(math.fsum(y) / len(y) for _, y in values.values()) / n",
           "    b = math.fsum(math.fsum(y) / len(y) for _, y in values.values()) / (2 * n)",
           "B's rate divided by 2n, not n (the pooled rate itself moved to evals/results/stats.py)"),
    Mutant("p3", "compare", P,
           "    rate = stats.paired_difference([a for a, _ in success.values()],\n"
           "                                   [b for _, b in success.values()])",
           "    rate = stats.paired_difference([b for _, b in success.values()],\n"
           "                                   [a for a, _ in success.values()])",
           "the difference taken A minus B"),
    Mutant("p4", "compare", P, "            if score_b > score_a:\n                return \"improved\"",
           "            if score_b >= score_a:\n                return \"improved\"",
           "an unchanged score counts as improved"),
    Mutant("p5", "compare", P,
           "        if (a.status, a.error_type) == (b.status, b.error_type):",
           "        if a.status == b.status:",
           "an error of another type counts as the same"),
    Mutant("p6", "compare", P, "        only_b=[tid for tid in items_b if tid not in ids_a],",
           "        only_b=[],", "tasks only B recorded are not listed"),
    Mutant("p7", "compare", P, "        if not counted_a or not counted_b:\n            continue",
           "        if not counted_a and not counted_b:\n            continue",
           "a task one run did not count is paired"),
    Mutant("p8", "compare", P,
           "            side = \"better\" if ci.estimate > 0 else \"worse\"",
           "            side = \"better\" if ci.estimate < 0 else \"worse\"",
           "the verdict names the wrong run as better"),
    Mutant("p9", "compare", P,
           "    worse = [t for t in tasks if order(t, 1) < order(t, 0)]",
           "    worse = [t for t in tasks if order(t, 1) <= order(t, 0)]",
           "an unchanged task listed as worse in B (McNemar's direction moved to evals/results/stats.py)"),
]

AREA_TESTS.update({
    # the fast, by-construction tests first: -x stops a killed mutant there
    "lease": [
        "tests/unit/oa_vm/test_lease_fence.py",
        "tests/integration/test_pool_lease_guard.py",
        "tests/reliability/test_fencing_regressions.py",
    ],
    "queue": [
        "tests/unit/evals/test_queue_fence.py",
        "tests/unit/evals/test_queue.py",
        "tests/unit/evals/test_queue_contract.py",
        "tests/unit/evals/test_dispatch_faults.py",
    ],
    "reset": [
        "tests/unit/evals/test_reset.py",
        "tests/reliability/test_fencing_reset.py",
        "tests/integration/test_clean_reset_local.py",
    ],
    "snapshots": [
        "tests/unit/evals/test_reset.py",
        "tests/reliability/test_fencing_reset.py",
        "tests/integration/test_clean_reset_local.py",
    ],
    "cloud_reset": ["tests/unit/evals/test_reset.py", "tests/integration/test_cloud_reset_ssh.py"],
    "safe_fs": [
        "tests/unit/oa_vm/test_safe_fs.py",
        "tests/unit/oa_vm/test_safe_fs_races.py",
        "tests/reliability/test_files.py",
    ],
    "redact": [
        "tests/unit/oa_vm/test_redact_rules.py",
        "tests/unit/oa_vm/test_redact.py",
        "tests/reliability/test_secrets.py",
    ],
    "compare": ["tests/unit/evals/test_compare_paired.py", "tests/unit/evals/test_compare.py"],
})


@dataclass
class Result:
    """What one mutant did."""

    id: str
    area: str
    what: str
    outcome: str  # killed, timeout, survived, equivalent-*, stale, error
    seconds: float
    killer: str = ""


def _dirty(paths: set[str]) -> list[str]:
    done = subprocess.run(["git", "status", "--porcelain", "--", *sorted(paths)], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    return [line for line in done.stdout.splitlines() if line.strip()]


def _pytest(tests: list[str]) -> subprocess.CompletedProcess[str]:
    # one process, no xdist: the machine is shared, and -x stops at the first failure anyway
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--no-header",
         "-o", "addopts=", "-p", "no:randomly", *tests],
        cwd=ROOT, capture_output=True, text=True, timeout=MUTANT_TIMEOUT_S, check=False,
    )


def _first_failure(output: str) -> str:
    for line in output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line.split(" - ")[0].removeprefix("FAILED ").removeprefix("ERROR ")
    return ""


def _tests(area: str) -> list[str]:
    return [t for t in AREA_TESTS[area] if (ROOT / t).exists()]


def run(mutants: list[Mutant]) -> list[Result]:
    """Apply each mutant in turn, run its area's tests, restore the module."""
    originals: dict[str, str] = {}

    def restore(*_: object) -> None:
        for path, text in originals.items():
            (ROOT / path).write_text(text, encoding="utf-8")

    def on_signal(signum: int, frame: FrameType | None) -> None:
        restore()
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    results: list[Result] = []
    try:
        for mutant in mutants:
            original = originals.setdefault(
                mutant.path, (ROOT / mutant.path).read_text(encoding="utf-8"))
            count = original.count(mutant.old)
            if count != 1:
                result = Result(mutant.id, mutant.area, mutant.what, "stale", 0.0,
                                f"the snippet occurs {count} times")
                results.append(result)
                print(f"{mutant.id:<5} stale      {result.killer}", flush=True)
                continue
            (ROOT / mutant.path).write_text(original.replace(mutant.old, mutant.new),
                                            encoding="utf-8")
            began = time.monotonic()
            try:
                done = _pytest(_tests(mutant.area))
                outcome = "survived" if done.returncode == 0 else "killed"
                killer = _first_failure(done.stdout) if outcome == "killed" else ""
                if done.returncode not in (0, 1):  # collection or usage error: not a kill
                    outcome, killer = "error", done.stdout.strip().splitlines()[-1:][0:1]
                    killer = killer[0] if killer else f"pytest exit {done.returncode}"
            except subprocess.TimeoutExpired:
                outcome, killer = "timeout", f"no result in {MUTANT_TIMEOUT_S:.0f} s"
            finally:
                (ROOT / mutant.path).write_text(original, encoding="utf-8")
            if mutant.equivalent:
                outcome = f"equivalent-{outcome}"
            seconds = time.monotonic() - began
            results.append(Result(mutant.id, mutant.area, mutant.what, outcome, seconds, killer))
            print(f"{mutant.id:<5} {outcome:<10} {seconds:6.1f}s  {mutant.what}"
                  + (f"\n      by {killer}" if killer else ""), flush=True)
    finally:
        restore()
    return results


def summary(results: list[Result]) -> list[dict[str, object]]:
    """Per area: mutants, killed (timeouts included), survived, left out (equivalent, stale,
    error), and the survival rate over the counted ones."""
    rows: list[dict[str, object]] = []
    areas = [*AREA_TESTS, "all"]
    for area in areas:
        mine = [r for r in results if area in ("all", r.area)]
        if not mine:
            continue
        counted = [r for r in mine if r.outcome in ("killed", "timeout", "survived")]
        survived = [r for r in counted if r.outcome == "survived"]
        rows.append({
            "area": area, "mutants": len(mine),
            "killed": len(counted) - len(survived), "survived": len(survived),
            "left_out": len(mine) - len(counted),
            "survival": round(len(survived) / len(counted), 3) if counted else None,
            "survivors": [r.id for r in survived],
        })
    return rows


def main(argv: list[str] | None = None) -> int:
    """Run the mutants (all, or one area's) and print a table per area."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--area", choices=sorted(AREA_TESTS))
    parser.add_argument("--id", action="append", help="only these mutants (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if (args.area is None or m.area == args.area)
              and (not args.id or m.id in args.id)]
    if args.list:
        for m in chosen:
            text = (ROOT / m.path).read_text(encoding="utf-8")
            state = "" if text.count(m.old) == 1 else "  [stale]"
            print(f"{m.id:<5} {m.area:<12} {m.path}: {m.what}{state}")
        return 0
    dirty = _dirty({m.path for m in chosen})
    if dirty:
        print("refusing to mutate modules with uncommitted changes:\n  " + "\n  ".join(dirty),
              file=sys.stderr)
        return 2
    results = run(chosen)
    rows = summary(results)
    print(f"\n{'area':<12} {'mutants':>7} {'killed':>6} {'survived':>8} {'left out':>8} "
          f"{'survival':>8}  survivors")
    for row in rows:
        rate = "-" if row["survival"] is None else f"{float(row['survival']):.0%}"  # type: ignore[arg-type]
        print(f"{row['area']:<12} {row['mutants']:>7} {row['killed']:>6} {row['survived']:>8} "
              f"{row['left_out']:>8} {rate:>8}  {', '.join(row['survivors'])}")  # type: ignore[arg-type]
    if args.json:
        args.json.write_text(json.dumps({"results": [asdict(r) for r in results],
                                         "summary": rows}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
