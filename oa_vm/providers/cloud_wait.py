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

The remote commands are data (:class:`RemoteCommands`) and the SSH runner an interface
(:class:`RemoteRunner`); the tests run the real commands over a real SSH session to a test
server with stand-in ``docker`` and ``sudo`` on the remote PATH.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from oa_vm.state import PoolRecord, SshEndpoint, WorkerRecord, WorkerState

SSH_TIMEOUT_S = 10.0
COMMAND_TIMEOUT_S = 20.0
PROBE_TIMEOUT_S = 5.0


# Expanded by the host's shell: OA_VM_STATE_DIR is unset on a real host; a rehearsal host (the
# tests' SSH server) sets it to where its bootstrap writes.
STATUS_FILE = '"${OA_VM_STATE_DIR:-/var/lib/oa-vm}/status"'
IMAGE_INFO_FILE = '"${OA_VM_STATE_DIR:-/var/lib/oa-vm}/image-info"'
CONTAINER = "winarena"
SECTION = "--- oa-vm:"


def _docker_probe_script(status_file: str, container: str) -> str:
    """One remote shell command printing the status file, the container's status and its last
    log line, in sections. docker is reached directly if the user may, else through sudo -n
    (never prompting)."""
    return (
        f"cat {status_file} 2>/dev/null; "
        f"echo '{SECTION}container'; "
        "D=docker; docker info >/dev/null 2>&1 || D='sudo -n docker'; "
        f"$D ps -a --filter 'name=^{container}$' --format '{{{{.Status}}}}' 2>&1; "
        f"echo '{SECTION}log'; "
        f"$D logs --tail 1 {container} 2>&1 | tail -n 1"
    )


@dataclass(frozen=True)
class RemoteCommands:
    """The shell commands run on a worker host to follow its boot.

    Attributes:
        cloud_init: prints cloud-init's status.
        status_file: where ``bootstrap.sh`` writes its status.
        image_info_file: where an image builder writes what it built from.
    """

    cloud_init: str = "cloud-init status"
    status_file: str = STATUS_FILE
    image_info_file: str = IMAGE_INFO_FILE

    @property
    def host(self) -> str:
        """The status file, the container's status and its last log line, in one command."""
        return _docker_probe_script(self.status_file, CONTAINER)


@dataclass(frozen=True)
class HostReport:
    """What one pass of :attr:`RemoteCommands.host` found.

    Attributes:
        status: the bootstrap's status (``state``, ``step``, ``message``, ...); empty when the
            bootstrap has not started.
        container: the container's status line (``Up 3 minutes``, ``Exited (1) ...``) or
            docker's error.
        last_log: the container's last log line.
    """

    status: dict[str, str]
    container: str
    last_log: str


def parse_status(text: str) -> dict[str, str]:
    """``key=value`` lines of the status file as a dict (other lines ignored)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip().isidentifier():
            out[key.strip()] = value.strip()
    return out


def parse_host_report(output: str) -> HostReport:
    """Split :attr:`RemoteCommands.host`'s output into its sections."""
    sections: dict[str, list[str]] = {"status": []}
    current = "status"
    for line in output.splitlines():
        if line.startswith(SECTION):
            current = line[len(SECTION):].strip()
            sections[current] = []
        else:
            sections.setdefault(current, []).append(line)
    container = "\n".join(sections.get("container", [])).strip()
    log_lines = [line for line in sections.get("log", []) if line.strip()]
    return HostReport(
        status=parse_status("\n".join(sections["status"])),
        container=container,
        last_log=log_lines[-1].strip()[:200] if log_lines else "",
    )


def logs_hint(ssh: SshEndpoint) -> str:
    """How to read a worker's bootstrap and container logs by hand."""
    return (
        f"read its logs with: ssh -i {ssh.key_path} {ssh.user}@{ssh.host} "
        f"'sudo journalctl -u oa-vm-bootstrap --no-pager | tail -50; "
        f"sudo docker logs --tail 50 {CONTAINER}'"
    )


def describe_failure(report: HostReport, ssh: SshEndpoint) -> str:
    """One line for a failed bootstrap: the step, the script's message, how to read logs."""
    step = report.status.get("step", "?")
    message = report.status.get("message", "no message")
    return f"failed at {step}: {message}; {logs_hint(ssh)}"


@dataclass(frozen=True)
class RemoteResult:
    """Exit status and combined output of one remote command."""

    status: int
    output: str


class RemoteUnreachableError(Exception):
    """SSH to the host failed (not up yet, refused, key refused, changed host key)."""


class RemoteRunner(Protocol):
    """Runs one command on a worker host over SSH."""

    def run(self, ssh: SshEndpoint, command: str, timeout: float) -> RemoteResult:
        """Run ``command``; raise :class:`RemoteUnreachableError` if SSH itself fails."""
        ...


class ParamikoRunner:
    """:class:`RemoteRunner` over paramiko with the pool's key and known_hosts (trust on first
    use, then a changed host key is refused)."""

    def __init__(self, known_hosts: Path) -> None:
        self.known_hosts = known_hosts

    def run(self, ssh: SshEndpoint, command: str, timeout: float) -> RemoteResult:
        """Connect, check the host key, log in with the key, run ``command``."""
        import paramiko

        from waa_client.errors import TunnelError
        from waa_client.ssh import KnownHosts, load_private_key

        try:
            pkey = load_private_key(Path(ssh.key_path))
            sock = socket.create_connection((ssh.host, ssh.port), timeout=SSH_TIMEOUT_S)
        except (OSError, TunnelError) as exc:
            raise RemoteUnreachableError(f"{ssh.host}:{ssh.port}: {exc}") from exc
        transport = paramiko.Transport(sock)
        transport.banner_timeout = SSH_TIMEOUT_S
        transport.handshake_timeout = SSH_TIMEOUT_S
        transport.auth_timeout = SSH_TIMEOUT_S
        try:
            transport.start_client(timeout=SSH_TIMEOUT_S)
            KnownHosts(self.known_hosts).verify(
                ssh.host, ssh.port, transport.get_remote_server_key()
            )
            transport.auth_publickey(ssh.user, pkey)
            channel = transport.open_session(timeout=SSH_TIMEOUT_S)
            channel.settimeout(timeout)
            channel.set_combine_stderr(True)
            channel.exec_command(command)
            chunks = []
            while True:
                data = channel.recv(65536)
                if not data:
                    break
                chunks.append(data)
            status = channel.recv_exit_status()
        except (paramiko.SSHException, OSError, EOFError, TunnelError) as exc:
            raise RemoteUnreachableError(f"{ssh.host}:{ssh.port}: {exc}") from exc
        finally:
            transport.close()
        return RemoteResult(status, b"".join(chunks).decode("utf-8", "replace"))


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
    worker.detail = detail
    return phase, False


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
    message and how to read its logs: waiting longer cannot help it. A host that reports
    ``draining`` (a spot interruption notice, see :mod:`oa_vm.drain`) marks the worker
    ``DRAINING``.

    Args:
        record: the pool.
        index: which worker.
        runner: runs remote commands (paramiko with the pool's known_hosts by default).
        commands: what to run on the host.
    """
    from oa_vm.connect import known_hosts_path, tunnel_for

    worker = record.workers[index]
    if worker.ssh is None:
        return _fail(worker, "ssh", "the worker has no SSH endpoint in its record")
    runner = runner or ParamikoRunner(known_hosts_path(record.name))
    commands = commands or RemoteCommands()
    try:
        boot = runner.run(worker.ssh, commands.cloud_init, COMMAND_TIMEOUT_S)
    except RemoteUnreachableError as exc:
        return _fail(worker, "ssh", str(exc))
    boot_state = cloud_init_state(boot.output)
    if boot_state == "error":
        return _fail(worker, "cloud-init failed", boot.output.strip()[-300:])
    if boot_state != "done":
        return _fail(worker, "cloud-init", f"cloud-init {boot_state}")
    try:
        report = parse_host_report(runner.run(worker.ssh, commands.host, COMMAND_TIMEOUT_S).output)
    except RemoteUnreachableError as exc:
        return _fail(worker, "cloud-init", str(exc))
    status = report.status
    if not status:
        return _fail(worker, "bootstrap", "the bootstrap has not reported yet")
    if status.get("state") == "failed":
        worker.state = WorkerState.LOST
        return _fail(worker, f"failed at {status.get('step', '?')}",
                     describe_failure(report, worker.ssh))
    from oa_vm.drain import mark_draining, notice_from_status

    notice = notice_from_status(status)
    if notice is not None:  # a spot interruption notice (spot_watch.sh): going away
        mark_draining(worker, notice)
        return "draining", False
    if status.get("state") != "done":
        return _fail(worker, f"bootstrap: {status.get('step', '?')}",
                     _with_log(status.get("message", ""), report))
    if not report.container.startswith("Up"):
        return _fail(worker, "container",
                     _with_log(f"container: {report.container or 'not running'}", report))

    from waa_client import ScoringClient, WaaClient, WaaError

    phase = "waa probe"
    tunnel = tunnel_for(record, worker)
    try:
        tunnel.start()
        timeouts = {"connect_timeout": PROBE_TIMEOUT_S, "read_timeout": PROBE_TIMEOUT_S}
        WaaClient(tunnel.local_waa_url, retries=0, **timeouts).probe()
        phase = "scoring probe"
        ScoringClient(tunnel.local_scoring_url, retries=0, **timeouts).probe()
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
    from oa_vm.durations import format_duration
    from oa_vm.errors import ProvisioningError

    runner = runner or ParamikoRunner(known_hosts)
    commands = commands or RemoteCommands()
    started = clock()
    deadline = started + timeout_s
    last_line = ""
    last_print = -HEARTBEAT_S
    while True:
        try:
            report = parse_host_report(runner.run(ssh, commands.host, COMMAND_TIMEOUT_S).output)
            phase = report.status.get("step", "starting")
            line = f"{phase}: {_with_log(report.status.get('message', 'booting'), report)}"
        except RemoteUnreachableError as exc:
            report, line = None, f"ssh: {exc}"
        if report is not None and report.status.get("state") == "failed":
            raise ProvisioningError(f"{name} {describe_failure(report, ssh)}")
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
            last_line, last_print = line, now
        if now >= deadline:
            raise ProvisioningError(
                f"{name} not done after {format_duration(timeout_s)} (last: {line}); "
                f"{logs_hint(ssh)}"
            )
        sleep(poll_s)
