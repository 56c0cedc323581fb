"""A cloud pool whose record was removed by hand (its folder deleted, ``pool.json`` gone) is
still found by its name, from oa-vm's Pulumi state of its cloud, and ``pool-cleanup`` removes
what its stack holds: before, ``pool-cleanup --pool NAME`` said "no pool named" and the hosts
billed until their expiry. Every listing of pools names it too (``pool-list`` through Typer and
through its fast path, ``pool-cleanup --expired``), read from the state's files, without the
engine. In-process: the engine is ``FakePulumiEngine`` (the real AWS program under Pulumi's
mocks, each stack's file where the file backend keeps it); the fast path is the real CLI."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oa_vm import api
from oa_vm.cli import app as cli
from oa_vm.clouds import get_provider
from oa_vm.clouds.aws.provider import AwsProvider
from oa_vm.clouds.base import Provider
from oa_vm.errors import (
    AmbiguousPoolError,
    InvalidInputError,
    PoolNotFoundError,
    ProviderUnavailableError,
    StackWithoutRecordError,
)
from oa_vm.model import state
from oa_vm.model.state import PoolRecord, PoolState
from tests.support.cli import run_cli
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
    removed = len(engine.calls)
    again = api.cleanup_pool(POOL)
    assert "already removed" in " ".join(again.hints)
    # a name the state's files do not hold never starts the engine (seconds a call)
    with pytest.raises(PoolNotFoundError):
        api.cleanup_pool("ghost")
    assert engine.calls[removed:] == []  # the files hold neither: the engine is not asked


def test_the_cli_asks_before_it_removes_an_unrecorded_pool(engine: FakePulumiEngine) -> None:
    refused = CliRunner().invoke(cli.app, ["pool-cleanup", "--pool", POOL])
    assert isinstance(refused.exception, InvalidInputError), refused.output
    assert "pass -y" in str(refused.exception)
    assert engine.live_resources(POOL)  # nothing removed without the answer
    done = CliRunner().invoke(cli.app, ["pool-cleanup", "--pool", POOL, "-y"])
    assert done.exit_code == 0, done.output
    assert f"Pool {POOL!r} removed." in done.output
    assert engine.live_resources(POOL) == []


def test_without_the_engine_the_name_is_refused_saying_what_removes_it(
    engine: FakePulumiEngine,
) -> None:
    # pool-list names the stack (read from the state's files), so pool-cleanup must not answer
    # "no pool named" for it: it says the engine is what removes it, and removes nothing
    engine.missing_reason = "the Pulumi engine is not installed"
    with pytest.raises(ProviderUnavailableError) as refused:
        api.cleanup_pool(POOL)
    assert "oa-vm's aws state still holds its stack" in str(refused.value)
    assert "the Pulumi engine is not installed" in str(refused.value)
    assert engine.live_resources(POOL)
    with pytest.raises(PoolNotFoundError):  # a name the state does not hold: as before
        api.cleanup_pool("ghost")


def test_every_listing_names_an_unrecorded_pool_until_it_is_removed(
    engine: FakePulumiEngine, oa_home: Path
) -> None:
    remove = f"remove it with 'oa-vm pool-cleanup --pool {POOL}'"
    # what is not a pool's stack is not listed: an image's stack, a backup beside a stack
    stacks = oa_home / "pulumi" / ".pulumi" / "stacks"
    (stacks / "oa-vm-aws-images").mkdir(parents=True)
    (stacks / "oa-vm-aws-images" / "img-1.json").write_text("{}")
    (stacks / "oa-vm-aws" / "gone.json.bak").write_text("{}")

    items = api.list_pools()
    assert [(type(i), i.pool, i.cloud) for i in items  # type: ignore[union-attr]
            ] == [(StackWithoutRecordError, POOL, "aws")]
    expired = api.cleanup_expired()
    assert expired[POOL].unreadable and remove in str(expired[POOL].skipped)
    assert engine.live_resources(POOL)  # its expiry is unknown: --expired removes nothing

    typer_out = CliRunner().invoke(cli.app, ["pool-list"])
    assert typer_out.exit_code == 0, typer_out.output
    fast = run_cli("oa-vm", "pool-list", home=oa_home)  # the fast path, in its own process
    assert fast.returncode == 0, fast.stderr
    assert remove in fast.stderr and "no pools" not in fast.stdout.lower()
    row = next(line for line in fast.stdout.splitlines() if line.startswith(POOL))
    assert row.split()[:2] == [POOL, "aws"] and "no record" in row
    assert row in typer_out.output and remove in typer_out.output  # one view, both paths
    as_json = run_cli("oa-vm", "pool-list", "--json", home=oa_home)
    assert as_json.returncode == 0 and remove in as_json.stdout

    assert api.cleanup_pool(POOL).left == []
    assert api.list_pools() == []
    assert "No pools" in run_cli("oa-vm", "pool-list", home=oa_home).stdout


def test_a_pool_with_its_record_is_listed_once(oa_home: Path) -> None:
    made = FakePulumiEngine(AwsLookups())
    record = ready_pool(AwsProvider(engine=made, lister=lambda pool: []))
    state.save(record)
    assert [getattr(i, "name", None) for i in api.list_pools()] == [POOL]


def test_a_record_of_another_cloud_does_not_hide_a_stack_of_its_name(
    engine: FakePulumiEngine,
) -> None:
    """A record on ``ssh`` beside an AWS stack of the same name (its record removed by hand
    before the other was made): both are listed, and ``cleanup_expired`` reports both, where
    the record hid the stack that may still bill."""
    now = datetime.now(UTC)
    state.save(PoolRecord(POOL, "ssh", PoolState.READY, now - timedelta(hours=2),
                          expires_at=now - timedelta(hours=1)))
    listed = api.list_pools()
    assert [(type(i).__name__, getattr(i, "cloud", None)) for i in listed] == [
        ("PoolRecord", "ssh"), ("StackWithoutRecordError", "aws")]
    reports = api.cleanup_expired()
    assert reports[POOL].skipped is None, reports  # the expired record's pool, removed
    assert reports[f"{POOL} (aws stack)"].unreadable, reports  # the stack, named apart
    assert [type(i).__name__ for i in api.list_pools()] == ["StackWithoutRecordError"]


NAMING = [
    ("oa-vm", "pool-status", "--pool", POOL),  # its fast path
    ("oa-vm", "pool-status"),  # the only pool there is
    ("oa-vm", "pool-status", "--pool", POOL, "--json"),
    ("oa-vm", "pool-wait", "--pool", POOL),
    ("oa-vm", "pool-tunnel", "--pool", POOL),
    ("oa-vm", "pool-pause", "--pool", POOL),
    ("oa-vm", "pool-resume", "--pool", POOL),
    ("oa-vm", "pool-repair", "--pool", POOL),
    ("oa-vm", "pool-extend", "--pool", POOL, "--by", "1h"),
    ("openadapt-evals", "run", "--pool", POOL, "--agent", "noop", "--tasks", "all"),
]
TAKING = [
    ("oa-vm", "pool-create", "--cloud", "local", "--name", POOL),
    ("oa-vm", "smoke", "--cloud", "aws", "--pool", POOL, "-y"),
    ("openadapt-evals", "sweep", "--cloud", "local", "--pool", POOL, "--agent", "noop",
     "--tasks", "all"),
]


def test_every_command_that_names_the_pool_says_its_stack_remains(
    engine: FakePulumiEngine, oa_home: Path
) -> None:
    # pool-list names the pool, so no command may answer "no pool named" for it, nor make a new
    # pool of its name (whose program would take its stack over): one rule, every command
    for argv in NAMING:
        done = run_cli(*argv, home=oa_home)
        said = done.stderr + done.stdout
        assert done.returncode == 1, (argv, said)
        assert "has no record, but oa-vm's aws state still holds its stack" in said, (argv, said)
        assert f"oa-vm pool-cleanup --pool {POOL}" in said and "Traceback" not in said, argv
    for argv in TAKING:
        done = run_cli(*argv, home=oa_home)
        said = done.stderr + done.stdout
        assert done.returncode != 0 and f"a pool named {POOL!r} already exists" in said, (
            argv, said)
    assert not state.pool_dir(POOL).exists() and engine.live_resources(POOL)  # nothing made
    with pytest.raises(StackWithoutRecordError):
        api.pool_status(POOL)
    with pytest.raises(PoolNotFoundError):  # a name the state does not hold: as before
        api.pool_status("ghost")
    state.save(PoolRecord(name="other", cloud="local", state=PoolState.READY,
                          created_at=state.utcnow()))
    with pytest.raises(AmbiguousPoolError, match=f"several pools exist \\(other, {POOL}\\)"):
        api.resolve_name(None)  # --pool may be left out only when one pool is listed


def test_a_stack_whose_provider_cannot_load_is_not_called_unknown(
    engine: FakePulumiEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unavailable(cloud: str) -> Provider:
        raise ProviderUnavailableError(f"the {cloud} provider is not available here")

    monkeypatch.setattr(api, "get_provider", unavailable)
    with pytest.raises(ProviderUnavailableError) as refused:
        api.cleanup_pool(POOL)
    assert "oa-vm's aws state still holds its stack" in str(refused.value)
    assert "the aws provider is not available here" in str(refused.value)
    assert engine.live_resources(POOL)
