"""A running command's standard output read line by line in a thread, so that a test can wait
for the line that says the command reached some point (then signal it, stop what it talks to)
while the command goes on writing."""

from __future__ import annotations

import subprocess
import threading

from tests.support.waiting import WAIT_LIMIT_S, wait_until


class OutputLines:
    """The lines ``proc`` (started with ``stdout=PIPE, text=True``) has written so far."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    def text(self) -> str:
        """Everything read so far."""
        return "".join(self.lines)

    def wait_for(self, marker: str, limit: float = WAIT_LIMIT_S) -> str:
        """Wait until a line holding ``marker`` was written; returns the output up to then
        (fails, with the output, if the command ends or ``limit`` passes first)."""

        def seen() -> bool:
            if any(marker in line for line in list(self.lines)):
                return True
            assert self._reader.is_alive(), f"ended before {marker!r}:\n{self.text()}"
            return False

        wait_until(seen, lambda: f"{marker!r} in the output:\n{self.text()}", limit)
        return self.text()

    def finish(self) -> str:
        """Wait for the command's output to end (the command closed it); returns all of it."""
        self._reader.join(timeout=WAIT_LIMIT_S)
        return self.text()
