"""Cloud worker readiness over a real SSH session, with the host's tools stood in.

The worker is registered as a cloud worker would be (an SSH endpoint, remote ports behind it) and
the test SSH server runs pool-wait's real remote commands. Its sessions get a PATH whose first
folder holds stand-ins for ``cloud-init``, ``docker`` and ``sudo`` (``tests/support/
host_standins.py``): docker refuses the login user as it does on a fresh host, so only a command
that goes through ``sudo -n`` gets an answer, and ``docker ps`` answers only the exact arguments
a correctly quoted command delivers. The bootstrap's status file is a real file the test
rewrites between passes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from oa_vm.clouds.pulumi.wait import follow_status, worker_phase
from oa_vm.errors import ProvisioningError
from oa_vm.model import state
from oa_vm.model.state import PoolRecord, PoolState, SshEndpoint, WorkerRecord, WorkerState
from oa_vm.reach.host_status import RemoteCommands
from tests.support.host_standins import (
    HostSshServer,
    calls,
    running_host,
    set_outcomes,
)
from tests.support.image_builder import building_image
from tests.support.sshd import SshServer
from tests.support.worker_proc import WorkerProcess

pytestmark = [
    pytest.mark.integration,
    pytest.mark.sshd,
    # stands in for a cloud worker's servers, which want no secret prefix (only SSH reaches them)
    pytest.mark.worker(auth=False),
]


@pytest.fixture
def host(tmp_path: Path) -> Iterator[HostSshServer]:
    with running_host(tmp_path / "host") as server:
        yield server


def _record(sshd: SshServer, waa_port: int, scoring_port: int) -> PoolRecord:
    return PoolRecord(
        name="cloudish", cloud="aws", state=PoolState.PROVISIONING, created_at=state.utcnow(),
        workers=[WorkerRecord(
            name="cloudish-w0", state=WorkerState.BOOTING,
            ssh=SshEndpoint(host=sshd.host, port=sshd.port, user=sshd.user,
                            key_path=str(sshd.client_key)),
            remote_waa_port=waa_port, remote_scoring_port=scoring_port,
        )],
    )


def _status(path: Path, state_: str, step: str, message: str) -> None:
    path.write_text(f"state={state_}\nstep={step}\nmessage={message}\nupdated=now\n")


def test_phases_in_order_until_ready(
    host: HostSshServer, worker: WorkerProcess, tmp_path: Path, oa_home: Path
) -> None:
    status = tmp_path / "status"
    commands = RemoteCommands(status_file=str(status))
    entry = worker.workers[0]
    record = _record(host, int(entry["waa_port"]), int(entry["scoring_port"]))
    # A fresh host: the login user is not in the docker group.
    denied = {"FAKE_DOCKER_DENIED": "1", "FAKE_UID": "1000"}

    host.stop()
    assert worker_phase(record, 0, commands=commands) == ("ssh", False)
    assert record.workers[0].detail
    host.start()

    set_outcomes(host.fake_state, FAKE_CLOUD_INIT="running", **denied)
    assert worker_phase(record, 0, commands=commands) == ("cloud-init", False)
    set_outcomes(host.fake_state, FAKE_CLOUD_INIT="error", **denied)
    assert worker_phase(record, 0, commands=commands) == ("cloud-init failed", False)

    set_outcomes(host.fake_state, FAKE_LOG="Windows is being installed: 42%", **denied)
    assert worker_phase(record, 0, commands=commands) == ("bootstrap", False)
    _status(status, "running", "guest", "waiting for Windows to answer /probe")
    assert worker_phase(record, 0, commands=commands) == ("bootstrap: guest", False)
    assert "last log: Windows is being installed: 42%" in (record.workers[0].detail or "")
    # docker was reached through sudo, with pool-wait's quoting intact.
    made = calls(host.fake_state)
    assert "sudo -n docker logs --tail 1 winarena" in made
    assert "sudo -n docker ps -a --filter name=^winarena$ --format {{.Status}}" in made

    _status(status, "done", "ready", "Windows answers /probe")
    set_outcomes(host.fake_state, FAKE_CONTAINER_STATUS="Exited (1) 2 minutes ago", **denied)
    assert worker_phase(record, 0, commands=commands) == ("container", False)
    assert "Exited (1)" in (record.workers[0].detail or "")
    set_outcomes(host.fake_state, **denied)
    assert worker_phase(record, 0, commands=commands) == ("ready", True)
    assert record.workers[0].detail is None
    # The host key was pinned on first contact, in the pool's own known_hosts.
    known = state.pool_dir("cloudish") / "known_hosts"
    assert host.host_public_key_line().split()[1] in known.read_text()


def test_without_sudo_docker_cannot_be_reached_and_the_phase_says_so(
    host: HostSshServer, tmp_path: Path, oa_home: Path, refused_port: Callable[[], int]
) -> None:
    status = tmp_path / "status"
    _status(status, "done", "ready", "Windows answers /probe")
    set_outcomes(host.fake_state, FAKE_DOCKER_DENIED="1", FAKE_NO_SUDO="1")
    record = _record(host, refused_port(), refused_port())
    phase = worker_phase(record, 0, commands=RemoteCommands(status_file=str(status)))
    assert phase == ("container", False)
    assert "sudo: command not found" in (record.workers[0].detail or "")


def test_a_failed_bootstrap_ends_the_wait_with_its_message_and_logs(
    host: HostSshServer, tmp_path: Path, oa_home: Path, refused_port: Callable[[], int]
) -> None:
    status = tmp_path / "status"
    _status(status, "failed", "kvm", "nested virtualization is not enabled on m8i.large")
    set_outcomes(host.fake_state)
    record = _record(host, refused_port(), refused_port())
    phase = worker_phase(record, 0, commands=RemoteCommands(status_file=str(status)))
    assert phase == ("failed at kvm", False)
    worker = record.workers[0]
    assert worker.state == WorkerState.LOST
    assert "nested virtualization is not enabled on m8i.large" in (worker.detail or "")
    assert "journalctl -u oa-vm-bootstrap" in (worker.detail or "")


def test_waa_not_answering_stops_at_the_waa_probe(
    host: HostSshServer, tmp_path: Path, oa_home: Path, refused_port: Callable[[], int]
) -> None:
    status = tmp_path / "status"
    _status(status, "done", "ready", "Windows answers /probe")
    set_outcomes(host.fake_state)
    record = _record(host, refused_port(), refused_port())
    phase, ready = worker_phase(record, 0, commands=RemoteCommands(status_file=str(status)))
    assert (phase, ready) == ("waa probe", False)
    assert record.workers[0].detail


def test_an_image_builder_is_followed_until_built(
    host: HostSshServer, tmp_path: Path, oa_home: Path
) -> None:
    status, info = tmp_path / "status", tmp_path / "image-info"
    _status(status, "done", "built", "Windows installed and shut down")
    info.write_text("waa_image=windowsarena/winarena@sha256:0123\nbuilt=2026-03-01T12:00:00Z\n")
    set_outcomes(host.fake_state, FAKE_DOCKER_DENIED="1", FAKE_UID="1000")
    ssh = SshEndpoint(host=host.host, port=host.port, user=host.user,
                      key_path=str(host.client_key))
    lines: list[str] = []
    got = follow_status(
        ssh, tmp_path / "known_hosts", name="img-builder", timeout_s=60, progress=lines.append,
        commands=RemoteCommands(status_file=str(status), image_info_file=str(info)), poll_s=0.05,
    )
    assert got["waa_image"] == "windowsarena/winarena@sha256:0123"

    _status(status, "failed", "pull", "could not pull windowsarena/winarena:latest")
    with pytest.raises(ProvisioningError, match="failed at pull: could not pull"):
        follow_status(
            ssh, tmp_path / "known_hosts", name="img-builder", timeout_s=60,
            progress=lines.append, commands=RemoteCommands(status_file=str(status)), poll_s=0.05,
        )


# -- images.follow_builder: the image build's real wait ------------------------------------------


@pytest.fixture
def builder_host(tmp_path: Path) -> Iterator[HostSshServer]:
    """A host whose sessions find the bootstrap's files where ``lib.sh`` puts them under
    ``OA_VM_STATE_DIR`` (the wait's default paths, nothing passed in)."""
    host_state = tmp_path / "host-state"
    host_state.mkdir()
    with running_host(tmp_path / "host", OA_VM_STATE_DIR=str(host_state)) as server:
        yield server


def test_follow_builder_waits_for_built_and_returns_both_digests(
    builder_host: HostSshServer, oa_home: Path
) -> None:
    from oa_vm import images

    folder = Path(builder_host.env["OA_VM_STATE_DIR"])
    _status(folder / "status", "done", "built", "Windows installed and shut down")
    (folder / "image-info").write_text(
        "waa_image=windowsarena/winarena@sha256:0123\n"
        "base_image=dockurr/windows@sha256:4567\nbuilt=2026-12-01T10:40:00Z\n"
    )
    set_outcomes(builder_host.fake_state, FAKE_DOCKER_DENIED="1", FAKE_UID="1000")
    record, outputs = building_image(builder_host)
    lines: list[str] = []
    info = images.follow_builder(record, outputs, lines.append)
    assert info["waa_image"] == "windowsarena/winarena@sha256:0123"
    assert info["base_image"] == "dockurr/windows@sha256:4567"
    # The host key was pinned beside the image's key.
    assert (state.pool_dir(record.id) / "known_hosts").read_text().strip()


@pytest.mark.parametrize(
    ("state_", "step", "message", "expected"),
    [
        # A host that booted as a pool worker (ready) is not a built image.
        ("done", "ready", "WAA answers", "finished as 'ready', not 'built'"),
        ("failed", "install", "Windows never answered /probe", "failed at install"),
    ],
)
def test_follow_builder_refuses_anything_but_built(
    builder_host: HostSshServer, oa_home: Path, state_: str, step: str, message: str,
    expected: str,
) -> None:
    from oa_vm import images

    folder = Path(builder_host.env["OA_VM_STATE_DIR"])
    _status(folder / "status", state_, step, message)
    set_outcomes(builder_host.fake_state, FAKE_DOCKER_DENIED="1", FAKE_UID="1000")
    record, outputs = building_image(builder_host)
    with pytest.raises(ProvisioningError, match=expected):
        images.follow_builder(record, outputs, lambda line: None)


def test_the_default_host_paths_are_lib_shs() -> None:
    """What the wait reads by default is where the shipped ``lib.sh`` writes on a real host
    (both expanded by a real shell: lib.sh with ``OA_VM_ROOT`` empty, the wait's paths with
    ``OA_VM_STATE_DIR`` unset)."""
    import subprocess

    from oa_vm.reach.host_status import IMAGE_INFO_FILE, STATUS_FILE

    lib = Path(__file__).resolve().parents[2] / "infra" / "worker" / "lib.sh"
    shipped = subprocess.run(
        ["bash", "-c", f'source "{lib}"; echo "$OA_VM_STATUS_FILE"; echo "$OA_VM_IMAGE_INFO"'],
        capture_output=True, text=True, timeout=60, check=True,
        env={"PATH": "/usr/bin:/bin"},
    ).stdout.split()
    ours = subprocess.run(
        ["sh", "-c", f"echo {STATUS_FILE}; echo {IMAGE_INFO_FILE}"],
        capture_output=True, text=True, timeout=60, check=True, env={"PATH": "/usr/bin:/bin"},
    ).stdout.split()
    assert ours == shipped == ["/var/lib/oa-vm/status", "/var/lib/oa-vm/image-info"]


def test_follow_builder_stops_at_once_when_the_builder_refuses_the_key(
    builder_host: HostSshServer, oa_home: Path
) -> None:
    """A refused key cannot get better by waiting: the build's follow ends in one error naming
    it, not at the builder's deadline (hours)."""
    import subprocess

    from oa_vm import images
    from oa_vm.model import sshkeys

    folder = Path(builder_host.env["OA_VM_STATE_DIR"])
    _status(folder / "status", "running", "guest", "waiting for Windows")
    record, outputs = building_image(builder_host)
    key = sshkeys.key_path(record.id)
    key.unlink()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
                   check=True, timeout=60)  # a key the builder never authorized
    with pytest.raises(ProvisioningError, match="builder"):
        images.follow_builder(record, outputs, lambda line: None)
