"""SSH tunnels to workers: one local port pair per worker, host-key pinning, health and reconnect.

A worker's WAA server (5000) and scoring server (5051) are only reachable on the worker itself;
:class:`WorkerTunnel` forwards both to free ports on 127.0.0.1 over one SSH connection made with
the pool's own key, and :class:`PoolTunnels` keeps one per worker alive for a sweep.

Built on ``sshtunnel`` (forwarding servers) and ``paramiko`` (the SSH transport). sshtunnel 0.5
works with paramiko 5 (it no longer touches the removed DSS key class), but four of its
behaviours matter here and are worked around in :class:`_Forwarder`, the only subclass:

1. It connects the TCP socket with no timeout (paramiko's ``Transport((host, port))``), so an
   unreachable worker can hang a caller for minutes: we connect the socket ourselves, with one.
2. It accepts whatever host key a server offers unless the key is known in advance; there is no
   trust-on-first-use: we verify the key against the pool's known_hosts before authenticating.
3. It logs and swallows the reason a connection failed (refused, auth, bad host key) and raises a
   generic "Could not establish session": we raise our own errors from the connect step.
4. Its forwarding threads are daemons nobody joins, so threads outlive ``stop()``: we make them
   non-daemon (the socket server then joins them on close) and join the accept loops ourselves.

It is also told not to read ``~/.ssh/config``, ``~/.ssh/id_*`` or an SSH agent: a pool
authenticates with its own key only.
"""

from __future__ import annotations

import logging
import os
import socket
import stat
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Protocol, Self

import paramiko
import sshtunnel

from waa_client.errors import (
    KeyFileError,
    SshAuthenticationError,
    SshUnreachableError,
    TunnelError,
    TunnelNotStartedError,
)
from waa_client.known_hosts import KnownHosts, host_entry

log = logging.getLogger(__name__)
# sshtunnel logs every open/close at INFO and warns "Server is not started" on each stop of a
# dropped connection; only its errors are worth a user's attention by default.
_sshtunnel_log = logging.getLogger(f"{__name__}.sshtunnel")
_sshtunnel_log.setLevel(logging.ERROR)

LOCALHOST = "127.0.0.1"
_SERVER_THREAD_JOIN = 5.0
_RECONNECT_BACKOFF_MIN = 0.5


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


def ssh_command(
    target: TunnelTarget,
    local_waa_port: int,
    local_scoring_port: int,
    known_hosts: Path | None = None,
) -> list[str]:
    """The ``ssh`` command that opens the same tunnel as :class:`WorkerTunnel` (pure).

    Args:
        target: The worker.
        local_waa_port: Local port for the WAA server.
        local_scoring_port: Local port for the scoring server.
        known_hosts: The pool's known_hosts file; when given, ssh uses it and refuses a
            changed host key.

    Returns:
        The argument list, e.g. for ``oa-vm pool-tunnel``'s table or ``subprocess``.
    """
    command = [
        "ssh", "-N",
        "-L", f"{LOCALHOST}:{local_waa_port}:{target.remote_host}:{target.remote_waa_port}",
        "-L", f"{LOCALHOST}:{local_scoring_port}:{target.remote_host}:"
              f"{target.remote_scoring_port}",
        "-i", str(target.key_path),
        "-p", str(target.ssh_port),
        "-o", "IdentitiesOnly=yes",
        "-o", "ExitOnForwardFailure=yes",
        "-o", "ServerAliveInterval=15",
    ]
    if known_hosts is not None:
        command += ["-o", f"UserKnownHostsFile={known_hosts}",
                    "-o", "StrictHostKeyChecking=accept-new"]
    command.append(f"{target.ssh_user}@{target.ssh_host}")
    return command


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


class _Forwarder(sshtunnel.SSHTunnelForwarder):  # type: ignore[misc]  # sshtunnel is untyped
    """sshtunnel with the fixes listed in the module docstring (and nothing else)."""

    # (4) Non-daemon handler threads are tracked by socketserver and joined on server_close().
    daemon_forward_servers = False

    def __init__(
        self,
        target: TunnelTarget,
        pkey: paramiko.PKey,
        known_hosts: KnownHosts,
        *,
        local_ports: tuple[int, int],
        keepalive: float,
        connect_timeout: float,
    ) -> None:
        self._target = target
        self._pkey = pkey
        self._known_hosts = known_hosts
        self._connect_timeout = connect_timeout
        super().__init__(
            (target.ssh_host, target.ssh_port),
            ssh_username=target.ssh_user,
            ssh_pkey=pkey,
            ssh_config_file=None,
            allow_agent=False,
            host_pkey_directories=[],
            local_bind_addresses=[(LOCALHOST, local_ports[0]), (LOCALHOST, local_ports[1])],
            remote_bind_addresses=[
                (target.remote_host, target.remote_waa_port),
                (target.remote_host, target.remote_scoring_port),
            ],
            set_keepalive=keepalive,
            logger=_sshtunnel_log,
        )

    @property
    def transport(self) -> paramiko.Transport | None:
        return self.__dict__.get("_transport")

    def _get_transport(self) -> paramiko.Transport:
        # (1) Connect with a timeout; map the failure to an infrastructure error.
        address = f"{self.ssh_host}:{self.ssh_port}"
        try:
            sock = socket.create_connection(
                (self.ssh_host, self.ssh_port), timeout=self._connect_timeout
            )
        except TimeoutError as e:
            raise SshUnreachableError(
                f"SSH to worker {self._target.name} at {address}: no connection within "
                f"{self._connect_timeout:g}s; check the worker is running and port "
                f"{self.ssh_port} is open to this machine",
                url=f"ssh://{address}",
            ) from e
        except OSError as e:
            raise SshUnreachableError(
                f"SSH to worker {self._target.name} at {address}: {e.strerror or e}; check the "
                f"worker is running and port {self.ssh_port} is open to this machine",
                url=f"ssh://{address}",
            ) from e
        transport = paramiko.Transport(sock)
        transport.set_keepalive(int(max(1, self.set_keepalive)))
        transport.banner_timeout = self._connect_timeout
        transport.handshake_timeout = self._connect_timeout
        transport.auth_timeout = self._connect_timeout
        return transport

    def _connect_to_gateway(self) -> None:
        # (2) + (3): verify the host key ourselves, raise precise errors.
        address = f"{self.ssh_host}:{self.ssh_port}"
        transport = self._get_transport()
        self._transport = transport
        try:
            try:
                # start_client returns quietly when its timeout passes mid-handshake; asking
                # for the server key then raises, so both sit under one handler.
                transport.start_client(timeout=self._connect_timeout)
                server_key = transport.get_remote_server_key()
            except (paramiko.SSHException, OSError, EOFError) as e:
                raise SshUnreachableError(
                    f"SSH to worker {self._target.name} at {address}: no SSH handshake within "
                    f"{self._connect_timeout:g}s ({e or type(e).__name__}); the port may not be "
                    "an SSH server, or the worker is still starting",
                    url=f"ssh://{address}",
                ) from e
            first = self._known_hosts.verify(
                self.ssh_host, self.ssh_port, server_key, worker=self._target.name
            )
            if first:
                log.info("remembered the host key of %s (%s) in %s", self._target.name,
                         host_entry(self.ssh_host, self.ssh_port), self._known_hosts.path)
            try:
                transport.auth_publickey(self.ssh_username, self._pkey)
            except paramiko.AuthenticationException as e:
                raise SshAuthenticationError(
                    f"SSH to worker {self._target.name} at {address}: user "
                    f"{self.ssh_username!r} refused with key {self._target.key_path}; check the "
                    "user name and that the worker holds the pool's public key",
                    url=f"ssh://{address}",
                ) from e
            except (paramiko.SSHException, OSError, EOFError) as e:
                raise SshUnreachableError(
                    f"SSH to worker {self._target.name} at {address}: connection lost while "
                    f"logging in ({e}); retry",
                    url=f"ssh://{address}",
                ) from e
        except BaseException:
            _close_transport(transport)
            raise


class LocalForwards:
    """What both tunnel backends share: the two local ports, their URLs, and ``with``.

    A backend sets ``target`` and ``_ports`` (``(0, 0)`` until its first start) and provides
    ``start()`` and ``stop()``.
    """

    target: TunnelTarget
    _ports: tuple[int, int]

    def start(self) -> None:
        """Open the tunnel (the backend's own)."""
        raise NotImplementedError

    def stop(self) -> None:
        """Close the tunnel (the backend's own)."""
        raise NotImplementedError

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


class WorkerTunnel(LocalForwards):
    """Forwards one worker's WAA and scoring ports to free local ports on 127.0.0.1.

    Thread-safe: ``ensure()`` may be called from a health loop while clients use the URLs.

    Args:
        target: The worker.
        known_hosts: The pool's known_hosts file (host key remembered on first contact; a
            changed key is refused with :class:`~waa_client.errors.HostKeyMismatchError`).
        keepalive: Seconds between SSH keepalives (so dead connections are noticed).
        connect_timeout: Seconds for the TCP connect, SSH handshake and login, and each
            health-check connect.
        reconnect_attempts: Attempts ``ensure()`` makes before giving up.
        backoff_max: Cap of the wait between reconnect attempts, in seconds.
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
        self.target = target
        self.known_hosts = KnownHosts(known_hosts)
        self.keepalive = keepalive
        self.connect_timeout = connect_timeout
        self.reconnect_attempts = max(1, reconnect_attempts)
        self.backoff_max = backoff_max
        self._forwarder: _Forwarder | None = None
        self._ports: tuple[int, int] = (0, 0)
        self._lock = threading.RLock()
        self.reconnects = 0

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> None:
        """Connect and start forwarding (reusing the previous local ports, when free).

        Raises:
            KeyFileError: The pool's key cannot be used.
            SshUnreachableError: The SSH port cannot be reached or the handshake failed.
            HostKeyMismatchError: The worker's host key changed.
            SshAuthenticationError: The key was refused.
        """
        with self._lock:
            if self._forwarder is not None:
                return
            pkey = load_private_key(self.target.key_path)
            try:
                self._forwarder = self._open(pkey, self._ports)
            except _PortsTaken:
                log.warning("local ports %s of %s are taken; using new ones",
                            self._ports, self.target.name)
                self._forwarder = self._open(pkey, (0, 0))
            ports = self._forwarder.local_bind_ports
            self._ports = (int(ports[0]), int(ports[1]))

    def _open(self, pkey: paramiko.PKey, ports: tuple[int, int]) -> _Forwarder:
        forwarder = _Forwarder(
            self.target, pkey, self.known_hosts, local_ports=ports,
            keepalive=self.keepalive, connect_timeout=self.connect_timeout,
        )
        try:
            forwarder.start()
        except TunnelError:
            _shutdown(forwarder)
            raise
        except sshtunnel.BaseSSHTunnelForwarderError as e:
            _shutdown(forwarder)
            if ports != (0, 0) and "might be in use" in str(e):
                raise _PortsTaken from e
            raise SshUnreachableError(
                f"SSH tunnel to worker {self.target.name}: {e}; retry, or check the worker",
                url=f"ssh://{host_entry(self.target.ssh_host, self.target.ssh_port)}",
            ) from e
        if len(forwarder.local_bind_ports) != 2:
            # sshtunnel only logs a local port it could not bind (and forwards the other):
            # treat it as taken, so start() falls back to new ports instead of failing later.
            _shutdown(forwarder)
            if ports != (0, 0):
                raise _PortsTaken
            raise SshUnreachableError(
                f"SSH tunnel to worker {self.target.name}: a local port could not be bound; retry",
                url=f"ssh://{host_entry(self.target.ssh_host, self.target.ssh_port)}",
            )
        return forwarder

    def stop(self) -> None:
        """Close the SSH connection and the local ports; join every thread the tunnel started.

        Idempotent. The local port numbers are kept, so a later ``start()`` reuses them.
        """
        with self._lock:
            forwarder, self._forwarder = self._forwarder, None
            if forwarder is not None:
                _shutdown(forwarder)

    # -- health -----------------------------------------------------------------------------------

    def is_active(self) -> bool:
        """True while the SSH connection is up (says nothing about the servers behind it)."""
        forwarder = self._forwarder
        transport = forwarder.transport if forwarder is not None else None
        return transport is not None and transport.is_active()

    def is_healthy(self) -> bool:
        """True when the SSH connection is up and both forwards reach a listening server.

        Checks the local listeners with a TCP connect and the far side by opening a forwarding
        channel to each remote port, each within ``connect_timeout``.
        """
        forwarder = self._forwarder
        transport = forwarder.transport if forwarder is not None else None
        if transport is None or not transport.is_active():
            return False
        remote = (self.target.remote_waa_port, self.target.remote_scoring_port)
        for local_port, remote_port in zip(self._ports, remote, strict=True):
            try:
                with socket.create_connection((LOCALHOST, local_port),
                                              timeout=self.connect_timeout):
                    pass
                channel = transport.open_channel(
                    "direct-tcpip",
                    (self.target.remote_host, remote_port),
                    (LOCALHOST, 0),
                    timeout=self.connect_timeout,
                )
                channel.close()
            except (OSError, paramiko.SSHException, EOFError):
                return False
        return True

    def ensure(self) -> None:
        """Make sure the tunnel is up, reconnecting after a drop (bounded attempts and backoff).

        The local ports are kept when they are still free, so URLs handed out stay valid.
        Returns once the SSH connection is up again; whether the servers behind it answer is
        the clients' business.

        Raises:
            TunnelError: The last reconnect error, after ``reconnect_attempts`` attempts.
                A changed host key or a bad key file is raised at once, never retried.
        """
        with self._lock:
            if self.is_healthy():
                return
            last: TunnelError = SshUnreachableError(f"tunnel to worker {self.target.name} is down")
            for attempt in range(self.reconnect_attempts):
                if attempt:
                    time.sleep(min(self.backoff_max, _RECONNECT_BACKOFF_MIN * 2 ** (attempt - 1)))
                self.stop()
                try:
                    self.start()
                except (SshUnreachableError, SshAuthenticationError) as e:
                    # Auth can fail transiently while a recreated worker is still booting.
                    last = e
                    log.info("reconnect %d to %s failed: %s", attempt + 1, self.target.name, e)
                    continue
                self.reconnects += 1
                log.info("tunnel to %s reconnected on ports %s", self.target.name, self._ports)
                return
            raise last


class _PortsTaken(Exception):
    """The remembered local ports could not be bound again."""


def _shutdown(forwarder: _Forwarder) -> None:
    """Stop a forwarder and wait for its accept loops to finish."""
    servers = list(forwarder._server_list)
    names = {f"Srv-{srv.local_port}" for srv in servers}
    try:
        # force: close the SSH transport first, so forwarding threads blocked on a channel wake
        # up and socketserver can join them.
        forwarder.stop(force=True)
    except Exception:  # closing must not raise on an already-broken connection
        log.debug("error while stopping tunnel", exc_info=True)
        for srv in servers:
            srv.server_close()
    transport = forwarder.transport
    if transport is not None:
        _close_transport(transport)
    for thread in threading.enumerate():
        if thread.name in names and thread is not threading.current_thread():
            thread.join(_SERVER_THREAD_JOIN)


def _close_transport(transport: paramiko.Transport) -> None:
    """Close a transport and wait for its thread, so none outlives the tunnel."""
    transport.close()
    if transport.is_alive() and transport is not threading.current_thread():
        transport.join(_SERVER_THREAD_JOIN)


class ForwardingTunnel(Protocol):
    """What :class:`PoolTunnels` and its users need of one worker's tunnel, whichever backend
    forwards it (:class:`WorkerTunnel` with paramiko, or
    :class:`waa_client.openssh.OpenSshTunnel` with OpenSSH)."""

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


BACKENDS = ("openssh", "paramiko")


def default_backend() -> str:
    """``openssh`` when an ``ssh`` client is installed, else ``paramiko``.

    ``OA_VM_SSH_BACKEND=paramiko`` (or ``openssh``) chooses explicitly.
    """
    chosen = os.environ.get("OA_VM_SSH_BACKEND", "").strip().lower()
    if chosen in BACKENDS:
        return chosen
    from waa_client.openssh import ssh_binary

    return "openssh" if ssh_binary() is not None else "paramiko"


def make_tunnel(
    target: TunnelTarget, known_hosts: Path, *, backend: str | None = None, **options: float
) -> ForwardingTunnel:
    """An unstarted tunnel to ``target`` with ``backend`` (default: :func:`default_backend`).

    ``options`` are the tunnels' keyword arguments (``keepalive``, ``connect_timeout``,
    ``reconnect_attempts``, ``backoff_max``).
    """
    chosen = backend or default_backend()
    if chosen == "openssh":
        from waa_client.openssh import OpenSshTunnel

        return OpenSshTunnel(target, known_hosts, **options)  # type: ignore[arg-type]
    if chosen != "paramiko":
        raise ValueError(f"unknown SSH backend {chosen!r}; use one of {', '.join(BACKENDS)}")
    return WorkerTunnel(target, known_hosts, **options)  # type: ignore[arg-type]


class PoolTunnels:
    """One :class:`WorkerTunnel` per worker, kept alive by a background health loop.

    Use as a context manager: entering opens every tunnel (in parallel) and starts the loop;
    leaving stops the loop and every tunnel, leaving no thread and no listening port behind.

    Args:
        targets: One per worker; names must be unique.
        known_hosts: The pool's known_hosts file.
        keepalive: Seconds between SSH keepalives.
        connect_timeout: Seconds for each connect.
        check_interval: Seconds between health checks of each tunnel.
        backoff_max: Cap of the wait before retrying a worker whose reconnect failed.
        allow_partial: When False (default), entering fails if any tunnel cannot be opened;
            when True, failed ones are retried by the loop and listed in :attr:`errors`.
        backend: ``openssh`` (``ssh`` child processes, one connection per host) or
            ``paramiko`` (forwarding in this process); default :func:`default_backend`.
    """

    def __init__(
        self,
        targets: Iterable[TunnelTarget],
        known_hosts: Path,
        *,
        keepalive: float = 15.0,
        connect_timeout: float = 10.0,
        check_interval: float = 5.0,
        backoff_max: float = 60.0,
        allow_partial: bool = False,
        backend: str | None = None,
    ) -> None:
        self.targets = list(targets)
        self.backend = backend or default_backend()
        names = [t.name for t in self.targets]
        if len(set(names)) != len(names):
            raise ValueError(f"worker names must be unique, got {names}")
        self.check_interval = check_interval
        self.backoff_max = backoff_max
        self.allow_partial = allow_partial
        self.tunnels: dict[str, ForwardingTunnel] = {
            t.name: make_tunnel(
                t, known_hosts, backend=self.backend, keepalive=keepalive,
                connect_timeout=connect_timeout, reconnect_attempts=1, backoff_max=backoff_max,
            )
            for t in self.targets
        }
        self.errors: dict[str, TunnelError] = {}
        self._stop = threading.Event()
        self._loop: threading.Thread | None = None

    def retry_delay(self, failures: int) -> float:
        """Seconds before the health loop tries a worker again after ``failures`` failed
        reconnects in a row: doubling from the check interval, capped at ``backoff_max``."""
        return float(min(self.backoff_max, self.check_interval * 2 ** failures))

    def __getitem__(self, name: str) -> ForwardingTunnel:
        return self.tunnels[name]

    def __iter__(self) -> Iterator[ForwardingTunnel]:
        return iter(self.tunnels.values())

    def urls(self) -> dict[str, tuple[str, str]]:
        """Worker name -> ``(local_waa_url, local_scoring_url)`` for every started tunnel."""
        return {
            name: (t.local_waa_url, t.local_scoring_url)
            for name, t in self.tunnels.items()
            if t.local_ports != (0, 0)
        }

    def start(self) -> None:
        """Open every tunnel and start the health loop.

        Raises:
            TunnelError: A tunnel failed and ``allow_partial`` is False (all are closed again).
        """
        def open_one(tunnel: ForwardingTunnel) -> tuple[str, TunnelError | None]:
            try:
                tunnel.start()
            except TunnelError as e:
                return tunnel.target.name, e
            return tunnel.target.name, None

        workers = max(1, min(8, len(self.tunnels)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tunnel-open") as pool:
            outcomes = list(pool.map(open_one, self.tunnels.values()))
        self.errors = {name: e for name, e in outcomes if e is not None}
        if self.errors and not self.allow_partial:
            self.stop()
            raise next(iter(self.errors.values()))
        self._stop.clear()
        self._loop = threading.Thread(target=self._run, name="pool-tunnels-health", daemon=True)
        self._loop.start()

    def stop(self) -> None:
        """Stop the health loop and every tunnel. Idempotent."""
        self._stop.set()
        if self._loop is not None:
            self._loop.join()
            self._loop = None
        for tunnel in self.tunnels.values():
            tunnel.stop()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _run(self) -> None:
        """Check each tunnel every ``check_interval``; back off per worker after a failure."""
        failures: dict[str, int] = {}
        next_try: dict[str, float] = {}
        while not self._stop.wait(self.check_interval):
            for name, tunnel in self.tunnels.items():
                if self._stop.is_set():
                    return
                if time.monotonic() < next_try.get(name, 0.0):
                    continue
                try:
                    tunnel.ensure()
                except TunnelError as e:
                    failures[name] = failures.get(name, 0) + 1
                    delay = self.retry_delay(failures[name])
                    next_try[name] = time.monotonic() + delay
                    self.errors[name] = e
                    log.warning("tunnel to %s still down (retry in %.0fs): %s", name, delay, e)
                except Exception:  # the loop must outlive any one worker's bug
                    log.exception("health check of %s failed unexpectedly", name)
                else:
                    failures.pop(name, None)
                    next_try.pop(name, None)
                    self.errors.pop(name, None)
