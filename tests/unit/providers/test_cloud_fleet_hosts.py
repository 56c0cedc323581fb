"""A host with several workers is one unit of the fleet: a host the cloud took away is recreated
whole (every worker on it), and a draining host is replaced by a new host, slot for slot. The
real AWS program runs under ``FakePulumiEngine`` (the only stand-in)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from oa_vm import fleet
from oa_vm.clouds.aws.provider import AwsProvider
from oa_vm.clouds.pulumi.fleet import CloudFleetOps
from oa_vm.model import state
from oa_vm.model.state import WorkerState
from oa_vm.reach import replacements
from tests.support.cloud_pools import live_of_type, ready_pool, spec
from tests.support.fake_pulumi_engine import FakePulumiEngine
from tests.support.pool_programs import AwsLookups
from tests.unit.providers.test_cloud_fleet import INSTANCE_TYPE


@pytest.fixture
def pool(oa_home: Path) -> tuple[FakePulumiEngine, CloudFleetOps]:
    engine = FakePulumiEngine(AwsLookups())
    provider = AwsProvider(engine=engine, lister=lambda pool: [])
    wanted = replace(spec("aws"), workers=4, workers_per_host=2, size="m8i.4xlarge")
    ready_pool(provider, wanted)
    return engine, CloudFleetOps(provider)


def test_a_host_taken_away_is_recreated_with_every_worker_on_it(
    pool: tuple[FakePulumiEngine, CloudFleetOps]
) -> None:
    engine, ops = pool
    record = state.load("waa-eval")
    assert [w.host for w in record.workers] == ["waa-eval-w0"] * 2 + ["waa-eval-w1"] * 2
    engine.vanish("waa-eval", str(record.workers[2].provider_id))  # host w1, both its workers
    record, replaced = fleet.repair_pool("waa-eval", wait=False, ops=ops)
    assert replaced == ["waa-eval-w1-s0", "waa-eval-w1-s1"]
    assert len(live_of_type(engine, INSTANCE_TYPE)) == 2
    assert {w.state for w in record.workers[2:]} == {WorkerState.BOOTING}
    assert {w.state for w in record.workers[:2]} == {WorkerState.READY}  # the other host
    assert len({w.provider_id for w in record.workers[2:]}) == 1  # one machine again


def test_a_draining_host_is_replaced_by_a_new_host_slot_for_slot(
    pool: tuple[FakePulumiEngine, CloudFleetOps]
) -> None:
    engine, ops = pool
    record = state.load("waa-eval")
    for worker in record.workers[:2]:  # a spot notice reaches every worker of host w0
        worker.state = WorkerState.DRAINING
        worker.detail = "AWS spot interruption notice"
    state.save(record)
    record, started = fleet.repair_pool("waa-eval", wait=False, ops=ops)
    assert started == ["waa-eval-w2-s0", "waa-eval-w2-s1"]
    assert replacements.replaced_by(record) == {"waa-eval-w0-s0": "waa-eval-w2-s0",
                                                "waa-eval-w0-s1": "waa-eval-w2-s1"}
    new = [w for w in record.workers if w.host == "waa-eval-w2"]
    assert [w.name for w in new] == started
    assert (new[1].remote_waa_port, new[1].remote_scoring_port) == (5100, 5151)
    assert len(live_of_type(engine, INSTANCE_TYPE)) == 3
