"""Fault knob parsing and the request gate."""

from __future__ import annotations

import pytest

from infra.local.faults import Action, FaultError, FaultGate, Faults, parse_fault_args, parse_faults


def test_defaults_inject_nothing() -> None:
    assert parse_faults(None) == Faults()
    assert parse_fault_args([]) == Faults()


def test_all_knobs() -> None:
    faults = parse_fault_args(
        ["latency=0.25", "error-rate=0.5", "seed=3", "hang-after=10", "crash-after=20",
         "screenshot-min-bytes=1000"]
    )
    assert faults == Faults(0.25, 0.5, 3, 10, 20, 1000)
    assert parse_fault_args(["dribble-after=5"]) == Faults(dribble_after=5)
    assert parse_faults({"error_rate": 1, "hang_after": "2"}) == Faults(error_rate=1.0,
                                                                        hang_after=2)


@pytest.mark.parametrize(
    ("items", "needle"),
    [
        (["speed=1"], "unknown fault 'speed'"),
        (["latency"], "expected KEY=VALUE"),
        (["=3"], "expected KEY=VALUE"),
        (["latency=-1"], "latency=-1"),
        (["latency=fast"], "not a number"),
        (["latency=nan"], "latency=nan"),
        (["error-rate=1.5"], "from 0 to 1"),
        (["hang-after=0"], "from 1 to"),
        (["dribble-after=0"], "from 1 to"),
        (["crash-after=2.5"], "not a whole number"),
        (["seed=-2"], "from 0 to"),
        (["screenshot-min-bytes=big"], "not a whole number"),
        # padded in memory: a terabyte per screenshot
        (["screenshot-min-bytes=999999999999"], "from 0 to 67108864"),
        # past 4,300 digits int() itself refuses, with a ValueError of its own
        ([f"seed={'9' * 5000}"], "from 0 to"),
        (["no-snapshots=2"], "from 0 to 1"),
    ],
)
def test_bad_knobs(items: list[str], needle: str) -> None:
    with pytest.raises(FaultError) as info:
        parse_fault_args(items)
    assert needle in str(info.value)


def test_gate_counts_and_hangs_from_the_nth_request() -> None:
    gate = FaultGate(Faults(hang_after=3))
    assert [gate.admit() for _ in range(4)] == [Action.SERVE, Action.SERVE, Action.HANG,
                                                Action.HANG]


def test_error_rate_is_seeded() -> None:
    first = FaultGate(Faults(error_rate=0.5, seed=9))
    second = FaultGate(Faults(error_rate=0.5, seed=9))
    a = [first.admit() for _ in range(200)]
    b = [second.admit() for _ in range(200)]
    assert a == b
    errors = a.count(Action.ERROR)
    assert 0 < errors < 200
    always = FaultGate(Faults(error_rate=1.0))
    assert {always.admit() for _ in range(20)} == {Action.ERROR}
