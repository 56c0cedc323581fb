"""``run --repair``: a quarantined worker is replaced from the pool, and goes back to work.

Without it a worker quarantined for infrastructure reasons (its process killed, its instance
terminated or evicted, unreachable) is simply dropped, and the queue hands its tasks to the
survivors. With it, the dispatch loop of that worker asks a :class:`WorkerRepairer` for a
replacement (``oa-vm pool-repair`` for that worker: same name, a new process or instance) and
continues with it, while the other workers carry on.

Repairs are serialised (they update the pool's record) and bounded: a worker is replaced at
most ``max_repairs`` times in one run, so a worker that keeps failing is dropped in the end.
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import ExitStack

from oa_vm.connect import WorkerConnection

log = logging.getLogger(__name__)

DEFAULT_MAX_REPAIRS = 2
DEFAULT_REPAIR_TIMEOUT_S = 900.0


class WorkerRepairer:
    """Replaces workers of one pool and returns connections to the replacements.

    Args:
        pool: The pool's name.
        connect_timeout: Seconds to connect to a worker (as the run's other clients).
        read_timeout: Seconds to wait for a worker's answer.
        max_repairs: Replacements of one worker at most.
        timeout_s: How long to wait for a replacement to become ready.
    """

    def __init__(
        self,
        pool: str,
        *,
        connect_timeout: float = 5.0,
        read_timeout: float = 60.0,
        max_repairs: int = DEFAULT_MAX_REPAIRS,
        timeout_s: float = DEFAULT_REPAIR_TIMEOUT_S,
    ) -> None:
        self.pool = pool
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.max_repairs = max_repairs
        self.timeout_s = timeout_s
        self.repairs: dict[str, int] = {}
        self._replaced_at: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stack = ExitStack()

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
                record = self._replace(worker, asked)
            except Exception as exc:  # a failed repair must not end the run
                log.warning("could not replace worker %s: %s", worker, exc)
                return None
            if record is None:
                return None
            return self._connect(record, worker)

    def _replace(self, worker: str, asked: float) -> object | None:
        """The pool's record once ``worker`` was replaced (None if it was not)."""
        from oa_vm import api, fleet
        from oa_vm.state import WorkerState

        if self._replaced_at.get(worker, 0.0) > asked:
            # replaced meanwhile, together with another lost worker: just reconnect
            return api.pool_status(self.pool)
        record = api.pool_status(self.pool)
        names = sorted({worker, *(w.name for w in record.workers
                                  if w.state == WorkerState.LOST)})
        record, replaced = fleet.repair_pool(
            self.pool, workers=names, wait=True, timeout_s=self.timeout_s
        )
        now = time.monotonic()
        for name in replaced:
            self._replaced_at[name] = now
        if worker not in replaced:
            log.warning("worker %s could not be replaced (its instance is still there)", worker)
            return None
        return record

    def _connect(self, record: object, worker: str) -> WorkerConnection | None:
        from oa_vm.connect import known_hosts_path, tunnel_target
        from oa_vm.state import PoolRecord, WorkerState
        from waa_client import ScoringClient, WaaClient

        assert isinstance(record, PoolRecord)
        found = next((w for w in record.workers if w.name == worker), None)
        if found is None or found.state != WorkerState.READY:
            return None
        if found.ssh is not None:
            from waa_client.tunnel import make_tunnel

            tunnel = make_tunnel(tunnel_target(found), known_hosts_path(record.name))
            tunnel.start()
            self._stack.callback(tunnel.stop)
            waa_url, scoring_url = tunnel.local_waa_url, tunnel.local_scoring_url
        else:
            assert found.waa_url and found.scoring_url
            waa_url, scoring_url = found.waa_url, found.scoring_url
        waa = WaaClient(waa_url, connect_timeout=self.connect_timeout,
                        read_timeout=self.read_timeout)
        scoring = ScoringClient(scoring_url, connect_timeout=self.connect_timeout,
                                read_timeout=self.read_timeout)
        self._stack.callback(waa.close)
        self._stack.callback(scoring.close)
        return WorkerConnection(worker, waa, scoring, waa_url, scoring_url)

    def close(self) -> None:
        """Close every client and tunnel opened for replacements."""
        self._stack.close()
