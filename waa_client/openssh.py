"""Old home of the OpenSSH backend: now :mod:`waa_client.ssh.openssh_tunnel` (import from
:mod:`waa_client.ssh`)."""

from __future__ import annotations

from waa_client.ssh import OpenSshTunnel, ssh_binary

__all__ = ["OpenSshTunnel", "ssh_binary"]
