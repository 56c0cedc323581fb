"""A cloud host's own power-off timer, moved over SSH when the pool's expiry moves (AWS).

Cloud-init arms ``oa-vm-expiry.timer`` for the expiry the instance was created with
(:func:`infra.worker.cloud_init.poweroff_units`); the user data cannot change without replacing
the instance, so a moved expiry reaches the timer over SSH instead: the same units, written for
the new expiry (:func:`infra.worker.units.rearm_command`, as on the user's own hosts). A host
about to be stopped (a pause) has its timer disabled first: a stopped host misses its time,
and the timer (``Persistent=true``) would fire the moment ``pool-resume`` boots it; the
resume re-arms it once the host answers. Meanwhile the cloud's own schedule ends the pool.
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

    return "set -e; " + units.BECOME_ROOT + units.rearm_command(poweroff_units(expires_at))


def disarm_command() -> str:
    """The command that stops and disables a cloud host's power-off timer."""
    from infra.worker import units

    return "set -e; " + units.BECOME_ROOT + units.disarm_command()


def rearm(record: PoolRecord, runner: RemoteRunner, progress: Progress) -> list[str]:
    """Set every host's timer to ``record.expires_at``; returns the hosts not reached (each
    said through ``progress`` with what to run)."""
    expires_at = record.expires_at
    if expires_at is None:
        return []
    return _each_host(record, runner, progress, rearm_command(expires_at),
                      "its power-off timer was not moved",
                      f"oa-vm pool-extend --pool {record.name} --by 1m")


def disarm(record: PoolRecord, runner: RemoteRunner, progress: Progress) -> list[str]:
    """Stop every host's timer before the hosts are stopped; returns the hosts not reached."""
    return _each_host(record, runner, progress, disarm_command(),
                      "its power-off timer was not stopped (it may power the host off when "
                      "pool-resume starts it)",
                      f"oa-vm pool-resume --pool {record.name}, then oa-vm pool-extend "
                      f"--pool {record.name} --by 1m")


def _each_host(record: PoolRecord, runner: RemoteRunner, progress: Progress, command: str,
               what: str, again: str) -> list[str]:
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

