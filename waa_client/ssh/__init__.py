"""SSH to workers, in one package: targets and keys (:mod:`.base`), known hosts
(:mod:`.known_hosts`), the one mapping of SSH failures onto :mod:`waa_client.errors`
(:mod:`.failures`), the one runner of commands on a host (:mod:`.command`), whether a server
answers at all (:mod:`.probe`), the OpenSSH and paramiko backends (:mod:`.openssh_tunnel`,
:mod:`.paramiko_tunnel`), choosing between them (:mod:`.backends`), and the pool of tunnels a
sweep keeps alive (:mod:`.pool`).

Callers import from here.
"""

from __future__ import annotations

from waa_client.ssh.backends import BACKENDS, default_backend, make_tunnel
from waa_client.ssh.base import (
    LOCALHOST,
    ForwardingTunnel,
    LocalForwards,
    TunnelTarget,
    load_private_key,
    ssh_command,
)
from waa_client.ssh.command import CommandResult, SshCommandRunner
from waa_client.ssh.failures import connect_error, fingerprint, host_entry, ssh_output_error
from waa_client.ssh.known_hosts import KnownHosts
from waa_client.ssh.openssh_tunnel import OpenSshTunnel, ssh_binary
from waa_client.ssh.paramiko_tunnel import WorkerTunnel
from waa_client.ssh.pool import PoolTunnels
from waa_client.ssh.probe import probe_ssh

__all__ = [
    "BACKENDS",
    "CommandResult",
    "LOCALHOST",
    "ForwardingTunnel",
    "KnownHosts",
    "LocalForwards",
    "OpenSshTunnel",
    "PoolTunnels",
    "SshCommandRunner",
    "TunnelTarget",
    "WorkerTunnel",
    "connect_error",
    "default_backend",
    "fingerprint",
    "host_entry",
    "load_private_key",
    "make_tunnel",
    "probe_ssh",
    "ssh_binary",
    "ssh_command",
    "ssh_output_error",
]
