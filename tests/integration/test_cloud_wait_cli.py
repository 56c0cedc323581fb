"""``oa-vm pool-wait`` on a cloud pool, as a user runs it: the real CLI as a subprocess.

Only what cannot be reached is stood in: the worker host is the test SSH server with stand-in
docker, sudo and cloud-init on its sessions' PATH and its bootstrap status file in a folder of
the test (``OA_VM_STATE_DIR``, set for the sessions); the Pulumi engine behind the wait's
refresh is the stand-in ``pulumi`` CLI, driven by the real Automation API. The test asserts what
pool-wait prints: each worker's phase, its last log line, and why a failed worker failed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from oa_vm.model import state
from oa_vm.model.state import PoolRecord, PoolState, SshEndpoint, WorkerRecord, WorkerState
from tests.support import fake_pulumi_cli
from tests.support.cli import run_cli
from tests.support.host_standins import HostSshServer, running_host, set_outcomes
from tests.support.sshd import free_port, generate_key

pytestmark = [pytest.mark.integration, pytest.mark.sshd]


@pytest.fixture
def host(tmp_path: Path) -> Iterator[HostSshServer]:
    host_state = tmp_path / "host-state"
    host_state.mkdir()
    with running_host(tmp_path / "host", OA_VM_STATE_DIR=str(host_state)) as server:
        yield server


def _pool(home: Path, host: HostSshServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cloud pool's record (as pool-create leaves it) and its stack in the engine's state."""
    monkeypatch.setenv("OA_VM_HOME", str(home))
    state.save(PoolRecord(
        name="waa", cloud="aws", state=PoolState.PROVISIONING, created_at=state.utcnow(),
        settings={"wait_timeout_s": 120.0}, provider_data={"project": "oa-vm-aws",
                                                           "stack": "waa"},
        workers=[WorkerRecord(
            name="waa-w0", state=WorkerState.BOOTING, provider_id="i-0abc", phase="created",
            ssh=SshEndpoint(host=host.host, port=host.port, user=host.user,
                            key_path=str(host.client_key)),
            remote_waa_port=free_port(), remote_scoring_port=free_port(),
        )],
    ))


def _engine_env(tmp_path: Path) -> dict[str, str]:
    env = fake_pulumi_cli.offline_env(tmp_path)
    stacks = tmp_path / "fake-pulumi" / "stacks"
    stacks.mkdir(parents=True)
    (stacks / "waa.json").write_text(json.dumps({"version": 3, "deployment": {"resources": [
        {"urn": "urn:pulumi:waa::oa-vm-aws::aws:ec2/instance:Instance::waa-w0",
         "type": "aws:ec2/instance:Instance", "custom": True, "id": "i-0abc"},
    ]}}))
    return env


def _status(host: HostSshServer, body: str) -> None:
    (Path(host.env["OA_VM_STATE_DIR"]) / "status").write_text(body)


def test_a_failed_bootstrap_is_shown_and_ends_the_wait(
    host: HostSshServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    _pool(home, host, monkeypatch)
    set_outcomes(host.fake_state, FAKE_DOCKER_DENIED="1", FAKE_UID="1000")
    _status(host, "state=failed\nstep=kvm\nmessage=nested virtualization is not enabled on "
                  "m8i.large (no /dev/kvm); use a C8i/M8i/R8i size\n")
    result = run_cli("oa-vm", "pool-wait", "--name", "waa", home=home, env=_engine_env(tmp_path))
    line = result.assert_one_line_error()
    assert "waa-w0: failed at kvm: nested virtualization is not enabled on m8i.large" in line
    assert "sudo journalctl -u oa-vm-bootstrap" in line
    assert "waa-w0: failed at kvm" in result.stdout  # the heartbeat showed it first
    calls = (tmp_path / "fake-pulumi" / "calls.log").read_text()
    assert "refresh" in calls, "the wait asked the engine about the pool"


def test_a_failed_egress_proof_keeps_the_worker_out_of_the_ready_set_in_one_line(
    host: HostSshServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The status ``egress.sh prove`` writes when the guest reached what it must not (its
    rehearsal: tests/integration/test_egress_rehearsal.py) ends the wait for that worker."""
    home = tmp_path / "home"
    _pool(home, host, monkeypatch)
    set_outcomes(host.fake_state, FAKE_DOCKER_DENIED="1", FAKE_UID="1000")
    _status(host, "state=failed\nstep=egress\nmessage=egress proof failed (web): the guest "
                  "reached 169.254.169.254:80, which the egress policy must block\n")
    result = run_cli("oa-vm", "pool-wait", "--name", "waa", home=home, env=_engine_env(tmp_path))
    line = result.assert_one_line_error()
    assert "waa-w0: failed at egress: egress proof failed (web): the guest reached " \
           "169.254.169.254:80" in line
    assert state.load("waa").workers[0].state == WorkerState.LOST


def test_a_worker_still_installing_shows_its_step_and_last_log_until_the_deadline(
    host: HostSshServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    _pool(home, host, monkeypatch)
    set_outcomes(host.fake_state, FAKE_DOCKER_DENIED="1", FAKE_UID="1000",
                 FAKE_LOG="Windows is being installed: 61%")
    _status(host, "state=running\nstep=guest\nmessage=waiting for Windows to answer /probe\n")
    result = run_cli("oa-vm", "pool-wait", "--name", "waa", "--timeout", "1s", home=home,
                     env=_engine_env(tmp_path))
    line = result.assert_one_line_error()
    assert "not ready after 1s" in line and "waa-w0 stuck at bootstrap: guest" in line
    shown = result.stdout
    assert "waa-w0: bootstrap: guest" in shown
    assert "last log: Windows is being installed: 61%" in shown


def _refused_key(tmp_path: Path, home: Path) -> None:
    """The pool's record now names a key the worker does not hold."""
    other = generate_key(tmp_path / "other_key")
    record = state.load("waa")
    assert record.workers[0].ssh is not None
    record.workers[0].ssh.key_path = str(other)
    state.save(record)


def _changed_host_key(host: HostSshServer, tmp_path: Path, home: Path) -> None:
    """The worker's host key was remembered, then the host came back with another one."""
    from oa_vm.reach.connect import known_hosts_path
    from oa_vm.reach.host_status import ParamikoRunner

    record = state.load("waa")
    assert record.workers[0].ssh is not None
    ParamikoRunner(known_hosts_path("waa")).run(record.workers[0].ssh, "true", 30.0)
    host.restart(new_host_key=True)


@pytest.mark.parametrize(("case", "says"), [
    ("refused key", "refused with key"),
    ("changed host key", "ssh-keygen -R"),
])
def test_a_host_that_refuses_us_ends_the_wait_at_once_naming_the_worker(
    host: HostSshServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, says: str
) -> None:
    """Waiting cannot mend a refused key or a changed host key: pool-wait stops on its first
    pass (its timeout is ten minutes; the CLI is given two), in one line naming the worker and
    what to do, and the worker stays in the record as it was (not lost: once the key is mended
    the same wait goes on)."""
    home = tmp_path / "home"
    _pool(home, host, monkeypatch)
    _status(host, "state=done\nstep=scoring\nmessage=ready\n")
    if case == "refused key":
        _refused_key(tmp_path, home)
    else:
        _changed_host_key(host, tmp_path, home)
    result = run_cli("oa-vm", "pool-wait", "--name", "waa", "--timeout", "10m", home=home,
                     env=_engine_env(tmp_path), timeout=120.0)
    assert result.returncode == 1
    line = result.assert_one_line_error()
    assert "worker waa-w0" in line and says in line, line
    assert "not ready after" not in line
    after = state.load("waa").workers[0]
    assert after.state == WorkerState.BOOTING and after.phase == "ssh refused"
