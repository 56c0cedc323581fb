"""A registered provider that declares no optional capability, and the real ``oa-vm`` CLI run
with it registered (``python -m tests.support.bare_provider pool-pause ...``).

It is the local provider with its capabilities taken away: what a new cloud's first provider
looks like before it learns to pause. The CLI must refuse what it does not declare, in one line,
before it touches the pool.
"""

from __future__ import annotations

import sys

from oa_vm.clouds.base import Capability, FleetOps
from oa_vm.clouds.local import FACTS
from oa_vm.clouds.local.provider import LocalProvider

CLOUD = "bare"
__all__ = ["FACTS", "BareProvider"]  # the local pool's declared data (oa_vm.clouds.facts)


class BareProvider(LocalProvider):
    """Creates, refreshes and destroys like the local provider; declares nothing optional."""

    name = CLOUD
    capabilities: frozenset[Capability] = frozenset()

    def fleet_ops(self) -> FleetOps:
        """Never asked for: no fleet capability is declared."""
        raise AssertionError("fleet_ops asked of a provider that declares no fleet capability")


def main() -> None:
    """Register :class:`BareProvider` as ``bare``, then run the real CLI on ``sys.argv``."""
    from oa_vm import clouds as providers
    from oa_vm.cli import entry

    providers._REGISTRY[CLOUD] = f"{__name__}:BareProvider"  # the registry has no plugin API
    entry.main()


if __name__ == "__main__":
    sys.argv[0] = "oa-vm"
    main()
