"""How a line or a URL writes a host and its port: ``host:port``, an IPv6 address in brackets.

Kept apart from :mod:`waa_client.ssh` (which loads paramiko): ``--host`` is read with it
before anything connects.
"""

from __future__ import annotations


def host_port(host: str, port: int) -> str:
    """``host:port``; ``[2001:db8::1]:22`` for an IPv6 address, whose own colons would
    otherwise run into the port's."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


__all__ = ["host_port"]
