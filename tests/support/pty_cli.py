"""Run a console script with a pseudo-terminal as its standard output and error, as a person at a
terminal would (what :func:`tests.support.cli.run_cli`, whose output is piped, cannot show)."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from pathlib import Path

from tests.support.cli import BIN


def run_on_terminal(
    script: str, *args: str, home: Path, timeout: float = 300.0,
    env: dict[str, str] | None = None, columns: int = 120,
) -> tuple[int, str]:
    """Exit status and everything written to the terminal (control codes included).

    Standard input is not the terminal (nothing here answers questions). The terminal is read
    until the child closes it, so nothing written last is lost; the deadline is generous and
    only guards against a hung command.
    """
    primary, secondary = pty.openpty()
    full_env = {**os.environ, "OA_VM_HOME": str(home), "TERM": "xterm", "COLUMNS": str(columns),
                "LINES": "50", **(env or {})}
    full_env.pop("NO_COLOR", None)
    proc = subprocess.Popen(  # fixed argv, no shell
        [str(BIN / script), *args], stdin=subprocess.DEVNULL, stdout=secondary,
        stderr=secondary, env=full_env,
    )
    os.close(secondary)
    shown = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # EIO: every writer closed the terminal (the child ended)
                break
            if not chunk:
                break
            shown += chunk
        else:
            proc.kill()
            raise AssertionError(f"{script} {' '.join(args)} still running after {timeout} s")
        code = proc.wait(timeout=60)
    finally:
        os.close(primary)
    return code, shown.decode("utf-8", "replace")
