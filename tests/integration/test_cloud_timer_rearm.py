"""A cloud pool's expiry moved by ``pool-extend`` reaches its running hosts' own power-off
timers over a real SSH session (a pause reaches none: a host sets its timer from its expiry tag
when it boots, ``test_expiry_arm_rehearsal.py``); bad extensions are refused by the real CLI.

The worker host is the test SSH server (a private root, ``OA_VM_ROOT``, and stand-ins for sudo
and systemctl on its sessions' PATH: the machine's real systemd is never touched). The pool's
program runs under ``FakePulumiEngine`` (the real AWS program, Pulumi's mocks); everything
else is real: the fleet operations, the record, paramiko with the pool's pinned host keys, the
shell commands as the host's login shell runs them.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from infra.worker import units
from infra.worker.cloud_init import poweroff_units
from oa_vm import fleet
from oa_vm.clouds.aws.provider import AwsProvider
from oa_vm.clouds.pulumi import timers
from oa_vm.clouds.pulumi.fleet import CloudFleetOps
from oa_vm.model import state
from oa_vm.model.state import PoolRecord, PoolState, SshEndpoint, WorkerRecord, WorkerState
from tests.support.cli import run_cli
from tests.support.cloud_pools import ready_pool
from tests.support.fake_pulumi_engine import FakePulumiEngine
from tests.support.host_standins import HostSshServer, calls, running_host
from tests.support.pool_programs import AwsLookups

pytestmark = [pytest.mark.integration, pytest.mark.sshd]

TIMER = f"{units.UNIT_DIR}/{units.EXPIRY_TIMER}"
SERVICE = f"{units.UNIT_DIR}/oa-vm-expiry.service"


@pytest.fixture
def host(tmp_path: Path) -> Iterator[HostSshServer]:
    root = tmp_path / "root"
    (root / units.UNIT_DIR.lstrip("/")).mkdir(parents=True)
    with running_host(tmp_path / "host", OA_VM_ROOT=str(root)) as server:
        yield server


def _aws_pool_on(host: HostSshServer) -> CloudFleetOps:
    """An AWS pool made by the real program under mocks, its two hosts reached at the test
    SSH server (its record as a create leaves it, the addresses pointed at loopback)."""
    provider = AwsProvider(engine=FakePulumiEngine(AwsLookups()), lister=lambda pool: [])
    ready_pool(provider, ssh=SshEndpoint(host=host.host, port=host.port, user=host.user,
                                         key_path=str(host.client_key)))
    return CloudFleetOps(provider)


def _unit(tmp_path: Path, path: str) -> str:
    """A file as the host's private root (the fixture's ``OA_VM_ROOT``) holds it."""
    return (tmp_path / "root" / path.lstrip("/")).read_text(encoding="utf-8")


def test_extend_rearms_each_hosts_timer_with_the_units_cloud_init_writes(
    host: HostSshServer, oa_home: Path, tmp_path: Path
) -> None:
    ops = _aws_pool_on(host)
    created = state.load("waa-eval").expires_at
    assert created is not None
    lines: list[str] = []
    record = fleet.extend_pool("waa-eval", by_s=6 * 3600, progress=lines.append, ops=ops)
    new = created + timedelta(hours=6)
    assert record.expires_at == new
    expected = poweroff_units(new)  # the builder cloud-init's units come from
    assert _unit(tmp_path, TIMER) == expected[TIMER]
    assert _unit(tmp_path, SERVICE) == expected[SERVICE]
    assert f"OnCalendar={units.expiry_calendar(new)}\n" in _unit(tmp_path, TIMER)
    # as root, through sudo -n: reloaded, restarted, per host; never enabled (at boot, only the
    # arm unit starts it, once it holds the tag's expiry)
    made = calls(host.fake_state)
    assert made.count(f"systemctl restart {units.EXPIRY_TIMER}") == 2, made
    assert made.count("systemctl daemon-reload") == 2
    assert not [c for c in made if c.startswith("systemctl enable")], made
    assert not [line for line in lines if line.startswith("host ")], lines
    # the pool's host key was pinned on first contact, as for pool-wait
    known = state.pool_dir("waa-eval") / "known_hosts"
    assert host.host_public_key_line().split()[1] in known.read_text()

    # a pause reaches no host: a stopped host's timer cannot fire before its boot re-sets it
    before = calls(host.fake_state)
    fleet.pause_pool("waa-eval", keep_days=2, ops=ops)
    assert calls(host.fake_state) == before


def test_a_host_that_does_not_answer_is_said_with_the_command_to_run(
    host: HostSshServer, oa_home: Path
) -> None:
    ops = _aws_pool_on(host)
    host.stop()
    lines: list[str] = []
    record = fleet.extend_pool("waa-eval", by_s=3600, progress=lines.append, ops=ops)
    said = [line for line in lines if line.startswith("host ")]
    assert len(said) == 2, lines
    for line in said:
        assert "its power-off timer was not moved: it does not answer" in line
        assert line.endswith("when it answers, run: oa-vm pool-extend --pool waa-eval --by 1m")
    # the cloud took it: the record says so (the schedule, not the timer, is the kill switch)
    assert state.load("waa-eval").expires_at == record.expires_at


def _azure_record(home: Path) -> bytes:
    """An Azure pool's record as a create leaves it, 4 hours from its expiry."""
    record = PoolRecord(
        name="az", cloud="azure", state=PoolState.READY, created_at=state.utcnow(),
        expires_at=state.utcnow() + timedelta(hours=4), owner="alice",
        settings={"region": "eastus", "size": "Standard_D8s_v5", "workers": 1},
        provider_data={"project": "oa-vm-azure", "stack": "az", "region": "eastus"},
        workers=[WorkerRecord(name="az-w0", state=WorkerState.READY, provider_id="/vm/az-w0")],
    )
    state.save(record)
    return (state.pool_dir("az") / "pool.json").read_bytes()


def test_the_cli_refuses_an_azure_extension_past_24_hours_in_one_line(
    oa_home: Path
) -> None:
    saved = _azure_record(oa_home)
    done = run_cli("oa-vm", "pool-extend", "--pool", "az", "--by", "30h", home=oa_home)
    line = done.assert_one_line_error()
    assert done.returncode == 2
    assert "Azure pools run at most 24 hours at a time" in line, line
    assert "extend it by at most 20h now" in line, line
    assert (state.pool_dir("az") / "pool.json").read_bytes() == saved  # nothing written
    # the same rule for a resume's TTL
    record = state.load("az")
    record.state = PoolState.PAUSED
    for worker in record.workers:
        worker.state = WorkerState.PAUSED
    state.save(record)
    saved = (state.pool_dir("az") / "pool.json").read_bytes()
    done = run_cli("oa-vm", "pool-resume", "--pool", "az", "--ttl", "30h", home=oa_home)
    line = done.assert_one_line_error()
    assert done.returncode == 2 and "pass --ttl 24h or less" in line, line
    assert (state.pool_dir("az") / "pool.json").read_bytes() == saved


def test_a_pool_made_by_an_earlier_oa_vm_has_its_hosts_timers_disabled_before_a_pause(
    host: HostSshServer, oa_home: Path
) -> None:
    # Its hosts keep the user data they were made with (infra.first_boot): a timer that starts
    # at boot with the creation's time and no arm unit to reset it, so a resume past that time
    # would power them off at once. The record of such a pool lacks the create's marker.
    ops = _aws_pool_on(host)
    record = state.load("waa-eval")
    assert record.provider_data.pop(timers.ARMS_AT_BOOT) is True  # today's creates write it
    state.save(record)
    lines: list[str] = []
    fleet.pause_pool("waa-eval", keep_days=2, progress=lines.append, ops=ops)
    made = calls(host.fake_state)
    assert made.count(f"systemctl disable --now {units.EXPIRY_TIMER}") == 2, made
    assert any("run no power-off timer after the resume until 'oa-vm pool-extend --pool "
               "waa-eval --by 1m'" in line for line in lines), lines
