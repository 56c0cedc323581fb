"""Pause, resume and repair of AWS and Azure pools, against ``FakePulumiEngine``.

The pool programs are the real ones (run under Pulumi's mocks by the fake engine); records,
keys and the passphrase are real files in an isolated home. Two stand-ins, for what cannot be
reached here: the engine (the fake cloud is a dict) and, for Azure, the VM power control
(``az vm deallocate/start``), replaced by :class:`RecordingPower`, which only records.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from infra import azure as infra_azure
from oa_vm import fleet
from oa_vm.clouds.aws.provider import AwsProvider
from oa_vm.clouds.azure.provider import AzureProvider
from oa_vm.clouds.pulumi.fleet import CloudFleetOps
from oa_vm.errors import PoolNotReadyError
from oa_vm.model import state
from oa_vm.model.state import PoolState, WorkerState
from oa_vm.reach import replacements
from tests.support.cloud_pools import (
    RecordingHosts,
    RecordingPower,
    live_of_type,
    ready_pool,
    spec,
)
from tests.support.fake_pulumi_engine import FakePulumiEngine
from tests.support.pool_programs import AwsLookups

POWER_TYPE = "aws:ec2transitgateway/instanceState:InstanceState"
INSTANCE_TYPE = "aws:ec2/instance:Instance"


def _without_tags(value: Any) -> Any:
    """Inputs without their tags (an expiry moved in the cloud changes only those, in place)."""
    if isinstance(value, dict):
        return {k: _without_tags(v) for k, v in value.items() if k not in ("tags", "tagsAll")}
    if isinstance(value, list):
        return [_without_tags(v) for v in value]
    return value


def _untouched(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> bool:
    """The same resources, with the same inputs but their tags: nothing was replaced."""
    return ([(r["urn"], r["id"], _without_tags(r["inputs"])) for r in before]
            == [(r["urn"], r["id"], _without_tags(r["inputs"])) for r in after])


def _power_states(engine: FakePulumiEngine) -> dict[str, Any]:
    """Power resource name -> the resource, as the fake cloud holds it after the last update."""
    return {r["urn"].rsplit("::", 1)[-1]: r for r in live_of_type(engine, POWER_TYPE)}


@pytest.fixture
def engine() -> FakePulumiEngine:
    return FakePulumiEngine(AwsLookups())


def _aws_pool(engine: FakePulumiEngine,
              runner: RecordingHosts | None = None) -> tuple[AwsProvider, CloudFleetOps]:
    provider = AwsProvider(engine=engine, lister=lambda pool: [],
                           remote=runner or RecordingHosts())
    ready_pool(provider)
    return provider, CloudFleetOps(provider)


def test_aws_pause_stops_every_instance_and_resume_starts_them(
    engine: FakePulumiEngine, oa_home: Path
) -> None:
    _, ops = _aws_pool(engine)
    instances_before = live_of_type(engine, INSTANCE_TYPE)
    ups = engine.calls.count(("up", "us-east-1"))

    paused = fleet.pause_pool("waa-eval", keep_days=2, ops=ops)
    assert paused.state == PoolState.PAUSED
    assert {w.state for w in paused.workers} == {WorkerState.PAUSED}
    assert engine.calls.count(("up", "us-east-1")) == ups + 1
    power = _power_states(engine)
    assert sorted(power) == ["waa-eval-w0-power", "waa-eval-w1-power"]
    # the same instances, untouched but their expiry tags: a changed input would have replaced
    # them (and their disks)
    assert _untouched(instances_before, live_of_type(engine, INSTANCE_TYPE))
    saved = state.load("waa-eval")
    assert saved.state == PoolState.PAUSED
    per_day = saved.provider_data["pauses"][-1]["per_day"]
    disk_gb = saved.settings["disk_gb"] + saved.settings["storage_gb"]  # OS disk + storage
    assert disk_gb > 128
    assert per_day == pytest.approx(2 * disk_gb * 0.08 * 24 / 730)  # gp3 disks, no address
    assert saved.expires_at is not None
    assert timedelta(days=1.9) < saved.expires_at - state.utcnow() <= timedelta(days=2)
    with pytest.raises(PoolNotReadyError, match="already paused"):
        fleet.pause_pool("waa-eval", ops=ops)

    resumed = fleet.resume_pool("waa-eval", wait=False, ops=ops)
    assert {w.state for w in resumed.workers} == {WorkerState.BOOTING}
    assert _untouched(instances_before, live_of_type(engine, INSTANCE_TYPE))
    assert len(_power_states(engine)) == 2
    saved = state.load("waa-eval")
    assert saved.provider_data["pauses"][-1]["to"] is not None


def test_aws_program_declares_stopped_then_running(engine: FakePulumiEngine, oa_home: Path) -> None:
    """The power state each update declares, read from the program run under mocks."""
    import infra.aws as infra_aws
    from infra.offline import run_offline
    from infra.pause import declare_power_states
    from tests.support.pool_programs import make_settings

    settings = make_settings("aws", workers=2)
    for paused, expected in ((True, "stopped"), (False, "running")):
        def program(paused: bool = paused) -> object:
            pool = infra_aws.pool_program(settings)
            declare_power_states(pool, settings, paused=paused)
            return pool

        run = run_offline(program, AwsLookups())
        # by name: the engine registers the workers' resources in parallel, in no fixed order
        states = sorted((r for r in run.resources if r.type == POWER_TYPE), key=lambda r: r.name)
        assert [r.inputs["state"] for r in states] == [expected, expected]
        # each worker's power resource points at that worker's instance
        assert [r.inputs["instanceId"] for r in states] == [
            f"{name}-id" for name in settings.worker_names()
        ]


def test_aws_repair_recreates_a_vanished_instance_under_its_name(
    engine: FakePulumiEngine, oa_home: Path
) -> None:
    provider, ops = _aws_pool(engine)
    record = state.load("waa-eval")
    gone = str(record.workers[1].provider_id)
    engine.vanish("waa-eval", gone)  # spot interruption / termination behind our back
    assert len(live_of_type(engine, INSTANCE_TYPE)) == 1

    record, replaced = fleet.repair_pool("waa-eval", wait=False, ops=ops)
    assert replaced == ["waa-eval-w1"]
    assert len(live_of_type(engine, INSTANCE_TYPE)) == 2
    assert record.workers[1].name == "waa-eval-w1"
    assert record.workers[1].state == WorkerState.BOOTING
    assert record.workers[0].state == WorkerState.READY  # the survivor was left alone
    _, nothing = fleet.repair_pool("waa-eval", wait=False, ops=ops)
    assert nothing == []


def test_azure_pause_deallocates_and_resume_starts_through_the_driver(oa_home: Path) -> None:
    engine = FakePulumiEngine(infra_azure.offline_lookup)
    provider = AzureProvider(engine=engine, lister=lambda pool: [])
    record = provider.create(spec("azure"), lambda line: None)
    state.save(record)
    power = RecordingPower()
    ops = CloudFleetOps(provider, power=power)
    ids = [str(w.provider_id) for w in record.workers]
    ups = len([c for c in engine.calls if c[0] == "up"])

    paused = fleet.pause_pool("waa-eval", ops=ops)
    assert paused.state == PoolState.PAUSED
    assert power.calls == [("deallocate", ids)]
    # the program ran with the paused expiry (its deleter's), a week ahead, then deallocated
    assert len([c for c in engine.calls if c[0] == "up"]) == ups + 1
    saved = state.load("waa-eval")
    per_day = saved.provider_data["pauses"][-1]["per_day"]
    # Azure bills each disk by its tier: the 160 GB OS disk as P15 (256 GiB), the 96 GB
    # storage disk as P10 (128 GiB); and the static address.
    assert (saved.settings["disk_gb"], saved.settings["storage_gb"]) == (160, 96)
    assert per_day == pytest.approx(2 * ((38.01 + 19.71) * 24 / 730 + 0.005 * 24))

    fleet.resume_pool("waa-eval", wait=False, ops=ops)
    assert power.calls[-1] == ("start", ids)
    assert {w.state for w in state.load("waa-eval").workers} == {WorkerState.BOOTING}


def test_azure_repair_recreates_a_vanished_vm(oa_home: Path) -> None:
    engine = FakePulumiEngine(infra_azure.offline_lookup)
    provider = AzureProvider(engine=engine, lister=lambda pool: [])
    record = provider.create(spec("azure"), lambda line: None)
    state.save(record)
    vms_before = len(engine.live_resources("waa-eval"))
    engine.vanish("waa-eval", str(record.workers[0].provider_id))
    assert len(engine.live_resources("waa-eval")) < vms_before
    record, replaced = fleet.repair_pool(
        "waa-eval", wait=False, ops=CloudFleetOps(provider, power=RecordingPower())
    )
    assert replaced == [record.workers[0].name]
    assert len(engine.live_resources("waa-eval")) == vms_before


def _notice(worker: Any, cloud: str, due: timedelta) -> None:
    """Mark ``worker`` as 'pool-status --refresh' leaves a spot worker under notice (due in
    ``due``), with the notice text its cloud's watcher writes."""
    when = state.utcnow() + due
    if cloud == "aws":
        detail = (f"AWS spot interruption notice: terminate at "
                  f"{when.strftime('%Y-%m-%dT%H:%M:%SZ')}; no new task")
    else:
        detail = (f"Azure Spot eviction notice: Preempt at "
                  f"{when.strftime('%a, %d %b %Y %H:%M:%S GMT')}; no new task")
    worker.state = WorkerState.DRAINING
    worker.phase = "draining"
    worker.detail = detail


def _by_name(engine: FakePulumiEngine, kind: str) -> dict[str, dict[str, Any]]:
    return {r["urn"].rsplit("::", 1)[-1]: r for r in live_of_type(engine, kind)}


def test_aws_repair_starts_a_new_worker_beside_a_draining_one_then_retires_it(
    engine: FakePulumiEngine, oa_home: Path
) -> None:
    _, ops = _aws_pool(engine)
    record = state.load("waa-eval")
    _notice(record.workers[1], "aws", timedelta(minutes=2))
    state.save(record)
    before = _by_name(engine, INSTANCE_TYPE)
    lines: list[str] = []
    record, started = fleet.repair_pool("waa-eval", wait=False, ops=ops, progress=lines.append)
    assert started == ["waa-eval-w2"]  # at once, before the cloud ends the draining one
    assert any("starting waa-eval-w2 to replace draining waa-eval-w1" in line for line in lines)
    after = _by_name(engine, INSTANCE_TYPE)
    assert sorted(after) == ["waa-eval-w0", "waa-eval-w1", "waa-eval-w2"]
    # the two that were there are untouched (same inputs: nothing replaced, no subnet moved)
    assert {n: after[n]["inputs"] for n in before} == {n: r["inputs"] for n, r in before.items()}
    assert [(w.name, w.state) for w in record.workers] == [
        ("waa-eval-w0", WorkerState.READY), ("waa-eval-w1", WorkerState.DRAINING),
        ("waa-eval-w2", WorkerState.BOOTING)]
    new = record.workers[2]
    assert new.provider_id == "waa-eval-w2-id" and new.ssh is not None
    assert new.ssh.key_path == record.workers[0].ssh.key_path  # type: ignore[union-attr]
    saved = state.load("waa-eval")
    assert saved.settings["worker_indexes"] == [0, 1, 2]
    assert saved.provider_data["replaced_by"] == {"waa-eval-w1": "waa-eval-w2"}

    # Again while it still runs: no second replacement, and the stack is not touched.
    ups = engine.calls.count(("up", "us-east-1"))
    lines.clear()
    _, started = fleet.repair_pool("waa-eval", wait=False, ops=ops, progress=lines.append)
    assert started == [] and engine.calls.count(("up", "us-east-1")) == ups
    assert any("waa-eval-w2 replaces it" in line for line in lines), lines

    engine.vanish("waa-eval", "waa-eval-w1-id")  # AWS terminates it at the notice's time
    later = CloudFleetOps(AwsProvider(engine=engine, lister=lambda pool: [],
                                      remote=RecordingHosts()))
    record, started = fleet.repair_pool("waa-eval", wait=False, ops=later)
    assert started == []  # retired, not recreated
    assert [w.name for w in record.workers] == ["waa-eval-w0", "waa-eval-w2"]
    assert sorted(_by_name(engine, INSTANCE_TYPE)) == ["waa-eval-w0", "waa-eval-w2"]
    assert state.load("waa-eval").settings["worker_indexes"] == [0, 2]
    # a later pause and resume use the same workers (nothing recreated)
    kept = _by_name(engine, INSTANCE_TYPE)
    fleet.pause_pool("waa-eval", ops=later)
    fleet.resume_pool("waa-eval", wait=False, ops=later)
    assert _untouched(list(kept.values()), list(_by_name(engine, INSTANCE_TYPE).values()))
    assert sorted(_power_states(engine)) == ["waa-eval-w0-power", "waa-eval-w2-power"]


def test_azure_evicted_vm_is_replaced_then_retired_once_its_notice_time_passed(
    oa_home: Path
) -> None:
    engine = FakePulumiEngine(infra_azure.offline_lookup)
    provider = AzureProvider(engine=engine, lister=lambda pool: [])
    record = provider.create(spec("azure"), lambda line: None)
    _notice(record.workers[0], "azure", timedelta(seconds=30))
    state.save(record)
    ops = CloudFleetOps(provider, power=RecordingPower())
    record, started = fleet.repair_pool("waa-eval", wait=False, ops=ops)
    assert started == ["waa-eval-w2"]
    vms = _by_name(engine, "azure-native:compute:VirtualMachine")
    assert sorted(vms) == ["waa-eval-w0", "waa-eval-w1", "waa-eval-w2"]

    # Azure deallocates an evicted VM (it does not vanish): the notice's time is what tells.
    record = state.load("waa-eval")
    _notice(record.workers[0], "azure", -timedelta(seconds=replacements.NOTICE_GRACE_S + 60))
    state.save(record)
    later = CloudFleetOps(AzureProvider(engine=engine, lister=lambda pool: []),
                          power=RecordingPower())
    record, started = fleet.repair_pool("waa-eval", wait=False, ops=later)
    assert started == []
    assert [w.name for w in record.workers] == ["waa-eval-w1", "waa-eval-w2"]
    names = {r["urn"].rsplit("::", 1)[-1] for r in engine.live_resources("waa-eval")}
    # every resource of the retired worker is gone (VM, address, NIC, disk, schedule)
    assert not {n for n in names if n.startswith("waa-eval-w0")}, names
    assert {"waa-eval-w2", "waa-eval-w2-ip", "waa-eval-w2-nic", "waa-eval-w2-storage",
            "waa-eval-w2-shutdown"} <= names


@pytest.mark.parametrize("action", ["pause", "repair"])
def test_a_newer_ami_between_create_and_an_update_replaces_nothing(
    engine: FakePulumiEngine, oa_home: Path, action: str
) -> None:
    """Canonical publishes a new Ubuntu AMI after the create: the update reads the one the create
    used from the stack's config and never looks it up again."""
    lookups = engine.lookup
    assert isinstance(lookups, AwsLookups)
    _, ops = _aws_pool(engine)
    created_ami = lookups.ami
    assert engine.stacks["waa-eval"].config["oa-vm:pinned-ami"] == created_ami
    lookups.ami = "ami-0fffffffffffffff1"
    lookups.calls.clear()
    instances_before = live_of_type(engine, INSTANCE_TYPE)
    if action == "pause":
        fleet.pause_pool("waa-eval", keep_days=2, ops=ops)
    else:
        engine.vanish("waa-eval", "waa-eval-w1-id")  # one worker ended by the cloud
        record = state.load("waa-eval")
        ops.repair(record, lambda line: None, None)
    assert not [call for call in lookups.calls if call[0] == "aws:ec2/getAmi:getAmi"]
    instances = live_of_type(engine, INSTANCE_TYPE)
    if action == "pause":  # the paused expiry moves the instances' tags, nothing else of them
        assert _untouched(instances_before, instances)
    else:
        assert engine.replaced("waa-eval") == []
    assert len(instances) == 2
    assert {inst["inputs"]["ami"] for inst in instances} == {created_ami}
    assert engine.stacks["waa-eval"].config["oa-vm:pinned-ami"] == created_ami
