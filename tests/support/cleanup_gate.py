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

import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HOLD_S = 600.0


def command(gate: Path, program: str, *args: str) -> tuple[list[str], dict[str, str]]:
    """The argv and environment that run ``program ARGS`` with its pool removals held."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return [sys.executable, "-m", "tests.support.cleanup_gate", str(gate), program, *args], env


def main() -> None:
    gate, program, *args = sys.argv[1:]
    from oa_vm.clouds.local.provider import LocalProvider
    from waa_client.poll import poll_until

    real = LocalProvider.destroy

    def held(self: LocalProvider, record: Any, progress: Any) -> Any:
        Path(f"{gate}.waiting").write_text(record.name, encoding="utf-8")
        poll_until(Path(gate).exists, timeout_s=HOLD_S, interval_s=0.05)
        return real(self, record, progress)

    LocalProvider.destroy = held  # type: ignore[method-assign]
    sys.argv = [program, *args]
    if program == "oa-vm":
        from oa_vm.cli.entry import main as entry
    else:
        from evals.cli.app import main as entry
    entry()


if __name__ == "__main__":
    main()
