"""Readiness of a cloud worker, one step at a time, for ``pool-wait`` and image builds.

The steps, in order (the phase names the furthest one reached):

1. ``ssh``: the host answers SSH with the pool's key (host key pinned on first contact);
2. ``cloud-init``: ``cloud-init status`` says ``done`` (``error`` is reported with its text);
3. ``bootstrap: <step>``: the host's ``bootstrap.sh`` reports its step in
   ``/var/lib/oa-vm/status`` (kvm, ports, docker, storage, load/pull/build, container, guest,
   scoring); a failed step ends the wait for that worker with the script's own message and how
   to read its log;
4. ``container``: the WAA container is up (docker reached directly when the SSH user is in the
   ``docker`` group, else with ``sudo -n``; the SSH users of both clouds have passwordless sudo);
5. ``waa probe``: WAA's ``/probe`` answers through an SSH tunnel;
6. ``scoring probe``: the scoring server's ``/probe`` answers through the same tunnel;

then ``ready``. Each call makes one pass and returns quickly (every step has a timeout). The
details carry the container's last log line (dockur prints the Windows install's progress).

The host's status protocol (the remote commands as data, their parsers, the SSH runner
interface) lives in :mod:`oa_vm.reach.host_status`, shared with the drain checks; the tests run the
real commands over a real SSH session to a test server with stand-in ``docker`` and ``sudo`` on
the remote PATH.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from oa_vm.errors import ProvisioningError, WorkerAccessError
from oa_vm.kit.error_line import host_words
from oa_vm.model.state import PoolRecord, SshEndpoint, WorkerRecord, WorkerState
from oa_vm.reach.host_status import (
    COMMAND_TIMEOUT_S,
    HostReport,
    ParamikoRunner,
    RemoteCommands,
    RemoteRunner,
    RemoteUnreachableError,
    delivery_command,
    describe_failure,
    logs_hint,
    parse_host_report,
    parse_status,
    remote_error,
)

PROBE_TIMEOUT_S = 5.0


def cloud_init_state(output: str) -> str:
    """``done``, ``error``, ``running`` or ``unknown`` from ``cloud-init status`` output."""
    for line in output.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "status":
            value = value.strip()
            if value in ("done", "error", "running", "disabled", "degraded done"):
                return "done" if value in ("disabled", "degraded done") else value
            return "running" if value == "not started" else "unknown"
    return "unknown"


def _fail(worker: WorkerRecord, phase: str, detail: str | None) -> tuple[str, bool]:
    # a detail quotes the host (its log line, docker's error): shown as one line
    worker.detail = None if detail is None else host_words(detail, most=None)
    return phase, False


def _unreachable(worker: WorkerRecord, phase: str, exc: RemoteUnreachableError) -> tuple[str, bool]:
    """A pass that could not reach the host: polled again, unless waiting cannot help (the
    key refused, a changed host key: :attr:`RemoteUnreachableError.final`), then the wait ends
    at once with the SSH error's own advice."""
    if exc.final:
        raise WorkerAccessError(str(exc), worker=worker.name) from exc
    return _fail(worker, phase, str(exc))


def _with_log(text: str, report: HostReport) -> str:
    return f"{text}; last log: {report.last_log}" if report.last_log else text


def worker_phase(
    record: PoolRecord,
    index: int,
    runner: RemoteRunner | None = None,
    commands: RemoteCommands | None = None,
) -> tuple[str, bool]:
    """One readiness pass over worker ``index``: ``(phase, ready)``.

    A bootstrap that reports a failed step marks the worker ``LOST`` with the step, the script's
    message and how to read its logs: waiting longer cannot help it. A host that refuses the
    pool's key or offers a changed host key raises :class:`WorkerAccessError` (the worker is
    not lost: once the key is mended, the same wait goes on). A host that reports
    ``draining`` (a spot interruption notice, see :mod:`oa_vm.reach.drain`) marks the worker
    ``DRAINING``.

    Args:
        record: the pool.
        index: which worker.
        runner: runs remote commands (paramiko with the pool's known_hosts by default).
        commands: what to run on the host.
    """
    from oa_vm.reach.connect import known_hosts_path, tunnel_for

    worker = record.workers[index]
    if worker.ssh is None:
        return _fail(worker, "ssh", "the worker has no SSH endpoint in its record")
    runner = runner or ParamikoRunner(known_hosts_path(record.name))
    commands = commands or RemoteCommands.for_worker(
        worker.remote_waa_port, int(record.settings.get("workers_per_host") or 1))
    try:
        boot = runner.run(worker.ssh, commands.cloud_init, COMMAND_TIMEOUT_S)
    except RemoteUnreachableError as exc:
        return _unreachable(worker, "ssh", exc)
    boot_state = cloud_init_state(boot.output)
    if boot_state == "error":
        return _fail(worker, "cloud-init failed", host_words(boot.output))
    if boot_state != "done":
        return _fail(worker, "cloud-init", f"cloud-init {boot_state}")
    try:
        report = parse_host_report(runner.run(worker.ssh, commands.host, COMMAND_TIMEOUT_S).output)
    except RemoteUnreachableError as exc:
        return _unreachable(worker, "cloud-init", exc)
    status = report.status
    if not status:
        return _fail(worker, "bootstrap", "the bootstrap has not reported yet")
    if status.get("state") == "failed":
        worker.state = WorkerState.LOST
        return _fail(worker, f"failed at {status.get('step', '?')}",
                     describe_failure(report, worker.ssh, commands))
    from oa_vm.reach.drain import mark_draining, notice_from_status

    notice = notice_from_status(status)
    if notice is not None:  # a spot interruption notice (spot_watch.sh): going away
        mark_draining(worker, notice)
        return "draining", False
    if status.get("state") == "running" and status.get("step") == "files":
        # the scorer's files do not fit AWS's user data: the bootstrap waits for them here
        from infra.worker.cloud_init import late_payload

        try:
            runner.run(worker.ssh, delivery_command(late_payload()), COMMAND_TIMEOUT_S)
        except RemoteUnreachableError as exc:
            return _unreachable(worker, "bootstrap: files", exc)
        return _fail(worker, "bootstrap: files", "the scoring server's files delivered")
    if status.get("state") != "done":
        return _fail(worker, f"bootstrap: {status.get('step', '?')}",
                     _with_log(status.get("message", ""), report))
    if not report.container.startswith("Up"):
        return _fail(worker, "container",
                     _with_log(f"container: {report.container or 'not running'}", report))

    from waa_client import ScoringClient, WaaClient, WaaError
    from waa_client.errors import TunnelError

    phase = "waa probe"
    tunnel = tunnel_for(record, worker)
    try:
        tunnel.start()
        timeouts = {"connect_timeout": PROBE_TIMEOUT_S, "read_timeout": PROBE_TIMEOUT_S}
        WaaClient(tunnel.local_waa_url, retries=0, **timeouts).probe()
        phase = "scoring probe"
        ScoringClient(tunnel.local_scoring_url, retries=0, **timeouts).probe()
    except TunnelError as exc:  # the probes' tunnel: the same rule as the status reads
        return _unreachable(worker, phase, remote_error(exc))
    except WaaError as exc:
        return _fail(worker, phase, str(exc))
    finally:
        tunnel.stop()
    worker.detail = None
    return "ready", True


HEARTBEAT_S = 30.0
POLL_S = 15.0


def follow_status(
    ssh: SshEndpoint,
    known_hosts: Path,
    *,
    name: str,
    timeout_s: float,
    progress: Callable[[str], None],
    want: str = "built",
    runner: RemoteRunner | None = None,
    commands: RemoteCommands | None = None,
    poll_s: float = POLL_S,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, str]:
    """Follow one host's bootstrap until its status is ``done`` with step ``want`` (an image
    builder: ``built``), printing a heartbeat at least every 30 s; returns the host's image info
    (``waa_image``, ``built``).

    Raises:
        ProvisioningError: a step failed (its message and how to read the logs), or time ran out.
    """
    from oa_vm.kit.durations import format_duration
    from waa_client.poll import poll_until

    runner = runner or ParamikoRunner(known_hosts)
    commands = commands or RemoteCommands()
    started = clock()
    last_line = ""
    last_print = -HEARTBEAT_S

    def one_pass() -> dict[str, str] | None:
        nonlocal last_line, last_print
        try:
            report = parse_host_report(runner.run(ssh, commands.host, COMMAND_TIMEOUT_S).output)
            phase = report.status.get("step", "starting")
            line = f"{phase}: {_with_log(report.status.get('message', 'booting'), report)}"
        except RemoteUnreachableError as exc:
            if exc.final:  # the key refused, a changed host key: waiting cannot help
                raise ProvisioningError(f"{name}: {exc}") from exc
            report, line = None, f"ssh: {exc}"
        if report is not None and report.status.get("state") == "failed":
            raise ProvisioningError(f"{name} {describe_failure(report, ssh, commands)}")
        if report is not None and report.status.get("state") == "done":
            if report.status.get("step") != want:
                raise ProvisioningError(
                    f"{name} finished as {report.status.get('step')!r}, not {want!r}"
                )
            info = runner.run(ssh, f"cat {commands.image_info_file}", COMMAND_TIMEOUT_S)
            return parse_status(info.output)
        now = clock()
        if line != last_line or now - last_print >= HEARTBEAT_S:
            progress(f"[{format_duration(now - started):>6}] {name}: {line}")
            last_print = now
        last_line = line
        return None

    # A poll at a fixed interval, not a retry: every pass reports progress and an unreachable
    # host is one more pass, not a failure.
    built = poll_until(one_pass, timeout_s=timeout_s, interval_s=poll_s, clock=clock, sleep=sleep)
    if built is None:
        raise ProvisioningError(
            f"{name} not done after {format_duration(timeout_s)} (last: {last_line}); "
            f"{logs_hint(ssh, commands)}"
        )
    return built
