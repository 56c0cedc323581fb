"""What the drills' gates share (:mod:`tests.support.repair_gate`, ``start_gate``,
``cleanup_gate``): each runs one of the project's commands in a process of its own with one
operation wrapped so that it waits at a gate file, and a drill acts at exactly that point."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOLD_S = 600.0


def command(module: str, *args: str) -> tuple[list[str], dict[str, str]]:
    """The argv and environment that run gate ``module`` (``tests.support.repair_gate``...)
    with ``args``, this checkout first on the import path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return [sys.executable, "-m", module, *args], env


def wait_at(gate: Path | str, said: str) -> None:
    """Write ``GATE.waiting`` (``said``: the pool's name, a PID) and wait for ``GATE`` to exist
    (at most :data:`HOLD_S`)."""
    from waa_client.poll import poll_until

    # in one rename: a drill waits for the file to exist and then reads it, and a file made
    # and then written could be seen empty in between
    waiting = Path(f"{gate}.waiting")
    partial = waiting.with_name(f"{waiting.name}.{os.getpid()}.tmp")
    partial.write_text(said, encoding="utf-8")
    os.replace(partial, waiting)
    poll_until(Path(gate).exists, timeout_s=HOLD_S, interval_s=0.05)


def run(program: str, args: list[str]) -> None:
    """Run ``oa-vm`` or ``openadapt-evals`` with ``args`` in this process."""
    sys.argv = [program, *args]
    if program == "oa-vm":
        from oa_vm.cli.entry import main as entry
    else:
        from evals.cli.app import main as entry
    entry()
