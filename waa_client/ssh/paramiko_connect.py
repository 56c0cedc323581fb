"""The one paramiko connect sequence, for the paramiko tunnel backend and the SSH command runner.

Every step has a timeout (``connect_timeout``): the TCP connect (paramiko's own connect has
none), the SSH banner, the handshake and the login. The host key is checked against the pool's
known_hosts before the login (trust on first use, then a changed key is refused), and every
failure is mapped by :mod:`.failures`, so a command and a tunnel to the same worker fail with
the same words. Only the pool's key is offered: no agent, no ``~/.ssh`` key.
"""

from __future__ import annotations

import logging
import socket
import threading
from pathlib import Path

import paramiko

from waa_client.ssh.failures import connect_error, handshake_error, host_entry, login_error
from waa_client.ssh.known_hosts import KnownHosts

log = logging.getLogger("waa_client.ssh")
TRANSPORT_LOG = __name__
"""The logger of our transports' own threads. paramiko's thread logs a handshake it lost (a host
that accepts and never speaks: frozen, rebooting, a path dropping packets) at ERROR with its
traceback, on top of the error :func:`connect` raises in one line; the CLIs print ERROR lines,
so by default only this logger's CRITICAL lines are shown (lower its level to see the rest)."""
logging.getLogger(TRANSPORT_LOG).setLevel(logging.CRITICAL)

_THREAD_JOIN_S = 5.0


def connect(host: str, port: int, *, user: str, pkey: paramiko.PKey, key_path: Path | str,
            known_hosts: KnownHosts, connect_timeout: float, worker: str = "",
            keepalive: float | None = None) -> paramiko.Transport:
    """A transport to ``host:port`` logged in as ``user`` with ``pkey``.

    Args:
        key_path: The key's file, named in a refused login's message.
        worker: The worker's name, for messages (none when empty).
        keepalive: Seconds between keepalive packets (None: none).

    Raises:
        SshUnreachableError: The host cannot be reached, or the handshake or login was lost.
        HostKeyMismatchError: The host's key changed.
        SshAuthenticationError: The key was refused.

    On any failure the transport is closed (and its thread joined) before the error is raised.
    """
    try:
        sock = socket.create_connection((host, port), timeout=connect_timeout)
    except OSError as exc:
        raise connect_error(exc, worker=worker, host=host, port=port,
                            connect_timeout=connect_timeout) from exc
    transport = paramiko.Transport(sock)
    transport.set_log_channel(TRANSPORT_LOG)
    if keepalive is not None:
        transport.set_keepalive(int(max(1, keepalive)))
    transport.banner_timeout = connect_timeout
    transport.handshake_timeout = connect_timeout
    transport.auth_timeout = connect_timeout
    try:
        try:
            # start_client returns quietly when its timeout passes mid-handshake; asking for
            # the server key then raises, so both sit under one handler.
            transport.start_client(timeout=connect_timeout)
            server_key = transport.get_remote_server_key()
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise handshake_error(exc, worker=worker, host=host, port=port,
                                  connect_timeout=connect_timeout) from exc
        if known_hosts.verify(host, port, server_key, worker=worker):
            log.info("remembered the host key of %s (%s) in %s", worker or host,
                     host_entry(host, port), known_hosts.path)
        try:
            transport.auth_publickey(user, pkey)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise login_error(exc, worker=worker, host=host, port=port, user=user,
                              key_path=key_path) from exc
    except BaseException:
        close_transport(transport)
        raise
    return transport


def close_transport(transport: paramiko.Transport) -> None:
    """Close a transport and wait for its thread, so none outlives its user."""
    transport.close()
    if transport.is_alive() and transport is not threading.current_thread():
        transport.join(_THREAD_JOIN_S)
