"""A drill's hold on a local pool's removal: one of the project's commands run with every
removal of a local pool held once it has begun (the pool marked as being removed, its workers
not yet stopped) until a gate file exists, so a drill can kill the command at exactly that
point instead of hoping for the timing.

Run as ``python -m tests.support.cleanup_gate GATE oa-vm|openadapt-evals ARGS...``: the command
runs in this process with the local provider's ``destroy`` wrapped, so each removal writes
``GATE.waiting`` (the pool's name) and waits for ``GATE`` (at most 600 s) before it stops
anything. :func:`command` gives the argv and environment.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tests.support import gates


def command(gate: Path, program: str, *args: str) -> tuple[list[str], dict[str, str]]:
    """The argv and environment that run ``program ARGS`` with its pool removals held."""
    return gates.command("tests.support.cleanup_gate", str(gate), program, *args)


def main() -> None:
    gate, program, *args = sys.argv[1:]
    from oa_vm.clouds.local.provider import LocalProvider

    real = LocalProvider.destroy

    def held(self: LocalProvider, record: Any, progress: Any) -> Any:
        gates.wait_at(gate, record.name)
        return real(self, record, progress)

    LocalProvider.destroy = held  # type: ignore[method-assign]
    gates.run(program, args)


if __name__ == "__main__":
    main()
