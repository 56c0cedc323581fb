"""The clean reset's proof, forced by construction on a real simulated worker: a restore that
does nothing, a restore that reports another snapshot's token, a connection replaced by a new
one, a guest changed before the first snapshot. The worker is a real process with its real
snapshot endpoints (``HttpSnapshotControl``); only the broken restores are the test's, wrapped
around the real control.
"""

from __future__ import annotations

import pytest

from evals.results.records import ErrorType
from evals.run.reset import ResetFailed, WorkerReset, _waa_failure
from oa_vm.model.snapshots import HttpSnapshotControl, Restored, SnapshotError, SnapshotState
from oa_vm.reach.connect import WorkerConnection
from tests.support.worker_proc import WorkerProcess
from waa_client import ScoringClient, WaaClient
from waa_client.errors import NotFoundError, ServerError

pytestmark = pytest.mark.integration

DIRT = "C:\\Users\\Docker\\dirt.txt"


class Control:
    """The real snapshot control of the worker; ``restores`` says, per restore, whether it is
    done for real (``True``) or only pretended (``False``: the host answers, nothing moved);
    ``lie_token`` replaces the token the host reports."""

    def __init__(self, real: HttpSnapshotControl) -> None:
        self.real = real
        self.restores: list[bool] = []
        self.lie_token: str | None = None

    def check(self) -> SnapshotState:
        return self.real.check()

    def take(self, token: str) -> SnapshotState:
        return self.real.take(token)

    def restore(self) -> Restored:
        for_real = self.restores.pop(0) if self.restores else True
        done = self.real.restore() if for_real else Restored(self.real.check().token, 0.0)
        return Restored(self.lie_token, done.seconds) if self.lie_token else done


def _connection(worker: WorkerProcess) -> WorkerConnection:
    """A new connection to the worker (what a repair or a reconnect hands the reset)."""
    return WorkerConnection("w0", WaaClient(worker.waa_url, read_timeout=60.0),
                            ScoringClient(worker.scoring_url, read_timeout=60.0),
                            worker.waa_url, worker.scoring_url)


def _guest_has(connection: WorkerConnection, path: str) -> bool:
    try:
        connection.waa.file(path)
    except NotFoundError:
        return False
    return True


def _dirty(connection: WorkerConnection) -> None:
    connection.scoring.setup(
        [{"type": "create_file", "parameters": {"path": DIRT, "content": "left by a task"}}])
    assert _guest_has(connection, DIRT)


def test_a_real_restore_is_clean_and_a_pretended_one_is_not(worker: WorkerProcess) -> None:
    control = Control(HttpSnapshotControl(worker.scoring_url))
    reset = WorkerReset("clean", resolve=lambda c: control)
    connection = _connection(worker)
    control.restores = [True, True, False]  # start state, first task, second task
    first = reset.before_task(connection)
    assert first.fingerprint is not None and first.fingerprint["ok"] is True
    assert first.fingerprint["marker_gone"] is True
    # the second restore does nothing: the token (written before the snapshot) is still
    # there, only the marker written after the last restore shows the machine was not reset
    second = reset.before_task(connection)
    assert second.fingerprint is not None
    assert second.fingerprint["token"] == second.fingerprint["expected"]
    assert second.fingerprint["marker_gone"] is False and second.fingerprint["ok"] is False


def test_the_first_restore_after_the_snapshot_must_remove_the_marker(
    worker: WorkerProcess,
) -> None:
    control = Control(HttpSnapshotControl(worker.scoring_url))
    control.restores = [True, False]  # start state for real; the first task's restore pretended
    done = WorkerReset("clean", resolve=lambda c: control).before_task(_connection(worker))
    assert done.fingerprint is not None and done.fingerprint["ok"] is False


def test_a_restore_of_another_snapshot_is_not_clean(worker: WorkerProcess) -> None:
    control = Control(HttpSnapshotControl(worker.scoring_url))
    reset = WorkerReset("clean", resolve=lambda c: control)
    connection = _connection(worker)
    assert (reset.before_task(connection).fingerprint or {}).get("ok") is True
    control.lie_token = "another-snapshot"
    done = reset.before_task(connection)
    assert done.fingerprint is not None and done.fingerprint["marker_gone"] is True
    assert done.fingerprint["ok"] is False


def test_the_snapshot_is_of_the_start_state_not_of_what_came_before(
    worker: WorkerProcess,
) -> None:
    connection = _connection(worker)
    _dirty(connection)  # the guest changed before the first clean reset (a stock-reset run)
    control = HttpSnapshotControl(worker.scoring_url)
    done = WorkerReset("clean", resolve=lambda c: control).before_task(connection)
    assert (done.fingerprint or {}).get("ok") is True
    assert not _guest_has(connection, DIRT)


def test_a_replaced_connection_asks_for_its_own_control_and_keeps_the_snapshot(
    worker: WorkerProcess,
) -> None:
    resolved: list[WorkerConnection] = []

    def resolve(connection: WorkerConnection) -> HttpSnapshotControl:
        resolved.append(connection)
        return HttpSnapshotControl(connection.scoring_url)

    reset = WorkerReset("clean", resolve=resolve)
    old = _connection(worker)
    first = reset.before_task(old)
    reset.before_task(old)
    assert resolved == [old]
    new = _connection(worker)  # e.g. --repair replaced the worker's connection
    _dirty(new)
    again = reset.before_task(new)
    assert resolved == [old, new]
    assert again.fingerprint is not None and again.fingerprint["ok"] is True
    # the same snapshot, not one retaken from the dirty machine
    assert again.fingerprint["expected"] == (first.fingerprint or {}).get("expected")
    assert not _guest_has(new, DIRT)


def test_a_worker_failing_during_the_reset_is_infrastructure() -> None:
    for status in (500, 503):
        failure = _waa_failure(ServerError("boom", status=status), "resetting")
        assert failure.error_type is ErrorType.INFRASTRUCTURE, status


def test_an_unreachable_snapshot_control_fails_as_a_snapshot_error(
    refused_port: object,
) -> None:
    port = refused_port()  # type: ignore[operator]
    with pytest.raises(SnapshotError):
        HttpSnapshotControl(f"http://127.0.0.1:{port}", connect_timeout=5.0).restore()


def test_a_reset_asks_the_fence_and_carries_the_lease_generation(worker: WorkerProcess) -> None:
    # A controller frozen just before its reset restored the desktop of the run that took its
    # pool over when it woke: the reset asks the run's fence, and its snapshot control sends the
    # generation the worker's clients carry, so the worker refuses it even past the check.
    from oa_vm.model.lease import LeaseLostError

    later = _connection(worker)
    later.waa.fence_token = later.scoring.fence_token = "2"
    later.waa.probe()  # the run that holds the pool now has talked to the worker
    _dirty(later)

    def lost() -> None:
        raise LeaseLostError("p", "run 'later'")

    earlier = _connection(worker)
    earlier.waa.fence_token = earlier.scoring.fence_token = "1"
    reset = WorkerReset("clean", resolve=lambda c: HttpSnapshotControl(worker.scoring_url))
    with pytest.raises(LeaseLostError):
        reset.before_task(earlier, fence=lost)
    assert _guest_has(later, DIRT)  # nothing was restored
    # past the check (the freeze fell after it): the worker itself refuses
    control = HttpSnapshotControl(worker.scoring_url)
    reset = WorkerReset("clean", resolve=lambda c: control)
    with pytest.raises(ResetFailed, match="earlier holder of the pool's lease"):
        reset.before_task(earlier)
    assert control.fence_token == "1"
    assert _guest_has(later, DIRT)
