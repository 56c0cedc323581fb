"""Readiness of a cloud worker, one step at a time, for ``pool-wait``.

The steps, in order (the phase names the furthest one reached):

1. ``ssh``: the host answers SSH with the pool's key (host key pinned on first contact);
2. ``cloud-init``: ``cloud-init status`` says ``done`` (``error`` is reported with its text);
3. ``container``: ``docker ps`` shows the WAA container up;
4. ``waa probe``: WAA's ``/probe`` answers through an SSH tunnel;
5. ``scoring probe``: the scoring server's ``/probe`` answers through the same tunnel;

then ``ready``. Each call makes one pass and returns quickly (every step has a timeout).

The remote commands are data (:class:`RemoteCommands`) and the SSH runner an interface
(:class:`RemoteRunner`), so the same code is tested against a local pool registered behind a
test SSH server, with commands that print what a real host would.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from oa_vm.state import PoolRecord, SshEndpoint, WorkerRecord

SSH_TIMEOUT_S = 10.0
COMMAND_TIMEOUT_S = 20.0
PROBE_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class RemoteCommands:
    """The shell commands run on a worker host to follow its boot."""

    cloud_init: str = "cloud-init status"
    container: str = "docker ps --filter name=^winarena$ --format '{{.Status}}'"


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
        from waa_client.known_hosts import KnownHosts
        from waa_client.tunnel import load_private_key

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


def worker_phase(
    record: PoolRecord,
    index: int,
    runner: RemoteRunner | None = None,
    commands: RemoteCommands | None = None,
) -> tuple[str, bool]:
    """One readiness pass over worker ``index``: ``(phase, ready)``.

    Args:
        record: the pool.
        index: which worker.
        runner: runs remote commands (paramiko with the pool's known_hosts by default).
        commands: what to run for the cloud-init and container steps.
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
        container = runner.run(worker.ssh, commands.container, COMMAND_TIMEOUT_S)
    except RemoteUnreachableError as exc:
        return _fail(worker, "cloud-init", str(exc))
    if container.status != 0 or not container.output.strip().startswith("Up"):
        return _fail(worker, "container", container.output.strip()[-200:] or "not running yet")

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
