"""The stock policies' assignment and the lower bounds the dispatch benchmark divides by."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from bench.policies import capacity_lower_bound, lower_bound, round_robin, static_slices

IDS = [f"t{i}" for i in range(10)]
Split = Callable[[Sequence[str], int], list[list[str]]]


def test_static_slices_are_contiguous_runs_of_ceil_n_over_k() -> None:
    assert static_slices(IDS, 3) == [IDS[0:4], IDS[4:8], IDS[8:10]]
    assert static_slices(IDS, 1) == [IDS]


def test_static_slices_can_leave_workers_idle_as_waa_does() -> None:
    # ceil(10 / 4) = 3: 3 + 3 + 3 + 1
    assert [len(s) for s in static_slices(IDS, 4)] == [3, 3, 3, 1]
    assert [len(s) for s in static_slices(IDS[:5], 4)] == [2, 2, 1, 0]


def test_round_robin_deals_one_at_a_time() -> None:
    assert round_robin(IDS, 3) == [
        ["t0", "t3", "t6", "t9"], ["t1", "t4", "t7"], ["t2", "t5", "t8"],
    ]


@pytest.mark.parametrize("split", [static_slices, round_robin])
@pytest.mark.parametrize("workers", [1, 2, 3, 7, 16])
def test_every_task_goes_to_exactly_one_worker(split: Split, workers: int) -> None:
    lists = split(IDS, workers)
    assert len(lists) == workers
    assert sorted(t for part in lists for t in part) == sorted(IDS)


@pytest.mark.parametrize("split", [static_slices, round_robin])
def test_no_worker_is_refused(split: Split) -> None:
    with pytest.raises(ValueError):
        split(IDS, 0)


def test_the_lower_bound_is_total_over_workers_or_the_longest_task() -> None:
    assert lower_bound([1.0, 1.0, 1.0, 1.0], 2) == 2.0
    assert lower_bound([5.0, 1.0, 1.0], 3) == 5.0
    assert lower_bound([], 4) == 0.0
    with pytest.raises(ValueError):
        lower_bound([1.0], 0)


def test_the_capacity_bound_accounts_for_workers_lost_mid_run() -> None:
    work = [1.0] * 16  # 16 s of work on 4 workers: 4 s without a failure
    assert capacity_lower_bound(work, 4) == lower_bound(work, 4) == 4.0
    # 2 of 4 fail at 1 s: 4 s done by then, 12 s left for 2 workers -> 1 + 6 = 7 s
    assert capacity_lower_bound(work, 4, failed=2, fail_at_s=1.0) == pytest.approx(7.0)
    # a failure after all the work could have ended changes nothing
    assert capacity_lower_bound(work, 4, failed=2, fail_at_s=10.0) == 4.0
    with pytest.raises(ValueError):
        capacity_lower_bound(work, 2, failed=2, fail_at_s=1.0)
