"""The guest's egress policy: which destinations a worker's guest may open connections to.

One module decides: :func:`render` writes the nftables tables a worker host applies (``egress.sh``:
in its own namespace, where the guest's traffic passes after dockur's NAT, and in the
container's, where the guest's own connections start), shipped with the pool's cloud-init (or
a create's files on the user's own host, where the host's table names the pool's containers).
Modes:

- ``none``: no new connection from the guest to anything (WAA's server and the scorer are reached
  *from* the host side; their answers are established traffic).
- ``allowlist``: TCP to the listed ``host[:port]`` entries only (DNS to the host's resolvers too, so
  the guest can resolve them). Names are resolved by the host, and re-resolved by ``egress.sh
  refresh`` every few minutes: chosen over a filtering proxy because WAA's setup steps and the
  agent's browser would have to be told about a proxy inside Windows, and a TLS proxy that reads SNI
  still needs the same name-to-address view to stop a connection by address.
- ``web``: TCP 80 and 443 to public addresses only.
- ``open``: anything public.

Whatever the mode, the guest never reaches :data:`ALWAYS_DENIED` (the instance metadata service,
the host's own addresses, private and link-local ranges where other workers live); the host's own
addresses join them on the host. The proof that the rules hold is ``egress_probe.py``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

Pair = tuple[str, int]

MODES = ("none", "allowlist", "web", "open")
WEB_PORTS = (80, 443)
ALWAYS_DENIED = (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
    "168.63.129.16/32", "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/3",
)
"""Never reachable from the guest: metadata (169.254.169.254 on AWS and Azure; Azure's wire
server 168.63.129.16, DNS through it aside), loopback, every
private and shared range (the worker's subnet, the other workers, the container bridges),
multicast and reserved space. Public addresses are the only ones a mode can open."""
TABLE = "oa_vm_egress"


class PolicyError(ValueError):
    """An egress mode or allow-list that cannot be used; the message says which line and why."""


def parse_mode(text: str) -> tuple[str, str | None]:
    """``none``, ``web``, ``open`` or ``allowlist:FILE`` -> ``(mode, file or None)``."""
    mode, _, path = text.partition(":")
    if mode not in MODES:
        raise PolicyError(f"unknown egress mode {text!r}: use none, web, open or allowlist:FILE")
    if (mode == "allowlist") != bool(path):
        raise PolicyError("give the allow-list's file as allowlist:FILE" if mode == "allowlist"
                          else f"egress mode {mode} takes no file")
    return mode, path or None


def parse_allowlist(text: str, source: str = "allow-list") -> list[Pair]:
    """Entries ``host`` (ports 80 and 443) or ``host:port``, one a line; ``#`` starts a comment.

    Returns a sorted list of ``(host, port)``. A line that is not a host name or address, or a port
    outside 1-65535, is refused naming the line by its number, never printing it: the file may be
    the wrong one (as ``waa_client.inputs.read_id_file`` refuses a task list's line).
    """
    entries: set[Pair] = set()
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip().lower()
        if not line:
            continue
        if "/" in line:
            raise PolicyError(f"{source} line {number} is a URL or a path, not a host; give "
                              "host or host:port (www.example.com:443), one a line")
        host, sep, port_text = line.rpartition(":") if line.count(":") == 1 else (line, "", "")
        ports: tuple[int, ...] = WEB_PORTS
        if sep:
            if not port_text.isdigit() or not 0 < int(port_text) < 65536:
                raise PolicyError(f"{source} line {number}: the port is not a TCP port "
                                  "(1-65535); give host or host:port")
            ports = (int(port_text),)
        if not host or len(host) > 253 or not all(
            part and len(part) < 64 and part.replace("-", "").isalnum() for part in host.split(".")
        ):
            raise PolicyError(f"{source} line {number} is not a host name; give host or "
                              "host:port, one a line")
        if _always_denied(host):
            raise PolicyError(f"{source} line {number} is an address no guest may reach (the "
                              "instance metadata service, a private, loopback or reserved "
                              "range), whatever the list says; leave it out")
        entries.update((host, port) for port in ports)
    return sorted(entries)


def _always_denied(host: str) -> bool:
    """Whether ``host`` is an IPv4 address in :data:`ALWAYS_DENIED` (a name: not known here)."""
    try:
        address = ipaddress.IPv4Address(host)
    except ValueError:
        return False
    return any(address in ipaddress.IPv4Network(block) for block in ALWAYS_DENIED)


def render(scope: str, mode: str, bridge: str, members: Sequence[str] = ()) -> str:
    """An nftables table, applied whole with ``nft -f`` (replacing the previous one); its sets
    ``denied`` (the host's own addresses join :data:`ALWAYS_DENIED`), ``resolvers`` and
    ``allowed`` (the allow-list's resolved ``address . port`` pairs) are filled by ``egress.sh``
    on the host, which alone knows those addresses.

    ``scope="guest"``, applied in the container's namespace: new connections arriving from
    dockur's bridge ``bridge`` (the guest itself, before dockur's NAT) filtered by ``mode``, and
    nothing of the container's own services reachable from the guest but its DNS forwarder
    (not even that in mode ``none``). ``scope="host"``, applied in the host's namespace on the
    container bridge (``docker0``): the guest's and the container's traffic after NAT never
    reaches :data:`ALWAYS_DENIED` or the host's own addresses, whatever the mode and even while
    the container restarts (the host's table outlives it); DNS to the host's resolvers stays open
    there (the forwarder, a process of the container, asks them; they sit in denied ranges on
    both clouds: 169.254.169.253 or the subnet's .2 on AWS, 168.63.129.16 on Azure).

    ``members`` (host scope, the user's own hosts): the MAC addresses the pool gives its
    containers (``docker run --mac-address``); only their frames are filtered, every other
    container on ``bridge`` passes untouched. Keyed on the link layer, not the source address:
    Docker gives a restarted container a new IPv4 address that another container may take,
    and a guest can forge a source address but not the container's own MAC.
    """
    if scope not in ("guest", "host") or mode not in MODES or (members and scope != "host"):
        raise PolicyError(f"no egress table for scope {scope!r} and mode {mode!r}")
    # the user's own host: frames of other containers leave both chains at once
    others = [f"ether saddr != {{ {', '.join(members)} }} accept"] if members else []
    lines = [
        f"table inet {TABLE}", f"delete table inet {TABLE}", f"table inet {TABLE} {{",
        "  set allowed { type ipv4_addr . inet_service; }",
        "  set resolvers { type ipv4_addr; }",
        # auto-merge: a host address inside a denied range is simply already there
        "  set denied { type ipv4_addr; flags interval; auto-merge; elements = { "
        + ", ".join(ALWAYS_DENIED) + " } }",
        "  chain input {", "    type filter hook input priority -10; policy accept;",
        *(f'    iifname "{bridge}" {rule}' for rule in others),
        f'    iifname "{bridge}" ct state established,related accept',
    ]
    if scope == "guest" and mode != "none":
        lines.append(f'    iifname "{bridge}" meta l4proto {{ tcp, udp }} th dport 53 accept')
    lines += [
        f'    iifname "{bridge}" counter drop', "  }",
        "  chain forward {", "    type filter hook forward priority -10; policy accept;",
        f'    iifname != "{bridge}" accept', *(f"    {rule}" for rule in others),
        "    ct state established,related accept", "    meta nfproto ipv6 counter drop",
    ]
    if scope == "host":
        lines.append("    ip daddr @resolvers meta l4proto { tcp, udp } th dport 53 accept")
    lines.append("    ip daddr @denied counter drop")
    if scope == "host" or mode == "open":
        lines.append("    accept")
    else:
        if mode == "web":
            lines.append("    tcp dport { 80, 443 } accept")
        elif mode == "allowlist":
            lines.append("    ip daddr . tcp dport @allowed accept")
        lines.append("    counter drop")
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"
