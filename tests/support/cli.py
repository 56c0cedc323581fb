"""Run the project's console scripts as real subprocesses, as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

BIN = Path(sys.executable).parent


@dataclass
class Result:
    """What a command printed and how it ended."""

    returncode: int
    stdout: str
    stderr: str

    def assert_one_line_error(self) -> str:
        """A failure reported as exactly one line on stderr, without a traceback."""
        assert self.returncode != 0, f"expected failure, got 0; stdout={self.stdout!r}"
        assert "Traceback" not in self.stderr, self.stderr
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, f"expected one line on stderr, got: {self.stderr!r}"
        return lines[0]


def run_cli(
    script: str, *args: str, home: Path, timeout: float = 120.0, env: dict[str, str] | None = None
) -> Result:
    """Run ``script`` (e.g. ``oa-vm``) from the virtualenv with ``OA_VM_HOME=home``."""
    full_env = {**os.environ, "OA_VM_HOME": str(home), **(env or {})}
    proc = subprocess.run(  # fixed argv, no shell
        [str(BIN / script), *args],
        capture_output=True, text=True, timeout=timeout, env=full_env, stdin=subprocess.DEVNULL,
        check=False,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)
