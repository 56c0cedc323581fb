"""Save and load a whole-machine snapshot of the worker's VM through QEMU's monitor (QMP).

Run by ``reset.sh`` on the worker host, as root: the QMP socket is a unix socket in a 0700
folder that the container's QEMU listens on and that the guest cannot reach (no TCP port).

Snapshots are QMP jobs (``snapshot-save`` / ``snapshot-load``, QEMU 6.0 and later) with an
explicit list of devices: every writable qcow2 node. ``savevm`` would refuse the whole machine as
soon as one writable drive cannot hold a snapshot, and dockur's UEFI variables are a raw
``pflash`` drive; listing the disks leaves that drive (which tasks never change) out, and a
read-only qcow2 node cannot take a snapshot at all. The machine's memory goes into the first disk.

``qmp_snapshot.py SOCKET RECORD save TAG TOKEN | load | check``, one JSON line on stdout
(``{"ok": true, ...}``, exit 0; ``{"ok": false, "error"}``, exit 1, or 3 when QEMU refuses
snapshots on this machine at all: a migration blocker):

- ``save``: snapshot the machine as it is now under a new tag (``TAG-<time>``: a save never
  overwrites the snapshot the record names), then replace RECORD (``{"tag", "token",
  "taken_at"}``; TOKEN: the fingerprint the caller put into the guest just before), then delete
  the older snapshots of TAG. A save that fails half-way leaves the old record and its snapshot;
  a crash between the save and the record leaves a snapshot the next save deletes;
- ``load``: put the machine back to the recorded snapshot, make sure it runs, print RECORD and
  the seconds it took;
- ``clock URL``: after a load the guest's clock is the snapshot's time (Windows reads the RTC
  only when it boots), and WAA's checkers compare dates: set it to the host's time through the
  guest's own WAA server (``POST URL``, WAA's ``/execute``, with :data:`CLOCK_COMMAND`, or
  ``OA_VM_CLOCK_COMMAND``: ``@MS@`` becomes the host's time in epoch milliseconds, and the
  command prints the guest's time after it in the same unit), then check what the guest says
  against the host's clock: off by more than ``OA_VM_CLOCK_MAX_SKEW_S`` (5 s) fails;
- ``check``: RECORD with QEMU's command line and its ``-cpu`` value (read from
  ``/proc/PID/cmdline`` of the process at the other end of the socket); exit 3 while QEMU names
  a migration blocker (``query-migrate``'s ``blocked-reasons``: a snapshot is refused while any
  exists).

A save or load holds QEMU's main loop: QEMU answers nothing until the job ends. So the client
sends the job and then only reads, waiting for the job's own ``JOB_STATUS_CHANGE`` events, up to
a deadline sized to the guest's RAM (:func:`job_deadline`), never a fixed socket timeout. Job ids
are unique per call; concluded jobs left by an earlier client are dismissed first.

Standard library only (the host's own python3). Its docstrings and comments are stripped when
shipped (``cloud_init.ship_python``): AWS caps a worker's whole user data at 16 KiB.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import sys
import time
from typing import Any

COMMAND_TIMEOUT_S = 30.0
"""Any command but a job's: QEMU answers at once when no job holds its main loop."""
JOB_BASE_S = 60.0
MIN_MIBPS = float(os.environ.get("OA_VM_SNAPSHOT_MIN_MIBPS", "32"))
"""The slowest disk a snapshot may meet: a throttled EBS volume reading its blocks lazily from
S3 is far slower than gp3's 125 MiB/s baseline (docs/performance.md)."""


CLOCK_COMMAND = ('powershell -NoProfile -Command "Set-Date -Date ([DateTimeOffset]::'
                 'FromUnixTimeMilliseconds(@MS@).LocalDateTime) | Out-Null; '
                 '[DateTimeOffset]::UtcNow.ToUnixTimeMilliseconds()"')
"""Windows' own clock set from the host's (needs the WAA server's administrator rights, which
dockur's auto-logon user has); no time server: a guest without egress has none to ask."""


class QmpError(Exception):
    """Every failure of this program: QMP answered with an error, a job failed or ran out of
    time, the socket or a file could not be used. ``blocked``: QEMU refuses snapshots here."""

    def __init__(self, message: str, blocked: bool = False) -> None:
        super().__init__(message)
        self.blocked = blocked


def job_deadline(ram_bytes: int) -> float:
    """Seconds a save or load of ``ram_bytes`` of guest RAM may take on the slowest disk."""
    return JOB_BASE_S + ram_bytes / (MIN_MIBPS * 1024 * 1024)


class Qmp:
    """One QMP session on a unix socket (capabilities negotiated on connect)."""

    def __init__(self, path: str) -> None:
        self.events: list[dict[str, Any]] = []
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(COMMAND_TIMEOUT_S)
        try:
            self.sock.connect(path)
            self.lines = self.sock.makefile("rb")
            self.read()  # the greeting
        except OSError as exc:
            raise QmpError(f"QEMU's monitor {path}: {exc}") from exc
        self.run("qmp_capabilities")

    def read(self, deadline: float | None = None) -> dict[str, Any]:
        """The next message; events are kept for :meth:`wait_job`."""
        try:
            if deadline is not None:
                self.sock.settimeout(max(0.1, deadline - time.monotonic()))
            line = self.lines.readline()
        except OSError as exc:
            raise QmpError(f"QEMU's monitor: {exc}") from exc
        finally:
            self.sock.settimeout(COMMAND_TIMEOUT_S)
        if not line:
            raise QmpError("QEMU closed the monitor connection")
        try:
            message: dict[str, Any] = json.loads(line)
        except ValueError as exc:
            raise QmpError(f"QEMU's monitor sent {line[:80]!r}") from exc
        return message

    def run(self, name: str, until: float | None = None, **arguments: Any) -> Any:
        """Run one command and return its ``return`` value (waiting up to ``until`` when given:
        QEMU may start a job's work before it writes the command's answer)."""
        try:
            self.sock.sendall(json.dumps({"execute": name, "arguments": arguments}).encode()
                              + b"\n")
        except OSError as exc:
            raise QmpError(f"QEMU's monitor: {exc}") from exc
        while True:
            message = self.read(until)
            if "event" in message:
                self.events.append(message)
            elif "error" in message:
                raise QmpError(f"{name}: {message['error'].get('desc')}")
            elif "return" in message:
                return message["return"]

    def clear_jobs(self, deadline: float) -> None:
        """Dismiss jobs an earlier client left concluded; wait for one still running."""
        for job in self.run("query-jobs"):
            if job["status"] != "concluded":
                self.wait_job(job["id"], deadline)
            self.run("job-dismiss", id=job["id"])

    def wait_job(self, job_id: str, deadline: float) -> None:
        """Read until job ``job_id`` concluded, or raise at ``deadline``."""
        while time.monotonic() < deadline:
            while self.events:
                event = self.events.pop(0)
                data = event.get("data") or {}
                if (event.get("event") == "JOB_STATUS_CHANGE" and data.get("id") == job_id
                        and data.get("status") == "concluded"):
                    return
            self.events.append(self.read(deadline))
        raise QmpError(f"{job_id}: not done after the deadline")

    def job(self, name: str, deadline: float, **arguments: Any) -> None:
        """Run job ``name`` to its end under a unique id; raise with its error if it failed."""
        job_id = f"oa-vm-{name}-{os.getpid()}-{time.time_ns()}"
        self.run(name, deadline, **{"job-id": job_id}, **arguments)
        self.wait_job(job_id, deadline)
        job = next((j for j in self.run("query-jobs") if j["id"] == job_id), None)
        if job is None:
            raise QmpError(f"{name}: the job vanished")
        self.run("job-dismiss", id=job_id)
        if job.get("error"):
            raise QmpError(f"{name}: {job['error']}")

    def disks(self) -> list[str]:
        """Node names of the writable qcow2 images."""
        nodes = [n["node-name"] for n in self.run("query-named-block-nodes", flat=True)
                 if n.get("drv") == "qcow2" and not n.get("ro")]
        if not nodes:
            raise QmpError("no writable qcow2 disk (dockur: DISK_FMT=qcow2)")
        return nodes

    def snapshots(self, node: str) -> list[str]:
        """Tags of the internal snapshots held by qcow2 node ``node``."""
        for n in self.run("query-named-block-nodes", flat=True):
            if n.get("node-name") == node:
                return [s["name"] for s in n.get("image", {}).get("snapshots", [])]
        return []

    def blockers(self) -> list[str]:
        """Why QEMU would refuse a snapshot now (empty: it would not)."""
        reasons: list[str] = self.run("query-migrate").get("blocked-reasons", [])
        return reasons

    def deadline(self) -> float:
        """When a save or load of this guest's RAM must have ended."""
        ram = int(self.run("query-memory-size-summary")["base-memory"])
        return time.monotonic() + job_deadline(ram)

    def qemu(self) -> dict[str, Any]:
        """QEMU's command line and ``-cpu`` value (from the process at the socket's far end)."""
        pid = struct.unpack("3i", self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                       struct.calcsize("3i")))[0]
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                argv = handle.read().decode(errors="replace").split("\0")[:-1]
        except OSError:
            argv = []
        cpu = next((argv[i + 1] for i in range(len(argv) - 1) if argv[i] == "-cpu"), None)
        return {"pid": pid, "cmdline": argv, "cpu": cpu}


def read_record(path: str) -> dict[str, Any]:
    """What ``save`` recorded, or ``{}``."""
    try:
        with open(path) as handle:
            record: dict[str, Any] = json.load(handle)
    except (OSError, ValueError):
        return {}
    return record


def write_record(path: str, record: dict[str, Any]) -> None:
    """Replace RECORD in one rename (a reader sees the old record or the new one)."""
    try:
        with open(path + ".tmp", "w") as handle:
            json.dump(record, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(path + ".tmp", path)
    except OSError as exc:
        raise QmpError(f"could not write the snapshot record {path}: {exc}") from exc


def refuse_if_blocked(qmp: Qmp, detail: str = "") -> None:
    """Raise (``blocked``) while QEMU names a migration blocker: a snapshot would be refused."""
    reasons = qmp.blockers()
    if reasons:
        raise QmpError("QEMU refuses snapshots on this machine: " + "; ".join(reasons) + detail,
                       blocked=True)


def save(qmp: Qmp, record_path: str, base: str, token: str) -> dict[str, Any]:
    """See the module's docstring."""
    refuse_if_blocked(qmp)
    disks = qmp.disks()
    deadline = qmp.deadline()
    qmp.clear_jobs(deadline)
    tag = f"{base}-{time.time_ns()}"
    qmp.job("snapshot-save", deadline, tag=tag, vmstate=disks[0], devices=disks)
    record = {"tag": tag, "token": token,
              "taken_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    write_record(record_path, record)
    for old in sorted(set(qmp.snapshots(disks[0]))):
        if old != tag and old.startswith(base):
            with contextlib.suppress(QmpError):  # a stale one costs space; the next save retries
                qmp.job("snapshot-delete", deadline, tag=old, devices=disks)
    return {**record, "disks": disks}


def load(qmp: Qmp, record: dict[str, Any], base: str) -> dict[str, Any]:
    """See the module's docstring."""
    tag = str(record.get("tag") or "")
    if not tag.startswith(base):
        raise QmpError(f"no clean snapshot {base!r} was taken on this worker")
    disks = qmp.disks()
    deadline = qmp.deadline()
    qmp.clear_jobs(deadline)
    qmp.job("snapshot-load", deadline, tag=tag, vmstate=disks[0], devices=disks)
    if not qmp.run("query-status")["running"]:
        qmp.run("cont")  # a machine stopped before the load stays stopped otherwise
    return {**record, "disks": disks}


def resync_clock(url: str) -> dict[str, Any]:
    """Set the guest's clock to the host's and check it (see the module's docstring)."""
    import urllib.request

    template = os.environ.get("OA_VM_CLOCK_COMMAND") or CLOCK_COMMAND
    limit = float(os.environ.get("OA_VM_CLOCK_MAX_SKEW_S") or 5)
    sent = time.time_ns() // 1_000_000
    body = json.dumps({"command": template.replace("@MS@", str(sent)), "shell": True})
    request = urllib.request.Request(url, data=body.encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=COMMAND_TIMEOUT_S) as response:
            answer = json.load(response)
        back = time.time_ns() // 1_000_000
        said = str(answer.get("output") or "").split()
        guest = int(said[-1]) if said and answer.get("returncode") == 0 else None
    except (OSError, ValueError) as exc:
        raise QmpError(f"the guest's clock could not be set through {url}: {exc}") from exc
    if guest is None:
        raise QmpError(f"the guest's clock could not be set: {str(answer)[:300]}")
    # The guest read its clock, just set to `sent`, between `sent` and `back` by the host's.
    skew = max(sent - guest, guest - back, 0) / 1000
    if skew > limit:
        raise QmpError(f"the guest's clock is {skew:.1f} s off the host's after the resync "
                       f"(limit {limit:g} s)")
    return {"clock_skew_s": skew}


def main(args: list[str]) -> dict[str, Any]:
    """Run one command (see the module's docstring) and return its answer."""
    if len(args) < 3:
        raise QmpError("usage: qmp_snapshot.py SOCKET RECORD save TAG TOKEN | load TAG | check "
                       "| clock URL")
    qmp_path, record_path, command, *rest = args
    if command == "clock" and len(rest) == 1:
        return resync_clock(rest[0])  # the guest's WAA server, not QEMU's monitor
    record = read_record(record_path)
    qmp = Qmp(qmp_path)
    started = time.monotonic()
    if command == "save" and len(rest) == 2:
        answer = save(qmp, record_path, rest[0], rest[1])
    elif command == "load" and len(rest) == 1:
        answer = load(qmp, record, rest[0])
    elif command == "check":
        qemu = qmp.qemu()
        refuse_if_blocked(qmp, f" (-cpu {qemu['cpu']})")
        return {**record, "blockers": [], "qemu": qemu}
    else:
        raise QmpError(f"unknown command {command!r}")
    return {**answer, "seconds": round(time.monotonic() - started, 3)}


if __name__ == "__main__":
    code = 0
    try:
        answer = {"ok": True, **main(sys.argv[1:])}
    except Exception as exc:  # every failure is one JSON line, never a traceback
        blocked = isinstance(exc, QmpError) and exc.blocked
        answer = {"ok": False, "error": str(exc) or type(exc).__name__}
        code = 3 if blocked else 1
    print(json.dumps(answer))
    sys.exit(code)
