"""Clean resets: the worker's host saves the whole machine once and puts it back before a task.

A provider that can do this declares it (``Capability.CLEAN_RESET`` in its ``capabilities``)
and hands out one :class:`SnapshotControl` per worker
(``provider.snapshot_control(record, worker)``):

- cloud workers: :class:`oa_vm.clouds.pulumi.reset.HostSnapshotControl` runs the shipped
  ``/opt/oa-vm/reset.sh`` as root over the pool's SSH path (QEMU's monitor is a unix socket on
  the host, never a port);
- local workers: :class:`HttpSnapshotControl` calls the simulated worker's snapshot endpoints
  (:mod:`infra.local.snapshot`) on its scoring server's base URL, tunnels included.

What the snapshot means to a run (the fingerprint written into the guest, the marker, the
record) is :mod:`evals.run.reset`'s business; this module only moves the machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from oa_vm.errors import OaVmError
from waa_client.errors import NotFoundError, WaaError
from waa_client.http import HttpClient, json_object

HTTP_TIMEOUT_S = 120.0


class SnapshotError(OaVmError):
    """A take or restore failed; ``unsupported`` when the worker cannot do it at all."""

    def __init__(self, message: str, *, unsupported: bool = False) -> None:
        super().__init__(message)
        self.unsupported = unsupported


@dataclass(frozen=True)
class SnapshotState:
    """What the worker's host holds: whether a clean snapshot exists and its recorded token."""

    snapshot: bool
    token: str | None = None
    taken_at: str | None = None
    qemu: dict[str, Any] | None = None
    """A cloud worker's QEMU as ``reset.sh check`` read it: ``{"pid", "cmdline", "cpu"}``."""


@dataclass(frozen=True)
class Restored:
    """A finished restore: the token recorded at take time and how long the host took."""

    token: str | None
    seconds: float | None
    clock_skew_s: float | None = None
    """A cloud worker's guest clock after its resync, against the host's (``reset.sh``)."""


class SnapshotControl(Protocol):
    """Takes and restores one worker's clean snapshot. Every call has a timeout.

    Raises (all methods): :class:`SnapshotError`, with ``unsupported`` set when the worker has
    no way of restoring (no QEMU monitor, an old simulated worker).
    """

    def check(self) -> SnapshotState:
        """Whether the worker can restore, and what it holds."""
        ...

    def take(self, token: str) -> SnapshotState:
        """Replace the snapshot with the machine as it is now, recording ``token``."""
        ...

    def restore(self) -> Restored:
        """Put the machine back; returns once the guest's WAA server answers again."""
        ...


class HttpSnapshotControl(HttpClient):
    """:class:`SnapshotControl` of a simulated worker, over its scoring server's base URL.

    A :class:`waa_client.http.HttpClient` like the worker's other clients (the same timeouts and
    error messages; takes and restores are never retried), so a hung worker is noticed by the
    run's read timeout.
    """

    def __init__(self, base_url: str, *, connect_timeout: float = 5.0,
                 read_timeout: float = HTTP_TIMEOUT_S) -> None:
        super().__init__(base_url, connect_timeout=connect_timeout, read_timeout=read_timeout,
                         retries=0)

    def _snapshot_call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        try:
            return json_object(self._request(method, path, idempotent=False, json=body))
        except NotFoundError as exc:
            raise SnapshotError("this worker has no snapshot endpoints (an older simulated "
                                "worker): it cannot restore", unsupported=True) from exc
        except WaaError as exc:
            raise SnapshotError(str(exc)) from exc

    def check(self) -> SnapshotState:
        """``GET /oa-vm/snapshot``."""
        data = self._snapshot_call("GET", "/oa-vm/snapshot")
        return SnapshotState(bool(data.get("snapshot")), data.get("token"), data.get("taken_at"))

    def take(self, token: str) -> SnapshotState:
        """``POST /oa-vm/snapshot``."""
        data = self._snapshot_call("POST", "/oa-vm/snapshot", {"token": token})
        return SnapshotState(bool(data.get("snapshot")), data.get("token"), data.get("taken_at"))

    def restore(self) -> Restored:
        """``POST /oa-vm/restore`` (the simulated WAA server answers throughout)."""
        data = self._snapshot_call("POST", "/oa-vm/restore", {})
        return Restored(data.get("token"), data.get("seconds"))
