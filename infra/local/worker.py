"""Start and stop simulated workers inside the current process.

A worker is two HTTP servers (the guest's WAA server and the scoring server) around one desktop,
with one fault gate counting requests across both and one guard (:mod:`infra.local.access`)
deciding, for both, who is served and how much.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.local.access import Capability, Guard, Limits, check_secret, new_secret
from infra.local.browser import BrowserScreen
from infra.local.browser_api import build_browser_routes
from infra.local.desktop import Desktop
from infra.local.faults import FaultGate, Faults, parse_faults
from infra.local.gui import HEIGHT, WIDTH
from infra.local.render import Screen
from infra.local.scoring_api import build_scoring_app
from infra.local.server import Acceptor, App, AppServer
from infra.local.snapshot import register_snapshot_routes
from infra.local.taskstore import TaskStore
from infra.local.waa_api import build_waa_app

log = logging.getLogger("infra.local")


@dataclass
class RunningWorker:
    """A simulated worker serving in this process; :meth:`stop` frees its ports."""

    name: str
    host: str
    root: Path
    waa_port: int
    scoring_port: int
    desktop: Desktop
    capability: Capability = field(repr=False)
    _acceptor: Acceptor = field(repr=False)
    _release: threading.Event = field(repr=False)

    @property
    def base_path(self) -> str:
        """The secret prefix of every path (``/<secret>``; empty for a worker without one)."""
        return self.capability.prefix

    @property
    def waa_url(self) -> str:
        """Base URL of the WAA server, secret included (``http://127.0.0.1:PORT/<secret>``)."""
        return f"http://{self.host}:{self.waa_port}{self.base_path}"

    @property
    def scoring_url(self) -> str:
        """Base URL of the scoring server, secret included."""
        return f"http://{self.host}:{self.scoring_port}{self.base_path}"

    def describe(self) -> dict[str, Any]:
        """The worker's entry in the ready file (its URLs carry the secret: the file is 0600)."""
        return {
            "name": self.name,
            "host": self.host,
            "waa_port": self.waa_port,
            "scoring_port": self.scoring_port,
            "waa_url": self.waa_url,
            "scoring_url": self.scoring_url,
            "root": str(self.root),
        }

    def stop(self) -> None:
        """Stop serving, release hung requests and close both listening sockets (idempotent)."""
        if self._release.is_set():
            return
        self._release.set()
        self._acceptor.stop()
        if self.desktop.browser is not None:
            self.desktop.browser.stop()  # one browser per worker, gone with it
        log.info("worker %s stopped", self.name)


def start_worker(
    name: str,
    root: Path | str,
    *,
    host: str = "127.0.0.1",
    waa_port: int = 0,
    scoring_port: int = 0,
    tasks: Path | str | None = None,
    faults: Faults | Mapping[str, object] | None = None,
    secret: str | None = None,
    auth: bool = True,
    limits: Limits | None = None,
) -> RunningWorker:
    """Start one simulated worker serving in background threads of this process.

    Args:
        name: the worker's name (logs, ready file).
        root: its working folder; the simulated ``C:`` drive is ``root/drive_c``.
        host: address to bind (loopback by default).
        waa_port: port of the WAA server, 0 for a free one.
        scoring_port: port of the scoring server, 0 for a free one.
        tasks: task folder (``examples/`` plus an index); default the bundled suite.
        faults: fault knobs (see :mod:`infra.local.faults`) as :class:`Faults` or a dict.
        secret: the prefix every request path must start with; None for a random one (read it
            back from ``waa_url``).
        auth: False serves without any prefix, for a stand-in of a guest that WAA's own code
            addresses as ``http://<vm_ip>:5000`` (never for a pool's workers).
        limits: body size, connection and read-timeout limits (default :class:`Limits`).

    Raises:
        SecretError: ``secret`` cannot be one (see :func:`infra.local.access.check_secret`).
        FaultError: a bad fault knob.
        TaskStoreError: the task folder has no readable index.
        OSError: a port cannot be bound.
    """
    knobs = faults if isinstance(faults, Faults) else parse_faults(faults)
    store = TaskStore.load(Path(tasks) if tasks is not None else None)
    folder = Path(root).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    desktop = Desktop(folder)
    # started on the first window a Cua-Bench session opens, stopped with the worker
    desktop.browser = BrowserScreen(folder, (WIDTH, HEIGHT))
    screen = Screen(desktop, knobs.screenshot_min_bytes)
    capability = Capability(
        (new_secret() if secret is None else check_secret(secret)) if auth else None
    )
    guard = Guard(capability, limits or Limits())
    gate = FaultGate(knobs)
    release = threading.Event()
    waa = AppServer((host, waa_port), App(f"{name}/waa", gate, release), guard)
    try:
        scoring = AppServer((host, scoring_port), App(f"{name}/scoring", gate, release), guard)
    except OSError:
        waa.server_close()
        raise
    build_waa_app(waa.app, desktop, screen)
    build_browser_routes(waa.app, desktop.browser)
    build_scoring_app(scoring.app, desktop, store)
    if not knobs.no_snapshots:
        # clean resets (--reset clean): the state right after start, put back before each task
        register_snapshot_routes(scoring.app, desktop, folder / "clean-snapshot")
    acceptor = Acceptor([waa, scoring], name)
    worker = RunningWorker(
        name=name,
        host=host,
        root=folder,
        waa_port=waa.port,
        scoring_port=scoring.port,
        desktop=desktop,
        capability=capability,
        _acceptor=acceptor,
        _release=release,
    )
    log.info("worker %s: waa port %d, scoring port %d%s", name, worker.waa_port,
             worker.scoring_port, "" if auth else " (no secret required)")
    return worker
