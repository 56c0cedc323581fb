"""Cost of pools that were paused: running hours at the worker price, paused days at the disks'."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from oa_vm.clouds import azure, facts, price_per_hour
from oa_vm.cost import pool_cost
from oa_vm.model import state
from oa_vm.model.state import PoolRecord, PoolState, WorkerRecord

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _record(price: float | None, workers: int, pauses: list[dict[str, object]]) -> PoolRecord:
    return PoolRecord(
        name="p", cloud="aws", state=PoolState.READY, created_at=T0,
        expires_at=T0 + timedelta(days=30), price_per_hour=price,
        workers=[WorkerRecord(name=f"worker-{i}") for i in range(workers)],
        provider_data={"pauses": pauses},
    )


AWS, AZURE, LOCAL = (facts(c).billing for c in ("aws", "azure", "local"))


def _at(hours: float) -> str | None:
    return state.format_time(T0 + timedelta(hours=hours))


def test_paused_time_is_billed_at_the_paused_rate_not_the_running_one() -> None:
    # 2 workers at $1/h: 2 h running, 24 h paused at $2.40/day, 1 h running again
    record = _record(1.0, 2, [{"from": _at(2), "to": _at(26), "per_day": 2.4}])
    cost = pool_cost.pool_cost_so_far(record, now=T0 + timedelta(hours=27))
    assert cost == pytest.approx(3 * 2 * 1.0 + 2.4)
    assert pool_cost.paused_since(record) is None
    assert pool_cost.current_paused_per_day(record) is None


def test_an_open_pause_runs_until_now_and_is_reported() -> None:
    record = _record(0.5, 4, [{"from": _at(1), "to": None, "per_day": 1.2}])
    cost = pool_cost.pool_cost_so_far(record, now=T0 + timedelta(hours=13))
    assert cost == pytest.approx(1 * 4 * 0.5 + 0.6)
    assert pool_cost.paused_since(record) == T0 + timedelta(hours=1)
    assert pool_cost.current_paused_per_day(record) == 1.2


def test_time_after_expiry_is_not_billed() -> None:
    record = _record(1.0, 1, [{"from": _at(1), "to": None, "per_day": 24.0}])
    record.expires_at = T0 + timedelta(hours=3)
    assert pool_cost.pool_cost_so_far(record, now=T0 + timedelta(days=5)) == pytest.approx(3.0)


def test_paused_rates_are_disks_and_addresses_only() -> None:
    aws = pool_cost.paused_price_per_day(AWS, 10, 128)
    assert aws == pytest.approx(10 * 128 * 0.08 * 24 / 730)  # gp3, public IPv4 released
    azure = pool_cost.paused_price_per_day(AZURE, 1, 128)
    assert azure == pytest.approx(19.71 * 24 / 730 + 0.005 * 24)  # P10 + static IP
    assert pool_cost.paused_price_per_day(LOCAL, 5) == 0.0


@pytest.mark.parametrize(
    ("size_gb", "disk_type", "tier"),
    [
        (64, "Premium_LRS", ("P10", 128, 19.71)),
        (128, "Premium_LRS", ("P10", 128, 19.71)),
        (129, "Premium_LRS", ("P15", 256, 38.01)),
        (160, "Premium_LRS", ("P15", 256, 38.01)),  # the pools' OS disk
        (256, "Premium_LRS", ("P15", 256, 38.01)),
        (300, "Premium_LRS", ("P20", 512, 73.22)),
        (160, "StandardSSD_LRS", ("E15", 256, 19.20)),
        (96, "StandardSSD_LRS", ("E10", 128, 9.60)),
    ],
)
def test_azure_disks_bill_by_the_tier_that_holds_them(
    size_gb: int, disk_type: str, tier: tuple[str, int, float]
) -> None:
    assert azure.disk_tier(size_gb, disk_type) == tier
    assert AZURE is not None and AZURE.disk_per_month(size_gb, disk_type) == tier[2]


def test_a_paused_azure_pool_pays_each_disk_by_its_tier_not_by_the_gb() -> None:
    per_day = pool_cost.paused_price_per_day(AZURE, 2, disks=(160, 96))
    assert per_day == pytest.approx(2 * ((38.01 + 19.71) * 24 / 730 + 0.005 * 24))
    # By the GB, 256 GB would have come to 2 P10s: less than the bill.
    assert per_day > pool_cost.paused_price_per_day(AZURE, 2, 256) - 1e-9
    aws = pool_cost.paused_price_per_day(AWS, 2, disks=(160, 96))
    assert aws == pytest.approx(2 * 256 * 0.08 * 24 / 730)


def test_the_record_gives_the_disks_and_the_size_gives_the_disk_type() -> None:
    record = _record(1.0, 3, [])
    record.cloud = "azure"
    record.settings = {"disk_gb": 160, "storage_gb": 96, "size": "Standard_D8_v5"}
    assert pool_cost.paused_price_of(record, AZURE) == pytest.approx(
        3 * ((19.20 + 9.60) * 24 / 730 + 0.005 * 24)  # Standard SSD: E15 + E10
    )
    record.settings["size"] = "Standard_D8s_v5"
    assert pool_cost.paused_price_of(record, AZURE) == pytest.approx(
        3 * ((38.01 + 19.71) * 24 / 730 + 0.005 * 24)
    )


def test_the_plan_says_what_the_disks_bill() -> None:
    from oa_vm.cost import cloud_plan

    note = cloud_plan.disks_note(AZURE, "Standard_D8s_v5", 160, 96, hosts=2)
    assert "160 GB bills as P15 (256 GiB, $38.01/month)" in note
    assert "96 GB bills as P10 (128 GiB, $19.71/month)" in note
    assert "$57.72/month per worker" in note and "$115.44/month for 2" in note
    aws = cloud_plan.disks_note(AWS, "m8i.2xlarge", 160, 96)
    assert "$20.48/month per worker" in aws


def _azure(expires_after_h: float) -> PoolRecord:
    return PoolRecord(
        name="az", cloud="azure", state=PoolState.READY, created_at=T0,
        expires_at=T0 + timedelta(hours=expires_after_h), price_per_hour=1.0,
        workers=[WorkerRecord(name=f"worker-{i}") for i in range(2)],
        settings={"size": "Standard_D8s_v5", "disk_gb": 160, "storage_gb": 96},
    )


@pytest.mark.parametrize("cloud", ["aws", "azure"])
def test_an_expired_pool_bills_nothing_more(cloud: str) -> None:
    # the expiry ends the workers with their disks: AWS terminates the instances, Azure's
    # deleter removes the pool's resource group
    record = _azure(expires_after_h=2)
    record.cloud = cloud
    assert facts(cloud).billing.bills_after_expiry[0].startswith("nothing of the workers")
    cost = pool_cost.pool_cost_so_far(record, now=T0 + timedelta(hours=2, days=3))
    assert cost == pytest.approx(2 * 2 * 1.0)


def test_a_paused_host_of_several_workers_keeps_one_os_disk_and_a_storage_disk_each() -> None:
    # 8 workers on 2 hosts of 4: 2 OS disks (160 GB) and 8 storage disks (96 GB), 2 addresses
    aws = pool_cost.paused_price_per_day(AWS, 8, disks=(160, 96), per_host=4)
    assert aws == pytest.approx((2 * 160 + 8 * 96) * 0.08 * 24 / 730)
    record = _azure(expires_after_h=2)
    record.workers = [WorkerRecord(name=f"worker-{i}") for i in range(8)]
    record.settings["workers_per_host"] = 4
    per_day = 2 * ((38.01 + 4 * 19.71) * 24 / 730 + 0.005 * 24)  # P15 + 4 x P10 + IP per host
    assert pool_cost.paused_price_of(record, AZURE) == pytest.approx(per_day)


@pytest.mark.parametrize("seconds_late", [0.0, 0.4, 3.0, 17.9, 59.0])
def test_the_most_a_pool_can_spend_is_the_same_whenever_within_its_first_minute_it_is_priced(
    seconds_late: float,
) -> None:
    # A plan is priced a few seconds after its expiry (now + lifetime) is set; the bound is the
    # same figure on every run, and never below what the time left can bill.
    from oa_vm.cost import cloud_plan

    hours_left = 4.0 - seconds_late / 3600.0
    bound = cloud_plan.max_spend(1.37, hours_left)
    assert bound == pytest.approx(1.37 * 4.0)
    assert bound is not None and bound >= 1.37 * hours_left
    assert cloud_plan.max_spend(None, 4.0) is None
    assert cloud_plan.max_spend(2.0, -1.0) == 0.0


@pytest.mark.parametrize(("cloud", "stored", "read"), [
    ("local", None, 0.0), ("ssh", None, 0.0), ("local", 0.5, 0.5),  # rents nothing
    ("aws", None, None), ("azure", None, None), ("aws", 1.2, 1.2),  # rents: unknown stays so
    ("gone-cloud", None, None),  # a cloud this installation lacks declares nothing
])
def test_a_record_without_a_price_is_free_only_where_its_cloud_rents_nothing(
    cloud: str, stored: float | None, read: float | None
) -> None:
    record = PoolRecord(name="p", cloud=cloud, state=PoolState.READY, created_at=T0,
                        price_per_hour=stored)
    assert price_per_hour(record) == read
