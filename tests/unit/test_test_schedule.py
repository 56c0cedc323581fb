"""The suite's own schedule (:mod:`tests.support.schedule`): under pytest-xdist's real work
stealing scheduler, every test process's first share begins with its part of the long tests,
and no test is lost or run twice."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from xdist.scheduler.worksteal import WorkStealingScheduling

from tests.support.schedule import long_first, shares


class Node:
    """What the scheduler drives of a test process: the tests it is sent, in order."""

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent: list[int] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        """The scheduler hands this process ``indices`` (into the collection)."""
        self.sent.extend(indices)

    def shutdown(self) -> None:
        """Nothing is left for this process (a share of one test, nothing to steal)."""
        self.shutting_down = True


def _first_shares(collection: list[str], processes: int) -> list[list[str]]:
    """What xdist's worksteal scheduler sends each process first, for ``collection``."""
    # as ``-n N`` leaves the options: N local processes (``--tx N*popen``)
    config: Any = SimpleNamespace(getvalue=lambda name: [f"{processes}*popen"] if name == "tx"
                                  else None)
    scheduler = WorkStealingScheduling(config)
    nodes = [Node(f"gw{i}") for i in range(processes)]
    for node in nodes:
        scheduler.add_node(node)  # type: ignore[arg-type]
    for node in nodes:
        scheduler.add_node_collection(node, collection)  # type: ignore[arg-type]
    scheduler.schedule()
    return [[collection[i] for i in node.sent] for node in nodes]


@pytest.mark.parametrize(("total", "long_every", "processes"),
                         [(3717, 88, 6), (500, 7, 6), (61, 3, 4), (10, 2, 6), (7, 1, 2)])
def test_each_share_begins_with_its_long_tests(total: int, long_every: int,
                                               processes: int) -> None:
    tests = [f"t{i}" for i in range(total)]
    is_long = [i % long_every == 0 for i in range(total)]
    ordered = long_first(tests, is_long, processes)
    assert sorted(ordered) == sorted(tests)  # none lost, none twice
    first = _first_shares(ordered, processes)
    assert [len(s) for s in first] == shares(total, processes)
    long_tests = {t for t, long in zip(tests, is_long, strict=True) if long}
    dealt = [sum(1 for t in share if t in long_tests) for share in first]
    assert sum(dealt) == len(long_tests) and max(dealt) - min(dealt) <= 1
    for share, count in zip(first, dealt, strict=True):
        assert set(share[:count]) <= long_tests  # the long ones at the head of the share
    # the short ones keep their order (so do modules' fixtures, as far as they can)
    short = [t for t in ordered if t not in long_tests]
    assert short == [t for t in tests if t not in long_tests]


def test_without_processes_or_long_tests_the_order_is_kept() -> None:
    tests = [f"t{i}" for i in range(20)]
    assert long_first(tests, [i % 3 == 0 for i in range(20)], 0) == tests
    assert long_first(tests, [False] * 20, 6) == tests
