"""The dispatcher's handling of a worker that fails resets or setups, in process, against
scripted HTTP workers on loopback: a setup failure is retried once elsewhere before it is final,
and a worker whose resets keep failing is quarantined and charged with its errors.

Order is made deterministic, not waited for: ``healthy`` holds its first task (its first reset
waits) until ``broken`` has ended two attempts. Otherwise a busy machine could let ``healthy``
finish every task before ``broken`` came back for a second one, and ``broken`` would never reach
its quarantine threshold.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

import pytest

from evals.agents.noop import NoopAgent
from evals.errors import SshPathLost
from evals.results.events import EventKind, RunEvent
from evals.results.ledger import Ledger
from evals.results.records import RunFolder, TaskInfo
from evals.run.paths import GIVEN_BACK_PREFIX, MAX_GIVE_BACKS
from evals.run.queue import TaskQueue
from evals.run.runner import Dispatcher, RunConfig
from oa_vm.reach.connect import WorkerConnection
from tests.support.http_servers import PNG_1PX, Reply, ScriptedServer
from waa_client import ScoringClient, WaaClient
from waa_client.errors import SshUnreachableError, WorkerUnreachableError
from waa_client.http import no_retry_waits

if TYPE_CHECKING:
    from waa_client.ssh import ForwardingTunnel

VERDICT = Reply.json({"score": 0.0, "success": False, "reason": "noop"})
TASKS = {f"t{i}": {"id": f"t{i}", "instruction": "x", "config": [],
                   "evaluator": {"func": "exact_match"}} for i in range(4)}
GATE_DEADLINE_S = 60.0  # generous: only a dispatcher that never retries comes near it
QUARANTINE_AFTER = 2


class BrokenTurn:
    """Opens once ``broken`` has ended ``QUARANTINE_AFTER`` attempts (the dispatcher's events
    say so), or at the safety deadline; records which of the two opened it."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._ended = 0
        self.opened_by: str | None = None

    def on_event(self, event: RunEvent) -> None:
        """The dispatcher's sink: counts the attempts ``broken`` ended (retried or final)."""
        if event.worker == "broken" and event.kind in (EventKind.TASK_RETRY,
                                                      EventKind.TASK_FINISHED):
            with self._cond:
                self._ended += 1
                self._cond.notify_all()

    def wait(self) -> None:
        """Block until ``broken`` had its turn (or the deadline passed)."""
        with self._cond:
            done = self._cond.wait_for(lambda: self._ended >= QUARANTINE_AFTER,
                                       timeout=GATE_DEADLINE_S)
            if self.opened_by is None:
                self.opened_by = "broken's turn" if done else "the deadline"


class HeldWaaClient(WaaClient):
    """``healthy``'s WAA client: each reset first waits for ``broken``'s turn."""

    def __init__(self, url: str, turn: BrokenTurn) -> None:
        super().__init__(url, read_timeout=30, connect_timeout=10)
        self._turn = turn

    def close_all(self, timeout: float | None = None) -> None:
        """Waits for ``broken``'s turn (at once after it), then resets as the real one does."""
        self._turn.wait()
        super().close_all(timeout)


@dataclass
class Pool:
    """The two workers and the gate that orders them."""

    connections: list[WorkerConnection]
    turn: BrokenTurn


def _waa_routes(reset_ok: bool) -> dict[str, Reply | list[Reply]]:
    reset = Reply(200, b"ok", "text/plain") if reset_ok else Reply.json(
        {"status": "error", "message": "profile folder missing"}, 400)
    return {
        "/setup/close_all": reset,
        "/setup/clear_task_files": reset,
        "/obs_winagent": Reply.json({"image": base64.b64encode(PNG_1PX).decode()}),
        "/accessibility": Reply.json({"AT": "<root/>"}),
    }


@pytest.fixture
def workers() -> Iterator[Pool]:
    with ScriptedServer(_waa_routes(False)) as bad_waa, ScriptedServer(
        _waa_routes(True)
    ) as good_waa, ScriptedServer(
        {"/setup": Reply.json({"status": "success", "results": []}), "/evaluate": VERDICT}
    ) as scoring, no_retry_waits():
        turn = BrokenTurn()
        made = []
        for name, waa in (("broken", bad_waa), ("healthy", good_waa)):
            client = (HeldWaaClient(waa.url, turn) if name == "healthy"
                      else WaaClient(waa.url, read_timeout=30, connect_timeout=10))
            made.append(WorkerConnection(
                name=name, waa=client,
                scoring=ScoringClient(scoring.url, read_timeout=30, connect_timeout=10),
                waa_url=waa.url, scoring_url=scoring.url,
            ))
        yield Pool(made, turn)


def test_reset_failures_are_retried_elsewhere_and_quarantine_the_worker(
    tmp_path: Path, workers: Pool
) -> None:
    folder = RunFolder(tmp_path / "run")
    folder.path.mkdir()
    queue = TaskQueue(folder.queue_path, owner="t", max_attempts=3)
    queue.add([(tid, 1.0) for tid in TASKS])
    infos = {tid: TaskInfo(tid, "d", "x", False) for tid in TASKS}
    # task_timeout_s outlasts the gate's deadline: healthy's wait is inside its first task
    dispatcher = Dispatcher(
        folder, queue, Ledger(None), workers.connections, TASKS, infos, NoopAgent,
        RunConfig(pool=None, selection="all", agent="noop", max_steps=2, task_timeout_s=300,
                  quarantine_after=QUARANTINE_AFTER),
        on_event=workers.turn.on_event,
    )
    try:
        outcome = dispatcher.run()
        records = queue.records()
    finally:
        queue.close()
    # the order came from broken's turn, never from the safety deadline
    assert workers.turn.opened_by == "broken's turn"
    assert outcome.quarantined == ["broken"]
    assert len(records) == 4
    # every task ended where the desktop works: scored, never a setup error
    assert {r["status"] for r in records.values()} == {"failure"}
    assert {r["worker"] for r in records.values()} == {"healthy"}
    failed_here = [a for r in records.values() for a in r["previous_attempts"]
                   if a["worker"] == "broken"]
    assert failed_here and {a["error_type"] for a in failed_here} == {"setup"}


CLOSED = "http://127.0.0.1:9"
"""Nothing listens there: every request fails at once."""


def _queued(tmp_path: Path, task_ids: list[str]) -> tuple[RunFolder, TaskQueue]:
    """A run folder and its queue holding ``task_ids`` (one attempt each)."""
    folder = RunFolder(tmp_path / "run")
    folder.path.mkdir()
    queue = TaskQueue(folder.queue_path, owner="t", max_attempts=1)
    queue.add([(tid, 1.0) for tid in task_ids])
    return folder, queue


def _unreachable(name: str, tunnel: object = None) -> WorkerConnection:
    """A worker whose every request fails at once (behind ``tunnel`` when given)."""
    return WorkerConnection(
        name=name, waa=WaaClient(CLOSED, read_timeout=5, connect_timeout=5),
        scoring=ScoringClient(CLOSED, read_timeout=5, connect_timeout=5),
        waa_url=CLOSED, scoring_url=CLOSED, tunnel=cast("ForwardingTunnel | None", tunnel))


def _run_or_stop(dispatcher: Dispatcher) -> list[object]:
    """Run ``dispatcher`` in a thread: its outcome in a list, or an empty list when it was
    still running at the deadline (then stopped, before the queue closes under it)."""
    ended: list[object] = []
    runner = threading.Thread(target=lambda: ended.append(dispatcher.run()), daemon=True)
    runner.start()
    runner.join(timeout=GATE_DEADLINE_S)
    if runner.is_alive():
        dispatcher._stop.set()
        runner.join(timeout=GATE_DEADLINE_S)
        ended.clear()
    return ended


def test_a_path_that_keeps_flapping_gives_a_task_back_three_times_then_counts_its_attempts(
    tmp_path: Path,
) -> None:
    # A worker whose every attempt the SSH path is blamed for (its outage seen each time, back
    # each time within the patience): the task is given back uncounted at most MAX_GIVE_BACKS
    # times, then its attempt counts and the task ends; without the bound it is handed round for
    # ever (the thread below would outlive its deadline).
    folder, queue = _queued(tmp_path, ["t0"])
    worker = _unreachable("flapping")
    given_back: list[RunEvent] = []
    dispatcher = Dispatcher(
        folder, queue, Ledger(None), [worker], {"t0": TASKS["t0"]},
        {"t0": TaskInfo("t0", "d", "x", False)}, NoopAgent,
        RunConfig(pool=None, selection="all", agent="noop", max_steps=2, task_timeout_s=60,
                  quarantine_after=QUARANTINE_AFTER),
        on_event=lambda e: given_back.append(e) if e.kind is EventKind.TASK_GIVEN_BACK else None,
    )
    blamed = f"{GIVEN_BACK_PREFIX}user@127.0.0.1:22 went down during this attempt"
    dispatcher._paths.at_fault = lambda _worker, _mark: blamed  # type: ignore[method-assign]
    with no_retry_waits():
        ended = _run_or_stop(dispatcher)
    try:
        assert ended, "the task was handed round for ever"
        records = queue.records()
        history = queue.history("t0")
    finally:
        queue.close()
    assert len(given_back) == MAX_GIVE_BACKS
    assert records["t0"]["status"] == "error"
    assert records["t0"]["error_type"] == "infrastructure"
    # three given back uncounted, then the one attempt max_attempts allows, counted
    assert [h["error_message"] for h in history[:MAX_GIVE_BACKS]] == [blamed] * MAX_GIVE_BACKS
    assert [h["reason"] for h in history[:MAX_GIVE_BACKS]] == ["interrupted"] * MAX_GIVE_BACKS
    assert len(history) == MAX_GIVE_BACKS + 1 and history[-1]["reason"] != "interrupted"


def test_a_worker_whose_path_is_lost_is_replaced_with_repair_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    # One worker behind an SSH server that never answers again (a cloud host gone, its sshd with
    # it); with --repair its replacement (a new host: reached directly here) runs every task.
    # Before, the path lost past the patience stopped the run, and --repair was never asked.
    folder, queue = _queued(tmp_path, list(TASKS))
    infos = {tid: TaskInfo(tid, "d", "x", False) for tid in TASKS}
    endpoint = "user@127.0.0.1:22"
    gone = _unreachable("w0", SimpleNamespace(target=SimpleNamespace(endpoint=endpoint)))
    asked: list[str] = []
    events: list[RunEvent] = []
    with ScriptedServer(_waa_routes(True)) as waa, ScriptedServer(
        {"/setup": Reply.json({"status": "success", "results": []}), "/evaluate": VERDICT}
    ) as scoring, no_retry_waits():

        def repair(name: str) -> WorkerConnection:
            asked.append(name)
            return WorkerConnection(
                name=name, waa=WaaClient(waa.url, read_timeout=30, connect_timeout=10),
                scoring=ScoringClient(scoring.url, read_timeout=30, connect_timeout=10),
                waa_url=waa.url, scoring_url=scoring.url)

        dispatcher = Dispatcher(
            folder, queue, Ledger(None), [gone], TASKS, infos, NoopAgent,
            RunConfig(pool=None, selection="all", agent="noop", max_steps=2, task_timeout_s=60,
                      quarantine_after=QUARANTINE_AFTER),
            on_event=events.append, repair=repair,
        )
        blamed = f"{GIVEN_BACK_PREFIX}{endpoint} went down during this attempt"
        paths = dispatcher._paths
        paths.at_fault = (  # type: ignore[method-assign]
            lambda worker, _mark: blamed if worker is gone else None)
        paths.is_down = lambda worker: worker is gone  # type: ignore[method-assign]

        def never_back(_worker: object, _stop: object, _done: object = None,
                       **_kwargs: object) -> bool:
            raise SshPathLost(endpoint, ["w0"], "3s", "connection refused", str(folder.path))

        paths.wait_until_up = never_back  # type: ignore[method-assign]
        try:
            outcome = dispatcher.run()
            records = queue.records()
        finally:
            queue.close()
    assert asked == ["w0"]
    assert outcome.quarantined_hosts == [] and outcome.quarantined == []
    assert len(records) == len(TASKS)
    assert {r["status"] for r in records.values()} == {"failure"}  # scored (noop's verdict)
    lost = [e for e in events if e.kind is EventKind.HOST_QUARANTINED]
    assert [e.worker for e in lost] == [endpoint]
    assert lost[0].detail is not None and "replaced from the pool" in lost[0].detail


def test_the_run_ends_when_every_task_is_done_while_a_path_is_still_down(tmp_path: Path) -> None:
    # One worker's path is down for good and another worker, reached directly, runs every task:
    # the run ends then. Before, the down path's worker waited out the patience (here ten
    # minutes: the thread below would outlive its deadline) before the run could end.
    folder, queue = _queued(tmp_path, list(TASKS))
    infos = {tid: TaskInfo(tid, "d", "x", False) for tid in TASKS}

    def refused(*_args: object) -> None:
        raise SshUnreachableError("SSH to worker w0 at 127.0.0.1:22: connection refused")

    endpoint = "user@127.0.0.1:22"
    down = _unreachable("w0", SimpleNamespace(
        target=SimpleNamespace(endpoint=endpoint, name="w0"), reconnects=0,
        local_ports=(0, 0), ensure=refused))
    with ScriptedServer(_waa_routes(True)) as waa, ScriptedServer(
        {"/setup": Reply.json({"status": "success", "results": []}), "/evaluate": VERDICT}
    ) as scoring, no_retry_waits():
        healthy = WorkerConnection(
            name="w1", waa=WaaClient(waa.url, read_timeout=30, connect_timeout=10),
            scoring=ScoringClient(scoring.url, read_timeout=30, connect_timeout=10),
            waa_url=waa.url, scoring_url=scoring.url)
        dispatcher = Dispatcher(
            folder, queue, Ledger(None), [down, healthy], TASKS, infos, NoopAgent,
            RunConfig(pool=None, selection="all", agent="noop", max_steps=2, task_timeout_s=60,
                      quarantine_after=QUARANTINE_AFTER), path_patience_s=600.0,
        )
        dispatcher._paths.probe = refused  # type: ignore[method-assign]
        ended = _run_or_stop(dispatcher)
    try:
        assert ended, "the run waited for the down path with every task done"
        records = queue.records()
    finally:
        queue.close()
    assert len(records) == len(TASKS)
    assert {r["worker"] for r in records.values()} == {"w1"}


class PathWaaClient(WaaClient):
    """A worker's WAA client behind a path: every reset fails while ``down`` is set (as every
    request through an SSH server that stopped answering does)."""

    def __init__(self, url: str, down: threading.Event) -> None:
        super().__init__(url, read_timeout=30, connect_timeout=10)
        self._down = down

    def close_all(self, timeout: float | None = None) -> None:
        """Fails while the path is down, else resets as the real one does."""
        if self._down.is_set():
            raise WorkerUnreachableError("connection reset through the tunnel")
        super().close_all(timeout)


class GatedWaaClient(WaaClient):
    """A worker's WAA client whose first reset waits until ``gate`` opens (or the deadline)."""

    def __init__(self, url: str, gate: threading.Event) -> None:
        super().__init__(url, read_timeout=30, connect_timeout=10)
        self._gate = gate

    def close_all(self, timeout: float | None = None) -> None:
        """Waits for the gate, then resets as the real one does."""
        self._gate.wait(GATE_DEADLINE_S)
        super().close_all(timeout)


LOST = "user@127.0.0.1:22"
"""The SSH endpoint in front of w0 in the lost-path runs below."""


def _beside_a_lost_path(tmp_path: Path, down: threading.Event, w1_gate: threading.Event,
                        on_event: Callable[[RunEvent], None], *,
                        w1_resets: bool) -> tuple[list[object], dict[str, Any]]:
    """Every task on two workers: w0 behind :data:`LOST` (its server refuses while ``down`` is
    set; patience 1 s) and w1 reached directly (each reset waits for ``w1_gate``, and fails
    unless ``w1_resets``). The run's outcome (empty when it was still running at the deadline)
    and the queue's records."""
    folder, queue = _queued(tmp_path, list(TASKS))
    infos = {tid: TaskInfo(tid, "d", "x", False) for tid in TASKS}

    def through_path(*_args: object) -> None:
        if down.is_set():
            raise SshUnreachableError("SSH to worker w0 at 127.0.0.1:22: connection refused")

    with ScriptedServer(_waa_routes(True)) as waa, ScriptedServer(
        _waa_routes(w1_resets)
    ) as w1_waa, ScriptedServer(
        {"/setup": Reply.json({"status": "success", "results": []}), "/evaluate": VERDICT}
    ) as scoring, no_retry_waits():
        w0 = WorkerConnection(
            name="w0", waa=PathWaaClient(waa.url, down),
            scoring=ScoringClient(scoring.url, read_timeout=30, connect_timeout=10),
            waa_url=waa.url, scoring_url=scoring.url,
            tunnel=cast("ForwardingTunnel", SimpleNamespace(
                target=SimpleNamespace(endpoint=LOST, name="w0"), reconnects=0,
                local_ports=(0, 0), ensure=through_path)))
        w1 = WorkerConnection(
            name="w1", waa=GatedWaaClient(w1_waa.url, w1_gate),
            scoring=ScoringClient(scoring.url, read_timeout=30, connect_timeout=10),
            waa_url=w1_waa.url, scoring_url=scoring.url)
        dispatcher = Dispatcher(
            folder, queue, Ledger(None), [w0, w1], TASKS, infos, NoopAgent,
            RunConfig(pool=None, selection="all", agent="noop", max_steps=2, task_timeout_s=60,
                      quarantine_after=QUARANTINE_AFTER),
            on_event=on_event, path_patience_s=1.0,
        )
        dispatcher._paths.probe = through_path  # type: ignore[method-assign]
        try:
            return _run_or_stop(dispatcher), queue.records()
        finally:
            queue.close()


def test_a_lost_path_that_answers_again_brings_its_worker_back(tmp_path: Path) -> None:
    # w0's SSH server stops answering for longer than the patience (a host rebooting slowly):
    # its worker is quarantined with its path, and w1 (reached directly) goes on. When the server
    # answers again, w0 comes back to work and the quarantine is lifted. w1 holds its first task
    # until w0 has scored one; before, a lost path's worker never came back, so w1 waited out
    # the gate's deadline and ran every task alone, w0's path still quarantined at the end.
    down, w0_scored = threading.Event(), threading.Event()
    down.set()
    events: list[RunEvent] = []

    def on_event(event: RunEvent) -> None:
        events.append(event)
        if event.kind is EventKind.HOST_QUARANTINED:
            down.clear()  # the server answers again once its worker was given up on
        if event.kind is EventKind.TASK_FINISHED and event.worker == "w0":
            w0_scored.set()

    ended, records = _beside_a_lost_path(tmp_path, down, w0_scored, on_event, w1_resets=True)
    assert ended, "the run did not end"
    assert w0_scored.is_set(), "w0 never came back to work"
    outcome = ended[0]
    assert outcome.quarantined_hosts == [] and outcome.quarantined == []  # type: ignore[attr-defined]
    assert len(records) == len(TASKS) and {r["status"] for r in records.values()} == {"failure"}
    assert "w0" in {r["worker"] for r in records.values()}
    kinds = [(e.kind, e.worker) for e in events
             if e.kind in (EventKind.HOST_QUARANTINED, EventKind.PATH_BACK)]
    assert kinds == [(EventKind.HOST_QUARANTINED, LOST), (EventKind.PATH_BACK, LOST)]


def test_a_run_whose_other_workers_are_all_out_ends_while_a_lost_path_stays_down(
    tmp_path: Path,
) -> None:
    # w0's path is lost for good while w1 (reached directly) still works; then w1's resets fail
    # until it is quarantined too. No worker is left to take a task, so the run ends (as any run
    # whose workers are all out), its tasks left for --resume; w0 must not wait on for a path
    # that may never answer, which would hold the run open for ever.
    down, path_lost = threading.Event(), threading.Event()
    down.set()

    def on_event(event: RunEvent) -> None:
        if event.kind is EventKind.HOST_QUARANTINED:
            path_lost.set()

    ended, _records = _beside_a_lost_path(tmp_path, down, path_lost, on_event, w1_resets=False)
    assert path_lost.is_set()
    assert ended, "the run was held open by a worker waiting for its lost path"
    outcome = ended[0]
    assert outcome.quarantined == ["w1"]  # type: ignore[attr-defined]
    assert [h["host"] for h in outcome.quarantined_hosts] == [LOST]  # type: ignore[attr-defined]


def test_a_host_whose_workers_answer_only_from_the_waa_server_is_gone(tmp_path: Path) -> None:
    # both workers of host h answer WAA's /probe but their scoring server refuses: the first
    # setup that fails probes the host's workers as the run's start does (both servers), finds
    # none that can take a task and quarantines the host once (it was taken for a live host, its
    # workers then quarantined one by one after failing their tasks)
    from tests.support.http_servers import RefusingPort

    routes = {**_waa_routes(True), "/probe": Reply.json({"status": "ok"})}
    with ScriptedServer(routes) as waa, RefusingPort() as scoring, no_retry_waits():
        connections = [WorkerConnection(
            name=name, waa=WaaClient(waa.url, read_timeout=10, connect_timeout=10),
            scoring=ScoringClient(scoring.url, read_timeout=10, connect_timeout=10),
            waa_url=waa.url, scoring_url=scoring.url, host="h") for name in ("h0", "h1")]
        folder, queue = _queued(tmp_path, list(TASKS))
        dispatcher = Dispatcher(
            folder, queue, Ledger(None), connections, TASKS,
            {tid: TaskInfo(tid, "d", "x", False) for tid in TASKS}, NoopAgent,
            RunConfig(pool=None, selection="all", agent="noop", max_steps=2,
                      task_timeout_s=60, quarantine_after=QUARANTINE_AFTER))
        try:
            ended = _run_or_stop(dispatcher)
        finally:
            queue.close()
        assert waa.hits["/probe"] >= 2  # each worker of the host asked
    assert ended, "the run did not end"
    outcome = ended[0]
    assert [h["host"] for h in outcome.quarantined_hosts] == ["h"]  # type: ignore[attr-defined]
    assert outcome.quarantined == []  # type: ignore[attr-defined]
