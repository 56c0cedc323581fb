"""Whether an SSH server answers at all: a TCP connect and its banner, nothing more.

A tunnel can look up while its server has stopped answering: a path that drops packets (a
network blip) leaves the SSH connection open until its keepalives give up, and the local ports
keep accepting. A run that must tell a dead path from a dead worker behind it
(:mod:`evals.run.paths`) asks the server itself: it answers when it accepts a connection and
sends its ``SSH-`` identification line within the timeout. No key is offered and no login is
tried (the server logs a connection closed before authentication).
"""

from __future__ import annotations

import socket
import time

from waa_client.errors import SshUnreachableError
from waa_client.ssh.failures import connect_error, handshake_error

_BANNER_PREFIX = b"SSH-"
_MAX_BANNER_BYTES = 8192  # RFC 4253 lets a server send lines before its identification


def probe_ssh(host: str, port: int, *, timeout: float, worker: str = "") -> None:
    """Return once the SSH server at ``host:port`` sends its identification line.

    Raises:
        SshUnreachableError: refused, no connection within ``timeout``, or no identification
            line within ``timeout`` (the same words as a tunnel's failures, :mod:`.failures`).
    """
    deadline = time.monotonic() + timeout
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as exc:
        raise connect_error(exc, worker=worker, host=host, port=port,
                            connect_timeout=timeout) from exc
    with sock:
        received = b""
        try:
            while _BANNER_PREFIX not in received:
                left = deadline - time.monotonic()
                if left <= 0 or len(received) > _MAX_BANNER_BYTES:
                    raise handshake_error(None, worker=worker, host=host, port=port,
                                          connect_timeout=timeout)
                sock.settimeout(left)
                chunk = sock.recv(256)
                if not chunk:
                    raise handshake_error("connection closed before the banner", worker=worker,
                                          host=host, port=port, connect_timeout=timeout)
                received += chunk
        except SshUnreachableError:
            raise
        except OSError as exc:  # a timeout or a reset while waiting for the banner
            raise handshake_error(exc, worker=worker, host=host, port=port,
                                  connect_timeout=timeout) from exc
