"""Optional capabilities are declared as data on each provider and asked for by callers.

Every registered provider's declaration is checked against what it implements, and a provider
that declares no pause gets a one-line refusal from the real CLI, before anything is touched.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from oa_vm.clouds import get_provider, known_clouds
from oa_vm.clouds.base import FLEET_CAPABILITIES, Capability, Provider
from oa_vm.clouds.pulumi.provider import PulumiCloudProvider
from oa_vm.model import state
from oa_vm.model.state import PoolRecord, PoolState, WorkerRecord, WorkerState
from tests.support import bare_provider
from tests.support.fake_pulumi_engine import FakePulumiEngine

ROOT = Path(__file__).resolve().parents[3]


def _provider(cloud: str) -> Provider:
    """The registered provider; a cloud one gets a stand-in engine (no Pulumi CLI here)."""
    provider = get_provider(cloud)
    if isinstance(provider, PulumiCloudProvider):  # the test may look at classes; callers don't
        engine = FakePulumiEngine(provider.program_module().offline_lookup)
        provider = type(provider)(engine=engine)  # type: ignore[call-arg]
    return provider


@pytest.mark.parametrize("cloud", known_clouds())
def test_every_provider_implements_what_it_declares(cloud: str) -> None:
    provider = _provider(cloud)
    caps = provider.capabilities
    assert isinstance(caps, frozenset) and all(isinstance(c, Capability) for c in caps)
    if caps & FLEET_CAPABILITIES:
        ops = provider.fleet_ops()
        for cap, method in ((Capability.PAUSE, "pause"), (Capability.RESUME, "resume"),
                            (Capability.REPAIR, "repair")):
            if cap in caps:
                assert callable(getattr(ops, method, None)), (cloud, method)
    for cap, method in ((Capability.CLEAN_RESET, "snapshot_control"),
                        (Capability.HOST_EXPIRY, "move_expiry")):
        if cap in caps:
            own = next((c for c in type(provider).__mro__ if method in vars(c)), Provider)
            assert own is not Provider, f"{cloud} declares {cap.value} without {method}"
    # images.cloud_provider hands a provider declaring IMAGES on as a Pulumi one
    assert (Capability.IMAGES in caps) == isinstance(provider, PulumiCloudProvider)
    if Capability.IMAGES in caps:
        assert isinstance(provider, PulumiCloudProvider) and provider.info.image_module
    if isinstance(provider, PulumiCloudProvider):
        # a spot host runs a watcher that writes its notice into the status file drain reads
        facts = provider.program_module().HOST_FACTS
        assert (Capability.DRAIN in caps) == facts.spot_notices, cloud
        # a host whose cloud-init arms a power-off timer has it re-armed when the expiry moves
        assert provider.info.host_timer == facts.guest_poweroff, cloud


def test_a_local_worker_marked_in_its_folder_is_draining(tmp_path: Path) -> None:
    from oa_vm.reach.drain import local_status_path, notice_from_status, read_status

    assert Capability.DRAIN in _provider("local").capabilities
    worker = WorkerRecord(name="worker-0", state=WorkerState.READY, workdir=str(tmp_path))
    record = PoolRecord(name="p", cloud="local", state=PoolState.READY,
                        created_at=state.utcnow(), workers=[worker])
    path = local_status_path(worker)
    assert path is not None
    path.write_text("state=draining\nmessage=leaving\n", encoding="utf-8")
    notice = notice_from_status(read_status(record, worker))
    assert notice is not None and notice.message == "leaving"

def test_the_clouds_declare_what_the_docs_table_says() -> None:
    table = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for cloud in known_clouds():
        caps = _provider(cloud).capabilities
        row = next(line for line in table.splitlines() if line.startswith(f"| `{cloud}` "))
        cells = [c.strip() for c in row.strip("|").split("|")][1:]
        assert cells == ["yes" if c in caps else "no" for c in Capability], (cloud, row)


def _bare_pool(home: Path) -> PoolRecord:
    record = PoolRecord(
        name="plain", cloud=bare_provider.CLOUD, state=PoolState.READY,
        created_at=state.utcnow(), expires_at=state.utcnow(), owner="me",
        workers=[WorkerRecord(name="worker-0", state=WorkerState.READY)],
    )
    state.save(record)
    return state.load("plain")


def _oa_vm(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI, in a subprocess, with the bare provider registered."""
    return subprocess.run(  # fixed argv, no shell
        [sys.executable, "-m", "tests.support.bare_provider", *args], cwd=ROOT,
        capture_output=True, text=True, timeout=120, check=False, stdin=subprocess.DEVNULL,
        env={"PATH": "/usr/bin:/bin", "OA_VM_HOME": str(home), "COLUMNS": "200"},
    )


@pytest.mark.parametrize(("command", "what"), [
    ("pool-pause", "pause"), ("pool-resume", "resume"), ("pool-repair", "repair"),
])
def test_a_provider_without_the_capability_is_refused_in_one_line(
    oa_home: Path, command: str, what: str
) -> None:
    before = _bare_pool(oa_home)
    if command == "pool-resume":  # a pool with nothing paused is refused for that first
        before.workers[0].state = WorkerState.PAUSED
        state.save(before)
        before = state.load("plain")
    done = _oa_vm(oa_home, command, "--name", "plain")
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert f"{what} is not available for bare pools; use pool-cleanup and pool-create" in lines[0]
    after = state.load("plain")  # nothing changed
    assert after.to_json() == before.to_json()


def test_the_bare_provider_is_otherwise_a_working_provider(oa_home: Path) -> None:
    _bare_pool(oa_home)
    done = _oa_vm(oa_home, "pool-status", "--name", "plain", "--json")
    assert done.returncode == 0, done.stderr
    assert '"cloud": "bare"' in done.stdout
