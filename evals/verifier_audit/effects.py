"""Effects: what a run changed, and how two effects differ.

An effect maps each table a run touched to the records it added, removed and updated::

    {"shop.Order": {"added": [{...}], "removed": [], "updated": [{"before": {...},
                                                                   "after": {...}}]}}

Two effects are compared as multisets of records once the fields that carry no task meaning
(IDs, timestamps: ``ignore``) are dropped, so a second identical record counts: a duplicated
write shows even when its content is right.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

Effect = dict[str, dict[str, list[Any]]]

SAME = "same"  # equal once the ignored fields are dropped
ADDS = "adds"  # all the reference did, and more
REMOVES = "removes"  # part of what the reference did, nothing else
CHANGES = "changes"  # some of each

_Item = tuple[str, str, str]  # (table, kind, record as canonical JSON)


def _strip(record: Any, ignore: frozenset[str], table: str) -> Any:
    """``record`` without the ignored fields (``field`` anywhere, or ``table.field``)."""
    if not isinstance(record, dict):
        return record
    return {k: v for k, v in sorted(record.items())
            if k not in ignore and f"{table}.{k}" not in ignore}


def _items(effect: Effect, ignore: frozenset[str]) -> Iterator[_Item]:
    for table in sorted(effect or {}):
        changes = effect[table] or {}
        for kind in ("added", "removed"):
            for record in changes.get(kind) or []:
                yield table, kind, json.dumps(_strip(record, ignore, table), sort_keys=True)
        for update in changes.get("updated") or []:
            before = _strip(update.get("before", {}), ignore, table)
            after = _strip(update.get("after", {}), ignore, table)
            if before != after:  # an update of ignored fields only changes nothing that counts
                yield table, "updated", json.dumps([before, after], sort_keys=True)


def normalize(effect: Effect, ignore: Iterable[str] = ()) -> Counter[_Item]:
    """The effect as a multiset of ``(table, kind, record)`` with the ``ignore`` fields dropped."""
    return Counter(_items(effect, frozenset(ignore)))


@dataclass
class EffectDiff:
    """How an edited run's effect differs from the reference's.

    ``tables`` maps each differing table to ``"+"`` (records only the edited run has), ``"-"``
    (records only the reference has), ``"changed"`` (records both have with other values) and
    ``"fields"`` (the names of the fields that differ). Values are never copied into a diff, so a
    report can be shared without the benchmark's data.
    """

    shape: str
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def same(self) -> bool:
        """True when the two effects are equal."""
        return self.shape == SAME

    def summary(self) -> str:
        """One line, e.g. ``shop.Order +1, shop.Cart: quantity changed``."""
        return summarize(self.tables)


def summarize(tables: dict[str, dict[str, Any]]) -> str:
    """The tables of a diff in one line (``same end state ...`` when there are none)."""
    if not tables:
        return "same end state as the reference run"
    parts: list[str] = []
    for table, counts in sorted(tables.items()):
        if counts.get("changed"):
            parts.append(f"{table}: {', '.join(counts.get('fields') or []) or 'values'} changed")
        if counts.get("+"):
            parts.append(f"{table} +{counts['+']}")
        if counts.get("-"):
            parts.append(f"{table} -{counts['-']}")
    return ", ".join(parts)


def _end_record(kind: str, record: Any) -> dict[str, Any]:
    """The record as it ends up (an update's after-image)."""
    if kind == "updated" and isinstance(record, list) and len(record) == 2:
        after = record[1]
        return after if isinstance(after, dict) else {}
    return record if isinstance(record, dict) else {}


def _differing(a: dict[str, Any], b: dict[str, Any]) -> set[str]:
    return {key for key in a.keys() | b.keys() if a.get(key) != b.get(key)}


def compare(reference: Effect, edited: Effect, ignore: Iterable[str] = ()) -> EffectDiff:
    """Compare an edited run's effect with the reference's, record by record."""
    ignored = frozenset(ignore)
    ref, got = normalize(reference, ignored), normalize(edited, ignored)
    more, less = got - ref, ref - got
    if not more and not less:
        return EffectDiff(SAME)
    shape = ADDS if not less else REMOVES if not more else CHANGES
    tables: dict[str, dict[str, Any]] = {}

    def entry(table: str) -> dict[str, Any]:
        return tables.setdefault(table, {"+": 0, "-": 0, "changed": 0, "fields": set()})

    missing: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for (table, kind, text), n in less.items():
        missing.setdefault((table, kind), []).extend([_end_record(kind, json.loads(text))] * n)
    for (table, kind, text), n in sorted(more.items()):
        mine = _end_record(kind, json.loads(text))
        for _ in range(n):
            candidates = missing.get((table, kind)) or []
            if candidates:  # the same record with other values: pair with the closest one
                best = min(range(len(candidates)),
                           key=lambda i: len(_differing(mine, candidates[i])))
                entry(table)["changed"] += 1
                entry(table)["fields"] |= _differing(mine, candidates.pop(best))
            else:
                entry(table)["+"] += 1
    for (table, _kind), left in missing.items():
        if left:
            entry(table)["-"] += len(left)
    for counts in tables.values():
        counts["fields"] = sorted(counts["fields"])
    return EffectDiff(shape, tables)
