"""A drill's hold on a local worker's start: ``oa-vm`` run with the start of its ``N``-th worker
process held just after the process exists and before the command knows its PID, until a gate
file exists, so a drill can signal the command at exactly that point instead of hoping for the
timing (the moment a stop used to leave a process that no record named).

Run as ``python -m tests.support.start_gate GATE N oa-vm ARGS...``: the command runs in this
process with the local provider's ``subprocess.Popen`` wrapped, so its ``N``-th start (from 1)
writes ``GATE.waiting`` (the new process's PID) and waits for ``GATE`` (at most 600 s) before it
returns. :func:`command` gives the argv and environment.
"""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path
from typing import Any

from tests.support import gates


def command(gate: Path, nth: int, *args: str) -> tuple[list[str], dict[str, str]]:
    """The argv and environment that run ``oa-vm ARGS`` with its ``nth`` worker start held."""
    return gates.command("tests.support.start_gate", str(gate), str(nth), "oa-vm", *args)


def main() -> None:
    gate, nth, program, *args = sys.argv[1:]
    from oa_vm.clouds.local import fleet

    starts = 0

    def held(*popen_args: Any, **popen_kwargs: Any) -> subprocess.Popen[Any]:
        nonlocal starts
        proc = subprocess.Popen(*popen_args, **popen_kwargs)  # the real start, as asked
        starts += 1
        if starts == int(nth):
            gates.wait_at(gate, str(proc.pid))
        return proc

    # only the local provider's module sees the wrapper: its Popen is the one held
    fleet.subprocess = types.SimpleNamespace(  # type: ignore[assignment]
        Popen=held, DEVNULL=subprocess.DEVNULL)
    gates.run(program, args)


if __name__ == "__main__":
    main()
