"""The rule that tells a dead SSH path from a dead worker (:mod:`evals.run.paths`), on tunnels
whose SSH server is scripted: refused (down), answering, or refusing the key.

The drills through the real CLI and a real sshd are ``tests/integration/test_run_ssh_outage.py``;
these pin each branch of the rule, including the patience, on a fake clock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from evals.errors import SshPathLost
from evals.run.paths import DEFAULT_PATIENCE_S, PATIENCE_ENV, PathWatch, patience_s
from oa_vm.kit.env_knobs import knob_problem
from oa_vm.reach.connect import WorkerConnection
from waa_client import ScoringClient, WaaClient
from waa_client.errors import SshAuthenticationError, SshUnreachableError
from waa_client.ssh import TunnelTarget

ENDPOINT = "ubuntu@10.0.0.9:22"


class Clock:
    """Monotonic seconds that move only when something sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class ClockedStop(threading.Event):
    """A run's stop event whose waits move the fake clock instead of sleeping."""

    def __init__(self, clock: Clock) -> None:
        super().__init__()
        self.clock = clock

    def wait(self, timeout: float | None = None) -> bool:
        self.clock.now += timeout or 0.0
        return self.is_set()


@dataclass
class ScriptedTunnel:
    """A tunnel whose SSH server is up, down (refuses) or refusing the key, as the test says;
    ``ensure`` re-opens it when it dropped, counting reconnects as the real ones do."""

    target: TunnelTarget
    server: str = "up"  # "up", "down" (refuses), "silent" (drops packets) or "refusing" (keys)
    healthy: bool = True
    reconnects: int = 0
    tries: list[float] = field(default_factory=list)
    clock: Clock | None = None
    back_after: int | None = None
    """The server answers again from this try on."""
    port: int = 9
    taken: bool = False
    """The local port was taken meanwhile: the next reconnect binds another."""

    @property
    def local_ports(self) -> tuple[int, int]:
        return (self.port, self.port + 1)

    @property
    def local_waa_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def local_scoring_url(self) -> str:
        return f"http://127.0.0.1:{self.port + 1}"

    def answer(self) -> None:
        """The probe of its server (each call one try): a banner unless down or silent."""
        if self.clock is not None:
            self.tries.append(self.clock())
        if self.back_after is not None and len(self.tries) >= self.back_after:
            self.server = "up"
        if self.server in ("down", "silent"):
            raise SshUnreachableError(f"SSH to worker {self.target.name} at 10.0.0.9:22: no SSH "
                                      "handshake within 10s")

    during_ensure: Callable[[], None] | None = None
    """What happens elsewhere while this tunnel is asked (a sibling's judgement)."""

    def ensure(self) -> None:
        if self.during_ensure is not None:
            self.during_ensure()
        if self.healthy:
            return
        if self.server == "down":
            raise SshUnreachableError(f"SSH to worker {self.target.name} at 10.0.0.9:22: "
                                      "connection refused; check the worker is running")
        if self.server == "refusing":
            raise SshAuthenticationError("user 'ubuntu' refused with key k")
        self.healthy = True
        self.reconnects += 1
        if self.taken:
            self.port += 100


def _worker(name: str, tunnel: ScriptedTunnel | None) -> WorkerConnection:
    waa, scoring = "http://127.0.0.1:9", "http://127.0.0.1:10"
    return WorkerConnection(name, WaaClient(waa), ScoringClient(scoring), waa, scoring,
                            tunnel=tunnel)  # type: ignore[arg-type]


def _tunnel(name: str, clock: Clock | None = None) -> ScriptedTunnel:
    return ScriptedTunnel(TunnelTarget(name, "10.0.0.9", 22, "ubuntu", Path("k")), clock=clock)


def _watch(clock: Clock, events: list[tuple[str, str]], *tunnels: ScriptedTunnel,
           patience: float = 60.0) -> PathWatch:
    """A watch whose probe asks the scripted server of the tunnel its target names."""
    by_name = {t.target.name: t for t in tunnels}

    def probe(target: TunnelTarget) -> None:
        by_name[target.name].answer()

    return PathWatch(patience, "results/run-1",
                     on_down=lambda ep, detail: events.append(("down", ep)),
                     on_back=lambda ep, seconds: events.append(("back", ep)), clock=clock,
                     probe=probe)


def test_a_worker_reached_directly_or_behind_a_live_path_is_judged_as_before() -> None:
    clock, events = Clock(), []
    up, refusing = _tunnel("w1"), _tunnel("w2")
    watch = _watch(clock, events, up, refusing)
    direct = _worker("w0", None)
    assert watch.at_fault(direct, watch.mark(direct)) is None
    # the SSH server answers and the tunnel stayed up: the worker behind it failed
    live = _worker("w1", up)
    assert watch.at_fault(live, watch.mark(live)) is None
    # it answers but refuses the key: no outage to wait out
    refusing.healthy, refusing.server = False, "refusing"
    assert watch.at_fault(_worker("w2", refusing), (0, 0)) is None
    assert events == [] and not watch.is_down(live)


def test_a_tunnel_that_dropped_during_the_attempt_blames_the_path_even_once_it_is_back() -> None:
    clock, events = Clock(), []
    tunnel = _tunnel("w0")
    watch = _watch(clock, events, tunnel)
    worker = _worker("w0", tunnel)
    mark = watch.mark(worker)
    tunnel.healthy = False  # dropped, and the server answers again at once
    assert ENDPOINT in (watch.at_fault(worker, mark) or "")
    assert tunnel.reconnects == 1 and events == []


def test_a_dead_path_is_marked_down_once_for_every_worker_behind_it_and_waited_out() -> None:
    clock, events = Clock(), []
    first, second = _tunnel("w0", clock), _tunnel("w1", clock)
    watch = _watch(clock, events, first, second)
    w0, w1 = _worker("w0", first), _worker("w1", second)
    for tunnel in (first, second):
        tunnel.healthy, tunnel.server = False, "down"
    assert watch.at_fault(w0, (0, 0)) is not None
    assert watch.is_down(w1), "a sibling behind the same SSH server waits too"
    assert watch.at_fault(w1, (0, 0)) is not None
    assert events == [("down", ENDPOINT)]

    first.back_after = 3  # two tries refused, the third gets through
    assert watch.wait_until_up(w0, ClockedStop(clock))
    assert events == [("down", ENDPOINT), ("back", ENDPOINT)]
    assert not watch.is_down(w1)
    # at once, then after tenacity's doubling waits (0.5 s, 1 s)
    assert first.tries == pytest.approx([0.0, 0.5, 1.5], abs=0.3)


def _found_down(
    patience: float = 60.0,
) -> tuple[Clock, ScriptedTunnel, PathWatch, WorkerConnection]:
    """A worker whose SSH server refuses, its path found down by an attempt's judgement."""
    clock = Clock()
    tunnel = _tunnel("w0", clock)
    watch = _watch(clock, [], tunnel, patience=patience)
    tunnel.healthy, tunnel.server = False, "down"
    worker = _worker("w0", tunnel)
    assert watch.at_fault(worker, (0, 0)) is not None
    return clock, tunnel, watch, worker


def test_a_path_down_past_the_patience_ends_in_one_line_naming_the_endpoint() -> None:
    clock, tunnel, watch, worker = _found_down(patience=30.0)
    with pytest.raises(SshPathLost) as lost:
        watch.wait_until_up(worker, ClockedStop(clock))
    line = str(lost.value)
    assert "\n" not in line and ENDPOINT in line and "did not answer for 30s" in line
    assert "--resume --run-name run-1" in line and "w0" in line
    assert lost.value.exit_code == 4
    # the retries were capped and the last came at the patience's end, not after it
    assert tunnel.tries[-1] == pytest.approx(30.0, abs=0.3)
    assert max(b - a for a, b in zip(tunnel.tries, tunnel.tries[1:], strict=False)) <= 10.0 + 0.3


def test_a_server_that_stops_answering_behind_a_tunnel_still_up_is_a_dead_path() -> None:
    # a path that drops packets: the SSH connection has not noticed (its keepalives have not
    # given up) and the local ports accept, but the server sends no banner
    clock, events = Clock(), []
    tunnel = _tunnel("w0", clock)
    watch = _watch(clock, events, tunnel)
    worker = _worker("w0", tunnel)
    tunnel.server = "silent"
    assert ENDPOINT in (watch.at_fault(worker, watch.mark(worker)) or "")
    assert events == [("down", ENDPOINT)] and watch.is_down(worker)
    tunnel.back_after = 3
    assert watch.wait_until_up(worker, ClockedStop(clock))
    assert events == [("down", ENDPOINT), ("back", ENDPOINT)] and tunnel.reconnects == 0


def test_a_run_that_stops_ends_the_wait() -> None:
    clock, _, watch, worker = _found_down()
    stop = ClockedStop(clock)
    stop.set()
    assert watch.wait_until_up(worker, stop) is False


def test_a_run_whose_tasks_all_ended_ends_the_wait_before_the_patience() -> None:
    # the path's workers have nothing left to do once every task is final (run behind other
    # paths): waiting out the patience only delayed the run's end, then stopped it as lost
    clock, tunnel, watch, worker = _found_down(patience=300.0)
    assert watch.wait_until_up(worker, ClockedStop(clock), lambda: len(tunnel.tries) >= 3) is False
    assert len(tunnel.tries) == 3 and clock.now < 300.0


def test_the_patience_is_a_timing_knob(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PATIENCE_ENV, raising=False)
    assert patience_s() == DEFAULT_PATIENCE_S == 300.0
    monkeypatch.setenv(PATIENCE_ENV, "90")
    assert patience_s() == 90.0 and knob_problem() is None
    for bad in ("soon", "0", "-5"):
        monkeypatch.setenv(PATIENCE_ENV, bad)
        assert PATIENCE_ENV in (knob_problem() or "")


def test_a_tunnel_reopened_on_other_ports_takes_the_workers_clients_with_it() -> None:
    clock, events = Clock(), []
    tunnel = _tunnel("w0", clock)
    watch = _watch(clock, events, tunnel)
    worker = _worker("w0", tunnel)
    tunnel.healthy, tunnel.server, tunnel.taken = False, "down", True
    assert watch.at_fault(worker, (0, 0)) is not None
    tunnel.back_after = 3
    assert watch.wait_until_up(worker, ClockedStop(clock))
    assert tunnel.port == 109
    assert (worker.waa_url, worker.scoring_url) == ("http://127.0.0.1:109",
                                                    "http://127.0.0.1:110")
    assert worker.waa.base_url == "http://127.0.0.1:109"
    assert worker.scoring.base_url == "http://127.0.0.1:110"


def test_an_attempt_that_ran_while_its_path_was_down_is_the_paths_even_judged_after() -> None:
    # w1's request timed out while the server was silent; w0 found the path down and saw it
    # come back before w1's attempt was judged: it is still the path's
    clock, events = Clock(), []
    first, second = _tunnel("w0", clock), _tunnel("w1", clock)
    watch = _watch(clock, events, first, second)
    w0, w1 = _worker("w0", first), _worker("w1", second)
    mark = watch.mark(w1)
    first.server = second.server = "silent"
    assert watch.at_fault(w0, watch.mark(w0)) is not None
    first.back_after = len(first.tries) + 1
    assert watch.wait_until_up(w0, ClockedStop(clock))
    second.server = "up"
    assert events == [("down", ENDPOINT), ("back", ENDPOINT)]
    assert ENDPOINT in (watch.at_fault(w1, mark) or "")
    # an attempt begun after the outage is judged by the ordinary rules again
    assert watch.at_fault(w1, watch.mark(w1)) is None
    # one begun while it was down (its loop had looked just before), judged once it is back
    first.server, first.back_after = "silent", None
    assert watch.at_fault(w0, watch.mark(w0)) is not None
    begun_during = watch.mark(w1)
    first.back_after = len(first.tries) + 1
    assert watch.wait_until_up(w0, ClockedStop(clock))
    assert ENDPOINT in (watch.at_fault(w1, begun_during) or "")


def test_an_outage_a_sibling_finds_and_sees_end_while_this_attempt_is_judged_is_the_paths() -> None:
    clock, events = Clock(), []
    first, second = _tunnel("w0", clock), _tunnel("w1", clock)
    watch = _watch(clock, events, first, second)
    w0, w1 = _worker("w0", first), _worker("w1", second)
    mark = watch.mark(w1)

    def sibling_finds_and_ends_it() -> None:
        second.during_ensure = None
        first.server = "silent"
        assert watch.at_fault(w0, watch.mark(w0)) is not None
        first.back_after = len(first.tries) + 1
        assert watch.wait_until_up(w0, ClockedStop(clock))

    second.during_ensure = sibling_finds_and_ends_it
    assert ENDPOINT in (watch.at_fault(w1, mark) or "")
    assert events == [("down", ENDPOINT), ("back", ENDPOINT)]
