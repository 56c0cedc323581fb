"""``reset.sh`` over real SSH: a real OpenSSH server whose ``ForceCommand`` plays the worker's
host (it records the command asked for, then prints what the test wrote, exits with the status
the test chose, or hangs), and the real paramiko runner of cloud pools. What cannot run here is
only QEMU's monitor behind ``reset.sh`` (``tests/integration/test_qemu_reset.py`` runs that)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from oa_vm.clouds.pulumi import reset as cloud_reset
from oa_vm.clouds.pulumi.reset import HostSnapshotControl
from oa_vm.model.snapshots import SnapshotError
from oa_vm.model.state import SshEndpoint
from oa_vm.reach.host_status import ParamikoRunner
from tests.support.sshd import SshServer, require_sshd

pytestmark = pytest.mark.integration

DEADLINE_S = 60.0

_HOST = """#!/bin/sh
# the worker's host: what was asked for, then the answer the test prepared
printf '%s\\n' "$SSH_ORIGINAL_COMMAND" >> "{folder}/asked"
if [ -e "{folder}/hang" ]; then exec sleep 600; fi
cat "{folder}/answer"
exit "$(cat "{folder}/status")"
"""


class HostServer(SshServer):
    """An sshd that runs the host script above whatever the client asks."""

    def __init__(self, root: Path, script: Path) -> None:
        self.script = script
        super().__init__(root)

    def _write_config(self) -> None:
        super()._write_config()
        with self.config.open("a", encoding="utf-8") as config:
            config.write(f"ForceCommand {self.script}\n")


class Host:
    """The host's answers, set by the test."""

    def __init__(self, folder: Path, server: HostServer) -> None:
        self.folder = folder
        self.server = server

    def answers(self, output: str, status: int = 0) -> None:
        (self.folder / "answer").write_text(output)
        (self.folder / "status").write_text(f"{status}\n")

    def hangs(self) -> None:
        (self.folder / "hang").write_text("")

    def asked(self) -> list[str]:
        path = self.folder / "asked"
        return path.read_text().splitlines() if path.exists() else []

    def control(self, tmp_path: Path) -> HostSnapshotControl:
        ssh = SshEndpoint(self.server.host, self.server.port, self.server.user,
                          str(self.server.client_key))
        return HostSnapshotControl(ssh, ParamikoRunner(tmp_path / "known_hosts"))


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    require_sshd()
    folder = tmp_path / "host"
    folder.mkdir()
    script = folder / "host.sh"
    script.write_text(_HOST.format(folder=folder))
    script.chmod(0o755)
    server = HostServer(tmp_path / "sshd", script)
    server.start()
    try:
        yield Host(folder, server)
    finally:
        server.stop()


def test_a_restore_asks_for_reset_sh_as_root_without_a_prompt(host: Host, tmp_path: Path) -> None:
    host.answers('loading the snapshot\n{"ok": true, "token": "t1", "seconds": 4, '
                 '"wait_s": 2, "clock_skew_s": 0.25}\n')
    restored = host.control(tmp_path).restore()
    assert (restored.token, restored.seconds, restored.clock_skew_s) == ("t1", 6.0, 0.25)
    assert host.asked() == [f"sudo -n {cloud_reset.RESET_SCRIPT} restore"]


def test_a_host_without_a_snapshot_says_so(host: Host, tmp_path: Path) -> None:
    host.answers('{"ok": true}\n')
    held = host.control(tmp_path).check()
    assert held.snapshot is False and held.token is None


@pytest.mark.parametrize(("output", "status", "unsupported"), [
    ('{"ok": false, "error": "snapshot-load failed"}\n', 0, False),
    ('{"ok": false, "error": "snapshot-load failed"}\n', 1, False),
    ("sh: 1: sudo: not found\n", 127, True),
    ('{"ok": false, "error": "no QEMU monitor"}\n', 3, True),
])
def test_a_failed_reset_sh_is_one_snapshot_error(
    host: Host, tmp_path: Path, output: str, status: int, unsupported: bool
) -> None:
    host.answers(output, status)
    with pytest.raises(SnapshotError) as failed:
        host.control(tmp_path).restore()
    assert failed.value.unsupported is unsupported


def test_an_unreachable_host_is_a_snapshot_error(host: Host, tmp_path: Path) -> None:
    control = host.control(tmp_path)
    host.server.stop()
    with pytest.raises(SnapshotError, match="cannot reach the worker's host"):
        control.check()


def test_a_reset_sh_that_hangs_is_given_up_at_the_timeout(
    host: Host, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cloud_reset, "SSH_TIMEOUT_S", 1.0)  # 15 minutes in production
    host.hangs()
    failed: list[Exception] = []

    def restore() -> None:
        try:
            host.control(tmp_path).restore()
        except Exception as exc:  # whatever it is, the test reports it
            failed.append(exc)

    thread = threading.Thread(target=restore, daemon=True)
    thread.start()
    thread.join(DEADLINE_S)  # generous: the bound is the 1 s timeout
    assert not thread.is_alive(), "reset.sh over SSH waited past its timeout"
    assert len(failed) == 1 and isinstance(failed[0], SnapshotError), failed
