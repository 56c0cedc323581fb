"""Reading a host over SSH before anything is installed: ``infra/worker/host_probe.sh``, run as
shipped through the one SSH command runner (:mod:`waa_client.ssh.command`), on every host at
once. The probe only reads: it is what a plan may do to a host the user owns."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from infra.worker import units
from oa_vm.clouds.hosts.facts import HostAddress, HostFacts
from oa_vm.kit.error_line import host_words

PROBE_SCRIPT = "host_probe.sh"
PROBE_TIMEOUT_S = 30.0
"""The probe reads a few files; a host silent for this long is as good as unreachable."""
CONNECT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class ProbeResult:
    """One host's probe: its facts, or why there are none (one line, SSH's own words)."""

    address: HostAddress
    facts: HostFacts | None = None
    error: str = ""


def probe_command() -> str:
    """The shell command line that runs the shipped probe on the host (``bash -c SCRIPT``)."""
    return "bash -c " + shlex.quote(units.read(PROBE_SCRIPT))


def probe_host(address: HostAddress, key_path: Path, known_hosts: Path) -> ProbeResult:
    """Probe one host; failures come back as :attr:`ProbeResult.error`, never raised."""
    from waa_client.errors import WaaError
    from waa_client.ssh import SshCommandRunner

    runner = SshCommandRunner(known_hosts, connect_timeout=CONNECT_TIMEOUT_S)
    try:
        result = runner.run(address.host, address.port, address.user, key_path,
                            probe_command(), PROBE_TIMEOUT_S)
    except WaaError as exc:  # the SSH failures, already mapped to one line each
        return ProbeResult(address, error=f"unreachable: {exc}")
    if result.status != 0:
        return ProbeResult(address, error=f"the probe failed (exit {result.status}): "
                                          f"{host_words(result.output, most=200)}")
    try:
        return ProbeResult(address, facts=HostFacts.parse(result.output))
    except ValueError as exc:
        return ProbeResult(address, error=str(exc))


def probe_hosts(addresses: Sequence[HostAddress], key_path: Path,
                known_hosts: Path) -> list[ProbeResult]:
    """Probe every host at once (a plan waits for the slowest, not for their sum), in the
    order given."""
    if not addresses:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(addresses))) as pool:
        return list(pool.map(lambda a: probe_host(a, key_path, known_hosts), addresses))
