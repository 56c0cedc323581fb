"""Pause, resume and repair of cloud pools (the :class:`~oa_vm.clouds.base.FleetOps` of AWS
and Azure, which :meth:`PulumiCloudProvider.fleet_ops` hands out).

- **AWS**: the pool's own program runs again (same settings, so nothing is replaced) with each
  instance's power state declared ``stopped`` or ``running`` (:mod:`infra.pause`).
- **Azure**: the native provider has no power state resource, so the driver deallocates and
  starts the VMs itself through a :class:`PowerControl` (by default the ``az`` CLI), once the
  program took the paused or running expiry (its deleter and shutdown schedules).
- **repair** (both): the program runs again; Pulumi recreates what the cloud removed (a
  terminated, evicted or interrupted instance) under the same name, from the same image. A
  *draining* worker (a spot notice) is not waited for: the program gets one more worker, under
  the next number (``<pool>-w3``), at once, while the draining one finishes its task. The
  workers' numbers are then kept in ``settings["worker_indexes"]`` (the program's
  ``PoolSettings.indexes``), so no other worker moves. A later repair retires the draining
  worker (its number leaves the program, and Pulumi deletes what is left of it: a terminated
  AWS instance's record, an evicted and deallocated Azure VM with its disks, address and
  schedule) once the refresh finds it gone, its notice's time has passed, or it is named.

The program's settings are rebuilt from the record by the provider
(:meth:`PoolProgram.update_program`) with the pool's current expiry: the cloud's kill switch
(AWS's schedule, Azure's deleter and daily shutdown time) and the tags take it, so pause, resume and
``pool-extend`` (:meth:`CloudFleetOps.move_expiry`) move it in the cloud. The hosts keep the user
data they were created with (:mod:`infra.first_boot`): nothing is replaced for a moved expiry or
an upgraded oa-vm, and only a new host's user data carries the current expiry. An AWS host's own
power-off timer, armed by cloud-init for the expiry its user data holds, is set from the
instance's expiry tag at every boot (a resumed host's too), and a running host's follows
``pool-extend`` over SSH (:mod:`~oa_vm.clouds.pulumi.timers`).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from oa_vm.clouds.base import Progress
from oa_vm.clouds.pulumi import timers
from oa_vm.errors import ProviderUnavailableError, ProvisioningError
from oa_vm.model import state
from oa_vm.model.state import PoolRecord, PoolState, SshEndpoint, WorkerRecord, WorkerState
from oa_vm.reach.host_status import RemoteRunner

AZ_TIMEOUT_S = 1800.0


class PowerControl(Protocol):
    """Stops (deallocates) and starts cloud VMs by their IDs (Azure)."""

    def deallocate(self, ids: Sequence[str], progress: Progress) -> None:
        """Deallocate the VMs: compute billing ends, disks stay."""
        ...

    def start(self, ids: Sequence[str], progress: Progress) -> None:
        """Start deallocated VMs again."""
        ...


class AzCliPower:
    """:class:`PowerControl` with the ``az`` CLI (``az vm deallocate/start --ids ...``)."""

    def _run(self, verb: str, ids: Sequence[str], progress: Progress) -> None:
        az = shutil.which("az")
        if az is None:
            raise ProviderUnavailableError(
                "pausing an Azure pool needs the Azure CLI ('az', logged in): "
                "https://learn.microsoft.com/cli/azure/install-azure-cli"
            )
        progress(f"az vm {verb} {len(ids)} VM(s)")
        from oa_vm.kit.cli_failure import tool_said, why_it_failed

        try:
            done = subprocess.run(  # fixed argv, no shell
                [az, "vm", verb, "--ids", *ids], capture_output=True, text=True,
                timeout=AZ_TIMEOUT_S, check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ProvisioningError(f"az vm {verb} failed: {why_it_failed(exc)}") from exc
        if done.returncode != 0:
            raise ProvisioningError(
                f"az vm {verb} failed: {tool_said(done.stderr, f'exit code {done.returncode}')}")

    def deallocate(self, ids: Sequence[str], progress: Progress) -> None:
        """``az vm deallocate --ids ...``."""
        self._run("deallocate", ids, progress)

    def start(self, ids: Sequence[str], progress: Progress) -> None:
        """``az vm start --ids ...``."""
        self._run("start", ids, progress)


class PoolProgram(Protocol):
    """What the fleet operations need of a cloud's provider: its pool's program run again and
    what the cloud really has (:class:`~oa_vm.clouds.pulumi.provider.PulumiCloudProvider`;
    a protocol, so that the provider and this module do not import each other)."""

    def update_program(
        self, record: PoolRecord, progress: Progress, *, paused: bool | None
    ) -> dict[str, Any]:
        """Run the pool's program again with the settings it was created with (``paused``:
        AWS's instances declared stopped or running; None: left as they are); returns its
        outputs (``{"workers": [{"name", "instance_id", "public_ip", "ssh_user"}]}``)."""
        ...

    def refresh(self, record: PoolRecord) -> PoolRecord:
        """Ask the cloud what is really there; mark vanished workers ``LOST``."""
        ...

    def latest_expiry(self, record: PoolRecord, now: datetime) -> tuple[datetime, str] | None:
        """The latest expiry the cloud can keep for the running pool, and why (None: no
        limit)."""
        ...

    def timer_runner(self, record: PoolRecord) -> RemoteRunner | None:
        """What reaches the hosts' power-off timers (None: the hosts run none)."""
        ...


def worker_from_output(out: dict[str, Any], key_path: str) -> WorkerRecord:
    """A worker's record from its entry in a pool program's ``workers`` output, as a create
    (or a repair that adds workers) makes it: ``booting``, reached over SSH."""
    worker = WorkerRecord(name=str(out["name"]), state=WorkerState.BOOTING, phase="created",
                          ssh=SshEndpoint(host=str(out["public_ip"]), port=22,
                                          user=str(out["ssh_user"]), key_path=key_path))
    apply_output(worker, out)
    return worker


def apply_output(worker: WorkerRecord, out: dict[str, Any]) -> None:
    """Take a worker's machine, address and ports from its program output entry.

    ``host`` is the machine the worker runs on: with several workers per host, the host's name
    (``out["host"]``, shared by its workers, :func:`infra.worker.slots.host_workers`); with
    one, its address, as always. The ports are the slot's on the host (what the tunnel
    reaches)."""
    worker.provider_id = str(out["instance_id"])
    worker.host = str(out.get("host") or out["public_ip"])
    worker.remote_waa_port = int(out.get("waa_port") or worker.remote_waa_port)
    worker.remote_scoring_port = int(out.get("scoring_port") or worker.remote_scoring_port)
    if worker.ssh is not None:
        worker.ssh = SshEndpoint(host=str(out["public_ip"]), port=worker.ssh.port,
                                 user=str(out.get("ssh_user") or worker.ssh.user),
                                 key_path=worker.ssh.key_path)


class CloudFleetOps:
    """Pause, resume and repair for a cloud pool (AWS or Azure).

    Args:
        provider: The cloud's provider (its engine runs the program).
        power: Azure's VM power control; the ``az`` CLI by default.
    """

    def __init__(self, provider: PoolProgram, power: PowerControl | None = None) -> None:
        self.provider = provider
        self.power = power or AzCliPower()

    def _update_workers(self, record: PoolRecord, outputs: dict[str, Any]) -> list[str]:
        """Take the workers' addresses and IDs from the program's outputs; returns the names
        whose instance changed (recreated)."""
        by_name = {str(w["name"]): w for w in outputs.get("workers") or []}
        changed = []
        for worker in record.workers:
            out = by_name.get(worker.name)
            if out is None:
                continue
            instance = str(out["instance_id"])
            if instance != worker.provider_id or worker.state == WorkerState.LOST:
                changed.append(worker.name)
            apply_output(worker, out)
        return changed

    def _mark(self, record: PoolRecord, names: Sequence[str], new: WorkerState, phase: str) -> None:
        for worker in record.workers:
            if worker.name in names:
                worker.state = new
                worker.phase = phase
                worker.detail = None

    def _ids(self, record: PoolRecord) -> list[str]:
        return [str(w.provider_id) for w in record.workers if w.provider_id]

    # -- FleetOps ------------------------------------------------------------------------------

    def pause(self, record: PoolRecord, progress: Progress) -> PoolRecord:
        """The program runs with the pool paused, so the cloud's kill switch and the tags take
        ``record.expires_at``, the paused pool's (AWS terminates stopped instances too, and a
        host sets its timer from the tag when it boots again; Azure's deleter removes the
        group). AWS: the program stops the instances; Azure: the VMs are then deallocated.
        Disks stay."""
        runner = self.provider.timer_runner(record)  # None: Azure's hosts run no timer
        if runner is not None:
            timers.disarm_if_unarmed_at_boot(record, runner, progress)
        outputs = self.provider.update_program(record, progress, paused=True)
        self._update_workers(record, outputs)
        if record.cloud != "aws":
            self.power.deallocate(self._ids(record), progress)
        self._mark(record, [w.name for w in record.workers], WorkerState.PAUSED, "paused")
        record.state = state.derive_pool_state(record.workers)
        return record

    def resume(self, record: PoolRecord, progress: Progress) -> list[str]:
        """AWS: instances declared running again; Azure: the deleter and the shutdown schedules
        moved to the new expiry first (under the running pool's 24-hour rule: an old time of
        day would deallocate the VMs early), then the VMs started. Either way the cloud's kill
        switch takes ``record.expires_at``; AWS's tags take it before the instances start, and
        each host sets its power-off timer from them as it boots
        (:mod:`~oa_vm.clouds.pulumi.timers`)."""
        names = [w.name for w in record.workers if w.state == WorkerState.PAUSED]
        outputs = self.provider.update_program(record, progress, paused=False)
        self._update_workers(record, outputs)
        if record.cloud != "aws":
            self.power.start(self._ids(record), progress)
        self._mark(record, names, WorkerState.BOOTING, "resumed")
        record.state = state.derive_pool_state(record.workers)
        return names

    def latest_expiry(self, record: PoolRecord, now: datetime) -> tuple[datetime, str] | None:
        """The provider's limit (Azure: 24 hours from ``now``)."""
        return self.provider.latest_expiry(record, now)

    def move_expiry(self, record: PoolRecord, progress: Progress) -> None:
        """The program runs again with ``record.expires_at`` (a paused pool's stays paused: AWS's
        instances declared stopped, Azure's deleter moved), then the running hosts' timers
        follow.

        Raises:
            ProvisioningError: the update failed.
        """
        self.provider.update_program(record, progress, paused=_power(record))
        runner = self.provider.timer_runner(record)  # None: Azure's hosts run no timer
        if runner is None:
            return
        if record.state == PoolState.PAUSED:
            progress("its hosts are stopped: each sets its power-off timer to the new expiry "
                     "when it starts")
            return
        timers.rearm(record, runner, progress)

    def repair(self, record: PoolRecord, progress: Progress, names: list[str] | None) -> list[str]:
        """Run the program again: what the cloud removed is recreated under the same names, a
        draining worker gets a new worker beside it, and replaced draining workers that can go
        are retired (see the module docstring). Returns the workers started.

        A named worker whose instance still exists is not replaced (the program recreates only
        what is gone); it is left out of the names returned, unless it is a replaced draining
        worker, which is then retired.
        """
        from oa_vm.reach import replacements

        record = self.provider.refresh(record)
        chain = replacements.replaced_by(record)
        retire = replacements.to_retire(record, names)
        lost = [w.name for w in record.workers
                if w.state == WorkerState.LOST and w.name not in chain]
        draining = replacements.needs_replacement(record)
        for worker in record.workers:
            if worker.name in chain and worker.name not in retire:
                progress(f"{worker.name} is draining ({worker.detail}); {chain[worker.name]} "
                         "replaces it; it is retired once the cloud has ended it")
        if not (lost or retire or draining):
            return []
        for name in retire:
            record.workers = [w for w in record.workers if w.name != name]
            progress(f"retiring {name} (replaced by {replacements.successor(record, name)})")
        new: list[str] = []
        per_host = int(record.settings.get("workers_per_host") or 1)
        if per_host > 1:
            # a notice is the host's: a new host takes the place of the draining one, slot for
            # slot (its workers start together; the old host's are retired together)
            new = _replace_hosts(record, draining, per_host, progress)
        for name in draining if per_host == 1 else []:
            new_name = replacements.next_worker_name(record)
            replacements.add_replacement(record, name, new_name)
            new.append(new_name)
            progress(f"starting {new_name} to replace draining {name}")
        record.settings["worker_indexes"] = sorted(
            {_number(n) for n in [*(w.name for w in record.workers), *new]}
        )
        outputs = self.provider.update_program(record, progress, paused=_power(record))
        self._add_workers(record, outputs, new)
        changed = self._update_workers(record, outputs)
        replaced = sorted(set(lost) | (set(changed) - set(new)))
        self._mark(record, replaced, WorkerState.BOOTING, "recreated")
        self._mark(record, new, WorkerState.BOOTING, "created")
        record.state = state.derive_pool_state(record.workers)
        return replaced + new

    def _add_workers(self, record: PoolRecord, outputs: dict[str, Any], new: list[str]) -> None:
        """Records for the workers the program just created (``new``), as a create makes them."""
        from oa_vm.model import sshkeys

        key_path = next((w.ssh.key_path for w in record.workers if w.ssh is not None), None)
        key = key_path or str(sshkeys.ensure_pool_key(record.name)[0])
        by_name = {str(w["name"]): w for w in outputs.get("workers") or []}
        for name in new:
            out = by_name.get(name)
            if out is None:
                raise ProvisioningError(f"pool {record.name!r}: the update made no {name}")
            record.workers.append(worker_from_output(out, key))


def _power(record: PoolRecord) -> bool | None:
    """What an update passes as ``paused``: True for a paused pool (AWS's instances declared
    stopped; on both clouds the program knows its expiry is a paused pool's); for an AWS pool
    paused before, False (its stack holds the power resources: declared running); else None."""
    if record.state == PoolState.PAUSED:
        return True
    return False if record.cloud == "aws" and record.provider_data.get("pauses") else None


def _replace_hosts(record: PoolRecord, draining: list[str], per_host: int,
                   progress: Progress) -> list[str]:
    """New hosts for the hosts of the ``draining`` workers, each under the next host number;
    every worker of a draining host is linked to its slot's successor. Returns the new
    workers' names."""
    from oa_vm.reach import replacements

    new: list[str] = []
    hosts = dict.fromkeys(_number(n) for n in draining)
    for old in hosts:
        taken = {_number(w.name) for w in record.workers} | {_number(n) for n in new}
        taken |= {_number(n) for n in replacements.replaced_by(record).values()}
        number = max(taken) + 1
        host = f"{record.name}-w{number}"
        for slot in range(per_host):
            old_name, new_name = f"{record.name}-w{old}-s{slot}", f"{host}-s{slot}"
            if any(w.name == old_name for w in record.workers):
                replacements.add_replacement(record, old_name, new_name)
            new.append(new_name)
        progress(f"starting host {host} ({per_host} workers) to replace draining host "
                 f"{record.name}-w{old}")
    return new


def _number(name: str) -> int:
    """A cloud worker's host number: 3 for ``<pool>-w3``, and for ``<pool>-w3-s1`` (slot 1 of
    host 3, on a host with several workers)."""
    match = re.search(r"-w(\d+)(?:-s\d+)?$", name) or re.search(r"(\d+)$", name)
    if match is None:
        raise ProvisioningError(f"worker {name!r} has no number")
    return int(match.group(1))

