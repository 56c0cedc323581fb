"""A failed worker's log hint names what exists on its host: its own bootstrap unit, its own
container and the host's SSH port.

A host with slots (an own host, always; a cloud host with ``--workers-per-host`` above 1) runs
one ``oa-vm-bootstrap-<slot>`` unit and one container per worker, so ``journalctl -u
oa-vm-bootstrap`` there shows nothing and slot 0's container is another worker's. The worker's
failed status is a real file on a real SSH server; ``pool-wait``'s real pass reads it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from infra.worker import slots
from oa_vm.clouds.hosts.provider import SshHostsProvider
from oa_vm.clouds.pulumi.wait import worker_phase
from oa_vm.model import state
from oa_vm.model.state import PoolRecord, PoolState, SshEndpoint, WorkerRecord, WorkerState
from tests.support.host_standins import HostSshServer, running_host, set_outcomes

pytestmark = [pytest.mark.integration, pytest.mark.sshd]


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostSshServer]:
    base = tmp_path_factory.mktemp("log-hint")
    with running_host(base, OA_VM_STATE_DIR=str(base / "state")) as server:
        set_outcomes(server.fake_state)
        yield server


@pytest.mark.parametrize(("cloud", "per_host", "index", "unit", "container"), [
    ("ssh", 2, 1, "oa-vm-bootstrap-w1", "winarena-w1"),
    ("ssh", 1, 0, "oa-vm-bootstrap-w0", "winarena"),
    ("aws", 2, 1, "oa-vm-bootstrap-w1", "winarena-w1"),
    ("aws", 2, 0, "oa-vm-bootstrap-w0", "winarena"),
    ("aws", 1, 0, "oa-vm-bootstrap", "winarena"),
])
def test_the_hint_names_the_workers_own_unit_container_and_port(
    host: HostSshServer, oa_home: Path, cloud: str, per_host: int, index: int, unit: str,
    container: str,
) -> None:
    s = slots.slot(index)
    status = Path(host.env["OA_VM_STATE_DIR"]) / s.status_file.removeprefix("/var/lib/oa-vm/")
    status.parent.mkdir(parents=True, exist_ok=True)
    status.write_text("state=failed\nstep=container\nmessage=docker run failed\n")
    ssh = SshEndpoint(host=host.host, port=host.port, user=host.user,
                      key_path=str(host.client_key))
    worker = WorkerRecord(name=f"lab-{s.name}", state=WorkerState.BOOTING, ssh=ssh,
                          host=f"{host.user}@{host.host}:{host.port}", provider_id=s.name,
                          remote_waa_port=s.waa_port, remote_scoring_port=s.scoring_port)
    record = PoolRecord(name=f"hint-{cloud}-{per_host}-{index}", cloud=cloud,
                        state=PoolState.PROVISIONING, created_at=state.utcnow(),
                        settings={"workers_per_host": per_host}, workers=[worker])
    if cloud == "ssh":
        phase = SshHostsProvider().worker_phase(record, 0)
    else:
        phase = worker_phase(record, 0)
    assert phase == ("failed at container", False)
    assert worker.state == WorkerState.LOST
    assert (f"read its logs with: ssh -p {host.port} -i {host.client_key} "
            f"{host.user}@{host.host} 'sudo journalctl -u {unit} --no-pager | tail -50; "
            f"sudo docker logs --tail 50 {container}'") in (worker.detail or ""), worker.detail
