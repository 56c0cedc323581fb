"""The worker host's status file stays one ``key=value`` line per key whatever a message holds.

``pool-wait`` reads the file over SSH (:func:`oa_vm.reach.host_status.parse_status`); a message
with a
line break (a docker log line, a metadata service's answer) must neither cut the message nor add
a key of its own (``state=done`` inside a failure message would read as success).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from oa_vm.reach.host_status import parse_status

ROOT = Path(__file__).resolve().parents[3]
BASH = shutil.which("bash") or "/bin/bash"


def _write_status(tmp_path: Path, *args: str) -> str:
    lib = str(ROOT / "infra/worker/lib.sh")
    done = subprocess.run([BASH, "-c", '. "$0"; write_status "$@"', lib,
                           *args], env={"PATH": "/usr/bin:/bin", "OA_VM_ROOT": str(tmp_path)},
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    return (tmp_path / "var/lib/oa-vm/status").read_text(encoding="utf-8")


@pytest.mark.parametrize("message", [
    "docker said:\nstate=done\nstep=ready",
    "a carriage\rreturn and a\ttab",
    "ends with a line break\n",
])
def test_a_message_with_line_breaks_stays_on_its_line(tmp_path: Path, message: str) -> None:
    text = _write_status(tmp_path, "failed", "guest", message)
    lines = text.splitlines()
    assert [line.partition("=")[0] for line in lines] == [
        "state", "step", "message", "started", "updated"]
    status = parse_status(text)
    assert (status["state"], status["step"]) == ("failed", "guest")
    flat = message.replace("\n", " ").replace("\r", " ").replace("\t", " ").strip()
    assert status["message"] == flat


def test_a_step_name_with_a_line_break_adds_no_key(tmp_path: Path) -> None:
    status = parse_status(_write_status(tmp_path, "running", "guest\nstate=done", "m"))
    assert status["state"] == "running" and status["step"] == "guest state=done"
