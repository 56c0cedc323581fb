"""Who replaced whom in a pool: the replacement chain of draining (spot) workers.

A draining worker is replaced under the pool's next number while it finishes its task; the chain
(:class:`ReplacementChain`) is kept in the record's ``provider_data["replaced_by"]`` as
``{draining: replacement}`` (also after the draining worker is retired, so a name is never given
twice). It is read and written only here (:meth:`ReplacementChain.of`,
:meth:`ReplacementChain.save`); the providers' repairs and the run's repairer extend it through
this module, and :mod:`oa_vm.fleet` orchestrates them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from oa_vm.errors import InvalidInputError
from oa_vm.model import state
from oa_vm.model.state import PoolRecord, WorkerState

REPLACED_BY = "replaced_by"
"""``provider_data`` key: {draining worker: the worker started to replace it} (kept after the
draining one is retired, so that a name is never given twice)."""
NOTICE_GRACE_S = 120.0
"""How long after its notice's time a draining worker is taken as ended by the cloud."""
_NUMBERED = re.compile(r"^(.*?)(\d+)$")


@dataclass(frozen=True)
class ReplacementChain:
    """Who replaced whom in one pool: each draining worker and the worker started for it.

    Attributes:
        links: ``(draining, replacement)`` pairs, in the order they were made.
    """

    links: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_json(cls, value: object) -> ReplacementChain:
        """The chain from its JSON, ``{draining: replacement}`` (what every record holds,
        older ones included); None or anything that is not such an object is no chain."""
        if not isinstance(value, Mapping):
            return cls()
        return cls(tuple((str(k), str(v)) for k, v in value.items() if k and v))

    def to_json(self) -> dict[str, str]:
        """``{draining: replacement}``, as records keep it."""
        return dict(self.links)

    @classmethod
    def of(cls, record: PoolRecord) -> ReplacementChain:
        """The chain kept in ``record``."""
        return cls.from_json(record.provider_data.get(REPLACED_BY))

    def save(self, record: PoolRecord) -> None:
        """Keep this chain in ``record`` (saving the record is the caller's)."""
        record.provider_data[REPLACED_BY] = self.to_json()

    def with_link(self, draining: str, new: str) -> ReplacementChain:
        """This chain with ``new`` started to replace ``draining``."""
        kept = tuple(link for link in self.links if link[0] != draining)
        return ReplacementChain((*kept, (draining, new)))

    def names(self) -> set[str]:
        """Every name the chain holds, draining and replacements (never given again)."""
        return {name for link in self.links for name in link}

    def successor(self, name: str) -> str:
        """The worker now standing for ``name``: ``name`` itself unless it was replaced (the
        chain is followed: a replacement may be replaced in turn)."""
        chain = self.to_json()
        seen = {name}
        while name in chain and chain[name] not in seen:
            name = chain[name]
            seen.add(name)
        return name


def replaced_by(record: PoolRecord) -> dict[str, str]:
    """Who replaced whom: {draining worker: its replacement} (:class:`ReplacementChain`)."""
    return ReplacementChain.of(record).to_json()


def successor(record: PoolRecord, name: str) -> str:
    """The worker now standing for ``name`` (:meth:`ReplacementChain.successor`)."""
    return ReplacementChain.of(record).successor(name)


def next_worker_name(record: PoolRecord) -> str:
    """A name no worker of the pool had yet: its numbered names' next number (``worker-3``
    after ``worker-0..2``, ``<pool>-w3`` on a cloud)."""
    names = [w.name for w in record.workers]
    history = ReplacementChain.of(record).names()
    numbered = [m for m in (_NUMBERED.match(n) for n in [*names, *sorted(history)])
                if m is not None]
    if not numbered:
        raise InvalidInputError(f"pool {record.name!r} has no numbered worker to follow")
    prefix = numbered[0].group(1)
    return f"{prefix}{max(int(m.group(2)) for m in numbered) + 1}"


def add_replacement(record: PoolRecord, draining: str, new: str) -> None:
    """Record that ``new`` was started to replace the draining worker ``draining``."""
    ReplacementChain.of(record).with_link(draining, new).save(record)


def to_retire(record: PoolRecord, names: list[str] | None,
              now: datetime | None = None) -> list[str]:
    """Replaced draining workers that can go now: ended (lost), past their notice's time
    (plus :data:`NOTICE_GRACE_S`), or named in ``names``."""
    from oa_vm.reach.drain import notice_time

    now = now or state.utcnow()
    chain = replaced_by(record)
    out = []
    for worker in record.workers:
        if worker.name not in chain:
            continue
        when = notice_time(worker)
        if (worker.state == WorkerState.LOST or (names is not None and worker.name in names)
                or (when is not None and now > when + timedelta(seconds=NOTICE_GRACE_S))):
            out.append(worker.name)
    return out


def needs_replacement(record: PoolRecord) -> list[str]:
    """Draining workers that have no replacement yet."""
    chain = replaced_by(record)
    return [w.name for w in record.workers
            if w.state == WorkerState.DRAINING and w.name not in chain]
