"""The real ``oa-vm`` CLI on rehearsal hosts: ``--cloud ssh`` whose Windows guests are
simulated workers.

Run as ``python -m tests.support.fake_hosts_cli ARGS...`` (the arguments of ``oa-vm``). The
hosts are real OpenSSH servers on loopback, each with a private root and the host stand-ins
(``tests/support/host_standins.py``: docker, systemd, sudo, the guest's ``/probe``); the
provider is the shipped ``ssh`` provider, unchanged. Only the ports behind a worker's tunnel are
changed after a create: each slot's WAA and scoring ports on the host (5000, 5051, 5100...)
would be the Windows guest's, so they become the ports of a real simulated worker listed in
``$FAKE_HOSTS`` (a JSON file: ``{"guests": {"HOST:PORT": [[waa, scoring], ...]}}``, one pair per
slot, in slot order).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from oa_vm.clouds.base import PoolSpec, Progress
from oa_vm.clouds.hosts.provider import SshHostsProvider, slot_of
from oa_vm.model.state import PoolRecord


class RehearsalHosts(SshHostsProvider):
    """The ``ssh`` provider whose guests are simulated workers (see the module docstring)."""

    poll_interval_s = 0.5

    def __init__(self, guests: dict[str, list[list[int]]]) -> None:
        self.guests = guests

    def create(self, spec: PoolSpec, progress: Progress) -> PoolRecord:
        """Create as on real hosts, then point each worker's tunnel at its guest."""
        record = super().create(spec, progress)
        for worker in record.workers:
            assert worker.ssh is not None
            waa, scoring = self.guests[f"{worker.ssh.host}:{worker.ssh.port}"][
                slot_of(worker).index]
            worker.remote_waa_port, worker.remote_scoring_port = waa, scoring
        return record


def main(argv: list[str]) -> None:
    """Install the rehearsal provider, then run ``oa-vm ARGV``."""
    import oa_vm.api
    import oa_vm.clouds

    config = json.loads(Path(os.environ["FAKE_HOSTS"]).read_text(encoding="utf-8"))
    provider = RehearsalHosts(config["guests"])
    real = oa_vm.clouds.get_provider

    def get_provider(cloud: str) -> Any:
        return provider if cloud == "ssh" else real(cloud)

    oa_vm.clouds.get_provider = get_provider
    oa_vm.api.get_provider = get_provider  # type: ignore[assignment]
    from oa_vm.cli.app import main as cli_main

    sys.argv = ["oa-vm", *argv]
    cli_main()


if __name__ == "__main__":
    main(sys.argv[1:])
