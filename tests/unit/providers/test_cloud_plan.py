"""Offline plans of cloud pools (the real programs under Pulumi's mocks) and lazy imports."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from oa_vm.clouds.aws.provider import AwsProvider
from oa_vm.clouds.azure.provider import AzureProvider
from oa_vm.clouds.base import PoolSpec
from oa_vm.errors import InvalidInputError
from oa_vm.model import state
from tests.support.fake_pulumi_engine import FakePulumiEngine
from tests.support.pool_programs import AwsLookups

ROOT = Path(__file__).resolve().parents[3]


def spec(cloud: str, **changes: Any) -> PoolSpec:
    values: dict[str, Any] = {
        "name": "plan-me", "cloud": cloud, "workers": 3, "owner": "alice",
        "expires_at": state.utcnow() + timedelta(hours=4),
    }
    values.update(changes)
    return PoolSpec(**values)


@pytest.fixture
def engine() -> FakePulumiEngine:
    return FakePulumiEngine(AwsLookups())


def test_aws_plan_lists_the_programs_resources_and_writes_nothing(
    engine: FakePulumiEngine, oa_home: Path
) -> None:
    plan = AwsProvider(engine=engine).plan(spec("aws"))
    data = plan.to_json()
    json.dumps(data)  # ready for --json
    assert (data["cloud"], data["region"], data["size"], data["workers"]) == (
        "aws", "us-east-1", "m8i.2xlarge", 3
    )
    instances = [r for r in data["resources"] if r["type"] == "aws:ec2/instance:Instance"]
    # Pulumi's mocks register resources in no set order: compare as a set, not a list
    assert sorted(r["name"] for r in instances) == ["plan-me-w0", "plan-me-w1", "plan-me-w2"]
    assert instances[0]["inputs"]["cpuOptions"] == {"nestedVirtualization": "enabled"}
    assert instances[0]["inputs"]["rootBlockDevice"]["volumeSize"] == 160  # int, not 160.0
    # No image yet in this home: the plan says which image a create would use, and how to get one.
    storage = instances[0]["inputs"]["ebsBlockDevices"][0]
    assert storage["snapshotId"] == "newest-ready-image-of-the-region"
    assert data["image"]["id"] is None and "oa-vm image-create" in data["image"]["note"]
    group = next(r for r in data["resources"] if r["type"].endswith("SecurityGroup"))
    assert group["inputs"]["ingress"][0]["cidrBlocks"] == ["caller-ip/32"]
    assert any("detected at create" in note for note in plan.notes)
    assert engine.calls == [] and not oa_home.exists()


def test_plan_price_is_for_the_whole_pool_from_the_catalog(engine: FakePulumiEngine) -> None:
    from oa_vm.cost.pricing import hourly_price

    plan = AwsProvider(engine=engine).plan(spec("aws", regions=["us-east-1"]))
    per_worker = hourly_price("aws", "us-east-1", "m8i.2xlarge")
    assert plan.price_per_hour == pytest.approx(3 * per_worker)
    assert any(note.startswith("3 worker(s) x $") for note in plan.notes)


def test_azure_plan(engine: FakePulumiEngine) -> None:
    plan = AzureProvider(engine=engine).plan(
        spec("azure", workers=1, spot=True, allow_cidrs=["198.51.100.7/32"])
    )
    types = [r.type for r in plan.resources]
    assert types.count("azure-native:compute:VirtualMachine") == 1
    assert "azure-native:devtestlab:GlobalSchedule" in types
    vm = next(r for r in plan.resources if r.type == "azure-native:compute:VirtualMachine")
    assert vm.inputs["priority"] == "Spot"
    assert plan.size == "Standard_D8s_v5" and plan.region == "eastus"


def test_plan_refuses_a_size_that_cannot_nest(engine: FakePulumiEngine) -> None:
    with pytest.raises(InvalidInputError, match="Standard_D8s_v5"):
        AzureProvider(engine=engine).plan(spec("azure", size="Standard_B2s"))


def test_provider_modules_do_not_import_pulumi() -> None:
    code = (
        "import sys, oa_vm.clouds.aws.provider, oa_vm.clouds.azure.provider, oa_vm.cli.doctor; "
        "from oa_vm.clouds import get_provider; get_provider('aws'); get_provider('azure'); "
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('pulumi', 'pulumi_aws', 'pulumi_azure_native')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
