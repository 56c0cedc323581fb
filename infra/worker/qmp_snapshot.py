"""Save and load a whole-machine snapshot of the worker's VM through QEMU's monitor (QMP).

Run by ``reset.sh`` on the worker host, as root: the QMP socket is a unix socket in a 0700
folder that the container's QEMU listens on and that the guest cannot reach (no TCP port).

Snapshots are QMP jobs (``snapshot-save`` / ``snapshot-load``, QEMU 6.0 and later) with an
explicit list of devices: every writable qcow2 node. ``savevm`` would refuse the whole machine as
soon as one writable drive cannot hold a snapshot, and dockur's UEFI variables are a raw
``pflash`` drive; listing the disks leaves that drive (which tasks never change) out. The
machine's memory goes into the first of those disks.

``qmp_snapshot.py SOCKET RECORD save TAG TOKEN | load TAG``, one JSON line on stdout
(``{"ok": true, ...}``, exit 0; ``{"ok": false, "error"}``, exit 1):

- ``save``: replace snapshot TAG with the machine as it is now, then write ``{"tag", "token",
  "taken_at"}`` to RECORD (TOKEN: the fingerprint the caller put into the guest just before);
- ``load``: put the machine back to snapshot TAG, make sure it runs, print RECORD and the
  seconds it took.

Standard library only (the host's own python3). Its docstrings and comments are stripped when
shipped (``cloud_init.ship_python``): AWS caps a worker's whole user data at 16 KiB.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
from typing import Any

JOB_TIMEOUT_S = 900.0
"""A save or load moves the machine's memory (8 GB) to or from the volume."""


class QmpError(Exception):
    """QMP answered with an error, or the socket could not be used."""


class Qmp:
    """One QMP session on a unix socket (capabilities negotiated on connect)."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(10)
        try:
            self.sock.connect(path)
        except OSError as exc:
            raise QmpError(f"QEMU's monitor {path}: {exc}") from exc
        self.lines = self.sock.makefile("rb")
        self.lines.readline()  # the greeting
        self.run("qmp_capabilities")

    def run(self, name: str, **arguments: Any) -> Any:
        """Run one command and return its ``return`` value (events in between are skipped)."""
        self.sock.sendall(json.dumps({"execute": name, "arguments": arguments}).encode() + b"\n")
        while True:
            line = self.lines.readline()
            if not line:
                raise QmpError("QEMU closed the monitor connection")
            message = json.loads(line)
            if "error" in message:
                raise QmpError(f"{name}: {message['error'].get('desc')}")
            if "return" in message:
                return message["return"]

    def job(self, name: str, **arguments: Any) -> None:
        """Run job ``name`` to its end; raise with its error if it failed."""
        self.run(name, **{"job-id": name}, **arguments)
        deadline = time.monotonic() + JOB_TIMEOUT_S
        while time.monotonic() < deadline:
            job = next((j for j in self.run("query-jobs") if j["id"] == name), None)
            if job is None or job["status"] == "concluded":
                if job is not None:
                    self.run("job-dismiss", id=name)
                if job is None or job.get("error"):
                    raise QmpError(f"{name}: {job and job.get('error') or 'the job vanished'}")
                return
            time.sleep(0.05)
        raise QmpError(f"{name}: not done after {JOB_TIMEOUT_S:.0f} s")

    def disks(self) -> list[str]:
        """Node names of the writable qcow2 images."""
        nodes = [n["node-name"] for n in self.run("query-named-block-nodes", flat=True)
                 if n.get("drv") == "qcow2" and not n.get("ro")]
        if not nodes:
            raise QmpError("no writable qcow2 disk (dockur: DISK_FMT=qcow2)")
        return nodes


def read_record(path: str) -> dict[str, Any]:
    """What ``save`` recorded, or ``{}``."""
    try:
        with open(path) as handle:
            record: dict[str, Any] = json.load(handle)
    except (OSError, ValueError):
        return {}
    return record


def main(args: list[str]) -> dict[str, Any]:
    """Run one command (see the module's docstring) and return its answer."""
    qmp_path, record_path, command, *rest = args
    record = read_record(record_path)
    qmp = Qmp(qmp_path)
    tag = rest[0]
    disks = qmp.disks()
    started = time.monotonic()
    if command == "save":
        if os.path.exists(record_path):
            os.unlink(record_path)  # a half-replaced snapshot must not pass for the recorded one
        with contextlib.suppress(QmpError):  # there may be none yet
            qmp.job("snapshot-delete", tag=tag, devices=disks)
        qmp.job("snapshot-save", tag=tag, vmstate=disks[0], devices=disks)
        record = {"tag": tag, "token": rest[1],
                  "taken_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        with open(record_path + ".tmp", "w") as handle:
            json.dump(record, handle)
        os.replace(record_path + ".tmp", record_path)
    elif record.get("tag") != tag:
        raise QmpError(f"no clean snapshot {tag!r} was taken on this worker")
    else:
        qmp.job("snapshot-load", tag=tag, vmstate=disks[0], devices=disks)
        if not qmp.run("query-status")["running"]:
            qmp.run("cont")  # a machine stopped before the load stays stopped otherwise
    return {**record, "disks": disks, "seconds": round(time.monotonic() - started, 3)}


if __name__ == "__main__":
    try:
        answer = {"ok": True, **main(sys.argv[1:])}
    except (QmpError, OSError, ValueError) as exc:
        answer = {"ok": False, "error": str(exc)}
    print(json.dumps(answer))
    sys.exit(0 if answer["ok"] else 1)
