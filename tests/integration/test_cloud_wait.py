"""Cloud worker readiness, step by step, against a real SSH server and a simulated worker.

The worker is registered as a cloud worker would be (an SSH endpoint, remote ports behind it);
the host's ``cloud-init status`` and ``docker ps`` are replaced by commands that print what a
real host prints, from files the test changes between passes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from oa_vm import state
from oa_vm.providers.cloud_wait import RemoteCommands, worker_phase
from oa_vm.state import PoolRecord, PoolState, SshEndpoint, WorkerRecord
from tests.support import sshd as sshd_support
from tests.support.sshd import SshServer, free_port
from tests.support.worker_proc import WorkerProcess, running_worker

pytestmark = [pytest.mark.integration, pytest.mark.sshd]
sshd = sshd_support.sshd


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[WorkerProcess]:
    with running_worker(tmp_path) as proc:
        yield proc


def _record(sshd: SshServer, waa_port: int, scoring_port: int) -> PoolRecord:
    return PoolRecord(
        name="cloudish", cloud="aws", state=PoolState.PROVISIONING, created_at=state.utcnow(),
        workers=[WorkerRecord(
            name="cloudish-w0",
            ssh=SshEndpoint(host=sshd.host, port=sshd.port, user=sshd.user,
                            key_path=str(sshd.client_key)),
            remote_waa_port=waa_port, remote_scoring_port=scoring_port,
        )],
    )


def test_phases_in_order_until_ready(
    sshd: SshServer, worker: WorkerProcess, tmp_path: Path, oa_home: Path
) -> None:
    boot, docker = tmp_path / "cloud-init.txt", tmp_path / "docker.txt"
    commands = RemoteCommands(cloud_init=f"cat {boot}", container=f"cat {docker}")
    entry = worker.workers[0]
    record = _record(sshd, int(entry["waa_port"]), int(entry["scoring_port"]))

    sshd.stop()
    assert worker_phase(record, 0, commands=commands) == ("ssh", False)
    assert record.workers[0].detail
    sshd.start()

    boot.write_text("status: running\n")
    assert worker_phase(record, 0, commands=commands) == ("cloud-init", False)
    boot.write_text("status: error\nextended_status: error - done\n")
    assert worker_phase(record, 0, commands=commands) == ("cloud-init failed", False)
    assert "error" in (record.workers[0].detail or "")

    boot.write_text("status: done\n")
    assert worker_phase(record, 0, commands=commands) == ("container", False)
    docker.write_text("Up 3 minutes\n")
    assert worker_phase(record, 0, commands=commands) == ("ready", True)
    assert record.workers[0].detail is None
    # The host key was pinned on first contact, in the pool's own known_hosts.
    known = state.pool_dir("cloudish") / "known_hosts"
    assert sshd.host_public_key_line().split()[1] in known.read_text()


def test_waa_not_answering_stops_at_the_waa_probe(
    sshd: SshServer, tmp_path: Path, oa_home: Path
) -> None:
    ok = tmp_path / "ok.sh"
    ok.write_text("echo 'status: done'\n")
    commands = RemoteCommands(cloud_init=f"sh {ok}", container="echo Up 1 second")
    record = _record(sshd, free_port(), free_port())
    phase, ready = worker_phase(record, 0, commands=commands)
    assert (phase, ready) == ("waa probe", False)
    assert record.workers[0].detail
