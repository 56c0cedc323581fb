"""The ledger: worker time and tokens priced per task, and the cap checked before each lease."""

from __future__ import annotations

import pytest

from evals.results.ledger import Ledger
from tests.support.leasing import reserved_for


def _pricer(model: str, tokens_in: int, tokens_out: int) -> float:
    if model != "known":
        raise KeyError(model)
    return tokens_in * 1e-6 + tokens_out * 2e-6


def test_worker_time_is_priced_per_hour_and_accumulates_over_attempts() -> None:
    ledger = Ledger(price_per_hour=3.6)
    ledger.charge("a", 10.0, [])
    cost = ledger.charge("a", 5.0, [])
    assert cost.worker_seconds == 15.0
    assert cost.vm_usd == pytest.approx(0.015)
    assert cost.total_usd == pytest.approx(0.015)
    assert ledger.spent() == pytest.approx(0.015)


def test_tokens_are_priced_and_unknown_models_are_listed_not_fatal() -> None:
    ledger = Ledger(price_per_hour=None, token_pricer=_pricer)
    cost = ledger.charge(
        "a", 1.0,
        [{"model": "known", "tokens_in": 1000, "tokens_out": 500},
         {"model": "mystery", "tokens_in": 10, "tokens_out": 10}, None],
    )
    assert cost.vm_usd == 0.0
    assert cost.tokens_in == 1010 and cost.tokens_out == 510
    assert cost.model_usd == pytest.approx(0.002)
    assert ledger.unpriced_models == {"mystery"}


def test_no_cap_admits_everything() -> None:
    ledger = Ledger(price_per_hour=1000.0)
    assert all(ledger.try_reserve(f"t{i}", 3600.0) for i in range(5))


def test_cap_counts_spend_in_flight_and_the_next_task() -> None:
    ledger = Ledger(price_per_hour=3.6, cap_usd=0.035)  # $0.001 per second
    assert ledger.try_reserve("a", 10.0)  # 0.010 in flight
    assert ledger.try_reserve("b", 10.0)  # 0.020 in flight
    assert ledger.try_reserve("c", 10.0)  # 0.030 in flight
    assert not ledger.try_reserve("d", 10.0)  # 0.040 > cap
    assert ledger.in_flight() == pytest.approx(0.030)
    ledger.charge("a", 10.0, [])
    ledger.settle("a", expected_seconds=10.0, actual_seconds=10.0, final=True)
    assert ledger.spent() == pytest.approx(0.010)
    assert not ledger.try_reserve("d", 10.0)  # 0.010 spent + 0.020 in flight + 0.010


def test_expectations_are_corrected_by_what_finished_tasks_took() -> None:
    ledger = Ledger(price_per_hour=3.6, cap_usd=1.0)
    assert reserved_for(ledger, 100.0) == pytest.approx(0.1)
    ledger.try_reserve("a", 100.0)
    ledger.charge("a", 10.0, [])
    ledger.settle("a", expected_seconds=100.0, actual_seconds=10.0, final=True)
    assert reserved_for(ledger, 100.0) == pytest.approx(0.01)


def test_carry_counts_spend_of_an_earlier_session() -> None:
    ledger = Ledger(price_per_hour=3.6, cap_usd=0.05)
    ledger.carry([{"total_usd": 0.045, "worker_seconds": 45.0}])
    assert ledger.spent() == pytest.approx(0.045)
    assert not ledger.try_reserve("x", 10.0)
    assert ledger.totals()["worker_seconds"] == 45.0


def test_spent_is_every_task_priced_as_charged_so_far() -> None:
    # spent() keeps each task's total from its last charge: it must equal pricing every task
    # again, exactly, after tasks charged several times, tokens and carried spend.
    ledger = Ledger(3.6, token_pricer=lambda model, i, o: (i + 2 * o) / 1e6)
    ledger.carry([{"total_usd": 0.25}])
    for attempt in range(3):
        for n in range(40):
            ledger.charge(f"t{n}", 0.37 * (n + attempt), [{"model": "m", "tokens_in": 7 * n}])
    expected = 0.25 + sum(ledger.task_cost(f"t{n}").total_usd for n in range(40))
    assert ledger.spent() == expected
    assert ledger.totals()["total_usd"] == round(expected, 6)
