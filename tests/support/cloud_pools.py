"""Cloud pools made by the real AWS and Azure programs under ``FakePulumiEngine``, for the fleet
tests (pause, resume, repair, extend): the pool's settings, its record once ready, its live
resources, and stand-ins for the hosts' SSH and Azure's VM power control."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from oa_vm.clouds.base import PoolSpec, Progress
from oa_vm.clouds.pulumi.provider import PulumiCloudProvider
from oa_vm.model import state
from oa_vm.model.state import PoolRecord, PoolState, SshEndpoint, WorkerState
from oa_vm.reach.host_status import RemoteUnreachableError
from tests.support.fake_pulumi_engine import FakePulumiEngine
from waa_client.ssh.command import CommandResult

POOL = "waa-eval"


def spec(cloud: str) -> PoolSpec:
    """A two-worker pool of ``cloud`` (``aws`` or ``azure``), from a prepared image."""
    return PoolSpec(
        name=POOL, cloud=cloud, workers=2, owner="alice",
        expires_at=state.utcnow() + timedelta(hours=4),
        regions=["us-east-1"] if cloud == "aws" else ["eastus"],
        allow_cidrs=["198.51.100.7/32"],
        # Pools start from a prepared image; the cloud's own snapshot ID stands for one here.
        image="snap-0123456789abcdef0" if cloud == "aws" else (
            "/subscriptions/0000/resourceGroups/oa-vm-images/providers/Microsoft.Compute/"
            "snapshots/oa-vm-image-eastus"
        ),
    )


def mark_ready(record: PoolRecord, ssh: SshEndpoint | None = None) -> PoolRecord:
    """``record`` as a finished ``pool-wait`` leaves it (the pool and every worker ready, each
    reached at ``ssh`` when given), saved; returns it."""
    for worker in record.workers:
        worker.state = WorkerState.READY
        if ssh is not None:
            worker.ssh = ssh
    record.state = PoolState.READY
    state.save(record)
    return record


def ready_pool(provider: PulumiCloudProvider, wanted: PoolSpec | None = None, *,
               ssh: SshEndpoint | None = None) -> PoolRecord:
    """The pool ``wanted`` (default: :func:`spec` of the provider's cloud) created by
    ``provider``, then :func:`mark_ready`."""
    record = provider.create(wanted or spec(provider.name), lambda line: None)
    return mark_ready(record, ssh)


def live_of_type(engine: FakePulumiEngine, kind: str) -> list[dict[str, Any]]:
    """The pool's live resources of ``kind``, by URN: the engine registers a pool's workers in
    parallel, so the order it holds them in changes from one update to the next."""
    found = [r for r in engine.live_resources(POOL) if r["type"] == kind]
    return sorted(found, key=lambda r: str(r["urn"]))


class RecordingHosts:
    """Stands in for SSH to the hosts (their addresses are the mocks' documentation addresses):
    records each command and answers success; the ``down`` hosts do not answer."""

    def __init__(self, down: Sequence[str] = ()) -> None:
        self.calls: list[tuple[str, str]] = []
        self.down = set(down)

    def run(self, ssh: SshEndpoint, command: str, timeout: float) -> CommandResult:
        """Record ``command`` for ``ssh.host``; a host that is down raises as SSH would."""
        self.calls.append((ssh.host, command))
        if ssh.host in self.down:
            raise RemoteUnreachableError("connection timed out")
        return CommandResult(0, "")


class RecordingPower:
    """Stands in for ``az vm deallocate/start``: records the VM IDs it was given."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def deallocate(self, ids: Sequence[str], progress: Progress) -> None:
        """Record a deallocation of ``ids``."""
        self.calls.append(("deallocate", list(ids)))

    def start(self, ids: Sequence[str], progress: Progress) -> None:
        """Record a start of ``ids``."""
        self.calls.append(("start", list(ids)))
