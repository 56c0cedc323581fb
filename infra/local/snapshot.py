"""Clean resets of a simulated worker: its whole desktop saved once, put back before each task.

The local counterpart of ``infra/worker/reset.sh`` (a QEMU snapshot of a cloud worker's VM):
the state saved is everything a task can change (windows, settings, clock, clipboards, the
pointer and the files of the ``C:`` drive), taken right after the worker starts and replaced on
request. Served by the scoring server (the worker's host side; agents only reach the WAA server):

| path | method | does |
|---|---|---|
| ``/oa-vm/snapshot`` | GET | ``{"snapshot": bool, "token", "taken_at"}`` |
| ``/oa-vm/snapshot`` | POST json | ``{"token"}``: replace the snapshot with the state now |
| ``/oa-vm/restore`` | POST | put the snapshot back: ``{"token", "taken_at", "seconds"}`` |

``token`` is the caller's fingerprint, written into the guest just before the take and kept
here beside the snapshot, so that the caller can compare what the guest says after a restore.
"""

from __future__ import annotations

import copy
import shutil
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from infra.local.desktop import Desktop
from infra.local.server import App, HttpError, Request, Response

# the browser is a process, not state: a restore closes its windows instead
_NOT_STATE = ("sandbox", "lock", "version", "browser")
"""Desktop attributes that are plumbing, not guest state (``version`` must keep growing so that
a screenshot cache never serves a picture from before the restore)."""


class DesktopSnapshots:
    """One saved state of one desktop (memory as a deep copy, the drive as a folder copy)."""

    def __init__(self, desktop: Desktop, folder: Path) -> None:
        self.desktop = desktop
        self.folder = folder
        self._lock = threading.Lock()  # one take or restore at a time
        self._memory: dict[str, Any] | None = None
        self.token: str | None = None
        self.taken_at: str | None = None

    def describe(self) -> dict[str, Any]:
        """``{"snapshot", "token", "taken_at"}``."""
        return {"snapshot": self._memory is not None, "token": self.token,
                "taken_at": self.taken_at}

    def take(self, token: str | None) -> dict[str, Any]:
        """Replace the snapshot with the desktop as it is now."""
        with self._lock, self.desktop.lock:
            drive = self.desktop.sandbox.drive
            staging = self.folder.with_name(self.folder.name + ".new")
            shutil.rmtree(staging, ignore_errors=True)
            shutil.copytree(drive, staging, symlinks=True)
            shutil.rmtree(self.folder, ignore_errors=True)
            staging.rename(self.folder)
            self._memory = copy.deepcopy(
                {k: v for k, v in vars(self.desktop).items() if k not in _NOT_STATE}
            )
            self.token = token
            self.taken_at = datetime.now(UTC).isoformat(timespec="seconds")
            return self.describe()

    def restore(self) -> dict[str, Any]:
        """Put the saved desktop back: files first, then the in-memory state."""
        started = time.monotonic()
        with self._lock, self.desktop.lock:
            if self._memory is None:
                raise HttpError(409, "no snapshot was taken on this worker")
            drive = self.desktop.sandbox.drive
            shutil.rmtree(drive, ignore_errors=True)
            shutil.copytree(self.folder, drive, symlinks=True)
            for key, value in copy.deepcopy(self._memory).items():
                setattr(self.desktop, key, value)
            if self.desktop.browser is not None:
                self.desktop.browser.close_all()  # no window survives a clean reset
            self.desktop.version += 1
        return {"token": self.token, "taken_at": self.taken_at,
                "seconds": round(time.monotonic() - started, 4)}


def register_snapshot_routes(app: App, desktop: Desktop, folder: Path) -> DesktopSnapshots:
    """Add the snapshot endpoints to ``app`` and take the first snapshot (the state at start)."""
    snapshots = DesktopSnapshots(desktop, folder)
    snapshots.take(None)

    def take(request: Request) -> Response:
        token = request.json().get("token")
        if token is not None and not isinstance(token, str):
            raise HttpError(400, "'token' must be a string")
        return Response.json(snapshots.take(token))

    app.route("GET", "/oa-vm/snapshot", lambda _request: Response.json(snapshots.describe()))
    app.route("POST", "/oa-vm/snapshot", take)
    app.route("POST", "/oa-vm/restore", lambda _request: Response.json(snapshots.restore()))
    return snapshots
