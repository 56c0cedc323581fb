"""``oa-vm pool-create --build-image``: the region's image is built first (its plan and price
shown), then the pool starts from it. In-process, because the engine is ``FakePulumiEngine``
and the builder's own report stands for the SSH follow-up (run for real in
``tests/integration/test_cloud_wait.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from oa_vm import api, images
from oa_vm.cli import app as cli
from oa_vm.clouds.aws.provider import AwsProvider
from oa_vm.model import image_records
from tests.support.fake_pulumi_engine import FakePulumiEngine
from tests.support.pool_programs import AwsLookups

REPORTED = {"waa_image": "windowsarena/winarena@sha256:" + "0123" * 16,
            "base_image": "dockurr/windows@sha256:" + "4567" * 16}
"""What a builder reports: both images by digest."""


def test_build_image_then_pool(oa_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = FakePulumiEngine(AwsLookups())
    provider = AwsProvider(engine=engine, lister=lambda pool: [])
    monkeypatch.setattr("oa_vm.clouds.get_provider", lambda cloud: provider)
    monkeypatch.setattr(api, "get_provider", lambda cloud: provider)

    def built(record: Any, outputs: Mapping[str, Any], progress: Any) -> dict[str, str]:
        progress(f"[    5s] {record.id}-builder: guest: waiting for Windows to answer /probe")
        return dict(REPORTED)

    monkeypatch.setattr(images, "follow_builder", built)
    args = ["pool-create", "--cloud", "aws", "--region", "us-east-1", "--workers", "2",
            "--allow-cidr", "203.0.113.7/32", "--name", "waa-eval", "-y"]
    refused = CliRunner().invoke(cli.app, args)
    assert refused.exit_code != 0 and "oa-vm image-create" in str(refused.exception)
    assert engine.calls == []

    result = CliRunner().invoke(cli.app, [*args, "--build-image"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.index("Plan: image waa-us-east-1-") < out.index("Plan: 2 worker(s) on aws")
    assert "keeping the image costs about $" in out and "guest: waiting for Windows" in out
    (image,) = image_records.list_records()
    assert image.state == image_records.READY and image.waa_image == REPORTED["waa_image"]
    instances = [r for r in engine.live_resources("waa-eval")
                 if r["type"] == "aws:ec2/instance:Instance"]
    assert {r["inputs"]["ebsBlockDevices"][0]["snapshotId"] for r in instances} == {
        image.cloud_id
    }


def test_sweep_refuses_a_region_without_an_image_then_builds_it_with_build_image(
    oa_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evals.cli import app as evals_cli
    from oa_vm.errors import OaVmError

    engine = FakePulumiEngine(AwsLookups())
    provider = AwsProvider(engine=engine, lister=lambda pool: [])
    monkeypatch.setattr("oa_vm.clouds.get_provider", lambda cloud: provider)
    monkeypatch.setattr(api, "get_provider", lambda cloud: provider)
    monkeypatch.setattr(images, "follow_builder",
                        lambda record, outputs, progress: dict(REPORTED))

    snapshots: list[str] = []

    def not_ready(name: str, **_: Any) -> None:
        snapshots.extend(r["inputs"]["ebsBlockDevices"][0]["snapshotId"]
                         for r in engine.live_resources(name)
                         if r["type"] == "aws:ec2/instance:Instance")
        raise OaVmError(f"pool {name!r} not ready (the test stops the sweep here)")

    monkeypatch.setattr(api, "wait_pool", not_ready)
    args = ["sweep", "--cloud", "aws", "--region", "us-east-1", "--workers", "2",
            "--allow-cidr", "203.0.113.7/32", "--pool", "swept", "--agent", "noop",
            "--tasks", "all", "--results-dir", str(tmp_path / "results"), "-y"]
    refused = CliRunner().invoke(evals_cli.app, args)
    assert refused.exit_code != 0
    assert "--build-image" in str(refused.exception) and "oa-vm image-create" in str(
        refused.exception)
    assert "Plan:" not in refused.output  # refused before the plan, nothing made
    assert engine.calls == [] and image_records.list_records() == []

    result = CliRunner().invoke(evals_cli.app, [*args, "--build-image"])
    assert "the test stops the sweep here" in str(result.exception), result.output
    assert result.stdout == ""  # the image's plan and build went to stderr with the progress
    err = result.stderr
    assert err.index("Plan: image waa-us-east-1-") < err.index("Plan: 2 worker(s) on aws")
    (image,) = image_records.list_records()
    assert image.state == image_records.READY
    assert snapshots == [image.cloud_id] * 2  # both workers started from the new image
    assert ("destroy", "swept") in engine.calls  # and the sweep removed its pool
    assert engine.live_resources("swept") == []


def test_build_image_then_pool_under_json_prints_one_document(
    oa_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    engine = FakePulumiEngine(AwsLookups())
    provider = AwsProvider(engine=engine, lister=lambda pool: [])
    monkeypatch.setattr("oa_vm.clouds.get_provider", lambda cloud: provider)
    monkeypatch.setattr(api, "get_provider", lambda cloud: provider)
    monkeypatch.setattr(images, "follow_builder", lambda record, outputs, progress: REPORTED)
    result = CliRunner().invoke(cli.app, [
        "pool-create", "--cloud", "aws", "--region", "us-east-1", "--workers", "2",
        "--allow-cidr", "203.0.113.7/32", "--name", "waa-eval", "--build-image", "--json", "-y"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["name"] == "waa-eval"  # the pool; the image on stderr
    (image,) = image_records.list_records()
    assert image.id in result.stderr
