"""Several workers per host on AWS and Azure (``--workers-per-host``): the plan runs the real
program under Pulumi's mocks with one machine per N workers, a size that holds N of WAA's
guests, a price per worker, and the pool policies every plan keeps (the three tags on every
taggable resource, SSH alone and only from the allowed CIDRs, nesting, an expiry per machine)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from infra import azure as infra_azure
from infra.sizes import size_spec
from infra.worker.slots import workers_that_fit
from oa_vm.clouds.aws.provider import AwsProvider
from oa_vm.clouds.azure.provider import AzureProvider
from oa_vm.clouds.base import Plan
from oa_vm.cost.pricing import hourly_price
from oa_vm.errors import InvalidInputError
from tests.support.fake_pulumi_engine import FakePulumiEngine
from tests.support.pool_programs import AwsLookups
from tests.unit.providers.test_cloud_plan import spec
from tests.unit.providers.test_pulumi_driver import images  # noqa: F401  (a fixture)

MACHINE = {"aws": "aws:ec2/instance:Instance", "azure": "azure-native:compute:VirtualMachine"}
CIDR = "198.51.100.7/32"


def _plan(cloud: str, **changes: Any) -> Plan:
    provider = (AwsProvider if cloud == "aws" else AzureProvider)(
        engine=FakePulumiEngine(AwsLookups()))
    return provider.plan(spec(cloud, allow_cidrs=[CIDR], **changes))


def _assert_pool_policies(cloud: str, plan: Plan, machines: int) -> None:
    """What every pool plan keeps, with one worker per host or several."""
    tagged = [r for r in plan.resources if isinstance(r.inputs.get("tags"), dict)]
    assert len(tagged) >= machines
    for resource in tagged:
        tags = resource.inputs["tags"]
        assert tags.get("oa-vm:pool") == "plan-me" and tags.get("oa-vm:owner") == "alice"
        assert tags.get("oa-vm:expires-at"), resource.name
    if cloud == "aws":
        (group,) = [r for r in plan.resources if r.type.endswith("SecurityGroup")]
        (rule,) = group.inputs["ingress"]
        assert (rule["fromPort"], rule["toPort"], rule["cidrBlocks"]) == (22, 22, [CIDR])
        assert "0.0.0.0/0" not in json.dumps(group.inputs["ingress"])
        for machine in (r for r in plan.resources if r.type == MACHINE[cloud]):
            assert machine.inputs["cpuOptions"] == {"nestedVirtualization": "enabled"}
    else:
        inbound = [rule for r in plan.resources for rule in r.inputs.get("securityRules", [])
                   if rule.get("direction") == "Inbound" and rule.get("access") == "Allow"]
        assert inbound
        for rule in inbound:
            assert rule.get("destinationPortRange") == "22", rule
            sources = rule.get("sourceAddressPrefixes") or [rule.get("sourceAddressPrefix")]
            assert sources == [CIDR], rule
        schedules = [r for r in plan.resources if r.type.endswith("devtestlab:GlobalSchedule")]
        assert len(schedules) == machines  # each machine ends itself at the expiry


@pytest.mark.parametrize(("cloud", "size"), [("aws", "m8i.4xlarge"),
                                             ("azure", "Standard_D16s_v5")])
def test_four_workers_per_host_plan_fewer_bigger_hosts_priced_per_worker(
    cloud: str, size: str
) -> None:
    plan = _plan(cloud, workers=8, workers_per_host=4)
    machines = [r for r in plan.resources if r.type == MACHINE[cloud]]
    assert len(machines) == 2 and plan.workers == 8 and plan.size == size
    offer = size_spec(cloud, size)
    assert offer is not None and workers_that_fit(offer.vcpus, offer.memory_gib) >= 4
    host = hourly_price(cloud, plan.region or "", size)
    assert plan.price_per_hour == pytest.approx(2 * host)
    note = next(n for n in plan.notes if "per worker" in n)
    assert f"${host / 4:.4f}/h per worker" in note
    assert "one worker per" in note and ("saves" in note or "costs" in note)
    assert "Each host (up to 4 workers): 16 vCPUs, 64 GiB memory" in plan.describe()
    _assert_pool_policies(cloud, plan, machines=2)


@pytest.mark.parametrize("cloud", ["aws", "azure"])
def test_one_worker_per_host_plans_as_before(cloud: str) -> None:
    plan = _plan(cloud, workers=3)
    assert len([r for r in plan.resources if r.type == MACHINE[cloud]]) == 3
    _assert_pool_policies(cloud, plan, machines=3)


@pytest.mark.parametrize(("cloud", "size", "fix"), [
    ("aws", "m8i.2xlarge", "--size m8i.4xlarge"),
    ("azure", "Standard_D8s_v5", "--size Standard_D16s_v5"),
])
def test_a_size_too_small_for_its_workers_is_refused_with_one_that_fits(
    cloud: str, size: str, fix: str
) -> None:
    with pytest.raises(InvalidInputError, match=f"holds 2 of WAA's workers, not 4.*{fix}"):
        _plan(cloud, workers=4, workers_per_host=4, size=size)


def test_more_workers_per_host_than_any_size_of_the_family_holds() -> None:
    with pytest.raises(InvalidInputError, match="use --workers-per-host 8"):
        _plan("aws", workers=9, workers_per_host=9, size="m8i.8xlarge")


@pytest.mark.usefixtures("images")  # a ready image in each cloud's default region
@pytest.mark.parametrize("cloud", ["aws", "azure"])
def test_a_create_with_several_workers_per_host_records_them_by_host(
    cloud: str, oa_home: Path
) -> None:
    provider = (AwsProvider if cloud == "aws" else AzureProvider)(
        engine=FakePulumiEngine(AwsLookups() if cloud == "aws" else infra_azure.offline_lookup),
        lister=lambda pool: [])
    wanted = spec(cloud, workers=8, workers_per_host=4, allow_cidrs=[CIDR])
    provider.preflight(wanted)  # no longer refused
    record = provider.create(wanted, lambda line: None)
    assert len(record.workers) == 8 and record.settings["workers_per_host"] == 4
    hosts: dict[str, list[Any]] = {}
    for worker in record.workers:
        assert worker.host is not None and worker.ssh is not None
        hosts.setdefault(worker.host, []).append(worker)
    assert sorted(hosts) == ["plan-me-w0", "plan-me-w1"]
    for workers in hosts.values():
        assert len({w.ssh.host for w in workers}) == 1  # one machine, one address
        assert len({w.provider_id for w in workers}) == 1
        ports = [p for w in workers for p in (w.remote_waa_port, w.remote_scoring_port)]
        assert len(set(ports)) == 8  # each tunnel reaches its own worker
    host_price = hourly_price(cloud, record.settings["region"], record.settings["size"])
    assert record.price_per_hour == pytest.approx(host_price / 4)  # per worker


@pytest.mark.parametrize("cloud", ["aws", "azure"])
def test_workers_that_do_not_fill_their_hosts_are_refused_in_one_line(cloud: str) -> None:
    from oa_vm import api

    with pytest.raises(InvalidInputError, match="use --workers 8 .2 host.s.. or --workers 4"):
        api.build_spec(name="p", cloud=cloud, workers=7, workers_per_host=4)


@pytest.mark.parametrize("cloud", ["aws", "azure"])
def test_the_disks_of_several_workers_per_host_are_one_os_disk_and_a_storage_disk_each(
    cloud: str,
) -> None:
    from oa_vm.clouds import facts
    from oa_vm.cost.pool_cost import paused_price_per_day

    plan = _plan(cloud, workers=8, workers_per_host=4)
    storage = ([d for r in plan.resources if r.type == MACHINE[cloud]
                for d in r.inputs["ebsBlockDevices"]] if cloud == "aws"
               else [r for r in plan.resources if r.type == "azure-native:compute:Disk"])
    assert len(storage) == 8  # what the program declares: one storage disk per worker
    billing = facts(cloud).billing
    assert billing is not None and plan.machine is not None and plan.size is not None
    kind = billing.disk_type(plan.size)
    os_gb, storage_gb = plan.machine["os_disk_gb"], plan.machine["storage_gb"]
    per_host = billing.disk_per_month(os_gb, kind) + 4 * billing.disk_per_month(storage_gb, kind)
    note = next(n for n in plan.notes if n.startswith("disks:"))
    assert f"${per_host:.2f}/month per host" in note and f"${2 * per_host:.2f}/month for 2" in note
    paused = paused_price_per_day(billing, 8, disks=(os_gb, storage_gb), disk_type=kind,
                                  per_host=4)
    assert paused == pytest.approx(2 * (per_host * 24 / 730 + billing.address_per_hour * 24))
