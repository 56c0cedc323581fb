"""A restore of a 2 GB guest through the shipped ``reset.sh``: the QMP client waits for its job's
events up to a deadline sized to the guest's RAM, not for a socket timeout.

The guest's RAM is 2 GB of non-zero pages (:func:`bench.tiny_guest.start_guest`'s ``prefill``),
so the vmstate is that large; its disk goes through QEMU's own ``throttle`` filter at
:data:`DISK_MIBPS` (which, on QEMU 7.2, holds back the guest's I/O but not the vmstate's). While
the load runs QEMU sends no event, and the client's socket carries nothing: a second monitor,
which QEMU sends the same events, measures that silence. How long it lasts is the machine's
(from about 5 s to over 10 s on a busy 2-core machine, which the old client's 10 s socket
timeout did not survive), so the test asserts that the load was waited through, not its length.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench import tiny_guest

RESET_SH = Path(__file__).resolve().parents[2] / "infra" / "worker" / "reset.sh"
MEMORY_MB = 2048
DISK_MIBPS = 48.0


def _unavailable() -> str | None:
    try:
        tiny_guest.check_available()
    except tiny_guest.GuestUnavailable as exc:
        return str(exc)
    return None


pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    _unavailable() is not None, reason=f"QEMU rehearsal: {_unavailable()}")]


class Watcher:
    """Sends ``query-status`` on a second monitor in a loop, noting when each event arrives:
    QEMU sends every monitor its events, so the longest gap between two of them during the
    load is how long the client's own socket, which only waits for its job's events, heard
    nothing. (How long ``query-status`` waits is no measure of that: the load job yields to
    the main loop while the throttled disk reads, so the monitor may answer meanwhile.)"""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(600)
        self.sock.connect(str(path))
        self.lines = self.sock.makefile("rb")
        self.lines.readline()
        self.ask("qmp_capabilities")
        self.events: list[float] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def ask(self, name: str) -> dict[str, object]:
        self.sock.sendall(json.dumps({"execute": name}).encode() + b"\n")
        while True:
            message: dict[str, object] = json.loads(self.lines.readline())
            if "return" in message or "error" in message:
                return message
            if "event" in message:
                self.events.append(time.monotonic())

    def _loop(self) -> None:
        while not self.done.is_set():
            self.ask("query-status")
            self.done.wait(0.5)

    @property
    def longest_silence(self) -> float:
        """The longest time between two events (the load's job: created ... concluded)."""
        return max((b - a for a, b in zip(self.events, self.events[1:], strict=False)),
                   default=0.0)

    def close(self) -> None:
        self.done.set()
        self.thread.join(timeout=600)
        self.sock.close()


@pytest.fixture
def big_guest() -> Iterator[tuple[Path, tiny_guest.TinyGuest, Path]]:
    with tempfile.TemporaryDirectory(prefix="oa-big-") as folder:
        root = Path(folder)
        qmp = root / "var" / "lib" / "oa-vm" / "qmp" / "qmp.sock"
        monitor = root / "watch.sock"
        guest = tiny_guest.start_guest(root, qmp, memory_mb=MEMORY_MB, disk_mibps=DISK_MIBPS,
                                       monitor=monitor, prefill=True)
        try:
            guest.wait_serving(timeout=600)
            yield root, guest, monitor
        finally:
            guest.stop()


def _reset(root: Path, guest: tiny_guest.TinyGuest, *args: str) -> tuple[int, dict[str, object]]:
    env = dict(os.environ, OA_VM_ROOT=str(root),
               **guest.reset_env(wait_s=300))
    done = subprocess.run([str(RESET_SH), *args], env=env, capture_output=True, text=True,
                          timeout=1800)
    lines = done.stdout.strip().splitlines()
    assert lines, f"reset.sh {args} printed nothing; stderr: {done.stderr}"
    return done.returncode, json.loads(lines[-1])


def test_a_2gb_restore_from_a_slow_disk(
    big_guest: tuple[Path, tiny_guest.TinyGuest, Path],
) -> None:
    root, vm, monitor = big_guest
    vm.set(mem="clean-mem", disk="clean-disk")
    status, answer = _reset(root, vm, "take", "fp-big")
    assert status == 0, answer
    vmstate = subprocess.run(["qemu-img", "snapshot", "-U", "-l", str(root / "disk.qcow2")],
                             capture_output=True, text=True, timeout=60).stdout
    assert " GiB" in vmstate or "G " in vmstate, vmstate  # the vmstate is gigabytes

    vm.set(mem="dirty", disk="dirty")
    watcher = Watcher(monitor)
    assert watcher.ask("stop").get("return") == {}  # a machine stopped before the load
    watcher.thread.start()
    try:
        status, answer = _reset(root, vm, "restore")
    finally:
        watcher.close()
    assert status == 0, answer
    assert vm.state() == {"mem": "clean-mem", "disk": "clean-disk"}
    # The load was seen: the job's events came before and after a silence of the load's length.
    assert len(watcher.events) >= 4 and watcher.longest_silence > 1.0, watcher.events
