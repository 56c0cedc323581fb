"""A spot interruption notice read over a real SSH session: ``pool-status`` shows the worker
draining, and a run's drain check sees it.

The host is the test SSH server; its status file lives in a host root of the test
(``OA_VM_STATE_DIR`` is set for its sessions) and is written by the shipped ``spot_watch.sh``
itself, run under bash with the stand-in instance metadata service (``curl`` in
``tests/support/host_standins.py``). The Pulumi engine behind ``pool-status --refresh`` is the
stand-in ``pulumi`` CLI, driven by the real Automation API (as in ``test_cloud_wait_cli``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from oa_vm.model import state
from oa_vm.model.state import PoolRecord, PoolState, SshEndpoint, WorkerRecord, WorkerState
from oa_vm.reach.drain import DrainWatch, read_status
from oa_vm.reach.host_status import ParamikoRunner
from tests.integration.test_cloud_wait_cli import _engine_env
from tests.support.cli import run_cli
from tests.support.host_standins import HostSshServer, running_host, standin_env
from tests.support.sshd import free_port

pytestmark = [pytest.mark.integration, pytest.mark.sshd]

WATCHER = Path(__file__).resolve().parents[2] / "infra" / "worker" / "spot_watch.sh"
BASH = shutil.which("bash") or "/bin/bash"


@pytest.fixture
def host(tmp_path: Path) -> Iterator[HostSshServer]:
    state_dir = tmp_path / "host-root" / "var/lib/oa-vm"
    state_dir.mkdir(parents=True)
    with running_host(tmp_path / "host", OA_VM_STATE_DIR=str(state_dir)) as server:
        yield server


def _watch_once(tmp_path: Path, imds: str) -> None:
    """The shipped watcher, one poll, on the host root the SSH server serves."""
    env = standin_env(tmp_path / "host" / "bin", tmp_path / "fake-imds", FAKE_IMDS=imds)
    env["OA_VM_ROOT"] = str(tmp_path / "host-root")
    subprocess.run([BASH, str(WATCHER), "once"], env=env, capture_output=True, text=True,
                   timeout=60, check=False)


def _spot_pool(home: Path, host: HostSshServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OA_VM_HOME", str(home))
    state.save(PoolRecord(
        name="waa", cloud="aws", state=PoolState.READY, created_at=state.utcnow(),
        settings={"spot": True}, provider_data={"project": "oa-vm-aws", "stack": "waa"},
        workers=[WorkerRecord(
            name="waa-w0", state=WorkerState.READY, provider_id="i-0abc", phase="ready",
            ssh=SshEndpoint(host=host.host, port=host.port, user=host.user,
                            key_path=str(host.client_key)),
            remote_waa_port=free_port(), remote_scoring_port=free_port(),
        )],
    ))


def test_the_notice_is_read_over_ssh_and_pool_status_shows_draining(
    host: HostSshServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    _spot_pool(home, host, monkeypatch)
    record = state.load("waa")
    worker = record.workers[0]
    runner = ParamikoRunner(tmp_path / "known_hosts")
    watch = DrainWatch("waa", interval_s=0, runner=runner)

    assert read_status(record, worker, runner) == {}  # no status file yet
    assert watch("waa-w0") is None
    _watch_once(tmp_path, "none")  # no notice: the watcher writes nothing
    assert read_status(record, worker, runner) == {}
    _watch_once(tmp_path, "down")  # metadata unreachable: nothing either
    assert watch("waa-w0") is None

    (Path(host.env["OA_VM_STATE_DIR"]) / "status").write_text(
        "state=done\nstep=ready\nmessage=Windows answers /probe\n")
    assert read_status(record, worker, runner)["state"] == "done"
    assert watch("waa-w0") is None

    _watch_once(tmp_path, "notice")
    got = read_status(record, worker, runner)
    assert (got["state"], got["action"]) == ("draining", "terminate")
    notice = watch("waa-w0")
    assert notice is not None
    assert (notice.action, notice.action_time) == ("terminate", "2026-11-30T22:02:00Z")

    result = run_cli("oa-vm", "pool-status", "--name", "waa", "--refresh", "--json", home=home,
                     env=_engine_env(tmp_path))
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["state"] == "degraded"
    assert shown["workers"][0]["state"] == "draining"
    assert "terminate at 2026-11-30T22:02:00Z" in shown["workers"][0]["detail"]
    # The record keeps it; the plain (fast-path) pool-status shows it as text.
    text = run_cli("oa-vm", "pool-status", "--name", "waa", home=home)
    assert text.returncode == 0, text.stderr
    row = next(line for line in text.stdout.splitlines() if line.startswith("waa-w0"))
    assert "draining" in row.split()
    assert ("waa-w0 is draining: AWS spot interruption notice: terminate at "
            "2026-11-30T22:02:00Z" in text.stdout)

    # An on-demand pool's hosts get no notices: the run does not open SSH sessions for them.
    record = state.load("waa")
    record.settings["spot"] = False
    state.save(record)
    assert DrainWatch("waa", interval_s=0, runner=runner)("waa-w0") is None
