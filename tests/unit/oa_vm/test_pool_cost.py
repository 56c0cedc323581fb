"""Cost of pools that were paused: running hours at the worker price, paused days at the disks'."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from oa_vm import pool_cost, state
from oa_vm.state import PoolRecord, PoolState, WorkerRecord

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _record(price: float | None, workers: int, pauses: list[dict[str, object]]) -> PoolRecord:
    return PoolRecord(
        name="p", cloud="aws", state=PoolState.READY, created_at=T0,
        expires_at=T0 + timedelta(days=30), price_per_hour=price,
        workers=[WorkerRecord(name=f"worker-{i}") for i in range(workers)],
        provider_data={"pauses": pauses},
    )


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
    aws = pool_cost.paused_price_per_day("aws", 10, 128)
    assert aws == pytest.approx(10 * 128 * 0.08 * 24 / 730)  # gp3, public IPv4 released
    azure = pool_cost.paused_price_per_day("azure", 1, 128)
    assert azure == pytest.approx(19.71 * 24 / 730 + 0.005 * 24)  # P10 + static IP
    assert pool_cost.paused_price_per_day("local", 5) == 0.0
