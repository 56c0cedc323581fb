"""The paramiko backend: one SSH connection per worker in this process (:class:`WorkerTunnel`).

A worker's WAA server (5000) and scoring server (5051) are only reachable on the worker itself;
:class:`WorkerTunnel` forwards both to free ports on 127.0.0.1 over one SSH connection made with
the pool's own key. It is the fallback when no ``ssh`` client is installed
(:mod:`waa_client.ssh.openssh_tunnel` is the default).

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
import socket
import threading

import paramiko
import sshtunnel

from waa_client.errors import TunnelError
from waa_client.ssh.base import LOCALHOST, LocalForwards, TunnelTarget, load_private_key
from waa_client.ssh.failures import tunnel_error
from waa_client.ssh.known_hosts import KnownHosts
from waa_client.ssh.paramiko_connect import close_transport, connect

log = logging.getLogger("waa_client.ssh")
# sshtunnel logs every open/close at INFO and warns "Server is not started" on each stop of a
# dropped connection; only its errors are worth a user's attention by default.
_sshtunnel_log = logging.getLogger("waa_client.ssh.sshtunnel")
_sshtunnel_log.setLevel(logging.ERROR)

_SERVER_THREAD_JOIN = 5.0


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

    def _connect_to_gateway(self) -> None:
        # (1) + (2) + (3): the one connect sequence (a timeout on every step, the host key
        # checked before the login, precise errors), not sshtunnel's.
        self._transport = connect(
            self.ssh_host, self.ssh_port, user=self.ssh_username, pkey=self._pkey,
            key_path=self._target.key_path, known_hosts=self._known_hosts,
            connect_timeout=self._connect_timeout, worker=self._target.name,
            keepalive=self.set_keepalive,
        )



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

    _forwarder: _Forwarder | None = None

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
            raise tunnel_error(str(e), worker=self.target.name, host=self.target.ssh_host,
                               port=self.target.ssh_port,
                               advice="retry, or check the worker") from e
        if len(forwarder.local_bind_ports) != 2:
            # sshtunnel only logs a local port it could not bind (and forwards the other):
            # treat it as taken, so start() falls back to new ports instead of failing later.
            _shutdown(forwarder)
            if ports != (0, 0):
                raise _PortsTaken
            raise tunnel_error("a local port could not be bound", worker=self.target.name,
                               host=self.target.ssh_host, port=self.target.ssh_port)
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
        close_transport(transport)
    for thread in threading.enumerate():
        if thread.name in names and thread is not threading.current_thread():
            thread.join(_SERVER_THREAD_JOIN)
