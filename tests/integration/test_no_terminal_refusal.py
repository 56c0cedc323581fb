"""Every command that asks before it spends or removes, run with no terminal and no ``-y``: the
refusal is the one line it prints (no plan, price, warning or address line before it), and
nothing is made or removed.

The cloud commands run offline: their plans under Pulumi's mocks, the engine the stand-in
``pulumi`` CLI (``tests/support/fake_pulumi_cli.py``); no address is detected (``--allow-cidr``,
or a detection that would fail at once).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from tests.support import fake_pulumi_cli
from tests.support.cli import run_cli
from tests.support.pools import make_local_pool, remove_pools

pytestmark = pytest.mark.integration

SNAPSHOT = "snap-0123456789abcdef0"
CIDR = "203.0.113.7/32"
IMAGE = "waa-us-east-1-20261101-1200"

# name: (script, arguments, what the refusal names); "{image}" is a recorded image's ID
CASES: dict[str, tuple[str, tuple[str, ...], str]] = {
    "pool-create, local": ("oa-vm", ("pool-create", "--cloud", "local", "--name", "pa"),
                           "Create pool 'pa'"),
    "pool-create, aws, open to all": (
        "oa-vm", ("pool-create", "--cloud", "aws", "--name", "pa", "--workers", "1", "--image",
                  SNAPSHOT, "--allow-cidr", "0.0.0.0/0"), "Create pool 'pa'"),
    "pool-create, azure, address to detect": (
        "oa-vm", ("pool-create", "--cloud", "azure", "--name", "pa", "--workers", "1", "--image",
                  "/subscriptions/0/resourceGroups/g/providers/Microsoft.Compute/snapshots/x"),
        "Create pool 'pa'"),
    "pool-cleanup": ("oa-vm", ("pool-cleanup", "--pool", "kept"), "Remove pool 'kept'"),
    "pool-cleanup --expired": ("oa-vm", ("pool-cleanup", "--expired"),
                               "Remove every expired pool"),
    "image-create": ("oa-vm", ("image-create", "--cloud", "aws", "--region", "us-east-1",
                               "--allow-cidr", CIDR), "Build the aws image for us-east-1"),
    "image-delete": ("oa-vm", ("image-delete", IMAGE), f"Delete image {IMAGE}"),
    "smoke": ("oa-vm", ("smoke", "--cloud", "aws", "--name", "pa", "--image", SNAPSHOT,
                        "--allow-cidr", CIDR), "Run the smoke"),
    "sweep on a cloud": (
        "openadapt-evals", ("sweep", "--cloud", "aws", "--pool", "pa", "--image", SNAPSHOT,
                            "--allow-cidr", CIDR, "--tasks", "3", "--agent", "noop",
                            "--results-dir", "{results}"),
        "Create pool 'pa' for this sweep"),
}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """A home with a local pool (``kept``) and a recorded aws image, and an environment whose
    ``pulumi`` is the stand-in and whose address detection fails at once."""
    root = tmp_path_factory.mktemp("refusal")
    home = root / "home"
    env = fake_pulumi_cli.offline_env(root)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OA_VM_HOME", str(home))
        from oa_vm.model import image_records, state

        created = state.utcnow() - timedelta(days=1)
        image_records.save(image_records.ImageRecord(
            id=IMAGE, cloud="aws", region="us-east-1", state=image_records.READY, size_gb=96,
            created_at=created, licence_expires=created + timedelta(days=90),
            waa_image="windowsarena/winarena@sha256:0123", builder_size="m8i.2xlarge",
            project="oa-vm-aws-images", stack=IMAGE, owner="alice",
            cloud_id="snap-0fedcba9876543210", volume_id="vol-0abc", storage_usd_per_month=4.8,
        ))
    make_local_pool("kept", home=home, wait=False)
    try:
        yield home, env
    finally:
        remove_pools(home)


def _files(home: Path) -> list[Path]:
    return sorted(p for p in home.rglob("*") if p.is_file() and "lock" not in p.name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_question_that_cannot_be_asked_is_the_only_line(
    world: tuple[Path, dict[str, str]], tmp_path: Path, name: str
) -> None:
    home, env = world
    script, args, question = CASES[name]
    args = tuple(a.replace("{results}", str(tmp_path / "results")) for a in args)
    before = _files(home)
    result = run_cli(script, *args, home=home, env=env)  # stdin is /dev/null: no terminal
    line = result.assert_one_line_error()
    assert result.stdout == "", f"said before the refusal: {result.stdout!r}"
    assert f"error: {question}" in line, line
    assert line.endswith(": not asked (no terminal); pass -y"), line
    assert result.returncode == 2
    assert _files(home) == before, "nothing is made or removed"
    assert (home / "pools" / "kept" / "pool.json").exists()
