"""A cloud pool whose record was removed by hand (its folder deleted, ``pool.json`` gone) is
still found by its name, from oa-vm's Pulumi state of its cloud, and ``pool-cleanup`` removes
what its stack holds: before, ``pool-cleanup --pool NAME`` said "no pool named" and the hosts
billed until their expiry. In-process: the engine is ``FakePulumiEngine`` (the real AWS program
under Pulumi's mocks)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oa_vm import api
from oa_vm.cli import app as cli
from oa_vm.clouds import get_provider
from oa_vm.clouds.aws.provider import AwsProvider
from oa_vm.clouds.base import Provider
from oa_vm.errors import InvalidInputError, PoolNotFoundError
from oa_vm.model import state
from tests.support.cloud_pools import POOL, ready_pool
from tests.support.fake_pulumi_engine import FakePulumiEngine
from tests.support.pool_programs import AwsLookups


@pytest.fixture
def engine(oa_home: Path, monkeypatch: pytest.MonkeyPatch) -> FakePulumiEngine:
    """A ready AWS pool made through ``engine``, then its record's folder removed by hand."""
    made = FakePulumiEngine(AwsLookups())
    provider = AwsProvider(engine=made, lister=lambda pool: [])

    def provider_of(cloud: str) -> Provider:
        return provider if cloud == "aws" else get_provider(cloud)

    monkeypatch.setattr(api, "get_provider", provider_of)
    ready_pool(provider)
    shutil.rmtree(state.pool_dir(POOL))
    assert made.live_resources(POOL)
    return made


def test_cleanup_finds_a_cloud_pool_by_its_stack_and_removes_what_it_holds(
    engine: FakePulumiEngine,
) -> None:
    said: list[str] = []
    report = api.cleanup_pool(POOL, progress=said.append)
    assert report.left == [], report
    assert engine.live_resources(POOL) == []
    assert ("remove_stack", POOL) in engine.calls
    assert any("has no record, but oa-vm's aws state still holds what it made" in line
               for line in said), said
    assert not state.pool_dir(POOL).exists()
    # removed: asked again, it is a pool removed earlier, as any
    again = api.cleanup_pool(POOL)
    assert "already removed" in " ".join(again.hints)


def test_the_cli_asks_before_it_removes_an_unrecorded_pool(engine: FakePulumiEngine) -> None:
    refused = CliRunner().invoke(cli.app, ["pool-cleanup", "--pool", POOL])
    assert isinstance(refused.exception, InvalidInputError), refused.output
    assert "pass -y" in str(refused.exception)
    assert engine.live_resources(POOL)  # nothing removed without the answer
    done = CliRunner().invoke(cli.app, ["pool-cleanup", "--pool", POOL, "-y"])
    assert done.exit_code == 0, done.output
    assert f"Pool {POOL!r} removed." in done.output
    assert engine.live_resources(POOL) == []


def test_without_the_engine_an_unknown_name_is_refused_as_before(
    engine: FakePulumiEngine,
) -> None:
    engine.missing_reason = "the Pulumi engine is not installed"
    with pytest.raises(PoolNotFoundError):
        api.cleanup_pool(POOL)
    assert engine.live_resources(POOL)
