"""What ``oa-vm pool-wait``, ``pool-resume`` and ``pool-repair`` show while workers start.

On a terminal a live table redrawn in place with ``rich`` (imported only then): how many workers
are ready, time elapsed and left before the timeout, and per worker its state, its phase, the
time spent in that phase and its last log line. Anywhere else (a pipe, a log, CI, or beside
``--json``) the plain heartbeat lines of :class:`oa_vm.cli.pool_options.Heartbeat`, and no terminal
control code.

Both views also take the command's own progress lines (``view.echo``: "replaced worker-1",
"az vm start 3 VM(s)"...): the live display prints them above the table, so that they neither
tear the redrawn table nor get lost.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from oa_vm.kit.durations import format_duration

if TYPE_CHECKING:
    from oa_vm.model.state import PoolRecord

class WaitView(Protocol):
    """What a wait shows: each pass's pool state (``view(record)``) and progress lines."""

    echo: Callable[[str], None]
    """Shows one progress line of the command."""

    def __call__(self, record: PoolRecord) -> None:
        """Take the pool's new state (called by the wait after every pass)."""
        ...


class LiveWait:
    """The pool's workers redrawn in place on a terminal (a live region)."""

    def __init__(self, timeout_s: float) -> None:
        from oa_vm.kit.live_display import LiveRegion

        self.timeout_s = timeout_s
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._record: PoolRecord | None = None
        self._phase: dict[str, tuple[str, float]] = {}  # worker -> (phase, since)
        self._region = LiveRegion(sys.stdout, self._render)
        self.echo: Callable[[str], None] = self._print

    def _print(self, line: str) -> None:
        """A progress line, printed above the live table (which is then drawn again)."""
        self._region.print_above(line, soft_wrap=True)

    def __call__(self, record: PoolRecord) -> None:
        """Take the pool's new state (called by the wait after every pass)."""
        now = time.monotonic()
        with self._lock:
            self._record = record
            for worker in record.workers:
                phase = worker.phase or worker.state.value
                if self._phase.get(worker.name, ("", 0.0))[0] != phase:
                    self._phase[worker.name] = (phase, now)
        self._region.refresh()

    def _render(self) -> Any:
        from oa_vm.kit.live_display import table_view, text_view

        with self._lock:
            record = self._record
            phases = dict(self._phase)
        now = time.monotonic()
        elapsed = now - self.started
        left = format_duration(max(0.0, self.timeout_s - elapsed))
        if record is None:
            return text_view(f"waiting for the pool's workers | elapsed "
                             f"{format_duration(elapsed)} | time left {left}")
        ready = sum(1 for w in record.workers if w.state.value == "ready")
        head = (f"Pool {record.name}: {ready}/{len(record.workers)} ready | elapsed "
                f"{format_duration(elapsed)} | time left {left}")
        rows = []
        for worker in record.workers:
            phase, since = phases.get(worker.name, (worker.phase or worker.state.value, now))
            rows.append([worker.name, worker.state.value, phase,
                         format_duration(now - since), worker.detail or ""])
        return table_view(head, ("WORKER", "STATE", "PHASE", "IN PHASE", "DETAIL"), rows,
                          no_wrap=("DETAIL",))

    def close(self) -> None:
        """Draw the last state and leave it on screen (nothing, if no pass was made)."""
        with self._lock:
            keep = self._record is not None
        self._region.close(keep=keep)


@contextmanager
def wait_display(
    echo: Callable[[str], None], timeout_s: float, *, plain: bool = False
) -> Iterator[WaitView]:
    """The ``on_update`` callback for :func:`oa_vm.api.wait_pool`: live on a terminal, the
    plain heartbeat (through ``echo``) otherwise or when ``plain`` (``--json``); a live display
    is closed (its last state kept) on the way out."""
    from oa_vm.kit.live_display import wants_live

    if plain or not wants_live():
        from oa_vm.cli.pool_options import Heartbeat

        yield Heartbeat(echo)
        return
    live = LiveWait(timeout_s)
    try:
        yield live
    finally:
        live.close()
