"""The run's reset summary and the cloud control's reading of ``reset.sh`` (pure parts)."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from evals.results.records import ErrorType, TaskExecution
from evals.run.reset import ResetFailed, WorkerReset, reset_lines, reset_summary
from oa_vm.clouds.pulumi.reset import HostSnapshotControl
from oa_vm.model.snapshots import Restored, SnapshotError, SnapshotState
from oa_vm.model.state import SshEndpoint
from oa_vm.reach.connect import WorkerConnection
from tests.support.http_servers import SilentServer
from waa_client import ScoringClient, WaaClient
from waa_client.ssh import CommandResult


def _record(**fields: Any) -> TaskExecution:
    """A task record as a run folder holds it (the summary reads typed records)."""
    return TaskExecution.from_json({"status": "success", **fields})


def _clean(task: str, worker: str, token: str, *, ok: bool = True) -> TaskExecution:
    return _record(task_id=task, worker=worker, reset="clean", reset_s=0.5,
                   fingerprint={"token": token if ok else "x", "expected": token,
                                "marker_gone": True, "ok": ok})


def test_agreeing_fingerprints_are_said_once() -> None:
    summary = {"resets": reset_summary([_clean("a", "w0", "t0"), _clean("b", "w1", "t1")])}
    assert summary["resets"]["fingerprints_agree"] is True
    assert summary["resets"]["counts"] == {"clean": 2}
    assert "Fingerprints: all 2 clean resets" in "\n".join(reset_lines(summary))


def test_a_bad_fingerprint_or_two_snapshots_on_one_worker_disagree() -> None:
    bad = reset_summary([_clean("a", "w0", "t0"), _clean("b", "w0", "t0", ok=False)])
    assert bad["fingerprints_agree"] is False and bad["fingerprints_bad"] == ["b"]
    split = reset_summary([_clean("a", "w0", "t0"), _clean("b", "w0", "t1")])
    assert split["fingerprints_agree"] is False
    assert "w0 restored different snapshots" in split["warning"]
    assert any(line.startswith("WARNING: fingerprints disagree")
               for line in reset_lines({"resets": split}))


def test_stock_resets_have_no_fingerprint_to_agree_on() -> None:
    summary = reset_summary([_record(task_id="a", reset="stock", reset_s=0.1, fingerprint=None),
                             _record(task_id="b", status="not_run")])
    assert summary["fingerprints_agree"] is None and summary["unrecorded"] == 1
    assert summary["counts"] == {"stock": 1}


class _Runner:
    def __init__(self, status: int, output: str) -> None:
        self.result = CommandResult(status, output)
        self.commands: list[str] = []

    def run(self, ssh: SshEndpoint, command: str, timeout: float) -> CommandResult:
        self.commands.append(command)
        return self.result


SSH = SshEndpoint(host="127.0.0.1", port=22, user="ubuntu", key_path="/nonexistent")


@pytest.mark.parametrize(("status", "output", "unsupported"), [
    (3, '{"ok": false, "error": "no QEMU monitor at /x: cannot restore snapshots"}\n', True),
    (127, "bash: /opt/oa-vm/reset.sh: No such file or directory\n", True),
    (1, '{"ok": false, "error": "snapshot-load: boom"}\n', False),
])
def test_reset_sh_failures_map_to_one_error(status: int, output: str, unsupported: bool) -> None:
    runner = _Runner(status, output)
    with pytest.raises(SnapshotError) as failed:
        HostSnapshotControl(SSH, runner).restore()
    assert failed.value.unsupported is unsupported
    assert runner.commands == ["sudo -n /opt/oa-vm/reset.sh restore"]


@pytest.mark.parametrize(("status", "said"), [
    (-1, "the SSH session ended with no exit status and no output (did the host go away?)"),
    (1, "exit 1, no output"),
])
def test_a_reset_that_says_nothing_is_still_explained(status: int, said: str) -> None:
    with pytest.raises(SnapshotError) as failed:
        HostSnapshotControl(SSH, _Runner(status, "")).restore()
    assert str(failed.value) == f"reset.sh restore: {said}"


def test_a_restore_reports_the_recorded_token_and_its_time() -> None:
    runner = _Runner(0, 'noise\n{"ok": true, "token": "t", "seconds": 1.5, "wait_s": 0.5}\n')
    restored = HostSnapshotControl(SSH, runner).restore()
    assert restored.token == "t" and restored.seconds == 2.0


def test_a_failed_reset_is_counted_without_a_duration() -> None:
    failed = _record(task_id="c", worker="w0", reset="clean", reset_s=None, fingerprint=None,
                     status="error", error_type="infrastructure")
    summary = reset_summary([_clean("a", "w0", "t0"), failed])
    assert summary["counts"] == {"clean": 2}
    assert summary["fingerprints_agree"] is True  # the failed one has nothing to agree on


class _FreshSnapshots:
    """The snapshot control of a worker that holds no snapshot yet (it answers at once)."""

    def check(self) -> SnapshotState:
        return SnapshotState(False)

    def take(self, token: str) -> SnapshotState:
        return SnapshotState(True, token)

    def restore(self) -> Restored:
        return Restored(None, 0.1)


def test_a_worker_that_hangs_during_the_clean_reset_is_given_up_at_the_read_timeout() -> None:
    """The reset runs before the task's deadline starts; its small guest writes must still be
    bounded by the run's read timeout (they once took setup's 600 s default, so a worker hung
    there held its task, and the run, for ten minutes per attempt)."""
    with SilentServer() as hung:
        connection = WorkerConnection(
            "w0", WaaClient(hung.url, connect_timeout=2.0, read_timeout=0.5),
            ScoringClient(hung.url, connect_timeout=2.0, read_timeout=0.5), hung.url, hung.url)
        reset = WorkerReset("clean", resolve=lambda c: _FreshSnapshots())
        failed: list[ResetFailed] = []

        def attempt() -> None:
            try:
                reset.before_task(connection)
            except ResetFailed as exc:
                failed.append(exc)

        thread = threading.Thread(target=attempt, daemon=True)
        thread.start()
        thread.join(60)  # generous: the bound is the 0.5 s read timeout
        assert not thread.is_alive(), "the clean reset waited on a hung worker past its timeout"
    assert [f.error_type for f in failed] == [ErrorType.INFRASTRUCTURE]
    assert "writing the snapshot's fingerprint" in failed[0].message


class _RefusedSnapshots(_FreshSnapshots):
    """A worker whose QEMU refuses the snapshot (a migration blocker)."""

    def __init__(self) -> None:
        self.takes = 0

    def take(self, token: str) -> SnapshotState:
        self.takes += 1
        raise SnapshotError("QEMU refuses snapshots on this machine: State blocked by "
                            "non-migratable CPU device (invtsc flag)", unsupported=True)


class _Guest:
    """The worker's WAA and scoring servers as far as a reset uses them."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def close_all(self, timeout: float | None = None) -> None:
        self.calls.append("close_all")

    def clear_task_files(self, timeout: float | None = None) -> None:
        self.calls.append("clear_task_files")

    def setup(self, steps: list[dict[str, Any]], timeout: float | None = None) -> None:
        self.calls.append("setup")


@pytest.mark.parametrize("may_fall_back", [True, False])
def test_a_refused_snapshot_falls_back_to_stock_once_or_fails_under_clean(
    may_fall_back: bool, caplog: pytest.LogCaptureFixture
) -> None:
    guest = _Guest()
    connection = WorkerConnection("pool/w0", guest, guest, "", "")  # type: ignore[arg-type]
    control = _RefusedSnapshots()
    reset = WorkerReset("clean", resolve=lambda c: control, may_fall_back=may_fall_back)
    if not may_fall_back:  # --reset clean: the task is an infrastructure error
        with pytest.raises(ResetFailed) as failed:
            reset.before_task(connection)
        assert failed.value.error_type is ErrorType.INFRASTRUCTURE
        return
    with caplog.at_level("WARNING", logger="evals.run.reset"):
        done = [reset.before_task(connection) for _ in range(3)]
    assert [d.kind for d in done] == ["stock"] * 3 and control.takes == 1
    assert guest.calls.count("close_all") == 3
    lines = [r.getMessage() for r in caplog.records if "pool/w0" in r.getMessage()]
    assert len(lines) == 1 and "invtsc" in lines[0] and "stock way" in lines[0]
    assert reset.fallback_reason is not None and "could not be taken" in reset.fallback_reason


def test_a_blocked_qemu_is_unsupported_and_a_checked_one_is_recorded_for_the_run() -> None:
    from evals.run.reset import _checker, describe_plan

    blocked = _Runner(3, '{"ok": false, "error": "QEMU refuses snapshots on this machine: State '
                         'blocked by non-migratable CPU device (invtsc flag) (-cpu host)"}\n')
    with pytest.raises(SnapshotError, match="invtsc") as failed:
        HostSnapshotControl(SSH, blocked).check()
    assert failed.value.unsupported is True  # --reset clean refuses it in one line

    qemu = {"pid": 7, "cmdline": ["qemu-system-x86_64", "-cpu", "host,-invtsc"],
            "cpu": "host,-invtsc"}
    ok = _Runner(0, json.dumps({"ok": True, "blockers": [], "qemu": qemu}) + "\n")
    plan = WorkerReset("clean")
    guest = _Guest()
    connection = WorkerConnection("pool/w0", guest, guest, "", "")  # type: ignore[arg-type]
    assert _checker(lambda c: HostSnapshotControl(SSH, ok), connection, plan)() is None
    described = describe_plan({"pool/w0": plan})
    assert described["qemu"] == {"pool/w0": {"cpu": "host,-invtsc",
                                             "cmdline": qemu["cmdline"]}}
