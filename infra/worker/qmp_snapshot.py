"""Save and load a whole-machine snapshot of the worker's VM through QEMU's monitor (QMP).

Run by ``reset.sh`` on the worker host, as root: the QMP socket is a unix socket in a 0700
folder that the container's QEMU listens on and that the guest cannot reach (no TCP port).

Snapshots are QMP jobs (``snapshot-save`` / ``snapshot-load``, QEMU 6.0 and later) with an
explicit list of devices: every writable qcow2 node. ``savevm`` would refuse the whole machine as
soon as one writable drive cannot hold a snapshot, and dockur's UEFI variables are a raw
``pflash`` drive; listing the disks leaves that drive (which tasks never change) out. The
machine's memory goes into the first of those disks.

Commands (one JSON line on stdout each, exit 0 on success, 1 on failure, 2 on bad usage):

- ``save TAG --record FILE --token T``: replace snapshot TAG with the machine as it is now and
  write TAG and T (the fingerprint the caller put into the guest just before) to FILE;
- ``load TAG --record FILE [--wait-url URL --wait-s S]``: put the machine back to snapshot TAG,
  make sure it runs, wait until URL (the guest's server) answers, and print the recorded token;
- ``info --record FILE``: the snapshots the disks hold and the recorded token, if any;
- ``wait-http URL SECONDS``: wait until URL answers 2xx.

Standard library only (the host's own python3).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
import urllib.error
import urllib.request
from typing import Any

CONNECT_TIMEOUT_S = 10.0
JOB_TIMEOUT_S = 900.0
"""How long a save or load may take: 8 GB of memory to write or read back from the volume."""
POLL_S = 0.05


class QmpError(Exception):
    """QMP answered with an error, or the socket could not be used."""


class Qmp:
    """One QMP session on a unix socket (capabilities negotiated on connect)."""

    def __init__(self, path: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(path)
        except OSError as exc:
            self.sock.close()
            raise QmpError(f"cannot reach QEMU's monitor at {path}: {exc}") from exc
        self.buffer = b""
        self._read()  # the greeting
        self.command("qmp_capabilities")

    def close(self) -> None:
        """End the session."""
        self.sock.close()

    def _read(self) -> dict[str, Any]:
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise QmpError("QEMU closed the monitor connection")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        message: dict[str, Any] = json.loads(line)
        return message

    def command(self, name: str, **arguments: Any) -> Any:
        """Run one command and return its ``return`` value (events in between are skipped)."""
        request: dict[str, Any] = {"execute": name}
        if arguments:
            request["arguments"] = arguments
        self.sock.sendall(json.dumps(request).encode() + b"\n")
        while True:
            message = self._read()
            if "return" in message:
                return message["return"]
            if "error" in message:
                raise QmpError(f"{name}: {message['error'].get('desc', message['error'])}")

    def run_job(self, name: str, job_id: str, timeout: float = JOB_TIMEOUT_S, **args: Any) -> None:
        """Start job ``name`` and wait for it to conclude; raise with its error if it failed."""
        self.command(name, **{"job-id": job_id}, **args)
        deadline = time.monotonic() + timeout
        while True:
            jobs = {job["id"]: job for job in self.command("query-jobs")}
            job = jobs.get(job_id)
            if job is None:
                raise QmpError(f"{name}: the job vanished")
            if job["status"] == "concluded":
                self.command("job-dismiss", id=job_id)
                if job.get("error"):
                    raise QmpError(f"{name}: {job['error']}")
                return
            if time.monotonic() > deadline:
                raise QmpError(f"{name}: not done after {timeout:.0f} s")
            time.sleep(POLL_S)

    def snapshot_disks(self) -> list[str]:
        """Node names of the writable qcow2 images (format nodes, not their files)."""
        nodes = self.command("query-named-block-nodes", flat=True)
        names = [
            str(n["node-name"]) for n in nodes
            if n.get("drv") == "qcow2" and not n.get("ro") and n.get("node-name")
        ]
        if not names:
            raise QmpError(
                "no writable qcow2 disk: snapshots need the VM's disk in qcow2 "
                "(dockur: DISK_FMT=qcow2)"
            )
        return names

    def snapshot_tags(self) -> list[str]:
        """Snapshot tags held by the disks."""
        tags: set[str] = set()
        for device in self.command("query-block"):
            image = (device.get("inserted") or {}).get("image") or {}
            if image.get("format") == "qcow2":
                tags.update(str(s["name"]) for s in image.get("snapshots", []))
        return sorted(tags)


def read_record(path: str) -> dict[str, Any]:
    """What ``save`` recorded (``{"tag", "token", "taken_at"}``), or ``{}``."""
    try:
        with open(path, encoding="utf-8") as handle:
            record: dict[str, Any] = json.load(handle)
            return record
    except (OSError, ValueError):
        return {}


def write_record(path: str, record: dict[str, Any]) -> None:
    """Write the record in one rename, so a reader never sees half of it."""
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(record, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def save(qmp: Qmp, tag: str, record: str, token: str) -> dict[str, Any]:
    """Replace snapshot ``tag`` with the running machine (memory and disks)."""
    disks = qmp.snapshot_disks()
    started = time.monotonic()
    if os.path.exists(record):
        os.unlink(record)  # a half-replaced snapshot must not pass for the recorded one
    if tag in qmp.snapshot_tags():
        qmp.run_job("snapshot-delete", "oa-vm-delete", tag=tag, devices=disks)
    qmp.run_job("snapshot-save", "oa-vm-save", tag=tag, vmstate=disks[0], devices=disks)
    taken = {"tag": tag, "token": token,
             "taken_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    write_record(record, taken)
    return {"ok": True, **taken, "disks": disks,
            "seconds": round(time.monotonic() - started, 3)}


def load(
    qmp: Qmp, tag: str, record: str, wait_url: str | None, wait_s: float
) -> dict[str, Any]:
    """Load snapshot ``tag``, leave the machine running, wait for ``wait_url``."""
    taken = read_record(record)
    disks = qmp.snapshot_disks()
    if taken.get("tag") != tag or tag not in qmp.snapshot_tags():
        raise QmpError(f"no clean snapshot {tag!r} was taken on this worker (take one first)")
    started = time.monotonic()
    qmp.run_job("snapshot-load", "oa-vm-load", tag=tag, vmstate=disks[0], devices=disks)
    if not qmp.command("query-status").get("running"):
        qmp.command("cont")  # a machine stopped before the load stays stopped otherwise
    loaded = time.monotonic()
    result = {"ok": True, **taken, "load_s": round(loaded - started, 3)}
    if wait_url:
        wait_http(wait_url, wait_s)
        result["wait_s"] = round(time.monotonic() - loaded, 3)
    return result


def wait_http(url: str, seconds: float) -> dict[str, Any]:
    """Wait until ``url`` answers 2xx (each try bounded; no fixed sleep beyond the poll)."""
    started = time.monotonic()
    deadline = started + seconds
    last = "no answer"
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if 200 <= response.status < 300:
                    return {"ok": True, "url": url,
                            "seconds": round(time.monotonic() - started, 3)}
                last = f"HTTP {response.status}"
        except (urllib.error.URLError, OSError) as exc:
            last = str(exc)
        if time.monotonic() > deadline:
            raise QmpError(f"{url} did not answer within {seconds:.0f} s ({last})")
        time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    """``qmp_snapshot.py [--socket PATH] [--record FILE] save|load|info|wait-http ...``."""
    parser = argparse.ArgumentParser(prog="qmp_snapshot.py")
    parser.add_argument("--socket", default="/var/lib/oa-vm/qmp/qmp.sock")
    parser.add_argument("--record", default="/var/lib/oa-vm/clean-snapshot.json")
    sub = parser.add_subparsers(dest="command", required=True)
    saver = sub.add_parser("save")
    saver.add_argument("tag")
    saver.add_argument("--token", required=True)
    loader = sub.add_parser("load")
    loader.add_argument("tag")
    loader.add_argument("--wait-url")
    loader.add_argument("--wait-s", type=float, default=300.0)
    sub.add_parser("info")
    waiter = sub.add_parser("wait-http")
    waiter.add_argument("url")
    waiter.add_argument("seconds", type=float)
    args = parser.parse_args(argv)
    try:
        if args.command == "wait-http":
            result = wait_http(args.url, args.seconds)
        else:
            qmp = Qmp(args.socket)
            try:
                if args.command == "save":
                    result = save(qmp, args.tag, args.record, args.token)
                elif args.command == "load":
                    result = load(qmp, args.tag, args.record, args.wait_url, args.wait_s)
                else:
                    result = {"ok": True, "snapshots": qmp.snapshot_tags(),
                              **read_record(args.record)}
            finally:
                qmp.close()
    except (QmpError, OSError, ValueError) as exc:
        print(json.dumps({"ok": False, "error": str(exc)}))
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
