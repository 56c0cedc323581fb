"""``run --repair``: a quarantined worker is replaced from the pool, and goes back to work.

Without it a worker quarantined for infrastructure reasons (its process killed, its instance
terminated or evicted, unreachable) is simply dropped, and the queue hands its tasks to the
survivors. With it, the dispatch loop of that worker asks a :class:`WorkerRepairer` for a
replacement (``oa-vm pool-repair`` for that worker: same name, a new process or instance) and
continues with it, while the other workers carry on. A worker left out when the run started
(not ready, or silent to the start's probe: :func:`evals.run.pools.connect_pools`) has such a
loop too, which asks for its replacement first (:class:`evals.run.dispatcher.Dispatcher`'s
``left_out``).

Repairs are serialised (they update the pool's record) and bounded: a worker is replaced at
most ``max_repairs`` times in one run, so a worker that keeps failing is dropped in the end.

Cleanup wins: every record this repairer writes goes through :func:`oa_vm.model.lease.save_fenced`
and every repair carries the run's lease (``fence``), so once ``pool-cleanup`` has begun (or the
lease was taken over) nothing is started or saved; the error (:class:`oa_vm.model.lease.
PoolRemovingError`, :class:`oa_vm.model.lease.LeaseLostError`) is passed on to the dispatcher, which
stops the run, instead of being taken as one worker that could not be replaced.

A *draining* worker (a spot notice) is replaced before it ends: given the run's drain check
(``draining``), a watcher thread asks the pool for a replacement as soon as a worker is under
notice (``oa-vm pool-repair``: a new worker under a new name, :mod:`oa_vm.fleet`), while the
draining worker finishes its task. When that task is over, its dispatch loop asks for its
replacement: the draining worker is retired and the loop goes on with the new worker, which
has been starting meanwhile.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING

import oa_vm
from oa_vm import LeaseLostError, PoolRecord, PoolRemovingError, WorkerConnection, save_fenced

if TYPE_CHECKING:
    from evals.run.settings import RunConfig
    from waa_client.ssh import ForwardingTunnel

log = logging.getLogger(__name__)

DEFAULT_MAX_REPAIRS = 2
DEFAULT_REPAIR_TIMEOUT_S = 900.0


class WorkerRepairer:
    """Replaces workers of one pool and returns connections to the replacements.

    Args:
        pool: The pool's name.
        config: The run's options: a replacement's clients connect and read as the others.
        max_repairs: Replacements of one worker at most.
        timeout_s: How long to wait for a replacement to become ready.
        draining: The run's drain check (e.g. :class:`oa_vm.reach.drain.DrainWatch`); given, a
            thread starts a replacement for each worker under notice right away.
        watch_interval_s: Seconds between two passes of that thread.
        fence: The run's lease check (:meth:`oa_vm.model.lease.Hold.check`), asked before each
            repair and each record written.
    """

    def __init__(
        self,
        pool: str,
        config: RunConfig,
        *,
        max_repairs: int = DEFAULT_MAX_REPAIRS,
        timeout_s: float = DEFAULT_REPAIR_TIMEOUT_S,
        draining: Callable[[str], object | None] | None = None,
        watch_interval_s: float = 1.0,
        fence: Callable[[], None] | None = None,
    ) -> None:
        self.pool = pool
        self.fence = fence
        self.config = config
        self.max_repairs = max_repairs
        self.timeout_s = timeout_s
        self.repairs: dict[str, int] = {}
        self._replaced_at: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stack = ExitStack()
        self.draining = draining
        self.watch_interval_s = watch_interval_s
        self._noticed: set[str] = set()
        self._closed = threading.Event()
        self._watcher: threading.Thread | None = None
        if draining is not None:
            self._watcher = threading.Thread(target=self._watch, name="drain-replacements",
                                             daemon=True)
            self._watcher.start()

    def _watch(self) -> None:
        """Start a replacement for every worker under notice, without waiting for it."""
        from oa_vm import DrainNotice, WorkerState, mark_draining

        assert self.draining is not None
        while not self._closed.wait(self.watch_interval_s):
            try:
                with self._lock:  # the record is read and written by repairs too
                    if self._closed.is_set():
                        return
                    record = oa_vm.pool_status(self.pool, save=self._save)
                    chain = oa_vm.replaced_by(record)
                    noticed = []
                    for worker in record.workers:
                        if (worker.state not in (WorkerState.READY, WorkerState.DRAINING)
                                or worker.name in chain or worker.name in self._noticed):
                            continue
                        notice = self.draining(worker.name)
                        if isinstance(notice, DrainNotice):
                            # recorded here, so the repair does not depend on its own refresh
                            # reading the notice again (over SSH, at most so often)
                            mark_draining(worker, notice)
                            noticed.append(worker.name)
                    if not noticed:
                        continue
                    self._save(record)
                    # tried once here; if it fails, the worker's loop asks again after its task
                    self._noticed.update(noticed)
                    log.info("starting replacements for draining %s", ", ".join(noticed))
                    # named, and marked draining above: they get new workers beside them (a
                    # lost worker is left to its own loop, which asks for it when it must)
                    _, started = oa_vm.repair_pool(self.pool, workers=noticed, wait=False,
                                                   fence=self.fence)
                    now = time.monotonic()
                    for name in started:
                        self._replaced_at[name] = now
            except (PoolRemovingError, LeaseLostError) as exc:
                log.warning("%s", exc)  # the dispatcher's own checks stop the run
                return
            except Exception as exc:  # the run goes on; the loop asks again when it must
                log.warning("could not start a replacement for a draining worker: %s", exc)

    def _retire_leftovers(self) -> None:
        """At the end of the run, retire the replaced draining workers still in the pool (their
        loops ended without asking, e.g. because the queue was empty)."""
        try:
            record = oa_vm.pool_status(self.pool, save=self._save)
            names = [n for n in oa_vm.replaced_by(record) if n in self._noticed
                     and any(w.name == n for w in record.workers)]
            if names:
                oa_vm.repair_pool(self.pool, workers=names, wait=False, fence=self.fence)
        except Exception as exc:  # the run's results are what matters here
            log.warning("could not retire the draining workers: %s", exc)

    def __call__(self, worker: str) -> WorkerConnection | None:
        """Replace ``worker`` (and any other lost worker) and connect to it; None on failure."""
        asked = time.monotonic()
        with self._lock:
            # every request counts, replaced or not: a worker that cannot be replaced (or
            # keeps failing once replaced) is dropped after max_repairs tries
            if self.repairs.get(worker, 0) >= self.max_repairs:
                log.warning("worker %s was replaced %d times already; dropping it", worker,
                            self.max_repairs)
                return None
            self.repairs[worker] = self.repairs.get(worker, 0) + 1
            try:
                replaced = self._replace(worker, asked)
            except (PoolRemovingError, LeaseLostError):
                raise  # not this worker's problem: the run must stop (see the module)
            except Exception as exc:  # a failed repair must not end the run
                log.warning("could not replace worker %s: %s", worker, exc)
                return None
            if replaced is None:
                return None
            try:
                return self._connect(*replaced)
            except Exception as exc:  # its tunnel did not open (a path still down): as above
                log.warning("could not reach worker %s once replaced: %s", worker, exc)
                return None

    def _replace(self, worker: str, asked: float) -> tuple[object, str] | None:
        """The pool's record once ``worker`` was replaced, and the name of the worker that now
        stands for it (itself, or a new worker for a draining one); None if not replaced."""
        from oa_vm import WorkerState

        if self._replaced_at.get(worker, 0.0) > asked:
            # replaced meanwhile, together with another lost worker: just reconnect
            return oa_vm.pool_status(self.pool, save=self._save), worker
        record = oa_vm.pool_status(self.pool, save=self._save)
        present = {w.name for w in record.workers}
        if worker not in present:  # retired meanwhile (e.g. by pool-repair): its successor
            target = oa_vm.successor(record, worker)
            if target == worker or target not in present:
                return None
            return oa_vm.wait_pool(self.pool, timeout_s=self.timeout_s, workers=[target],
                                 save=self._save), target
        names = sorted({worker, *(w.name for w in record.workers
                                  if w.state == WorkerState.LOST)})
        record, replaced = oa_vm.repair_pool(
            self.pool, workers=names, wait=True, timeout_s=self.timeout_s, fence=self.fence
        )
        now = time.monotonic()
        for name in replaced:
            self._replaced_at[name] = now
        target = oa_vm.successor(record, worker)
        if target != worker:
            # A draining worker, replaced under a new name; its last task is over (its loop
            # asks only then): retire it now rather than when the cloud ends it.
            if worker in {w.name for w in record.workers}:
                record, _ = oa_vm.repair_pool(self.pool, workers=[worker], wait=True,
                                              timeout_s=self.timeout_s, fence=self.fence)
            return record, target
        if worker not in replaced:
            log.warning("worker %s could not be replaced (its instance is still there)", worker)
            return None
        return record, worker

    def _save(self, record: PoolRecord) -> None:
        save_fenced(record, self.fence)

    def _connect(self, record: object, worker: str) -> WorkerConnection | None:
        from oa_vm import PoolRecord, WorkerState, known_hosts_path, tunnel_target
        from waa_client import ScoringClient, WaaClient

        assert isinstance(record, PoolRecord)
        found = next((w for w in record.workers if w.name == worker), None)
        if found is None or found.state != WorkerState.READY:
            return None
        tunnel: ForwardingTunnel | None = None
        if found.ssh is not None:
            from waa_client.ssh import make_tunnel

            tunnel = make_tunnel(tunnel_target(found), known_hosts_path(record.name))
            tunnel.start()
            self._stack.callback(tunnel.stop)
            waa_url, scoring_url = tunnel.local_waa_url, tunnel.local_scoring_url
        else:
            assert found.waa_url and found.scoring_url
            waa_url, scoring_url = found.waa_url, found.scoring_url
        connect, read = self.config.connect_timeout_s, self.config.read_timeout_s
        waa = WaaClient(waa_url, connect_timeout=connect, read_timeout=read)
        scoring = ScoringClient(scoring_url, connect_timeout=connect, read_timeout=read)
        self._stack.callback(waa.close)
        self._stack.callback(scoring.close)
        return WorkerConnection(worker, waa, scoring, waa_url, scoring_url,
                                egress=record.settings.get("egress"), host=found.host,
                                tunnel=tunnel)

    def close(self) -> None:
        """Stop the drain watcher; close every client and tunnel opened for replacements."""
        self._closed.set()
        if self._watcher is not None:
            self._watcher.join(timeout=self.timeout_s)
            with self._lock:
                self._retire_leftovers()
        self._stack.close()
