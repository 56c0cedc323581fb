"""A rehearsal of the spot watcher: ``infra/worker/spot_watch.sh`` runs for real under bash.

The host's instance metadata service is the ``curl`` stand-in of ``tests/support/
host_standins.py`` (IMDSv2: a token from a PUT, reads without it answered 401, calls without a
connect and a total timeout refused). Each scenario starts from the status a finished bootstrap
leaves (``state=done``, ``step=ready``) and asserts what the watcher leaves in that file, then
what ``pool-wait`` makes of it with its real remote command (run by bash here; over SSH in
``test_spot_drain.py``).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from infra.settings import PoolSettings
from infra.worker import cloud_init, units
from oa_vm.clouds.pulumi.wait import worker_phase
from oa_vm.model.state import PoolRecord, PoolState, SshEndpoint, WorkerRecord, WorkerState, utcnow
from oa_vm.reach.host_status import RemoteCommands, parse_status
from tests.support.host_standins import calls, standin_env, write_standins
from tests.support.pool_programs import make_settings
from waa_client.ssh import CommandResult

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "infra" / "worker" / "spot_watch.sh"
BASH = shutil.which("bash") or "/bin/bash"
READY = "state=done\nstep=ready\nmessage=Windows answers /probe\nstarted=x\nupdated=x\n"


def watch_once(tmp_path: Path, **fake: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    """One poll of the shipped watcher in a host root whose bootstrap has finished."""
    root = tmp_path / "host"
    status = root / "var/lib/oa-vm/status"
    if not status.exists():
        status.parent.mkdir(parents=True)
        status.write_text(READY, encoding="utf-8")
    ship = tmp_path / "opt-oa-vm"
    if not ship.exists():
        ship.mkdir()
        for name in ("spot_watch.sh", "lib.sh"):
            shutil.copy2(SCRIPT.parent / name, ship / name)
    env = standin_env(write_standins(tmp_path / "bin"), tmp_path / "fake", **fake)
    env["OA_VM_ROOT"] = str(root)
    done = subprocess.run([BASH, str(ship / "spot_watch.sh"), "once"], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    return done, status


class BashRunner:
    """pool-wait's remote commands, run by bash here (what sshd would run on the host)."""

    def run(self, ssh: SshEndpoint, command: str, timeout: float) -> CommandResult:
        done = subprocess.run([BASH, "-c", command], capture_output=True, text=True,
                              timeout=timeout, check=False)
        return CommandResult(done.returncode, done.stdout + done.stderr)


def pool_wait_phase(status: Path) -> tuple[str, WorkerRecord]:
    worker = WorkerRecord(
        name="spot-w0", state=WorkerState.BOOTING,
        ssh=SshEndpoint(host="203.0.113.10", port=22, user="ubuntu", key_path="/k/id"),
    )
    record = PoolRecord(name="spot", cloud="aws", state=PoolState.PROVISIONING,
                        created_at=utcnow(), workers=[worker])

    class Runner(BashRunner):
        def run(self, ssh: SshEndpoint, command: str, timeout: float) -> CommandResult:
            if command == "cloud-init status":
                return CommandResult(0, "status: done\n")
            return super().run(ssh, command, timeout)

    phase, _ = worker_phase(record, 0, Runner(), RemoteCommands(status_file=str(status)))
    return phase, worker


def test_no_notice_leaves_the_status_alone(tmp_path: Path) -> None:
    done, status = watch_once(tmp_path, FAKE_IMDS="none")
    assert done.returncode == 0, done.stderr
    assert status.read_text(encoding="utf-8") == READY
    made = [c for c in calls(tmp_path / "fake") if c.startswith("curl")]
    assert len(made) == 2
    token, action = made
    assert "-X PUT" in token and "X-aws-ec2-metadata-token-ttl-seconds: 300" in token
    assert "X-aws-ec2-metadata-token: AQAEAFakeToken==" in action
    assert action.endswith("/latest/meta-data/spot/instance-action")
    assert all("--connect-timeout" in c and "--max-time" in c for c in made)


def test_a_notice_marks_the_worker_draining_with_its_action_and_time(tmp_path: Path) -> None:
    done, status = watch_once(tmp_path, FAKE_IMDS="notice", FAKE_IMDS_ACTION="terminate",
                              FAKE_IMDS_TIME="2026-11-30T22:02:00Z")
    assert done.returncode == 0, done.stderr
    got = parse_status(status.read_text(encoding="utf-8"))
    assert (got["state"], got["step"]) == ("draining", "spot-interruption")
    assert (got["action"], got["action_time"]) == ("terminate", "2026-11-30T22:02:00Z")
    assert "terminate at 2026-11-30T22:02:00Z" in got["message"]
    assert not list(status.parent.glob("status.tmp.*"))  # replaced in one rename

    phase, worker = pool_wait_phase(status)
    assert phase == "draining"
    assert worker.state == WorkerState.DRAINING
    assert "spot interruption notice: terminate" in (worker.detail or "")

    # Polling again with the same notice writes nothing new.
    before = status.stat().st_mtime_ns, status.read_text(encoding="utf-8")
    again, _ = watch_once(tmp_path, FAKE_IMDS="notice", FAKE_IMDS_TIME="2026-11-30T22:02:00Z")
    assert again.returncode == 0 and again.stdout == ""
    assert (status.stat().st_mtime_ns, status.read_text(encoding="utf-8")) == before

    # A bootstrap still at work may rewrite the file after the notice: the next poll says
    # draining again.
    status.write_text(READY, encoding="utf-8")
    again, _ = watch_once(tmp_path, FAKE_IMDS="notice", FAKE_IMDS_TIME="2026-11-30T22:02:00Z")
    assert again.returncode == 0
    assert parse_status(status.read_text(encoding="utf-8"))["state"] == "draining"


@pytest.mark.parametrize("imds", ["down", "error"])
def test_an_unreachable_or_failing_metadata_service_never_marks_draining(
    tmp_path: Path, imds: str
) -> None:
    done, status = watch_once(tmp_path, FAKE_IMDS=imds)
    assert done.returncode == 1
    assert "spot-watch" in done.stderr
    assert status.read_text(encoding="utf-8") == READY
    assert pool_wait_phase(status)[0] != "draining"


def _spot_settings(spot: bool) -> PoolSettings:
    return make_settings("aws", spot=spot)


def test_only_aws_spot_workers_run_the_watcher() -> None:
    from infra import aws, azure

    def paths(settings: PoolSettings, facts: cloud_init.HostFacts) -> tuple[set[str], list[str]]:
        doc = cloud_init.cloud_config(settings, facts)
        return ({f["path"] for f in doc["write_files"]},
                [" ".join(c) for c in doc["runcmd"]])

    unit = f"{units.UNIT_DIR}/{units.SPOT_WATCH_UNIT}"
    files, runcmd = paths(_spot_settings(True), aws.HOST_FACTS)
    assert unit in files and f"{units.SHIP_DIR}/spot_watch.sh" in files
    assert f"systemctl enable --now {units.SPOT_WATCH_UNIT}" in runcmd
    files, runcmd = paths(_spot_settings(False), aws.HOST_FACTS)
    assert unit not in files and not any("spot" in c for c in runcmd)
    files, _ = paths(_spot_settings(True), azure.HOST_FACTS)
    assert unit not in files
