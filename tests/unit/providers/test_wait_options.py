"""pool-wait's honest defaults: a deadline that follows the pool, a heartbeat at least every 30 s,
Pulumi refreshes at most every few minutes; and the cloud chosen only by the user."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from oa_vm.cli.pool_options import Heartbeat, choose_cloud, wait_timeout
from oa_vm.clouds.aws.provider import AwsProvider
from oa_vm.clouds.base import PoolSpec
from oa_vm.errors import InvalidInputError
from oa_vm.model import state
from oa_vm.model.state import PoolRecord, PoolState, WorkerRecord, WorkerState
from tests.support.fake_pulumi_engine import FakePulumiEngine
from tests.support.pool_programs import AWS_IMAGE, AwsLookups


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _record(**settings: object) -> PoolRecord:
    return PoolRecord(
        name="waa", cloud="aws", state=PoolState.PROVISIONING, created_at=state.utcnow(),
        settings=dict(settings),
        workers=[WorkerRecord(name="waa-w0", state=WorkerState.BOOTING),
                 WorkerRecord(name="waa-w1", state=WorkerState.BOOTING)],
    )


def test_the_deadline_follows_the_pool() -> None:
    assert wait_timeout(_record(wait_timeout_s=1800.0), "auto") == 1800.0
    assert wait_timeout(_record(), "auto") == 1800.0  # records made before images
    assert wait_timeout(_record(wait_timeout_s=1800.0), "90m") == 5400.0


def test_a_heartbeat_per_worker_at_least_every_30s_with_phase_time_and_log() -> None:
    clock, lines = Clock(), []
    beat = Heartbeat(lines.append, clock=clock)
    record = _record()
    record.workers[0].phase = "bootstrap: guest"
    record.workers[0].detail = "waiting; last log: Windows is being installed: 42%"
    record.workers[1].phase = "bootstrap: load"
    beat(record)
    assert len(lines) == 2 and "waa-w0: bootstrap: guest (0s in this phase)" in lines[0]
    assert "Windows is being installed: 42%" in lines[0]
    clock.now += 15
    beat(record)
    assert len(lines) == 2, "nothing new within 30 s"
    record.workers[1].phase = "bootstrap: guest"
    beat(record)
    assert len(lines) == 3 and "waa-w1: bootstrap: guest" in lines[2]  # a change shows at once
    clock.now += 16
    beat(record)
    assert len(lines) == 4 and "waa-w0" in lines[3] and "(31s in this phase)" in lines[3]
    clock.now += 30
    beat(record)
    assert len(lines) == 6, "both workers again after 30 s"


def test_refresh_runs_at_most_every_few_minutes(oa_home: Path) -> None:
    engine = FakePulumiEngine(AwsLookups())
    provider = AwsProvider(engine=engine, lister=lambda pool: [])
    record = provider.create(PoolSpec(
        name="waa-eval", cloud="aws", workers=1, owner="a",
        expires_at=state.utcnow() + timedelta(hours=4), regions=["us-east-1"],
        allow_cidrs=["198.51.100.7/32"], image=AWS_IMAGE,
    ), lambda line: None)
    for _ in range(5):
        provider.refresh(record)
    assert [c for c in engine.calls if c[0] == "refresh"] == [("refresh", "waa-eval")]
    assert provider.refresh_interval_s <= 300


def test_no_cloud_is_chosen_silently(oa_home: Path) -> None:
    from oa_vm.model import config

    assert choose_cloud("local") == "local"
    assert choose_cloud(None, ask=lambda: "aws") == "aws"
    with pytest.raises(InvalidInputError, match="unknown cloud"):
        choose_cloud(None, ask=lambda: "gcp")
    config.set_value("default-cloud", "azure")
    assert choose_cloud(None, ask=lambda: "aws") == "azure"
