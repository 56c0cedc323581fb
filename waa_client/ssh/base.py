"""What both SSH tunnel backends share: the worker to reach, the pool's key, the local ports and
their URLs, reconnecting, and the interface callers use (:class:`ForwardingTunnel`)."""

from __future__ import annotations

import logging
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Self

import paramiko

from waa_client import retry
from waa_client.addresses import host_port
from waa_client.errors import (
    KeyFileError,
    SshAuthenticationError,
    SshUnreachableError,
    TunnelNotStartedError,
)
from waa_client.ssh.known_hosts import KnownHosts

log = logging.getLogger("waa_client.ssh")

LOCALHOST = "127.0.0.1"


@dataclass(frozen=True)
class TunnelTarget:
    """Where one worker's SSH server is and what to forward from it.

    Attributes:
        name: The worker's name (used in messages).
        ssh_host: Address of the worker's SSH server.
        ssh_port: Its port.
        ssh_user: Login user (``ubuntu`` on AWS, ``azureuser`` on Azure).
        key_path: The pool's private key.
        remote_host: Where, seen from the worker, the servers listen.
        remote_waa_port: The WAA server's port there.
        remote_scoring_port: The scoring server's port there.
        base_path: Path prefix both servers want before every endpoint (a local worker's
            secret, ``/<secret>``); the local URLs carry it.
    """

    name: str
    ssh_host: str
    ssh_port: int
    ssh_user: str
    key_path: Path
    remote_host: str = "127.0.0.1"
    remote_waa_port: int = 5000
    remote_scoring_port: int = 5051
    base_path: str = ""

    @property
    def endpoint(self) -> str:
        """``user@host:port``: the SSH server the tunnel goes through. Workers behind one
        endpoint share its path: it goes down and comes back for all of them at once."""
        return f"{self.ssh_user}@{host_port(self.ssh_host, self.ssh_port)}"


def forward_specs(target: TunnelTarget, local_waa_port: int, local_scoring_port: int
                  ) -> list[str]:
    """The two ``-L`` forwards of a worker's tunnel (WAA, then scoring), on 127.0.0.1 (pure)."""
    return [f"{LOCALHOST}:{local_waa_port}:{target.remote_host}:{target.remote_waa_port}",
            f"{LOCALHOST}:{local_scoring_port}:{target.remote_host}:{target.remote_scoring_port}"]


def endpoint_options(key_path: Path, port: int, known_hosts: Path, *,
                     connect_timeout: float = 10.0, keepalive: float = 15.0) -> list[str]:
    """The options every ``ssh`` to a pool's SSH endpoint gets (pure): the pool's key only (no
    agent, no ``~/.ssh/config``), never a prompt, host keys in the pool's own ``known_hosts``
    (first contact remembered, a changed key refused; the user's own files never read), and
    every step bounded. The tunnels' ssh processes and :func:`ssh_command` both use them."""
    return [
        "-F", "/dev/null",  # no ~/.ssh/config: a pool connects with its own settings only
        "-i", str(key_path),
        "-p", str(port),
        "-o", "IdentitiesOnly=yes", "-o", "IdentityAgent=none", "-o", "BatchMode=yes",
        "-o", f"UserKnownHostsFile={known_hosts}",
        "-o", "GlobalKnownHostsFile=/dev/null",
        "-o", "StrictHostKeyChecking=accept-new", "-o", "UpdateHostKeys=no",
        "-o", f"ConnectTimeout={max(1, round(connect_timeout))}",
        "-o", f"ServerAliveInterval={max(1, round(keepalive))}",
        "-o", "ServerAliveCountMax=3", "-o", "ExitOnForwardFailure=yes",
        "-o", "LogLevel=ERROR",
    ]


def ssh_command(
    target: TunnelTarget,
    local_waa_port: int,
    local_scoring_port: int,
    known_hosts: Path,
    *,
    connect_timeout: float = 10.0,
    keepalive: float = 15.0,
) -> list[str]:
    """The ``ssh`` command that opens the same tunnel as the tunnels do (pure): their forwards
    and their options (:func:`endpoint_options`), so that it works pasted in a terminal.

    Args:
        target: The worker.
        local_waa_port: Local port for the WAA server.
        local_scoring_port: Local port for the scoring server.
        known_hosts: The pool's known_hosts file (the tunnels' own).
        connect_timeout: Seconds for each step of the connection, as the tunnel's.
        keepalive: Seconds between keepalives, as the tunnel's.

    Returns:
        The argument list, e.g. for ``oa-vm pool-tunnel``'s table or ``subprocess``.
    """
    command = ["ssh", "-N"]
    for spec in forward_specs(target, local_waa_port, local_scoring_port):
        command += ["-L", spec]
    return [*command, *endpoint_options(target.key_path, target.ssh_port, known_hosts,
                                        connect_timeout=connect_timeout, keepalive=keepalive),
            f"{target.ssh_user}@{target.ssh_host}"]


def load_private_key(path: Path) -> paramiko.PKey:
    """Read a pool's private key, refusing what ``ssh`` would refuse.

    Raises:
        KeyFileError: Missing, unreadable, readable by group/others, encrypted, or not a key.
    """
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError as e:
        raise KeyFileError(
            f"SSH key {path} not found; each pool's key is created with the pool, check the "
            "pool's folder (OA_VM_HOME) or recreate the pool",
            path=path,
        ) from e
    except OSError as e:
        raise KeyFileError(f"cannot read SSH key {path}: {e.strerror or e}", path=path) from e
    if not stat.S_ISREG(mode):
        raise KeyFileError(f"SSH key {path} is not a regular file; give the key file", path=path)
    if mode & 0o077:
        raise KeyFileError(
            f"SSH key {path} has permissions {stat.S_IMODE(mode):04o}, readable by others "
            f"(ssh refuses such keys too); fix with: chmod 600 {path}",
            path=path,
        )
    encrypted = KeyFileError(
        f"SSH key {path} is passphrase-protected; pool keys must be unencrypted", path=path
    )
    try:
        return paramiko.PKey.from_path(str(path))
    except paramiko.PasswordRequiredException as e:
        raise encrypted from e
    except TypeError as e:
        # paramiko lets cryptography's "password was not provided" TypeError through for
        # encrypted OpenSSH-format keys.
        if "password" in str(e).lower():
            raise encrypted from e
        raise KeyFileError(f"SSH key {path} cannot be read as a key ({e})", path=path) from e
    except PermissionError as e:
        raise KeyFileError(
            f"cannot read SSH key {path} (permission denied); run as its owner",
            path=path,
        ) from e
    except (OSError, paramiko.SSHException, ValueError) as e:
        raise KeyFileError(
            f"SSH key {path} is not a private key that can be used ({e}); give an OpenSSH "
            "ed25519, ECDSA or RSA private key",
            path=path,
        ) from e



class LocalForwards:
    """What both tunnel backends share: the two local ports, their URLs, and ``with``.

    The arguments, the local ports (``(0, 0)`` until the first start), the lock and
    reconnecting (``ensure()``) are shared; a backend provides ``start()``, ``stop()`` and
    ``is_healthy()``.
    """

    def __init__(
        self,
        target: TunnelTarget,
        known_hosts: Path,
        *,
        keepalive: float = 15.0,
        connect_timeout: float = 10.0,
        reconnect_attempts: int = 5,
        backoff_max: float = 8.0,
    ) -> None:
        """The arguments every backend takes (see :class:`waa_client.ssh.WorkerTunnel`)."""
        self.target = target
        self.known_hosts = KnownHosts(known_hosts)
        self.keepalive = keepalive
        self.connect_timeout = connect_timeout
        self.reconnect_attempts = max(1, reconnect_attempts)
        self.backoff_max = backoff_max
        self._ports: tuple[int, int] = (0, 0)
        self._lock = threading.RLock()
        self.reconnects = 0

    def command(self) -> list[str]:
        """The ``ssh`` command that opens this tunnel's forwards on its local ports, with the
        options its own connection uses (:func:`ssh_command`)."""
        return ssh_command(self.target, *self._ports, self.known_hosts.path,
                           connect_timeout=self.connect_timeout, keepalive=self.keepalive)

    def start(self) -> None:
        """Open the tunnel (the backend's own)."""
        raise NotImplementedError

    def stop(self) -> None:
        """Close the tunnel (the backend's own)."""
        raise NotImplementedError

    def is_healthy(self) -> bool:
        """Up and forwarding (the backend's own check)."""
        raise NotImplementedError

    def ensure(self) -> None:
        """Make sure the tunnel is up, reconnecting after a drop (``reconnect_attempts`` tries
        under the retry policy, :mod:`waa_client.retry`).

        The local ports are kept when they are still free, so URLs handed out stay valid.
        Returns once the SSH connection is up again; whether the servers behind it answer is
        the clients' business.

        Raises:
            TunnelError: The last reconnect error once the attempts are spent (a changed host
                key or a bad key file at once, never retried). An authentication failure is
                retried: it happens while a recreated worker is still booting.
        """
        with self._lock:
            if self.is_healthy():
                return

            def reconnect() -> None:
                self.stop()
                self.start()

            retry.call(
                reconnect, attempts=self.reconnect_attempts, backoff_max=self.backoff_max,
                retryable=lambda e: isinstance(e, SshUnreachableError | SshAuthenticationError),
                on_retry=lambda n, e: log.info("reconnect %d to %s failed: %s", n,
                                               self.target.name, e),
            )
            self.reconnects += 1
            log.info("tunnel to %s reconnected on ports %s", self.target.name, self._ports)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def local_ports(self) -> tuple[int, int]:
        """``(waa_port, scoring_port)`` on 127.0.0.1 (``(0, 0)`` before the first start)."""
        return self._ports

    @property
    def local_waa_port(self) -> int:
        """Local port forwarded to the WAA server (0 before the first start)."""
        return self._ports[0]

    @property
    def local_scoring_port(self) -> int:
        """Local port forwarded to the scoring server (0 before the first start)."""
        return self._ports[1]

    @property
    def local_waa_url(self) -> str:
        """``http://127.0.0.1:<port>[base_path]`` reaching the worker's WAA server."""
        return self._url(self._ports[0])

    @property
    def local_scoring_url(self) -> str:
        """``http://127.0.0.1:<port>[base_path]`` reaching the worker's scoring server."""
        return self._url(self._ports[1])

    def _url(self, port: int) -> str:
        if port == 0:
            raise TunnelNotStartedError(
                f"tunnel to worker {self.target.name} was never started; call start() first"
            )
        return f"http://{LOCALHOST}:{port}{self.target.base_path}"



class ForwardingTunnel(Protocol):
    """What :class:`PoolTunnels` and its users need of one worker's tunnel, whichever backend
    forwards it (:class:`WorkerTunnel` with paramiko, or
    :class:`waa_client.ssh.OpenSshTunnel` with OpenSSH)."""

    target: TunnelTarget
    reconnects: int

    def start(self) -> None:
        """Connect and forward."""
        ...

    def stop(self) -> None:
        """Close; idempotent."""
        ...

    def ensure(self) -> None:
        """Reconnect if down."""
        ...

    def is_healthy(self) -> bool:
        """Up and forwarding."""
        ...

    def command(self) -> list[str]:
        """The equivalent ``ssh`` command (:func:`ssh_command`)."""
        ...

    @property
    def local_ports(self) -> tuple[int, int]:
        """``(waa_port, scoring_port)`` on 127.0.0.1."""
        ...

    @property
    def local_waa_port(self) -> int:
        """Local WAA port."""
        ...

    @property
    def local_scoring_port(self) -> int:
        """Local scoring port."""
        ...

    @property
    def local_waa_url(self) -> str:
        """Local WAA URL."""
        ...

    @property
    def local_scoring_url(self) -> str:
        """Local scoring URL."""
        ...
