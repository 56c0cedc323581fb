"""A host the user names, what its probe found, and the rules of what it can take (pure).

The rules, in the order a refusal names them:

- the host answered the probe over SSH (else: unreachable, with SSH's own words);
- it serves no other oa-vm pool (``/var/lib/oa-vm/pool`` names the pool that claimed it);
- ``/dev/kvm`` exists: WAA's Windows guest is a KVM virtual machine;
- the bootstrap can become root (logged in as root, or ``sudo`` without a password);
- its available memory and its processors hold N guests (the one rule for own hosts and cloud
  sizes: :func:`infra.worker.slots.workers_that_fit`);
- nothing listens on a port a worker will bind (:mod:`infra.worker.slots`).

Free disk is shown, never refused: the workers' disks are sparse and grow with use.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

from infra.settings import DEFAULT_CPU_CORES, DEFAULT_RAM_SIZE
from infra.worker import slots
from infra.worker.slots import (
    HOST_RESERVE_GIB,
    fit_by_cpus,
    fit_by_memory,
    memory_per_worker_gib,
)
from oa_vm.kit.error_line import host_words
from waa_client.addresses import host_port

DEFAULT_SSH_PORT = 22
_LOGIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
"""A user name as POSIX's portable set writes it, not starting with ``-``."""
_HOST = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9._-]*[A-Za-z0-9_])?")
"""A DNS name or an IPv4 address: labels of letters, digits, ``_`` and ``-``, never at an end."""


@dataclass(frozen=True)
class HostAddress:
    """``user@host[:port]`` as given to ``--host``; an IPv6 address in brackets."""

    user: str
    host: str
    port: int = DEFAULT_SSH_PORT

    def __str__(self) -> str:
        return f"{self.user}@{host_port(self.host, self.port)}"

    @property
    def identity(self) -> tuple[str, int]:
        """The host and port however they are written: a name in any case, an address in
        any of its forms (``0:0::1`` is ``::1``)."""
        try:
            return ipaddress.ip_address(self.host).compressed, self.port
        except ValueError:
            return self.host.lower(), self.port

    @property
    def label(self) -> str:
        """The host as a part of a name (a worker's): an IPv6 address's colons as dashes."""
        return self.host.replace(":", "-").replace("%", "-")

    @classmethod
    def parse(cls, text: str, option: str = "--host", *, port_required: bool = False
              ) -> HostAddress:
        """``user@host`` or ``user@host:port`` (only the latter with ``port_required``), as
        ``option`` was given it: the one reading of every option that names an SSH login.

        The user and the host are names (letters, digits, ``.``, ``_``, ``-``; the host a DNS
        name or an IPv4 address), or the host an IPv6 address in brackets
        (``ubuntu@[2001:db8::1]:22``, as ``ssh`` and URLs write one beside a port): nothing that
        ``ssh`` would read as an option (``-oProxy...``) or that is not one host (a space, a
        slash). An IPv6 address without brackets is refused by name: its colons would run into
        the port's.

        Raises:
            ValueError: another shape (the message says which one is expected).
        """
        user, at, rest = text.strip().rpartition("@")
        shape = "user@host:port" if port_required else "user@host or user@host:port"
        bad = f"{option} {text!r}: use {shape}, e.g. ubuntu@lab-server:22"
        if rest.startswith("["):
            host, close, after = rest[1:].partition("]")
            colon, port = after[:1], after[1:]
            if not close or (after and colon != ":") or not _is_ipv6(host):
                raise ValueError(f"{option} {text!r}: in brackets goes an IPv6 address, e.g. "
                                 "ubuntu@[2001:db8::1]:22")
        elif rest.count(":") > 1:
            raise ValueError(f"{option} {text!r}: a host takes one port; write an IPv6 address "
                             "in brackets, e.g. ubuntu@[2001:db8::1]:22")
        else:
            host, colon, port = rest.partition(":")
            if not _HOST.fullmatch(host):
                raise ValueError(bad)
        if (not at or not _LOGIN.fullmatch(user)
                or (colon or port_required) and not port.isdigit()):
            raise ValueError(bad)
        number = int(port) if colon else DEFAULT_SSH_PORT
        if not 1 <= number <= 65535:
            raise ValueError(f"{option} {text!r}: port {number} is not a TCP port (1-65535)")
        return cls(user=user, host=host, port=number)


def _is_ipv6(text: str) -> bool:
    """Whether ``text`` is an IPv6 address (a zone, ``fe80::1%eth0``, allowed)."""
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class HostFacts:
    """What ``host_probe.sh`` printed (see its header for the keys)."""

    kvm: bool
    cpus: int
    mem_kib: int
    avail_kib: int
    disk_free_kib: int
    engine: str
    listening: frozenset[int]
    pool: str
    privilege: str
    image_cache: bool

    @classmethod
    def parse(cls, output: str) -> HostFacts:
        """The probe's ``KEY=VALUE`` lines (unknown keys ignored, missing numbers 0).

        Raises:
            ValueError: the output is not the probe's (no ``kvm=`` line).
        """
        values: dict[str, str] = {}
        for line in output.splitlines():
            key, sep, value = line.partition("=")
            if sep:
                values[key.strip()] = value.strip()
        if "kvm" not in values:
            raise ValueError("the host's probe printed no result: "
                             + host_words(output, most=200))

        def number(key: str) -> int:
            text = values.get(key, "")
            return int(text) if text.isdigit() else 0

        ports = frozenset(int(p) for p in values.get("listening", "").split(",") if p.isdigit())
        return cls(
            kvm=values["kvm"] == "yes", cpus=number("cpus"), mem_kib=number("mem_kib"),
            avail_kib=number("avail_kib") or number("mem_kib"),
            disk_free_kib=number("disk_free_kib"), engine=values.get("engine", ""),
            listening=ports, pool=values.get("pool", ""),
            privilege=values.get("privilege", "none"),
            image_cache=values.get("image_cache") == "yes",
        )

    @property
    def avail_gib(self) -> float:
        """Memory available now, in GiB."""
        return self.avail_kib / 1024 / 1024

    def describe(self) -> str:
        """One line: what the host has."""
        engine = self.engine or "no container engine (docker.io will be installed)"
        return (f"KVM {'yes' if self.kvm else 'no'}, {self.cpus} CPUs, "
                f"{self.mem_kib / 1024 / 1024:.0f} GiB memory ({self.avail_gib:.0f} available), "
                f"{self.disk_free_kib / 1024 / 1024:.0f} GiB free disk, {engine}, "
                f"{'logged in as root' if self.privilege == 'root' else 'root through sudo'}, "
                f"image cache {'present' if self.image_cache else 'absent'}")


@dataclass(frozen=True)
class Fit:
    """How many workers a host takes, and why it takes fewer than asked (or none)."""

    fits: int
    problems: list[str] = field(default_factory=list)


def fit(facts: HostFacts, wanted: int, *, pool: str, ram_size: str = DEFAULT_RAM_SIZE,
        cpu_cores: int = DEFAULT_CPU_CORES) -> Fit:
    """How many of ``wanted`` workers ``facts``'s host can take for pool ``pool``.

    ``problems`` is empty when all ``wanted`` fit; else each entry is one reason, said so that
    the user knows what to change (:func:`refusal` joins them).
    """
    problems: list[str] = []
    if facts.pool and facts.pool != pool:
        problems.append(f"already serves pool {facts.pool!r} (clean that pool up first: "
                        f"oa-vm pool-cleanup --pool {facts.pool})")
    if not facts.kvm:
        problems.append("no /dev/kvm (enable virtualization in the BIOS and load kvm_intel or "
                        "kvm_amd)")
    if facts.privilege not in ("root", "sudo"):
        problems.append("cannot become root (log in as root or allow sudo without a password)")
    each = memory_per_worker_gib(ram_size)
    by_memory = fit_by_memory(facts.avail_gib, ram_size)
    if by_memory < wanted:
        problems.append(
            f"too little memory for {wanted} worker(s): {facts.avail_gib:.1f} GiB available, "
            f"{wanted * each + HOST_RESERVE_GIB:.0f} GiB needed ({each:g} GiB each and "
            f"{HOST_RESERVE_GIB:g} for the host); it holds {by_memory}"
        )
    by_cpu = fit_by_cpus(facts.cpus, cpu_cores)
    if by_cpu < wanted:
        problems.append(f"too few CPUs for {wanted} worker(s): {facts.cpus}, "
                        f"{wanted * cpu_cores} needed ({cpu_cores} each); it holds {by_cpu}")
    taken = sorted(
        port for s in slots.host_slots(min(wanted, slots.MAX_SLOTS))
        for port in (s.waa_port, s.vnc_port, s.scoring_port) if port in facts.listening
    )
    if taken:
        problems.append(f"port(s) {', '.join(map(str, taken))} already in use on the host "
                        "(the workers bind them on 127.0.0.1)")
    blocked = (bool(facts.pool and facts.pool != pool) or not facts.kvm or bool(taken)
               or facts.privilege not in ("root", "sudo"))
    fits = 0 if blocked else min(wanted, by_memory, by_cpu)
    return Fit(fits=fits, problems=problems)


def refusal(address: HostAddress, problems: list[str]) -> str:
    """The one line refusing a host."""
    return f"host {address} cannot take its workers: " + "; ".join(problems)

