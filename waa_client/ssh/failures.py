"""SSH failures mapped onto :mod:`waa_client.errors`, in one place for every SSH user.

The OpenSSH backend, the paramiko backend's connect step and the one SSH command runner
(:mod:`.command`: the host status reads of cloud workers, their resets) all turn what went
wrong into the same errors with the same advice: a changed host key (refuse, say how to forget
it), a refused key (check the user and the pool's key), and an unreachable or not-yet-started
host (retryable infrastructure).
"""

from __future__ import annotations

import re
from pathlib import Path

import paramiko

from waa_client.errors import (
    HostKeyMismatchError,
    SshAuthenticationError,
    SshUnreachableError,
    TunnelError,
)
from waa_client.ssh.known_hosts import KnownHosts, fingerprint, host_entry


def describe_connection(worker: str, address: str) -> str:
    """How a message names the SSH connection: the worker and its address, or the address."""
    return f"SSH to worker {worker} at {address}" if worker else f"SSH to {address}"


def ssh_output_error(text: str, *, worker: str, host: str, port: int, user: str,
                     key_path: Path | str, connect_timeout: float,
                     known_hosts: KnownHosts | None) -> TunnelError:
    """The error an ``ssh`` client's stderr ``text`` reports, for worker ``worker``."""
    address = f"{host}:{port}"
    where = describe_connection(worker, address)
    url = f"ssh://{address}"
    last = next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "")
    if "IDENTIFICATION HAS CHANGED" in text or "Host key verification failed" in text:
        entry = host_entry(host, port)
        known = ", ".join(f"{k.get_name()} {fingerprint(k)}"
                          for k in known_hosts.known_keys(host, port)) if known_hosts else ""
        offered = re.search(r"SHA256:[A-Za-z0-9+/=]+", text)
        forget = f" -f {known_hosts.path}" if known_hosts else ""
        return HostKeyMismatchError(
            f"host key of worker {worker} at {entry} changed: remembered {known or '?'}, "
            f"offered {offered.group(0) if offered else '?'}; refusing to connect. If the "
            f"worker was recreated, forget the old key with: ssh-keygen -R '{entry}'{forget} "
            "(otherwise something may be intercepting the connection)",
            host=entry, known_fingerprint=known,
            offered_fingerprint=offered.group(0) if offered else "",
        )
    if "Permission denied" in text:
        return SshAuthenticationError(
            f"{where}: user {user!r} refused with key {key_path}; check the user name and that "
            "the worker holds the pool's public key",
            url=url,
        )
    if "refused" in text.lower():
        return SshUnreachableError(
            f"{where}: connection refused; check the worker is running and port {port} is open "
            "to this machine",
            url=url,
        )
    if "banner exchange" in text or "kex_exchange_identification" in text:
        return SshUnreachableError(
            f"{where}: no SSH handshake within {connect_timeout:g}s ({last}); the port may not "
            "be an SSH server, or the worker is still starting",
            url=url,
        )
    if "timed out" in text.lower():
        return SshUnreachableError(
            f"{where}: no connection within {connect_timeout:g}s; check the worker is running "
            f"and port {port} is open to this machine",
            url=url,
        )
    return SshUnreachableError(f"{where}: ssh failed ({last or 'no message'}); retry", url=url)


def connect_error(exc: OSError, *, worker: str, host: str, port: int,
                  connect_timeout: float) -> SshUnreachableError:
    """The error for a TCP connect to a worker's SSH port that failed with ``exc``."""
    address = f"{host}:{port}"
    if isinstance(exc, TimeoutError):
        reason = f"no connection within {connect_timeout:g}s"
    else:
        reason = str(exc.strerror or exc)
    return SshUnreachableError(
        f"{describe_connection(worker, address)}: {reason}; check the worker is running and port "
        f"{port} is open to this machine",
        url=f"ssh://{address}",
    )


def handshake_error(exc: BaseException, *, worker: str, host: str, port: int,
                    connect_timeout: float) -> SshUnreachableError:
    """The error for an SSH handshake (banner, key exchange) that failed with ``exc`` after the
    TCP connect succeeded."""
    address = f"{host}:{port}"
    return SshUnreachableError(
        f"{describe_connection(worker, address)}: no SSH handshake within {connect_timeout:g}s "
        f"({exc or type(exc).__name__}); the port may not be an SSH server, or the worker is "
        "still starting",
        url=f"ssh://{address}",
    )


def login_error(exc: BaseException, *, worker: str, host: str, port: int, user: str,
                key_path: Path | str) -> TunnelError:
    """The error for a public-key login that failed with ``exc``: the key refused
    (:class:`SshAuthenticationError`), or the session lost while logging in (retryable)."""
    address = f"{host}:{port}"
    if isinstance(exc, paramiko.AuthenticationException):
        return SshAuthenticationError(
            f"{describe_connection(worker, address)}: user {user!r} refused with key {key_path}; "
            "check the user name and that the worker holds the pool's public key",
            url=f"ssh://{address}",
        )
    return SshUnreachableError(
        f"{describe_connection(worker, address)}: connection lost while logging in ({exc}); retry",
        url=f"ssh://{address}",
    )
