"""The provider interface: one small contract every cloud (and the local pool) implements.

A provider turns a :class:`PoolSpec` into running workers and back into nothing. The API layer
(:mod:`oa_vm.api`) owns the records on disk; providers return updated records and never write
them, so a provider can be tested without a home folder.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from oa_vm.kit.redact import redact_json, redact_text
from oa_vm.model.state import PoolRecord, WorkerRecord

if TYPE_CHECKING:
    from oa_vm.model.snapshots import SnapshotControl
    from oa_vm.reach.connect import WorkerConnection

Progress = Callable[[str], None]
"""Receives one human-readable line per step (``create`` streams what it does)."""


def no_progress(_line: str) -> None:
    """A :data:`Progress` that drops everything."""


@dataclass
class PoolSpec:
    """What the user asked for. Cloud-specific fields are ignored by providers that lack them.

    Attributes:
        name: pool name (validated by the API).
        cloud: provider name (``local``, ``aws``, ``azure``, ``ssh``).
        workers: number of workers, at least 1.
        owner: who the pool belongs to (tag ``oa-vm:owner``).
        expires_at: when the cloud itself ends the pool (tag ``oa-vm:expires-at``).
        size: instance size; None means the provider's default.
        regions: regions to try in order (first that has capacity wins).
        spot: ask for spot/preemptible capacity.
        allow_cidrs: CIDRs allowed to reach SSH (22); empty means "detect the caller's".
        faults: local pool fault knobs, ``{"latency": "0.2", ...}`` (see ``infra/local``).
        ssh_via: local pool only: reach workers through this SSH server (host, port, user, key).
        price_per_hour: local pool only: a pretend $/hour per worker, to test costs and caps.
        tasks_dir: local pool only: the task suite the simulated workers serve (a folder in
            WAA's layout); None means the bundled local suite.
        image: cloud pools: the prepared image (oa-vm image ID, or the cloud's snapshot ID) the
            workers' storage is made from; None means the newest ready image of the region.
        build_image: cloud pools: build an image first when the region has none.
        per_process: local pool only: workers served by each process (``infra.local --count``).
        egress: what the guest may reach (``none``, ``allowlist``, ``web``, ``open``); None means
            the provider's default.
        egress_allowlist: the ``allowlist`` mode's entries, one ``host:port`` a line.
        hosts: ``ssh`` pools only: the hosts (``user@host[:port]``) the workers run on.
        ssh_key: ``ssh`` pools only: the private key that logs in to every host.
        workers_per_host: workers sharing one host (each in its own slot:
            :mod:`infra.worker.slots`); 1 is one worker per host.
        iso: ``ssh`` pools only: a local Windows ISO that a host without a prepared image
            builds it from (uploaded over SSH); None means dockur's download.
    """

    name: str
    cloud: str
    workers: int
    owner: str
    expires_at: datetime
    size: str | None = None
    regions: list[str] = field(default_factory=list)
    spot: bool = False
    allow_cidrs: list[str] = field(default_factory=list)
    faults: dict[str, str] = field(default_factory=dict)
    ssh_via: dict[str, Any] | None = None
    price_per_hour: float | None = None
    tasks_dir: str | None = None
    image: str | None = None
    build_image: bool = False
    per_process: int = 1
    egress: str | None = None
    egress_allowlist: str = ""
    hosts: list[str] = field(default_factory=list)
    ssh_key: str | None = None
    workers_per_host: int = 1
    iso: str | None = None


PRICE_UNKNOWN = "price unknown:"
"""How a plan's note starts when the catalog has no price for it (:meth:`Plan.price_unknown`)."""


@dataclass
class PlannedResource:
    """One resource a create would make, with the inputs the program set."""

    type: str
    name: str
    inputs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Plan:
    """What ``create`` would do and what it would cost, computed without side effects."""

    cloud: str
    region: str | None
    size: str | None
    workers: int
    price_per_hour: float | None
    resources: list[PlannedResource] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    name: str | None = None
    kind: str = "pool"
    tree: list[str] = field(default_factory=list)
    machine: dict[str, Any] | None = None
    image: dict[str, Any] | None = None
    not_priced: list[str] = field(default_factory=list)
    max_spend_usd: float | None = None
    ready_in: str | None = None
    bills_after_expiry: list[str] = field(default_factory=list)
    alternatives: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """``{"resources": [{"type", "name", "inputs"}], "price_per_hour", ...}``."""
        head = ("kind", "name", "cloud", "region", "size", "workers", "price_per_hour")
        tail = ("tree", "machine", "image", "not_priced", "max_spend_usd", "ready_in",
                "bills_after_expiry", "alternatives")
        # a plan is shown, never run: what a user gave it (an --iso URL with a password)
        # leaves it masked, as every other text that is printed or written
        shown: dict[str, Any] = redact_json({
            **{key: getattr(self, key) for key in head},
            "resources": [
                {"type": r.type, "name": r.name, "inputs": r.inputs} for r in self.resources
            ],
            **{key: getattr(self, key) for key in tail},
            "price_unknown": self.price_unknown(),
            "notes": self.notes,
        })
        return shown

    def describe(self) -> str:
        """The plan as a few lines for people: resources by type, the price, the notes."""
        counts: dict[str, int] = {}
        for resource in self.resources:
            counts[resource.type] = counts.get(resource.type, 0) + 1
        if self.kind == "image":
            head = f"Plan: image {self.name} on {self.cloud} in {self.region}, built by one "
            head += f"{self.size} host"
        else:
            head = f"Plan: {self.workers} worker(s) on {self.cloud}"
            head = head if self.name is None else f"{head} (pool {self.name})"
            head += f" in {self.region}" if self.region else ""
            head += f", size {self.size}" if self.size else ""
        unknown = self.price_unknown()
        price = "-" if self.price_per_hour is None else f"${self.price_per_hour:.2f}/hour"
        lines = [head]
        lines += [f"  {n} x {kind}" for kind, n in sorted(counts.items())]
        if self.tree:
            lines.append("Resource tree (as Pulumi's preview shows it):")
            lines += [f"  {line}" for line in self.tree]
        if self.machine:
            m = self.machine
            units = [("vcpus", "{} vCPUs"), ("memory_gib", "{} GiB memory"),
                     ("os_disk_gb", "{} GB OS disk"), ("storage_gb", "{} GB storage volume")]
            per_host = m.get("workers_per_host") or 1
            label = "Each worker" if per_host == 1 else f"Each host (up to {per_host} workers)"
            lines.append(f"{label}: " + ", ".join(
                fmt.format(m[key]) if m.get(key) is not None else fmt.format("?")
                for key, fmt in units
            ))
        if self.image:
            lines.append("Image: " + ", ".join(
                f"{k.replace('_', ' ')} {v}" for k, v in self.image.items()
                if v and not (k == "cloud_id" and v == self.image.get("id"))
            ))
        whole = "the whole pool" if self.kind == "pool" else "the builder, while it runs"
        if unknown is not None:  # said on the price line itself, not only in a note at the end
            lines.append(f"Price: UNKNOWN for {whole}: "
                         f"{unknown.removeprefix(PRICE_UNKNOWN).strip()}")
        else:
            lines.append(f"Price: {price} for {whole}")
        if self.not_priced:
            lines.append("Not priced: " + "; ".join(self.not_priced))
        if self.max_spend_usd is not None:
            lines.append(f"Most it can spend before it expires: ${self.max_spend_usd:.2f}")
        if self.ready_in:
            lines.append(f"Expected ready in: {self.ready_in}")
        if self.bills_after_expiry:
            lines.append("Keeps billing after expiry: " + "; ".join(self.bills_after_expiry))
        if self.alternatives:
            from oa_vm.cost.cloud_plan import alternatives_table

            mark = " (* is this plan)" if any(a.get("chosen") for a in self.alternatives) else ""
            lines.append(f"Cheapest alternatives that also run WAA, $/h per machine{mark}:")
            lines += [f"  {line}" for line in alternatives_table(self.alternatives).splitlines()]
        lines += [f"Note: {note}" for note in self.notes if note != unknown]
        return redact_text("\n".join(lines))

    def price_unknown(self) -> str | None:
        """Why the plan has no price (its ``price unknown: ...`` note: a region or size the
        catalog does not list), or None."""
        if self.price_per_hour is not None:
            return None
        return next((n for n in self.notes if n.startswith(PRICE_UNKNOWN)), None)


@dataclass
class CleanupReport:
    """What ``destroy`` removed and what, if anything, is left (with how to remove it)."""

    removed: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    skipped: str | None = None
    """Why the pool was left alone (``cleanup_expired``: a live run holds it, or its record
    cannot be read); else None."""
    unreadable: bool = False
    """``cleanup_expired`` skipped it because its record cannot be read (its expiry is not
    known), not because it is in use."""


class Capability(enum.Enum):
    """What a provider may do beyond the core contract; each provider declares its set in
    :attr:`Provider.capabilities`, and callers ask for one before they use it (no caller looks
    at a provider's class)."""

    PAUSE = "pause"
    """Stop every worker and keep its disk (:meth:`FleetOps.pause`)."""
    RESUME = "resume"
    """Start paused workers again (:meth:`FleetOps.resume`)."""
    REPAIR = "repair"
    """Replace lost workers under their names, draining ones under new names
    (:meth:`FleetOps.repair`)."""
    DRAIN = "drain"
    """The workers report a notice before they go away (a spot notice; a local worker's
    ``host-status`` file), which :mod:`oa_vm.reach.drain` reads: they take no new task."""
    CLEAN_RESET = "clean reset"
    """The workers put back a snapshot of the whole machine before each task
    (``--reset clean``); :meth:`Provider.snapshot_control` hands out the means."""
    IMAGES = "images"
    """Prepared images are built, listed and deleted for the cloud (:mod:`oa_vm.images`)."""
    HOST_EXPIRY = "host expiry"
    """The pool's hosts run its expiry themselves (a timer), and are told when pause, resume
    or ``pool-extend`` move it (:meth:`Provider.move_expiry`)."""
    CLOUD_EXPIRY = "cloud expiry"
    """The cloud itself ends the pool at its expiry (a schedule the pool's program declares):
    pause, resume and ``pool-extend`` move it there first, through the fleet operations
    (:class:`CloudExpiryOps`), and the record takes the new expiry once the cloud did."""


FLEET_CAPABILITIES = frozenset({Capability.PAUSE, Capability.RESUME, Capability.REPAIR})
"""The capabilities served by :meth:`Provider.fleet_ops`: a provider with any of them
implements it."""


class FleetOps(Protocol):
    """What a provider does for pause, resume and repair; :mod:`oa_vm.fleet` saves the records,
    holds the locks and checks the pool's state around each call."""

    def pause(self, record: PoolRecord, progress: Progress) -> PoolRecord:
        """Stop every worker, keeping its disk; workers become ``paused``."""
        ...

    def resume(self, record: PoolRecord, progress: Progress) -> list[str]:
        """Start the paused workers again; returns their names."""
        ...

    def repair(self, record: PoolRecord, progress: Progress, names: list[str] | None) -> list[str]:
        """Replace lost workers (or ``names``) under the same names; returns their names."""
        ...


@runtime_checkable
class ExpiryLimit(Protocol):
    """How far ahead a cloud can end a pool (a provider declaring
    :attr:`Capability.CLOUD_EXPIRY`, and its :class:`CloudExpiryOps`): asked before anything is
    written or run, so it needs no engine."""

    def latest_expiry(self, record: PoolRecord, now: datetime) -> tuple[datetime, str] | None:
        """The latest expiry the cloud can keep for the pool once it runs, and the rule that
        says so, one phrase (None: no limit)."""
        ...


@runtime_checkable
class CloudExpiryOps(FleetOps, ExpiryLimit, Protocol):
    """The fleet operations of a cloud that ends its pools itself (:attr:`Capability.CLOUD_EXPIRY`).
    Their :meth:`pause` and :meth:`resume` give the cloud ``record.expires_at`` too."""

    def move_expiry(self, record: PoolRecord, progress: Progress) -> None:
        """Make the cloud end the pool at ``record.expires_at`` (its program runs again), then
        re-arm the running hosts' own timers (a stopped host sets its own when it boots); a
        host that does not answer is said through ``progress``, with what to run.

        Raises:
            ProvisioningError: the cloud did not take the new expiry.
        """
        ...


@runtime_checkable
class StateKeeper(Protocol):
    """A provider whose pools are kept in a state of this machine that outlives their records
    (a Pulumi stack in oa-vm's home), so that a pool whose record was removed by hand can still
    be found, and removed, by its name."""

    def unrecorded(self, pool: str) -> PoolRecord | None:
        """A record to remove ``pool`` by, when its record is gone but its state still holds
        what it made (None: no such state).

        Raises:
            ProviderUnavailableError: the state holds it, but what removes it is not installed.
        """
        ...


class Provider(Protocol):
    """The contract between the API and one cloud.

    Implementations must import their cloud SDKs lazily (inside methods), so that importing the
    provider module costs nothing and ``oa-vm --help`` never loads Pulumi.
    """

    name: str

    capabilities: frozenset[Capability]
    """What this provider does beyond the core methods below (see :class:`Capability`).
    Declared as data, so that a caller refuses in one line what a provider cannot do, before
    anything is contacted."""

    def fleet_ops(self) -> FleetOps:
        """Pause, resume and repair of this provider's pools (only with one of
        :data:`FLEET_CAPABILITIES`); raises ``ProviderUnavailableError`` when it cannot run
        here (a missing extra). Returns quickly; nothing is contacted."""
        ...

    def snapshot_control(
        self, record: PoolRecord, worker: WorkerRecord, connection: WorkerConnection
    ) -> SnapshotControl:
        """How to take and restore ``worker``'s clean snapshot (only with
        :attr:`Capability.CLEAN_RESET`).

        ``connection`` is the run's connection to the worker (its scoring server's URL as this
        machine reaches it, tunnels included, and its timeouts). Returns quickly; nothing is
        contacted until the control is used.
        """
        ...

    def move_expiry(self, record: PoolRecord, progress: Progress) -> None:
        """Set the timer each of the pool's hosts runs to ``record.expires_at`` (only with
        :attr:`Capability.HOST_EXPIRY`). A host that cannot be told is said through
        ``progress``, with what to do; nothing is raised (the record's expiry stands)."""
        ...

    def check_available(self) -> None:
        """Raise ``ProviderUnavailableError`` (one line, with the fix) if this provider cannot
        create pools here: a missing extra, a missing engine. Called before anything is written."""
        ...

    def plan(self, spec: PoolSpec) -> Plan:
        """Resources and $/hour for ``spec``. No side effects; no network, except where what
        exists is the user's to say: the ``ssh`` provider reads its hosts (read only)."""
        ...

    def create(self, spec: PoolSpec, progress: Progress) -> PoolRecord:
        """Create the pool and return its record with every worker listed.

        Returns as soon as the resources exist; workers may still be booting (``pool-wait``
        follows them). On failure it removes what it made and raises ``ProvisioningError``.
        """
        ...

    def refresh(self, record: PoolRecord, *, network: bool = True) -> PoolRecord:
        """Ask the cloud (or the OS) what is really there; mark vanished workers ``LOST``.

        Without ``network``, only what this machine knows without asking anything over the
        network (a local pool's processes; a cloud's pool is returned as it is): what a plain
        ``pool-status`` of a simulated pool reads.
        """
        ...

    def worker_phase(self, record: PoolRecord, index: int) -> tuple[str, bool]:
        """One readiness check of worker ``index``: ``(phase, ready)``; returns quickly.

        ``phase`` names the furthest step reached (e.g. ``"process up"``, ``"waa probe"``).
        """
        ...

    def destroy(self, record: PoolRecord, progress: Progress) -> CleanupReport:
        """Remove everything the pool created. Idempotent: destroying what is gone succeeds."""
        ...
