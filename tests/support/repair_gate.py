"""A drill's hold on every pool repair: one of the project's commands run with its repairs held
at their critical point (the pool checked, nothing started yet) until a gate file exists, so a
drill can act (run ``pool-cleanup``, ``pool-extend``) at exactly that point instead of hoping
for the timing.

Run as ``python -m tests.support.repair_gate GATE oa-vm|openadapt-evals ARGS...``: the command
runs in this process with :func:`oa_vm.fleet.fleet_ops` wrapped, so each repair writes
``GATE.waiting`` (the pool's name) and waits for ``GATE`` (at most 600 s) before the provider's
own repair starts. :func:`command` gives the argv and environment.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tests.support import gates


def command(gate: Path, program: str, *args: str) -> tuple[list[str], dict[str, str]]:
    """The argv and environment that run ``program ARGS`` with its repairs held at ``gate``."""
    return gates.command("tests.support.repair_gate", str(gate), program, *args)


class _HeldRepairs:
    """A provider's fleet operations whose repair waits at the gate first."""

    def __init__(self, inner: Any, gate: Path) -> None:
        self.inner, self.gate = inner, gate

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def repair(self, record: Any, *args: Any, **kwargs: Any) -> Any:
        gates.wait_at(self.gate, record.name)
        return self.inner.repair(record, *args, **kwargs)


def main() -> None:
    gate, program, *args = sys.argv[1:]
    from oa_vm import fleet

    real = fleet.fleet_ops

    def held(cloud: str, need: Any) -> Any:
        return _HeldRepairs(real(cloud, need), Path(gate))

    fleet.fleet_ops = held  # type: ignore[assignment]
    gates.run(program, args)


if __name__ == "__main__":
    main()
