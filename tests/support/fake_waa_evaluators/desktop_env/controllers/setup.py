"""Stand-in for WAA's ``SetupController`` (tests only): steps act on the desktop folder."""

from __future__ import annotations

import time

from desktop_env import _desktop


class SetupController:
    """Runs setup steps by name, as WAA's does (``_<type>_setup(**parameters)``)."""

    def __init__(self, vm_ip: str, cache_dir: str) -> None:
        self.vm_ip = vm_ip
        self.cache_dir = cache_dir

    def _create_file_setup(self, path: str, content: str = "") -> None:
        _desktop.resolve(path).write_text(content, encoding="utf-8")

    def _append_setup(self, path: str, content: str) -> None:
        target = _desktop.resolve(path)
        target.write_text(target.read_text(encoding="utf-8") + content, encoding="utf-8")

    def _sleep_setup(self, seconds: float) -> None:
        time.sleep(min(float(seconds), 0.01))

    def _launch_setup(self, command: str) -> None:
        raise RuntimeError(f"cannot launch {command!r} on the stand-in desktop")
