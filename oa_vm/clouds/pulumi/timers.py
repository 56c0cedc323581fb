"""A running cloud host's own power-off timer, moved over SSH when the pool's expiry moves (AWS).

Cloud-init starts ``oa-vm-expiry.timer`` for the expiry the instance was created with
(:func:`infra.worker.cloud_init.poweroff_units`); the instance keeps that user data for good
(:mod:`infra.first_boot`). A host that boots sets the timer itself:
``oa-vm-expiry-arm.service`` reads the pool's current expiry from the instance's
``oa-vm:expires-at`` tag (which the program moves with the record) before it starts the timer,
and nothing else starts it at boot. So a pause needs no
disarm (the stopped host's old time cannot fire at the resume's boot) and a resume no re-arm,
``--no-wait`` or not. Only a running host's timer must follow a moved expiry (``pool-extend``):
over SSH, the same units written for the new expiry (:func:`infra.worker.units.rearm_command`,
as on the user's own hosts). Meanwhile the cloud's own schedule ends the pool. A pool made by an
earlier oa-vm keeps hosts whose timer starts at boot with its old time: a pause stops and
disables it (:func:`disarm_if_unarmed_at_boot`).
"""

from __future__ import annotations

from datetime import datetime

from oa_vm.clouds.base import Progress
from oa_vm.model.state import PoolRecord, SshEndpoint
from oa_vm.reach.host_status import RemoteRunner, RemoteUnreachableError

TIMER_TIMEOUT_S = 60.0
"""One host's re-arm: a few small writes and two systemctl calls."""


def rearm_command(expires_at: datetime) -> str:
    """The command that sets a cloud host's power-off timer to ``expires_at``."""
    from infra.worker import units
    from infra.worker.cloud_init import poweroff_units

    return "set -e; " + units.BECOME_ROOT + units.rearm_command(poweroff_units(expires_at),
                                                                enable=False)


ARMS_AT_BOOT = "hosts_arm_timer_at_boot"
"""``provider_data`` key a create writes: the pool's hosts set their timer from the tag at boot
(:mod:`infra.first_boot` keeps every host's user data, so a pool made by an earlier oa-vm never
gains the arm unit)."""


def rearm(record: PoolRecord, runner: RemoteRunner, progress: Progress) -> list[str]:
    """Set every host's timer to ``record.expires_at``; returns the hosts not reached (each
    said through ``progress`` with what to run)."""
    if record.expires_at is None:
        return []
    return _each_host(record, runner, progress, rearm_command(record.expires_at),
                      "its power-off timer was not moved",
                      f"oa-vm pool-extend --pool {record.name} --by 1m")


def disarm_if_unarmed_at_boot(record: PoolRecord, runner: RemoteRunner,
                              progress: Progress) -> None:
    """Before a pause stops the hosts of a pool made by an earlier oa-vm (no
    :data:`ARMS_AT_BOOT`): their timer starts at boot with its old time, which, passed by the
    resume, would power a resumed host off at once; it is stopped and disabled instead, and
    ``pool-extend`` starts it again once the pool runs (the cloud's schedule ends it meanwhile).
    Hosts that arm at boot are not reached."""
    from infra.worker import units

    if record.provider_data.get(ARMS_AT_BOOT):
        return
    _each_host(record, runner, progress,
               f"set -e; {units.BECOME_ROOT}$S systemctl disable --now {units.EXPIRY_TIMER}",
               "its power-off timer was not stopped (it may power the host off when "
               "pool-resume starts it)", f"oa-vm pool-resume --pool {record.name}, then "
               f"oa-vm pool-extend --pool {record.name} --by 1m")
    progress("hosts made by an earlier oa-vm run no power-off timer after the resume until "
             f"'oa-vm pool-extend --pool {record.name} --by 1m'")


def _each_host(record: PoolRecord, runner: RemoteRunner, progress: Progress, command: str,
               what: str, again: str) -> list[str]:
    """Run ``command`` on each host; returns the hosts not reached, each said with ``what``
    failed and the command to run when it answers (``again``)."""
    missed: list[str] = []
    for host, workers in record.by_host().items():
        ssh = next((w.ssh for w in workers if w.ssh is not None), None)
        if ssh is None:
            continue
        problem = _run(runner, ssh, command)
        if problem:
            missed.append(host)
            progress(f"host {host}: {what}: {problem}; when it answers, run: {again}")
    return missed


def _run(runner: RemoteRunner, ssh: SshEndpoint, command: str) -> str:
    """'' when ``command`` succeeded on the host, else why not (one line)."""
    try:
        done = runner.run(ssh, command, TIMER_TIMEOUT_S)
    except RemoteUnreachableError as exc:
        return f"it does not answer ({exc})"
    if done.status == 0:
        return ""
    last = (done.output.strip().splitlines() or [f"exit status {done.status}"])[-1]
    return last[-300:]

