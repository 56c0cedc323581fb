"""Clean resets of a cloud worker: the shipped ``reset.sh`` run as root over the pool's SSH path.

The :class:`oa_vm.model.snapshots.SnapshotControl` that cloud providers hand out
(``PulumiCloudProvider.snapshot_control``). ``reset.sh`` speaks to QEMU's monitor on a unix
socket of the host (``infra/worker/reset.sh``, ``qmp_snapshot.py``) and prints one JSON line.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from infra.worker import units
from oa_vm.model.snapshots import Restored, SnapshotError, SnapshotState
from oa_vm.model.state import SshEndpoint, WorkerRecord
from oa_vm.reach.host_status import ParamikoRunner, RemoteRunner, RemoteUnreachableError

RESET_SCRIPT = f"{units.SHIP_DIR}/reset.sh"  # where cloud-init ships infra/worker/reset.sh
SSH_TIMEOUT_S = 900.0
"""A restore reads the machine's memory back from the volume (8 GB) and waits for WAA."""


class HostSnapshotControl:
    """:class:`SnapshotControl` of a cloud worker: ``sudo -n reset.sh ...`` over SSH."""

    def __init__(self, ssh: SshEndpoint, runner: RemoteRunner, script: str = RESET_SCRIPT,
                 *, slot: str | None = None) -> None:
        self.ssh = ssh
        self.runner = runner
        self.script = script
        self.slot = slot
        """The worker's slot on a host with several (``reset.sh --slot``); None: the host's
        one worker."""

    def _run(self, *args: str) -> dict[str, Any]:
        slot = ("--slot", self.slot) if self.slot else ()
        command = " ".join(shlex.quote(a) for a in ("sudo", "-n", self.script, *slot, *args))
        try:
            result = self.runner.run(self.ssh, command, SSH_TIMEOUT_S)
        except RemoteUnreachableError as exc:
            raise SnapshotError(f"cannot reach the worker's host: {exc}") from exc
        lines = result.output.strip().splitlines()
        try:
            answer: dict[str, Any] = json.loads(lines[-1]) if lines else {}
        except ValueError:
            answer = {}
        if result.status == 3 or (result.status == 127 and not answer):
            raise SnapshotError(
                str(answer.get("error") or f"{self.script} is not on this worker's host"),
                unsupported=True,
            )
        if result.status != 0 or not answer.get("ok"):
            # a session cut mid-command (the host went away) says nothing and exits with none
            said = answer.get("error") or result.output.strip()[-300:] or (
                f"exit {result.status}, no output" if result.status >= 0 else
                "the SSH session ended with no exit status and no output (did the host go away?)")
            raise SnapshotError(f"reset.sh {args[0]}: {said}")
        return answer

    def check(self) -> SnapshotState:
        """``reset.sh check``."""
        data = self._run("check")  # the record of the last take (reset.sh keeps it on the host)
        return SnapshotState(bool(data.get("token")), data.get("token"), data.get("taken_at"),
                             data.get("qemu"))

    def take(self, token: str) -> SnapshotState:
        """``reset.sh take TOKEN``."""
        data = self._run("take", token)
        return SnapshotState(True, data.get("token"), data.get("taken_at"))

    def restore(self) -> Restored:
        """``reset.sh restore`` (returns once WAA's ``/probe`` answers on the host and the
        guest's clock was set from the host's)."""
        data = self._run("restore")
        seconds = data.get("seconds")
        if seconds is not None and data.get("wait_s") is not None:
            seconds = float(seconds) + float(data["wait_s"])
        skew = data.get("clock_skew_s")
        return Restored(data.get("token"), seconds,
                        float(skew) if isinstance(skew, int | float) else None)


def worker_control(worker: WorkerRecord, runner: RemoteRunner | Path,
                   slot: str | None = None) -> HostSnapshotControl:
    """A :class:`HostSnapshotControl` of ``worker``'s host through ``runner`` (a path: paramiko
    with the pool's pinned host keys in that file).

    Raises:
        SnapshotError: the worker's record has no SSH endpoint (``unsupported``).
    """
    if worker.ssh is None:
        raise SnapshotError(f"{worker.name} has no SSH endpoint in its record", unsupported=True)
    if isinstance(runner, Path):
        runner = ParamikoRunner(runner)
    return HostSnapshotControl(worker.ssh, runner, slot=slot)
