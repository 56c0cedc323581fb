"""``pool-extend``, ``pool-pause --keep-days`` and ``pool-resume`` move a cloud pool's expiry in
the cloud: the pool's program runs again (under ``FakePulumiEngine``, the real programs under
Pulumi's mocks), so AWS's terminate schedule and Azure's deleter and shutdown time follow the
record, while each instance keeps the user data it was created with (nothing replaced; a new one
gets the current expiry in its own). The hosts'
power-off timers are reached through a recording runner here (the mocks' addresses are
documentation addresses); ``tests/integration/test_cloud_timer_rearm.py`` runs the same
commands over a real sshd.
"""

from __future__ import annotations

import base64
import gzip
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from infra import azure as infra_azure
from infra.aws import schedule_expression
from infra.azure import shutdown_time
from infra.settings import expiry_minute
from oa_vm import fleet
from oa_vm.clouds.aws.provider import AwsProvider
from oa_vm.clouds.azure.provider import AzureProvider
from oa_vm.clouds.base import Progress
from oa_vm.clouds.pulumi import timers
from oa_vm.clouds.pulumi.fleet import CloudFleetOps
from oa_vm.errors import InvalidInputError, PoolNotReadyError, ProvisioningError
from oa_vm.model import state
from oa_vm.model.state import PoolState, WorkerState
from tests.support.cloud_pools import (
    RecordingHosts,
    RecordingPower,
    live_of_type,
    mark_ready,
    ready_pool,
)
from tests.support.fake_pulumi_engine import FakePulumiEngine
from tests.support.pool_programs import AwsLookups

INSTANCE = "aws:ec2/instance:Instance"
SCHEDULE = "aws:scheduler/schedule:Schedule"
VM = "azure-native:compute:VirtualMachine"
SHUTDOWN = "azure-native:devtestlab:GlobalSchedule"
WORKFLOW = "azure-native:logic:Workflow"
POWER = "aws:ec2transitgateway/instanceState:InstanceState"


def _ups(engine: FakePulumiEngine) -> int:
    return len([c for c in engine.calls if c[0] == "up"])


@dataclass
class AwsPool:
    """A ready AWS pool as each AWS test starts from: its hosts reached through ``hosts``."""

    hosts: RecordingHosts
    engine: FakePulumiEngine
    ops: CloudFleetOps
    created: datetime
    """The expiry the create gave it."""
    user_data: list[str]
    """Each instance's user data as the create made it."""

    def user_data_now(self) -> list[str]:
        """Each instance's user data as the cloud holds it now."""
        return [i["inputs"]["userDataBase64"] for i in live_of_type(self.engine, INSTANCE)]


@pytest.fixture
def aws(oa_home: Path) -> AwsPool:
    hosts, engine = RecordingHosts(), FakePulumiEngine(AwsLookups())
    provider = AwsProvider(engine=engine, lister=lambda pool: [], remote=hosts)
    ready_pool(provider)
    made = AwsPool(hosts, engine, CloudFleetOps(provider), _expiry(), [])
    made.user_data = made.user_data_now()
    return made


def _azure() -> tuple[FakePulumiEngine, CloudFleetOps, RecordingPower]:
    engine = FakePulumiEngine(infra_azure.offline_lookup)
    provider = AzureProvider(engine=engine, lister=lambda pool: [])
    ready_pool(provider)
    power = RecordingPower()
    return engine, CloudFleetOps(provider, power=power), power


def _expiry() -> datetime:
    expires = state.load("waa-eval").expires_at
    assert expires is not None
    return expires


def _tags(resources: list[dict[str, Any]]) -> set[str]:
    return {r["inputs"]["tags"]["oa-vm:expires-at"] for r in resources}


def _tag(expires_at: datetime) -> str:
    return expires_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_aws_extend_moves_the_schedule_tags_and_timers_not_the_user_data(aws: AwsPool) -> None:
    hosts, engine, ops, created = aws.hosts, aws.engine, aws.ops, aws.created
    lines: list[str] = []

    record = fleet.extend_pool("waa-eval", by_s=30 * 3600, progress=lines.append, ops=ops)
    new = created + timedelta(hours=30)
    assert record.expires_at == new == _expiry()
    (schedule,) = live_of_type(engine, SCHEDULE)
    assert schedule["inputs"]["scheduleExpression"] == schedule_expression(new)
    instances = live_of_type(engine, INSTANCE)
    assert [i["inputs"]["userDataBase64"] for i in instances] == aws.user_data  # not replaced
    assert _tags(instances) == {new.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    # each host's timer re-armed with the units cloud-init writes, for the new expiry
    assert sorted(hosts.calls) == sorted(
        (w.ssh.host, timers.rearm_command(new)) for w in record.workers if w.ssh)
    assert not [line for line in lines if line.startswith("host ")]

    # a later repair keeps the schedule at the record's expiry and w0's user data as made;
    # the w1 it makes again has the expiry of now in its own
    engine.vanish("waa-eval", "waa-eval-w1-id")
    fleet.repair_pool("waa-eval", wait=False, ops=ops)
    assert live_of_type(engine, SCHEDULE)[0]["inputs"]["scheduleExpression"] == (
        schedule_expression(new))
    kept, remade = aws.user_data_now()
    assert kept == aws.user_data[0]
    assert f"OA_VM_EXPIRES_AT={_tag(new)}".encode() in gzip.decompress(base64.b64decode(remade))


def test_aws_extend_says_which_host_did_not_answer_and_what_to_run(aws: AwsPool) -> None:
    ops = aws.ops
    record = state.load("waa-eval")
    assert record.workers[1].ssh is not None
    down = record.workers[1].ssh.host
    ops.provider.remote = RecordingHosts(down=[down])  # type: ignore[attr-defined]
    lines: list[str] = []
    fleet.extend_pool("waa-eval", by_s=3600, progress=lines.append, ops=ops)
    assert [line for line in lines if line.startswith("host ")] == [
        f"host {down}: its power-off timer was not moved: it does not answer (connection "
        "timed out); when it answers, run: oa-vm pool-extend --pool waa-eval --by 1m"]


def test_a_failed_update_leaves_the_record_at_the_expiry_the_cloud_keeps(aws: AwsPool) -> None:
    hosts, engine, ops, created = aws.hosts, aws.engine, aws.ops, aws.created
    engine.fail_up["us-east-1"] = "AccessDenied: scheduler:UpdateSchedule"
    with pytest.raises(ProvisioningError) as caught:
        fleet.extend_pool("waa-eval", by_s=2 * 3600, ops=ops)
    message = str(caught.value)
    assert "\n" not in message
    assert "its expiry did not move in the cloud" in message
    assert f"the record keeps {created.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC" in message
    assert "run 'oa-vm pool-extend --pool waa-eval --by 2h' again" in message
    assert _expiry() == created  # never later than what the cloud enforces
    assert not hosts.calls  # no timer moved past the cloud's schedule


def test_aws_pause_and_resume_move_the_schedule_and_tags_and_reach_no_host(aws: AwsPool) -> None:
    """A stopped host's timer is not disarmed, nor a resumed one's re-armed: each host sets it
    from its ``oa-vm:expires-at`` tag when it boots (``test_expiry_arm_rehearsal.py``), so the
    tags must hold the expiry the cloud keeps."""
    hosts, engine, ops = aws.hosts, aws.engine, aws.ops

    paused = fleet.pause_pool("waa-eval", keep_days=3, ops=ops)
    assert paused.state == PoolState.PAUSED
    kept = _expiry()
    assert timedelta(days=2.9) < kept - state.utcnow() <= timedelta(days=3)
    # AWS terminates the stopped instances at the paused expiry, not the creation's
    assert live_of_type(engine, SCHEDULE)[0]["inputs"]["scheduleExpression"] == (
        schedule_expression(kept))
    assert aws.user_data_now() == aws.user_data
    assert _tags(live_of_type(engine, INSTANCE)) == {_tag(kept)}
    assert not hosts.calls

    # extended while paused: the schedule moves, the instances stay declared stopped, no SSH
    hosts.calls.clear()
    lines: list[str] = []
    fleet.extend_pool("waa-eval", by_s=5 * 3600, progress=lines.append, ops=ops)
    assert live_of_type(engine, SCHEDULE)[0]["inputs"]["scheduleExpression"] == schedule_expression(
        kept + timedelta(hours=5))
    assert {p["inputs"]["state"] for p in live_of_type(engine, POWER)} == {"stopped"}
    assert _tags(live_of_type(engine, INSTANCE)) == {_tag(kept + timedelta(hours=5))}
    assert not hosts.calls
    assert ("its hosts are stopped: each sets its power-off timer to the new expiry when it "
            "starts") in lines

    # resumed: the schedule takes the resumed expiry (TTL plus the extension) as they start
    lines.clear()
    resumed = fleet.resume_pool("waa-eval", ttl_hours=2, wait=False, ops=ops,
                                progress=lines.append)
    assert resumed.expires_at is not None
    assert timedelta(hours=6.9) < resumed.expires_at - state.utcnow() <= timedelta(hours=7)
    assert live_of_type(engine, SCHEDULE)[0]["inputs"]["scheduleExpression"] == schedule_expression(
        resumed.expires_at)
    assert {p["inputs"]["state"] for p in live_of_type(engine, POWER)} == {"running"}
    assert _tags(live_of_type(engine, INSTANCE)) == {_tag(resumed.expires_at)}
    assert aws.user_data_now() == aws.user_data
    # --no-wait needs no follow-up: nothing to run afterwards, no host reached
    assert not [line for line in lines if "timer" in line or "pool-extend" in line], lines
    assert not hosts.calls


def test_a_failed_resume_leaves_the_pool_paused_with_its_expiry(aws: AwsPool) -> None:
    engine, ops = aws.engine, aws.ops
    fleet.pause_pool("waa-eval", keep_days=3, ops=ops)
    fleet.extend_pool("waa-eval", by_s=3600, ops=ops)
    before = state.load("waa-eval")
    engine.fail_up["us-east-1"] = "InsufficientInstanceCapacity"
    with pytest.raises(ProvisioningError, match="it was not resumed; its expiry did not move"):
        fleet.resume_pool("waa-eval", wait=False, ops=ops)
    after = state.load("waa-eval")
    assert after.expires_at == before.expires_at
    assert after.state == PoolState.PAUSED
    assert after.provider_data == before.provider_data  # the extension is still carried


def test_azure_extend_moves_the_daily_shutdown_time_not_the_custom_data(oa_home: Path) -> None:
    engine, ops, _power = _azure()
    created = _expiry()
    custom = {v["inputs"]["osProfile"]["customData"] for v in live_of_type(engine, VM)}
    fleet.extend_pool("waa-eval", by_s=3 * 3600 + 600, ops=ops)
    new = created + timedelta(hours=3, minutes=10)
    assert _expiry() == new
    assert {s["inputs"]["dailyRecurrence"]["time"] for s in live_of_type(engine, SHUTDOWN)} == {
        shutdown_time(new)}
    assert {v["inputs"]["osProfile"]["customData"] for v in live_of_type(engine, VM)} == custom
    assert _tags(live_of_type(engine, VM)) == {new.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}


@pytest.mark.parametrize("paused", [False, True])
def test_azure_refuses_an_expiry_past_24_hours_before_anything_runs(
    oa_home: Path, paused: bool
) -> None:
    engine, ops, power = _azure()
    if paused:
        fleet.pause_pool("waa-eval", ops=ops)
    before = (state.pool_dir("waa-eval") / "pool.json").read_bytes()
    ups = _ups(engine)
    with pytest.raises(InvalidInputError) as caught:
        fleet.extend_pool("waa-eval", by_s=30 * 3600, ops=ops)
    message = str(caught.value)
    assert "\n" not in message and "Azure pools run at most 24 hours" in message
    if paused:
        assert "pool-resume would add the 30h extended meanwhile to its --ttl" in message
    else:
        assert "extend it by at most 20h" in message, message
    assert (state.pool_dir("waa-eval") / "pool.json").read_bytes() == before
    assert _ups(engine) == ups
    power_calls = list(power.calls)
    with pytest.raises(InvalidInputError, match="pass --ttl 24h or less"):
        if not paused:
            fleet.pause_pool("waa-eval", ops=ops)
        fleet.resume_pool("waa-eval", ttl_hours=25, wait=False, ops=ops)
    assert power.calls[len(power_calls) + (0 if paused else 1):] == []
    assert _ups(engine) == ups + (0 if paused else 1)  # the pause's update, nothing more


def _deleter_starts(engine: FakePulumiEngine) -> str:
    """When the pool's deleter workflow first fires (its trigger's start time)."""
    (workflow,) = live_of_type(engine, WORKFLOW)
    (trigger,) = workflow["inputs"]["definition"]["triggers"].values()
    return str(trigger["recurrence"]["startTime"])


def _minute(expires_at: datetime) -> str:
    return expiry_minute(expires_at).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_azure_pause_moves_the_deleter_to_the_paused_expiry_resume_moves_it_back(
    oa_home: Path
) -> None:
    engine, ops, power = _azure()
    custom = {v["inputs"]["osProfile"]["customData"] for v in live_of_type(engine, VM)}
    ups = _ups(engine)
    order: list[str] = []
    deallocate, start = power.deallocate, power.start

    def deallocate_after_the_update(ids: Sequence[str], progress: Progress) -> None:
        order.append(f"deallocate after {_ups(engine) - ups} update(s)")
        deallocate(ids, progress)

    def start_after_the_update(ids: Sequence[str], progress: Progress) -> None:
        order.append(f"start after {_ups(engine) - ups} update(s)")
        start(ids, progress)

    power.deallocate = deallocate_after_the_update  # type: ignore[method-assign]
    power.start = start_after_the_update  # type: ignore[method-assign]
    # a week: more than a running pool's 24 hours, which its deallocated VMs need not keep
    paused = fleet.pause_pool("waa-eval", keep_days=7, ops=ops)
    assert order == ["deallocate after 1 update(s)"]
    assert paused.expires_at is not None and paused.state == PoolState.PAUSED
    assert _deleter_starts(engine) == _minute(paused.expires_at)
    assert _tags(live_of_type(engine, VM)) == {_tag(paused.expires_at)}

    fleet.extend_pool("waa-eval", by_s=2 * 3600, ops=ops)  # moved now, and carried to the resume
    assert _ups(engine) == ups + 2
    extended = _expiry()
    assert extended == paused.expires_at + timedelta(hours=2)
    assert _deleter_starts(engine) == _minute(extended)

    resumed = fleet.resume_pool("waa-eval", ttl_hours=3, wait=False, ops=ops)
    assert order[-1] == "start after 3 update(s)"
    assert resumed.expires_at is not None
    assert timedelta(hours=4.9) < resumed.expires_at - state.utcnow() <= timedelta(hours=5)
    assert _deleter_starts(engine) == _minute(resumed.expires_at)
    assert {s["inputs"]["dailyRecurrence"]["time"] for s in live_of_type(engine, SHUTDOWN)} == {
        shutdown_time(resumed.expires_at)}
    assert {v["inputs"]["osProfile"]["customData"] for v in live_of_type(engine, VM)} == custom


def test_a_failed_azure_pause_deallocates_nothing_and_keeps_the_expiry(oa_home: Path) -> None:
    engine, ops, power = _azure()
    created = _expiry()
    engine.fail_up["eastus"] = "AuthorizationFailed: Microsoft.Logic/workflows/write"
    with pytest.raises(ProvisioningError, match="it was not paused; its expiry did not move"):
        fleet.pause_pool("waa-eval", keep_days=2, ops=ops)
    assert _expiry() == created
    assert state.load("waa-eval").state == PoolState.READY
    assert power.calls == []


def test_a_failed_pause_leaves_the_hosts_timers_alone(aws: AwsPool) -> None:
    hosts, engine, ops, created = aws.hosts, aws.engine, aws.ops, aws.created
    engine.fail_up["us-east-1"] = "UnauthorizedOperation: ec2:StopInstances"
    with pytest.raises(ProvisioningError, match="it was not paused; its expiry did not move"):
        fleet.pause_pool("waa-eval", keep_days=2, ops=ops)
    assert _expiry() == created
    assert state.load("waa-eval").state == PoolState.READY
    assert not hosts.calls


def test_a_waiting_resume_reaches_no_timer_once_the_workers_are_ready(
    aws: AwsPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``pool-wait`` itself (SSH, the status file, the probes) is covered by test_cloud_wait;
    here the wait stands for its result, the pool ready, to see what the resume does next:
    nothing more, the hosts set their timers from their tags as they booted."""
    from oa_vm import api

    hosts, ops = aws.hosts, aws.ops
    fleet.pause_pool("waa-eval", keep_days=2, ops=ops)
    hosts.calls.clear()

    def ready(name: str, **_: Any) -> Any:
        return mark_ready(state.load(name))

    monkeypatch.setattr(api, "wait_pool", ready)
    resumed = fleet.resume_pool("waa-eval", ttl_hours=3, ops=ops)
    assert resumed.expires_at is not None
    assert _tags(live_of_type(aws.engine, INSTANCE)) == {_tag(resumed.expires_at)}
    assert not hosts.calls


@pytest.mark.parametrize("pool_state", [PoolState.CREATING, PoolState.FAILED])
def test_a_pool_without_a_program_to_run_is_not_extended(
    oa_home: Path, pool_state: PoolState
) -> None:
    """A create still running, or one that failed before it had workers (its record has no
    settings): refused in one line, nothing run or written."""
    engine, ops, _power = _azure()
    record = state.load("waa-eval")
    record.state = pool_state
    record.workers = []
    state.save(record)
    before = (state.pool_dir("waa-eval") / "pool.json").read_bytes()
    ups = _ups(engine)
    with pytest.raises(PoolNotReadyError) as caught:
        fleet.extend_pool("waa-eval", by_s=3600, ops=ops)
    assert "\n" not in str(caught.value)
    assert ("wait for its 'oa-vm pool-create' to end" if pool_state == PoolState.CREATING
            else "oa-vm pool-cleanup --pool waa-eval") in str(caught.value)
    assert "oa-vm pool-cleanup --pool waa-eval" in str(caught.value)
    assert (state.pool_dir("waa-eval") / "pool.json").read_bytes() == before
    assert _ups(engine) == ups


def test_what_another_command_saved_while_the_program_ran_is_kept(aws: AwsPool) -> None:
    """``pool-wait`` saves worker states while an extend's program runs (minutes): the extend
    takes its expiry into the record as it is then, not the copy it read before."""
    created = aws.created

    class WaitSavesMeanwhile(CloudFleetOps):
        def move_expiry(self, record: Any, progress: Progress) -> None:
            current = state.load("waa-eval")
            current.workers[0].state = WorkerState.DRAINING
            current.workers[0].detail = "a notice seen by pool-wait meanwhile"
            state.save(current)
            super().move_expiry(record, progress)

    meanwhile = WaitSavesMeanwhile(aws.ops.provider, power=RecordingPower())
    fleet.extend_pool("waa-eval", by_s=3600, ops=meanwhile)
    saved = state.load("waa-eval")
    assert saved.expires_at == created + timedelta(hours=1)
    assert saved.workers[0].state == WorkerState.DRAINING
    assert saved.workers[0].detail == "a notice seen by pool-wait meanwhile"
