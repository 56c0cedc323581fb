"""Long tests first, one group at the head of each test process's share.

pytest-xdist's work stealing (``--dist worksteal``, the README's command) first hands each of
the N test processes an equal, contiguous share of the collection, in its order, then moves
tests from the end of a busy process's share to an idle one. A test of tens of seconds (a
drill, a rehearsal: marked ``long``) that its share reached last ran alone at the end of the
suite while the other processes had finished, the cores idle. :func:`long_first` orders the
collection so that each share begins with its part of the long tests (dealt round the shares
in the collection's order), the short ones after them in their own order: the tail of the run
is short tests, which stealing spreads.

The shares are computed as xdist computes them (:func:`shares`): all processes are idle when
the collection is first handed out, and process ``i`` of ``n`` gets ``len(pending) // (n - i)``
of what is left.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def shares(total: int, processes: int) -> list[int]:
    """How many of ``total`` tests each of ``processes`` gets first (xdist's worksteal)."""
    sizes: list[int] = []
    left = total
    for i in range(processes):
        size = left // (processes - i)
        sizes.append(size)
        left -= size
    return sizes


def long_first(items: Sequence[T], is_long: Sequence[bool], processes: int) -> list[T]:
    """``items`` reordered so that each process's first share begins with long tests.

    Args:
        items: The collection, in pytest's order.
        is_long: For each item, whether it is marked ``long`` (in the collection's order,
            which is the order they are dealt in).
        processes: How many test processes share the collection.
    """
    if processes < 2 or not any(is_long):
        return list(items)
    sizes = shares(len(items), processes)
    heads: list[list[T]] = [[] for _ in sizes]
    turn = 0
    for item, long in zip(items, is_long, strict=True):
        if long:
            while len(heads[turn % len(sizes)]) >= sizes[turn % len(sizes)]:
                turn += 1  # a share too small for another (fewer tests than processes)
            heads[turn % len(sizes)].append(item)
            turn += 1
    short = iter(item for item, long in zip(items, is_long, strict=True) if not long)
    ordered: list[T] = []
    for head, size in zip(heads, sizes, strict=True):
        ordered.extend(head)
        ordered.extend(next(short) for _ in range(size - len(head)))
    return ordered
