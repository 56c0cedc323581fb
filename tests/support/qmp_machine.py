"""QEMU's monitor (QMP) for a rehearsal host whose "machine" is a simulated worker.

Run as ``python -m tests.support.qmp_machine SOCKET SCORING_URL [--blocked REASON]
[--ram BYTES] [-- QEMU ARGS...]``. It listens on the unix socket ``SOCKET`` where a cloud
worker's QEMU listens (``lib.sh``'s ``OA_VM_QMP_SOCKET``), so the shipped ``reset.sh`` and
``qmp_snapshot.py`` run unchanged against it. What they ask of QEMU is answered in QEMU's own
shapes (QEMU 8/9 ``qapi/job.json``, ``qapi/migration.json``, ``qapi/block-core.json``):

- ``snapshot-save`` / ``snapshot-load`` / ``snapshot-delete`` are jobs: the command answers
  ``{}`` at once, then the job goes ``created -> running -> waiting -> pending -> concluded``
  in ``JOB_STATUS_CHANGE`` events and stays in ``query-jobs`` (with ``error`` when it failed)
  until ``job-dismiss``. Saving and loading the machine is the simulated worker's own snapshot
  of its whole desktop (``POST /oa-vm/snapshot``, ``POST /oa-vm/restore`` on its scoring
  server: :mod:`infra.local.snapshot`), so a restore really puts the guest's files back;
- ``query-migrate`` names ``--blocked`` reasons in ``blocked-reasons`` (QEMU's words for
  dockur's ``+invtsc`` under KVM: "State blocked by non-migratable CPU device (invtsc flag)");
- ``query-named-block-nodes`` lists one writable qcow2 node (an automatic node name, as
  dockur's ``-drive`` gets) with the snapshots it holds, over its ``file`` node.

The arguments after ``--`` stay in this process's command line, which is what
``qmp_snapshot.py check`` reads (``/proc/PID/cmdline`` of the socket's peer): give it the
arguments dockur's scripts assemble (:func:`tests.support.dockur_qemu.dockur_args`) and the
recorded ``-cpu`` is dockur's.

This replaces only QEMU (the cloud worker's VM cannot run here with a simulated worker inside);
``tests/integration/test_dockur_qemu_reset.py`` runs the same scripts against a real QEMU.
"""

from __future__ import annotations

import argparse
import json
import os
import socketserver
import sys
import threading
import time
import urllib.request
from typing import Any

NODE = "#block145"
HTTP_TIMEOUT_S = 120.0


class Machine:
    """The monitor's view of the machine: its jobs, snapshots and run state."""

    def __init__(self, scoring_url: str, blocked: list[str], ram: int) -> None:
        self.scoring_url = scoring_url.rstrip("/")
        self.blocked = blocked
        self.ram = ram
        self.lock = threading.Lock()
        self.jobs: dict[str, dict[str, Any]] = {}
        self.snapshots: list[str] = []
        self.running = True

    def _post(self, path: str, body: dict[str, Any]) -> None:
        request = urllib.request.Request(
            self.scoring_url + path, data=json.dumps(body).encode(), method="POST",
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as answer:
            answer.read()

    def run_job(self, kind: str, arguments: dict[str, Any]) -> str | None:
        """Do the job's work; its error (QEMU's words), or None."""
        tag = str(arguments.get("tag"))
        if self.blocked and kind == "snapshot-save":
            return self.blocked[0]
        if arguments.get("devices") != [NODE] or (kind != "snapshot-delete"
                                                 and arguments.get("vmstate") != NODE):
            return f"Could not find node '{arguments.get('vmstate')}'"
        try:
            if kind == "snapshot-save":
                self._post("/oa-vm/snapshot", {"token": tag})
                self.snapshots.append(tag)
            elif kind == "snapshot-load":
                if tag not in self.snapshots:
                    return f"Snapshot '{tag}' does not exist in one or more devices"
                self._post("/oa-vm/restore", {})
                self.running = True
            elif tag in self.snapshots:
                self.snapshots.remove(tag)
            else:
                return f"Snapshot '{tag}' not found"
        except OSError as exc:
            return f"Error while writing VM state: {exc}"
        return None


class Monitor(socketserver.StreamRequestHandler):
    """One QMP session."""

    server: MonitorServer

    def send(self, message: dict[str, Any]) -> None:
        self.wfile.write(json.dumps(message).encode() + b"\n")
        self.wfile.flush()

    def event(self, name: str, data: dict[str, Any]) -> None:
        now = time.time()
        self.send({"event": name, "data": data,
                   "timestamp": {"seconds": int(now), "microseconds": int(now % 1 * 1e6)}})

    def handle(self) -> None:
        self.send({"QMP": {"version": {"qemu": {"major": 9, "minor": 2, "micro": 0},
                                       "package": "rehearsal"}, "capabilities": ["oob"]}})
        negotiated = False
        for line in self.rfile:
            try:
                request = json.loads(line)
            except ValueError:
                self.send({"error": {"class": "GenericError", "desc": "JSON parse error"}})
                continue
            name = request.get("execute")
            if not negotiated and name != "qmp_capabilities":
                self.send({"error": {"class": "CommandNotFound",
                                     "desc": "Expecting capabilities negotiation with "
                                             "'qmp_capabilities'"}})
                continue
            negotiated = True
            with self.server.machine.lock:
                self.command(str(name), request.get("arguments") or {})

    def command(self, name: str, arguments: dict[str, Any]) -> None:
        machine = self.server.machine
        if name in ("snapshot-save", "snapshot-load", "snapshot-delete"):
            job_id = str(arguments.get("job-id"))
            if job_id in machine.jobs:
                self.send({"error": {"class": "GenericError",
                                     "desc": f"Job ID '{job_id}' already in use"}})
                return
            self.send({"return": {}})
            job: dict[str, Any] = {"id": job_id, "type": name, "status": "created",
                                   "current-progress": 0, "total-progress": 1}
            machine.jobs[job_id] = job
            for status in ("created", "running"):
                self.event("JOB_STATUS_CHANGE", {"id": job_id, "status": status})
            error = machine.run_job(name, arguments)
            job.update({"status": "concluded", "current-progress": 1})
            if error:
                job["error"] = error
            for status in ("waiting", "pending", "concluded"):
                self.event("JOB_STATUS_CHANGE", {"id": job_id, "status": status})
            return
        answers: dict[str, Any] = {
            "qmp_capabilities": {},
            "query-migrate": ({"blocked-reasons": machine.blocked, "blocked": True}
                              if machine.blocked else {"blocked": False}),
            "query-memory-size-summary": {"base-memory": machine.ram, "plugged-memory": 0},
            "query-jobs": list(machine.jobs.values()),
            "query-status": {"running": machine.running,
                             "status": "running" if machine.running else "paused"},
            "query-named-block-nodes": [
                {"node-name": NODE, "drv": "qcow2", "ro": False, "file": "data.qcow2",
                 "image": {"filename": "data.qcow2", "format": "qcow2",
                           "snapshots": [{"name": t, "id": str(i + 1)}
                                         for i, t in enumerate(machine.snapshots)]}},
                {"node-name": "#block072", "drv": "file", "ro": False, "file": "data.qcow2",
                 "image": {"filename": "data.qcow2", "format": "file"}},
            ],
        }
        if name == "job-dismiss":
            job_id = str(arguments.get("id"))
            job = machine.jobs.get(job_id)
            if job is None:
                self.send({"error": {"class": "GenericError", "desc": "Job not found"}})
                return
            if job["status"] != "concluded":
                self.send({"error": {"class": "GenericError", "desc":
                                     f"Job '{job_id}' in state '{job['status']}' cannot "
                                     "accept command verb 'dismiss'"}})
                return
            del machine.jobs[job_id]
            self.send({"return": {}})
            self.event("JOB_STATUS_CHANGE", {"id": job_id, "status": "null"})
        elif name in ("stop", "cont"):
            machine.running = name == "cont"
            self.send({"return": {}})
        elif name in answers:
            self.send({"return": answers[name]})
        else:
            self.send({"error": {"class": "CommandNotFound",
                                 "desc": f"The command {name} has not been found"}})


class MonitorServer(socketserver.ThreadingUnixStreamServer):
    """The unix socket server; one :class:`Machine` for every session."""

    daemon_threads = True

    def __init__(self, path: str, machine: Machine) -> None:
        self.machine = machine
        super().__init__(path, Monitor)


def main(argv: list[str]) -> None:
    """Serve until killed (see the module docstring)."""
    own, _, qemu = (argv[:argv.index("--")], "--", argv[argv.index("--") + 1:]) \
        if "--" in argv else (argv, "", [])
    parser = argparse.ArgumentParser(prog="qmp_machine")
    parser.add_argument("socket")
    parser.add_argument("scoring_url")
    parser.add_argument("--blocked", action="append", default=[])
    parser.add_argument("--ram", type=int, default=8 << 30)
    args = parser.parse_args(own)
    del qemu  # kept in /proc/self/cmdline for qmp_snapshot.py's check
    if os.path.exists(args.socket):
        os.unlink(args.socket)
    server = MonitorServer(args.socket, Machine(args.scoring_url, args.blocked, args.ram))
    os.chmod(args.socket, 0o600)
    print("listening", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
