"""Old home of the pool's known_hosts: now :mod:`waa_client.ssh.known_hosts` (import from
:mod:`waa_client.ssh`)."""

from __future__ import annotations

from waa_client.ssh.known_hosts import DEFAULT_SSH_PORT, KnownHosts, fingerprint, host_entry

__all__ = ["DEFAULT_SSH_PORT", "KnownHosts", "fingerprint", "host_entry"]
