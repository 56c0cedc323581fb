"""Choosing a tunnel backend: OpenSSH when an ``ssh`` client is installed, else paramiko."""

from __future__ import annotations

import os
from pathlib import Path

from waa_client.ssh.base import ForwardingTunnel, TunnelTarget
from waa_client.ssh.openssh_tunnel import OpenSshTunnel, ssh_binary
from waa_client.ssh.paramiko_tunnel import WorkerTunnel

BACKENDS = ("openssh", "paramiko")


def default_backend() -> str:
    """``openssh`` when an ``ssh`` client is installed, else ``paramiko``.

    ``OA_VM_SSH_BACKEND=paramiko`` (or ``openssh``) chooses explicitly.
    """
    chosen = os.environ.get("OA_VM_SSH_BACKEND", "").strip().lower()
    if chosen in BACKENDS:
        return chosen
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
        return OpenSshTunnel(target, known_hosts, **options)  # type: ignore[arg-type]
    if chosen != "paramiko":
        raise ValueError(f"unknown SSH backend {chosen!r}; use one of {', '.join(BACKENDS)}")
    return WorkerTunnel(target, known_hosts, **options)  # type: ignore[arg-type]
