"""SSH failures mapped onto :mod:`waa_client.errors`, in one place for every SSH user.

The OpenSSH backend, the paramiko backend's connect step and the one SSH command runner
(:mod:`.command`: the host status reads of cloud workers, their resets) all turn what went
wrong into the same errors with the same advice: a changed host key (refuse, say how to forget
it), a refused key (check the user and the pool's key), and an unreachable or not-yet-started
host (retryable infrastructure).
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

import paramiko

from waa_client.addresses import host_port
from waa_client.errors import (
    HostKeyMismatchError,
    SshAuthenticationError,
    SshUnreachableError,
    TunnelError,
)

DEFAULT_SSH_PORT = 22


def host_entry(host: str, port: int) -> str:
    """The name OpenSSH files a host under: ``host`` on port 22, else ``[host]:port``."""
    return host if port == DEFAULT_SSH_PORT else f"[{host}]:{port}"


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH's ``SHA256:...`` fingerprint of a public key."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def describe_connection(worker: str, address: str) -> str:
    """How a message names the SSH connection: the worker and its address, or the address."""
    return f"SSH to worker {worker} at {address}" if worker else f"SSH to {address}"


def host_key_changed(*, worker: str, host: str, port: int, remembered: Sequence[paramiko.PKey],
                     offered: str, offered_fingerprint: str,
                     known_hosts_file: Path | None) -> HostKeyMismatchError:
    """The error for a host that offers another key than the one remembered for it.

    Args:
        remembered: The keys the pool's known_hosts holds for the host.
        offered: How the offered key is shown (its type and fingerprint, or the fingerprint).
        offered_fingerprint: The offered key's ``SHA256:...`` fingerprint ("" if unknown).
        known_hosts_file: The pool's known_hosts, named in the advice (None: not named).
    """
    entry = host_entry(host, port)
    who = f"worker {worker} at {entry}" if worker else entry
    known = ", ".join(f"{k.get_name()} {fingerprint(k)}" for k in remembered)
    forget = f" -f {known_hosts_file}" if known_hosts_file else ""
    return HostKeyMismatchError(
        f"host key of {who} changed: remembered {known or '?'}, offered {offered or '?'}; "
        f"refusing to connect. If the worker was recreated, forget the old key with: "
        f"ssh-keygen -R '{entry}'{forget} (otherwise something may be intercepting the "
        "connection)",
        host=entry, known_fingerprint=known, offered_fingerprint=offered_fingerprint,
    )


def no_ssh_client() -> SshUnreachableError:
    """The error when the OpenSSH backend finds no ``ssh`` client to run."""
    return SshUnreachableError("no ssh client installed; install openssh-client")


def ssh_output_error(text: str, *, worker: str, host: str, port: int, user: str,
                     key_path: Path | str, connect_timeout: float,
                     remembered: Sequence[paramiko.PKey] = (),
                     known_hosts_file: Path | None = None) -> TunnelError:
    """The error an ``ssh`` client's stderr ``text`` reports, for worker ``worker``
    (``remembered``: the keys the pool's ``known_hosts_file`` holds for the host)."""
    last = next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "")
    if "IDENTIFICATION HAS CHANGED" in text or "Host key verification failed" in text:
        offered = re.search(r"SHA256:[A-Za-z0-9+/=]+", text)
        return host_key_changed(
            worker=worker, host=host, port=port, remembered=remembered,
            offered=offered.group(0) if offered else "",
            offered_fingerprint=offered.group(0) if offered else "",
            known_hosts_file=known_hosts_file,
        )
    if "Permission denied" in text:
        return _key_refused(worker=worker, host=host, port=port, user=user, key_path=key_path)
    if "refused" in text.lower():
        return _not_reached("connection refused", worker=worker, host=host, port=port)
    if "banner exchange" in text or "kex_exchange_identification" in text:
        return handshake_error(last, worker=worker, host=host, port=port,
                               connect_timeout=connect_timeout)
    if "timed out" in text.lower():
        return _not_reached(f"no connection within {connect_timeout:g}s",
                            worker=worker, host=host, port=port)
    return SshUnreachableError(
        f"{describe_connection(worker, host_port(host, port))}: ssh failed "
        f"({last or 'no message'}); retry", url=f"ssh://{host_port(host, port)}",
    )


def _not_reached(reason: str, *, worker: str, host: str, port: int) -> SshUnreachableError:
    address = host_port(host, port)
    return SshUnreachableError(
        f"{describe_connection(worker, address)}: {reason}; check the worker is running and port "
        f"{port} is open to this machine",
        url=f"ssh://{address}",
    )


def _key_refused(*, worker: str, host: str, port: int, user: str,
                 key_path: Path | str) -> SshAuthenticationError:
    address = host_port(host, port)
    return SshAuthenticationError(
        f"{describe_connection(worker, address)}: user {user!r} refused with key {key_path}; "
        "check the user name and that the worker holds the pool's public key",
        url=f"ssh://{address}",
    )


def connect_error(exc: OSError, *, worker: str, host: str, port: int,
                  connect_timeout: float) -> SshUnreachableError:
    """The error for a TCP connect to a worker's SSH port that failed with ``exc``."""
    reason = (f"no connection within {connect_timeout:g}s" if isinstance(exc, TimeoutError)
              else str(exc.strerror or exc))
    return _not_reached(reason, worker=worker, host=host, port=port)


def handshake_error(exc: BaseException | str | None, *, worker: str, host: str, port: int,
                    connect_timeout: float) -> SshUnreachableError:
    """The error for an SSH handshake (banner, key exchange) that failed with ``exc`` (an
    exception, or the ``ssh`` client's last line) after the TCP connect succeeded (None: no
    handshake came in time, and nothing more is known)."""
    address = host_port(host, port)
    reason = "" if exc is None else f" ({exc or type(exc).__name__})"
    return SshUnreachableError(
        f"{describe_connection(worker, address)}: no SSH handshake within {connect_timeout:g}s"
        f"{reason}; the port may not be an SSH server, or the worker is still starting",
        url=f"ssh://{address}",
    )


def session_error(exc: BaseException, *, worker: str, host: str, port: int) -> SshUnreachableError:
    """The error for a command's session lost after the login (retryable)."""
    address = host_port(host, port)
    return SshUnreachableError(
        f"{describe_connection(worker, address)}: the command's session failed "
        f"({str(exc) or type(exc).__name__}); retry",
        url=f"ssh://{address}",
    )


def tunnel_error(what: str, *, worker: str, host: str, port: int,
                 advice: str = "retry") -> SshUnreachableError:
    """The error for a tunnel whose forwarding could not be set up after the login (``what``
    went wrong); retryable."""
    return SshUnreachableError(
        f"SSH tunnel to worker {worker}: {what}; {advice}", url=f"ssh://{host_port(host, port)}",
    )


def login_error(exc: BaseException, *, worker: str, host: str, port: int, user: str,
                key_path: Path | str) -> TunnelError:
    """The error for a public-key login that failed with ``exc``: the key refused
    (:class:`SshAuthenticationError`), or the session lost while logging in (retryable)."""
    if isinstance(exc, paramiko.AuthenticationException):
        return _key_refused(worker=worker, host=host, port=port, user=user, key_path=key_path)
    address = host_port(host, port)
    return SshUnreachableError(
        f"{describe_connection(worker, address)}: connection lost while logging in ({exc}); retry",
        url=f"ssh://{address}",
    )
