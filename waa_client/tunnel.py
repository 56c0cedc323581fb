"""Old home of the SSH tunnels: the names now live in :mod:`waa_client.ssh` (import from there)."""

from __future__ import annotations

from waa_client.ssh import (
    BACKENDS,
    LOCALHOST,
    ForwardingTunnel,
    LocalForwards,
    PoolTunnels,
    TunnelTarget,
    WorkerTunnel,
    default_backend,
    load_private_key,
    make_tunnel,
    ssh_command,
)

__all__ = ["BACKENDS", "LOCALHOST", "ForwardingTunnel", "LocalForwards", "PoolTunnels",
           "TunnelTarget", "WorkerTunnel", "default_backend", "load_private_key", "make_tunnel",
           "ssh_command"]
