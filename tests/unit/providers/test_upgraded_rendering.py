"""oa-vm upgraded while a pool runs: the worker files it ships changed, so every program run
from then on renders other user data than the hosts were created with. ``pool-extend``, a pause,
a resume and a repair (the real programs under ``FakePulumiEngine``, which keeps an existing
resource's ignored inputs as the engine does) must leave every existing host as it was created
(no replacement: its disks, its Windows, a run in progress), and only a host made anew (a repair
of a lost one) gets the new rendering."""

from __future__ import annotations

import base64
import gzip
from datetime import timedelta
from pathlib import Path

import pytest

from infra import azure as infra_azure
from oa_vm import fleet
from oa_vm.clouds.aws.provider import AwsProvider
from oa_vm.clouds.azure.provider import AzureProvider
from oa_vm.clouds.pulumi.fleet import CloudFleetOps
from oa_vm.clouds.pulumi.provider import PulumiCloudProvider
from oa_vm.model import state
from tests.support.cloud_pools import RecordingHosts, RecordingPower, live_of_type, ready_pool
from tests.support.fake_pulumi_engine import FakePulumiEngine
from tests.support.pool_programs import AwsLookups, upgrade_worker_files

HOST = {"aws": "aws:ec2/instance:Instance", "azure": "azure-native:compute:VirtualMachine"}
UPGRADED = b": oa-vm upgraded"


def _user_data(cloud: str, engine: FakePulumiEngine) -> list[str]:
    """Each host's user data as the cloud holds it, by host name."""
    return [h["inputs"]["userDataBase64"] if cloud == "aws" else
            h["inputs"]["osProfile"]["customData"] for h in live_of_type(engine, HOST[cloud])]


def _text(data: str) -> bytes:
    return gzip.decompress(base64.b64decode(data))


def _pool(cloud: str) -> tuple[FakePulumiEngine, CloudFleetOps]:
    provider: PulumiCloudProvider
    if cloud == "aws":
        engine = FakePulumiEngine(AwsLookups())
        provider = AwsProvider(engine=engine, lister=lambda pool: [], remote=RecordingHosts())
    else:
        engine = FakePulumiEngine(infra_azure.offline_lookup)
        provider = AzureProvider(engine=engine, lister=lambda pool: [])
    ready_pool(provider)
    return engine, CloudFleetOps(provider, power=RecordingPower())


@pytest.mark.parametrize("cloud", ["aws", "azure"])
def test_an_upgrade_replaces_no_host_and_a_remade_one_gets_the_new_rendering(
    cloud: str, oa_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, ops = _pool(cloud)
    made = _user_data(cloud, engine)
    assert len(made) == 2 and not any(UPGRADED in _text(d) for d in made)
    upgrade_worker_files(monkeypatch)

    fleet.extend_pool("waa-eval", by_s=3600, ops=ops)
    assert _user_data(cloud, engine) == made
    fleet.pause_pool("waa-eval", keep_days=1 if cloud == "aws" else 0.5, ops=ops)
    assert _user_data(cloud, engine) == made
    fleet.resume_pool("waa-eval", ttl_hours=2, wait=False, ops=ops)
    assert _user_data(cloud, engine) == made

    # a lost host made again by a repair: the new rendering, with the pool's expiry of now
    engine.vanish("waa-eval", "waa-eval-w1-id")
    fleet.repair_pool("waa-eval", wait=False, ops=ops)
    kept, remade = _user_data(cloud, engine)
    assert kept == made[0]
    text = _text(remade)
    assert UPGRADED in text
    expires = state.load("waa-eval").expires_at
    assert expires is not None
    assert f"OA_VM_EXPIRES_AT={expires:%Y-%m-%dT%H:%M:%SZ}".encode() in text


@pytest.mark.parametrize("cloud", ["aws", "azure"])
def test_a_record_from_before_still_extends(cloud: str, oa_home: Path) -> None:
    """A ``pool.json`` written by an older oa-vm holds the creation's expiry as
    ``program_expires_at``: it still loads and extends, and its hosts stay as they were."""
    engine, ops = _pool(cloud)
    made = _user_data(cloud, engine)
    record = state.load("waa-eval")
    assert record.expires_at is not None
    record.provider_data["program_expires_at"] = state.format_time(record.expires_at)
    state.save(record)

    extended = fleet.extend_pool("waa-eval", by_s=3600, ops=ops)
    assert extended.expires_at == record.expires_at + timedelta(hours=1)
    assert _user_data(cloud, engine) == made
