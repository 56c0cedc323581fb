"""The ``ssh`` provider: a pool's workers on Linux hosts the user names (``--host``).

What is built: the plan. Every host is probed over SSH (``infra/worker/host_probe.sh``, read
only), each host's facts and how many workers fit are shown, and a host that cannot take its
workers is refused in one line of its own (unreachable, already in another pool, no KVM, no
root, too little memory, too few CPUs, a worker's port taken) before anything is changed
anywhere. The price is zero unless ``--price-per-hour`` gives one per worker: the hosts are the
user's.

What is not built yet: installing the workers (``create``), so :meth:`check_available` refuses
a create in one line and ``--plan`` is the way in; see docs/providers.md ("Your own hosts").
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from infra.worker import slots
from infra.worker.slots import memory_per_worker_gib
from oa_vm.clouds.base import (
    Capability,
    CleanupReport,
    FleetOps,
    Plan,
    PlannedResource,
    PoolSpec,
    Progress,
)
from oa_vm.clouds.hosts.facts import HostAddress, fit, refusal
from oa_vm.errors import InvalidInputError, ProviderUnavailableError
from oa_vm.model.state import PoolRecord, WorkerRecord

if TYPE_CHECKING:
    from oa_vm.model.snapshots import SnapshotControl
    from oa_vm.reach.connect import WorkerConnection

INSTALLS = ("docker.io (unless docker or podman is there)", "socat", "nftables", "qemu-utils",
            "the worker files in /opt/oa-vm", "the oa-vm-* systemd units and the expiry timer")
"""What a create would add to each host (the host's own software is left as it is)."""


def host_addresses(spec: PoolSpec) -> list[HostAddress]:
    """The spec's ``--host`` values, parsed.

    Raises:
        InvalidInputError: none given, a malformed one, or the same host twice.
    """
    if not spec.hosts:
        raise InvalidInputError("--cloud ssh needs at least one --host user@host[:port]")
    addresses: list[HostAddress] = []
    for text in spec.hosts:
        try:
            address = HostAddress.parse(text)
        except ValueError as exc:
            raise InvalidInputError(str(exc)) from exc
        if any((a.host, a.port) == (address.host, address.port) for a in addresses):
            raise InvalidInputError(f"--host {text!r} is given twice: name each host once")
        addresses.append(address)
    return addresses


class SshHostsProvider:
    """Pools on the user's own KVM hosts; see the module docstring."""

    name = "ssh"
    capabilities: frozenset[Capability] = frozenset()

    def fleet_ops(self) -> FleetOps:
        """No pause, resume or repair yet."""
        raise ProviderUnavailableError("pools on your own hosts cannot be paused, resumed or "
                                       "repaired yet")

    def snapshot_control(
        self, record: PoolRecord, worker: WorkerRecord, connection: WorkerConnection
    ) -> SnapshotControl:
        """No clean resets yet (not declared)."""
        raise ProviderUnavailableError("clean resets on your own hosts are not built yet")

    def check_available(self) -> None:
        """Creating is not built yet: refused in one line before anything is written."""
        raise ProviderUnavailableError(
            "creating pools on your own hosts is not built yet; 'oa-vm pool-create --cloud ssh "
            "--host ... --ssh-key ... --plan' shows what each host can take"
        )

    def preflight(self, spec: PoolSpec) -> None:
        """The plan's refusals, before anything is shown or written (see :meth:`plan`)."""
        self.plan(spec)

    def plan(self, spec: PoolSpec) -> Plan:
        """Probe every host (read only) and plan ``spec.workers_per_host`` workers on each.

        Unlike the clouds' plans, this one contacts the hosts: what they can take is theirs to
        say. Each host's key is trusted on first use for the probe only.

        Raises:
            InvalidInputError: no ``--host`` or ``--ssh-key``; or one line per host that cannot
                take its workers (all hosts are probed first, so every refusal is said at once).
        """
        from oa_vm.clouds.hosts.probe import probe_hosts

        addresses = host_addresses(spec)
        if not spec.ssh_key:
            raise InvalidInputError("--cloud ssh needs --ssh-key PATH (the key that logs in to "
                                    "every --host)")
        per_host = spec.workers_per_host
        with tempfile.TemporaryDirectory(prefix="oa-vm-probe-") as folder:
            results = probe_hosts(addresses, Path(spec.ssh_key).expanduser(),
                                  Path(folder) / "known_hosts")
        refusals: list[str] = []
        notes: list[str] = []
        resources: list[PlannedResource] = []
        for result in results:
            if result.facts is None:
                refusals.append(refusal(result.address, [result.error]))
                continue
            fitted = fit(result.facts, per_host, pool=spec.name)
            if fitted.problems:
                refusals.append(refusal(result.address, fitted.problems))
                continue
            notes.append(f"host {result.address}: {result.facts.describe()}; "
                         f"{per_host} worker(s) of {memory_per_worker_gib():g} GiB each")
            for s in slots.host_slots(per_host):
                resources.append(PlannedResource(
                    type="ssh:worker", name=f"{spec.name}-{result.address.host}-{s.name}",
                    inputs={"host": str(result.address), "container": s.container,
                            "storage": s.storage_dir, "guest_ip": s.guest_ip,
                            "ports": [s.waa_port, s.vnc_port, s.scoring_port]},
                ))
        if refusals:
            raise InvalidInputError("\n".join(refusals))
        workers = per_host * len(addresses)
        price = (spec.price_per_hour or 0.0) * workers
        notes.append("installs on each host: " + ", ".join(INSTALLS))
        notes.append("expiry is enforced by a timer on each host (it stops and removes the "
                     "pool's containers at the expiry even if this machine is gone)")
        notes.append("cleanup removes what the pool added and keeps the image cache "
                     "(/var/lib/oa-vm/image-cache) unless --purge")
        notes.append("price: your own hosts cost nothing here" if not spec.price_per_hour
                     else f"price: ${spec.price_per_hour:g}/h per worker, as given")
        return Plan(cloud=self.name, region=None, size=None, workers=workers,
                    price_per_hour=price, resources=resources, notes=notes, name=spec.name)

    def create(self, spec: PoolSpec, progress: Progress) -> PoolRecord:
        """Not built yet (:meth:`check_available` refuses first)."""
        self.check_available()
        raise AssertionError("unreachable")  # pragma: no cover

    def refresh(self, record: PoolRecord) -> PoolRecord:
        """No pool of this provider is ever recorded yet: the record as it is."""
        return record

    def worker_phase(self, record: PoolRecord, index: int) -> tuple[str, bool]:
        """No worker of this provider is ever created yet."""
        return ("not created", False)

    def destroy(self, record: PoolRecord, progress: Progress) -> CleanupReport:
        """Nothing was made on any host; nothing to remove (idempotent)."""
        return CleanupReport()
