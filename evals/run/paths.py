"""The SSH path to a run's workers: an outage of it is waited out, never blamed on a worker.

Workers reached over SSH (every cloud pool's; a local pool's made with ``--ssh-via``) are
reached through tunnels to an SSH server, their *path*
(:attr:`waa_client.ssh.TunnelTarget.endpoint`, ``user@host:port``), which every worker behind it
shares. When that server stops answering for a moment (a network blip, sshd restarted by
unattended-upgrades), every request through it fails at once; counted against the tasks and
their workers, that quarantined the whole pool within a second.

The rule, one for every worker behind a tunnel (:class:`PathWatch`):

- an attempt that ended in error is the path's, not the worker's nor the task's, when its
  path was found down while it ran (by its own worker or one behind the same server: a request
  that timed out while the server was silent may be judged after it answers again), when its
  tunnel dropped during the attempt or cannot be opened again now, or its SSH server does not
  send its banner (it refuses or does not answer: :class:`waa_client.errors.SshUnreachableError`;
  the banner is asked for because a path that drops packets leaves a tunnel looking up until
  its keepalives give up, :func:`waa_client.ssh.probe_ssh`). The dispatcher gives it
  back to the queue uncounted (:meth:`evals.run.queue.TaskQueue.give_back`); it runs again
  once the path is back, and never twice. At most :data:`MAX_GIVE_BACKS` attempts of one task
  are given back so: a path that keeps going down and up within the patience then has its
  attempts counted as any failed attempt, not handed round for ever;
- while a path is down its workers take no task: each waits, re-opening its tunnel under the
  retry policy (:func:`waa_client.retry.call`: doubling waits, capped at
  :data:`RETRY_CAP_S`), and goes on as soon as it opens;
- a path down for longer than the patience (:data:`PATIENCE_ENV`, :data:`DEFAULT_PATIENCE_S`
  when unset; a timing knob of :mod:`oa_vm.kit.env_knobs`) raises
  :class:`evals.errors.SshPathLost` in its workers: the dispatcher quarantines them as one (a
  cloud host whose SSH server went with it is gone) and goes on behind the other paths, or, with
  no worker left behind another path, ends the run in one line naming the endpoint; the tasks
  left are run by ``--resume``. A lost path is still asked (at the capped pace) while the run
  goes on: when it answers again its workers come back to work (a host rebooted slower than the
  patience is not lost for the rest of a long sweep).

A worker dead behind a live path is not an outage: its tunnel stays up (the SSH server answers)
and its failures count as before (quarantine and host rules, :mod:`evals.run.dispatcher`). Nor
is an SSH server that answers but refuses the pool's key or shows another host key: no wait
mends that, and the ordinary rules apply.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evals.errors import SshPathLost
from oa_vm.kit.durations import format_duration
from oa_vm.kit.env_knobs import seconds
from waa_client import retry
from waa_client.errors import SshUnreachableError, TunnelError

if TYPE_CHECKING:
    from oa_vm import WorkerConnection
    from waa_client.ssh import TunnelTarget

GIVEN_BACK_PREFIX = "interrupted: the SSH endpoint "
"""How the history of an attempt a path's outage gave back begins (:meth:`PathWatch.at_fault`)."""

PATIENCE_ENV = "OA_EVALS_SSH_PATIENCE_S"
"""Seconds a run waits for an SSH path that went down before it stops."""

DEFAULT_PATIENCE_S = 300.0
"""Five minutes: longer than an sshd restart or a network blip, shorter than a user waits for
a sweep that makes no progress."""

PROBE_TIMEOUT_S = 10.0
"""How long the SSH server has to accept a connection and send its banner."""

RETRY_CAP_S = 10.0
"""The longest wait between two tries to re-open a tunnel: a path back is used within it."""

MAX_GIVE_BACKS = 3
"""How many attempts of one task a path's outages may give back uncounted: past it, an
attempt the path cut counts as any failed attempt (a path that goes down and up for good, each
time within the patience, must not hand one task round for ever)."""

_FIRST_WAIT_S = 0.5
_SLICE_S = 0.25  # how often a waiting worker looks whether the run stops or a sibling got through


def patience_s() -> float:
    """The patience for a path that went down: :data:`PATIENCE_ENV`, else five minutes (the
    console scripts refuse an unusable value before any command, :mod:`oa_vm.kit.env_knobs`)."""
    return seconds(PATIENCE_ENV, DEFAULT_PATIENCE_S)


def may_give_back(history: list[dict[str, Any]]) -> bool:
    """Whether a task whose earlier attempts are ``history`` (the queue's) may have one more
    given back uncounted: fewer than :data:`MAX_GIVE_BACKS` of them were given back so far."""
    given = sum(1 for entry in history
                if str(entry.get("error_message") or "").startswith(GIVEN_BACK_PREFIX))
    return given < MAX_GIVE_BACKS


def endpoint_of(worker: WorkerConnection) -> str | None:
    """The worker's path (``user@host:port`` of its SSH server); None when reached directly."""
    return None if worker.tunnel is None else worker.tunnel.target.endpoint


def _short(exc: BaseException) -> str:
    """An SSH error's first clause (what happened, without advice meant for one worker)."""
    return str(exc).split("; ")[0]


def _probe(target: TunnelTarget) -> None:
    """The SSH server of ``target`` sends its banner, or :class:`SshUnreachableError`."""
    from waa_client.ssh import probe_ssh  # paramiko's package: loaded once a tunnel exists

    probe_ssh(target.ssh_host, target.ssh_port, timeout=PROBE_TIMEOUT_S, worker=target.name)


def _follow(worker: WorkerConnection) -> None:
    """Point the worker's clients at its tunnel's local ports again: a tunnel re-opened binds
    the ports it had when they are still free, and new ones when another program took them
    meanwhile (a long outage); clients left on the old ports would blame the worker."""
    tunnel = worker.tunnel
    if tunnel is None or tunnel.local_ports == (0, 0):
        return
    waa_url, scoring_url = tunnel.local_waa_url, tunnel.local_scoring_url
    if (waa_url, scoring_url) != (worker.waa_url, worker.scoring_url):
        worker.waa_url, worker.scoring_url = waa_url, scoring_url
        worker.waa.base_url, worker.scoring.base_url = waa_url, scoring_url


@dataclass
class _Outage:
    since: float
    error: str
    workers: set[str] = field(default_factory=set)


class PathWatch:
    """Which SSH paths are down, and the wait for them (see the module docstring).

    Thread-safe: every dispatch loop asks it.

    Args:
        patience_s: How long a path may stay down before :meth:`wait_until_up` gives up.
        run_dir: The run folder (named by :class:`evals.errors.SshPathLost`).
        on_down: Called once per outage with the endpoint and a sentence about it.
        on_back: Called once per outage with the endpoint and how long it was down.
        clock: Monotonic seconds (a test's fake clock).
        probe: Raises :class:`SshUnreachableError` unless a target's SSH server sends its
            banner (:func:`waa_client.ssh.probe_ssh` by default).
    """

    def __init__(
        self,
        patience_s: float,
        run_dir: str,
        *,
        on_down: Callable[[str, str], None] | None = None,
        on_back: Callable[[str, float], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        probe: Callable[[TunnelTarget], None] | None = None,
    ) -> None:
        self.patience_s = patience_s
        self.run_dir = run_dir
        self.on_down = on_down or (lambda _endpoint, _detail: None)
        self.on_back = on_back or (lambda _endpoint, _seconds: None)
        self.clock = clock
        self.probe = probe or _probe
        self._lock = threading.Lock()
        self._down: dict[str, _Outage] = {}
        self._outages: dict[str, int] = {}  # outages of each endpoint so far (see mark)

    def mark(self, worker: WorkerConnection) -> tuple[int, int]:
        """What to hand :meth:`at_fault` after the attempt: the tunnel's reconnects and its
        path's outages so far (one in progress not counted: the attempt runs during it)."""
        tunnel, endpoint = worker.tunnel, endpoint_of(worker)
        if tunnel is None or endpoint is None:
            return (0, 0)
        with self._lock:
            ongoing = 1 if endpoint in self._down else 0
            return (tunnel.reconnects, self._outages.get(endpoint, 0) - ongoing)

    def is_down(self, worker: WorkerConnection) -> bool:
        """Whether the worker's path is known to be down (a sibling may have found it)."""
        endpoint = endpoint_of(worker)
        with self._lock:
            return endpoint is not None and endpoint in self._down

    def at_fault(self, worker: WorkerConnection, mark: tuple[int, int]) -> str | None:
        """After an attempt on ``worker`` ended in error: why the path is to blame (the reason
        its history keeps), or None when it is not (no tunnel, or a tunnel that stayed up).

        ``mark``: :meth:`mark` before the attempt. The tunnel is asked to be up (re-opened when
        it dropped) and its server for its banner; either failing marks the path down. An
        outage found since ``mark`` (by any worker behind the server, until this answer) makes
        the attempt the path's.
        """
        tunnel, endpoint = worker.tunnel, endpoint_of(worker)
        if tunnel is None or endpoint is None:
            return None
        reason = f"{GIVEN_BACK_PREFIX}{endpoint} went down during this attempt"
        reconnects, outages = mark

        def outage_since_mark() -> bool:
            with self._lock:
                return endpoint in self._down or self._outages.get(endpoint, 0) != outages

        if outage_since_mark():
            return reason
        try:
            tunnel.ensure()
        except SshUnreachableError as exc:
            self._went_down(endpoint, worker.name, exc)
            return reason
        except TunnelError:
            return None  # the server answers but refuses: not an outage (module docstring)
        _follow(worker)
        if tunnel.reconnects != reconnects:
            return reason  # it dropped during the attempt (and is open again)
        try:
            self.probe(tunnel.target)
        except SshUnreachableError as exc:  # up on this side only: packets are lost
            self._went_down(endpoint, worker.name, exc)
            return reason
        # a sibling may have found the outage while this tunnel was asked (and seen it end)
        return reason if outage_since_mark() else None

    def wait_until_up(self, worker: WorkerConnection, stop: threading.Event,
                      done: Callable[[], bool] = lambda: False, *, lost: bool = False) -> bool:
        """Block while the worker's path is down, re-opening its tunnel under the retry policy.

        ``done``: whether the run has nothing left for any worker (every task final): then
        there is nothing to wait for, and the run must not wait out the patience to end.
        ``lost``: the path was lost already (its workers quarantined): wait past the patience,
        for as long as the run goes on, so that they come back if it answers again.

        Returns:
            True once the tunnel is open (at once when the path is not down); False when
            ``stop`` was set meanwhile, or the run was ``done``.

        Raises:
            SshPathLost: the path stayed down longer than the patience.
        """
        tunnel, endpoint = worker.tunnel, endpoint_of(worker)
        if tunnel is None or endpoint is None or not self.is_down(worker):
            return True

        def left() -> float:
            if lost:
                return math.inf
            with self._lock:
                outage = self._down.get(endpoint)
                since = outage.since if outage is not None else self.clock()
            return since + self.patience_s - self.clock()

        def ended() -> bool:
            return stop.is_set() or done()

        def sleep(seconds: float) -> None:
            # in slices: the run may stop or end, or a sibling behind the same path get through
            end = self.clock() + min(seconds, max(0.0, left()))
            while self.clock() < end and not ended() and self.is_down(worker):
                stop.wait(min(_SLICE_S, max(0.0, end - self.clock())))

        def reopen() -> None:
            if ended():
                return
            try:
                self.probe(tunnel.target)
                tunnel.ensure()
            except SshUnreachableError as exc:
                self._went_down(endpoint, worker.name, exc)
                raise

        try:
            retry.call(reopen, attempts=1_000_000, backoff_max=RETRY_CAP_S,
                       first_wait=_FIRST_WAIT_S, sleep=sleep,
                       retryable=lambda e: (isinstance(e, SshUnreachableError)
                                            and not ended() and left() > 0))
        except SshUnreachableError as exc:
            if ended():
                return False
            raise self._lost(endpoint, exc) from None
        except TunnelError:
            pass  # it answers again, refusing: the ordinary rules take it from here
        if ended():
            return False
        _follow(worker)
        self._came_back(endpoint)
        return True

    def _went_down(self, endpoint: str, worker: str, exc: SshUnreachableError) -> None:
        with self._lock:
            outage = self._down.get(endpoint)
            first = outage is None
            if outage is None:
                outage = self._down[endpoint] = _Outage(self.clock(), _short(exc))
                self._outages[endpoint] = self._outages.get(endpoint, 0) + 1
            outage.workers.add(worker)
            outage.error = _short(exc)
        if first:
            self.on_down(endpoint, (
                f"{_short(exc)}; its workers take no task and their attempts are given back "
                f"uncounted until it answers (waiting up to {format_duration(self.patience_s)})"))

    def _came_back(self, endpoint: str) -> None:
        with self._lock:
            outage = self._down.pop(endpoint, None)
        if outage is not None:
            self.on_back(endpoint, self.clock() - outage.since)

    def _lost(self, endpoint: str, exc: SshUnreachableError) -> SshPathLost:
        with self._lock:
            outage = self._down.get(endpoint)
            workers = sorted(outage.workers) if outage is not None else []
            waited = self.clock() - outage.since if outage is not None else self.patience_s
        return SshPathLost(endpoint, workers, format_duration(waited), _short(exc), self.run_dir)
