"""Policy tests for the AWS pool program, run under Pulumi's mocks (no engine, no cloud)."""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

import pulumi
import pytest
import yaml  # type: ignore[import-untyped]

from infra import aws as infra_aws
from infra.offline import OfflineRun, RecordedResource, run_offline
from infra.sizes import UnsupportedSizeError
from infra.tags import ALL_KEYS, check_key
from tests.support.pool_programs import (
    AWS_IMAGE,
    EXPIRES,
    AwsLookups,
    make_settings,
    of_type,
    taggable,
)
from tests.unit.infra.conftest import RunAws

INSTANCE = "aws:ec2/instance:Instance"
SG = "aws:ec2/securityGroup:SecurityGroup"


def _instances(run: OfflineRun) -> list[RecordedResource]:
    # By worker index: the engine registers resources as their inputs resolve, so the order of
    # registration is not the order of declaration.
    return sorted(of_type(run, INSTANCE), key=lambda r: int(r.name.rsplit("-w", 1)[1]))


@pytest.mark.parametrize("workers", [1, 3])
def test_one_instance_per_worker_with_outputs(run_aws: RunAws, workers: int) -> None:
    run, _ = run_aws(make_settings("aws", workers=workers))
    names = [r.name for r in _instances(run)]
    assert names == [f"waa-eval-w{i}" for i in range(workers)]
    assert [w["name"] for w in run.result] == names
    for worker in run.result:
        assert set(worker) == {"name", "public_ip", "instance_id", "ssh_user"}
        assert worker["ssh_user"] == "ubuntu"
        assert worker["public_ip"] and worker["instance_id"]


@pytest.mark.parametrize("workers", [1, 3])
def test_instances_nest_terminate_on_shutdown_and_have_encrypted_gp3(
    run_aws: RunAws, workers: int
) -> None:
    run, _ = run_aws(make_settings("aws", workers=workers))
    for inst in _instances(run):
        inputs = inst.inputs
        assert inputs["cpuOptions"]["nestedVirtualization"] == "enabled"
        assert inputs["instanceInitiatedShutdownBehavior"] == "terminate"
        assert inputs["instanceType"] == "m8i.2xlarge"
        root = inputs["rootBlockDevice"]
        assert (root["volumeSize"], root["volumeType"], root["encrypted"]) == (160, "gp3", True)
        assert root["deleteOnTermination"] is True
        assert inputs["ami"] == "ami-0123456789abcdef0"
        assert inputs["metadataOptions"]["httpTokens"] == "required"


@pytest.mark.parametrize("workers", [1, 3])
def test_every_resource_carries_the_three_tags(run_aws: RunAws, workers: int) -> None:
    run, _ = run_aws(make_settings("aws", workers=workers), AwsLookups(default_vpc=False))
    resources = taggable(run)
    assert {r.type for r in resources} >= {INSTANCE, SG, "aws:ec2/vpc:Vpc", "aws:ec2/subnet:Subnet"}
    expected = {
        "oa-vm:pool": "waa-eval",
        "oa-vm:owner": "alice@example.com",
        "oa-vm:expires-at": "2026-03-01T18:30:05Z",
    }
    for res in resources:
        tags = res.inputs.get("tags") or {}
        assert {k: tags.get(k) for k in ALL_KEYS} == expected, res.name
    for inst in _instances(run):
        root_tags = inst.inputs["rootBlockDevice"]["tags"]
        assert {k: root_tags.get(k) for k in ALL_KEYS} == expected


@pytest.mark.parametrize("spot", [False, True])
def test_hosts_read_their_expiry_tag_from_the_metadata_at_boot(
    run_aws: RunAws, spot: bool
) -> None:
    """The boot unit reads ``oa-vm:expires-at`` from the instance metadata: the instances show
    their tags there, every key they carry is one AWS then allows (a launch fails otherwise),
    and the user data installs and enables the unit (its run: test_expiry_arm_rehearsal)."""
    run, _ = run_aws(make_settings("aws", workers=2, spot=spot))
    for inst in _instances(run):
        options = inst.inputs["metadataOptions"]
        assert options["instanceMetadataTags"] == "enabled"
        assert (options["httpTokens"], options["httpPutResponseHopLimit"]) == ("required", 1)
        assert "Name" in inst.inputs["tags"]
        for key in inst.inputs["tags"]:
            assert check_key(key) == key
        doc = yaml.safe_load(gzip.decompress(base64.b64decode(inst.inputs["userDataBase64"])))
        paths = {f["path"] for f in doc["write_files"]}
        assert {"/opt/oa-vm/expiry_arm.sh", "/etc/systemd/system/oa-vm-expiry-arm.service",
                "/opt/oa-vm/lib.sh"} <= paths
        assert ["systemctl", "enable", "oa-vm-expiry-arm.service"] in doc["runcmd"]
    for res in taggable(run):  # the provider's default tags reach every resource
        for key in res.inputs.get("tags") or {}:
            assert check_key(key) == key, res.name


def _ingress(run: Any) -> list[dict[str, Any]]:
    (group,) = of_type(run, SG)
    rules: list[dict[str, Any]] = group.inputs["ingress"]
    return rules


@pytest.mark.parametrize("workers", [1, 3])
def test_only_ssh_comes_in_and_only_from_the_allowed_cidrs(run_aws: RunAws, workers: int) -> None:
    settings = make_settings(
        "aws", workers=workers, allowed_cidrs=("198.51.100.7/32", "2001:db8::/64")
    )
    run, _ = run_aws(settings)
    rules = _ingress(run)
    assert len(rules) == 1
    (rule,) = rules
    assert (rule["fromPort"], rule["toPort"], rule["protocol"]) == (22, 22, "tcp")
    assert rule["cidrBlocks"] == ["198.51.100.7/32"]
    assert rule["ipv6CidrBlocks"] == ["2001:db8::/64"]
    assert "0.0.0.0/0" not in str(rules) and "::/0" not in str(rules)


def test_an_ipv6_only_allow_list_opens_no_ipv4_at_all(run_aws: RunAws) -> None:
    run, _ = run_aws(make_settings("aws", allowed_cidrs=("2001:db8:1234::/48",)))
    (rule,) = _ingress(run)
    assert rule["ipv6CidrBlocks"] == ["2001:db8:1234::/48"]
    assert not rule.get("cidrBlocks"), "no IPv4 source may be added for an IPv6-only list"
    assert "0.0.0.0/0" not in json.dumps(rule) and "::/0" not in json.dumps(rule)


def test_the_whole_internet_only_when_explicitly_allowed(run_aws: RunAws) -> None:
    run, _ = run_aws(make_settings("aws", allowed_cidrs=("0.0.0.0/0",)))
    assert _ingress(run)[0]["cidrBlocks"] == ["0.0.0.0/0"]


def test_no_cidr_at_all_is_refused(run_aws: RunAws) -> None:
    with pytest.raises(ValueError, match="--allow-cidr"):
        run_aws(make_settings("aws", allowed_cidrs=()))


def test_spot_only_when_asked(run_aws: RunAws) -> None:
    on_demand, _ = run_aws(make_settings("aws"))
    assert "instanceMarketOptions" not in _instances(on_demand)[0].inputs
    spot, _ = run_aws(make_settings("aws", spot=True))
    market = _instances(spot)[0].inputs["instanceMarketOptions"]
    assert market["marketType"] == "spot"
    assert market["spotOptions"]["spotInstanceType"] == "one-time"
    assert market["spotOptions"]["instanceInterruptionBehavior"] == "terminate"


def test_ubuntu_lts_ami_is_looked_up_from_canonical(run_aws: RunAws) -> None:
    _, lookups = run_aws(make_settings("aws"))
    (ami_args,) = [args for token, args in lookups.calls if token == "aws:ec2/getAmi:getAmi"]
    assert ami_args["owners"] == ["099720109477"]
    assert ami_args["mostRecent"] is True
    name_filter = next(f for f in ami_args["filters"] if f["name"] == "name")
    assert "ubuntu-noble-24.04-amd64-server" in name_filter["values"][0]
    assert "hvm-ssd-gp3" in name_filter["values"][0]


def test_default_vpc_subnets_are_used_round_robin(run_aws: RunAws) -> None:
    run, _ = run_aws(make_settings("aws", workers=4))
    assert not of_type(run, "aws:ec2/vpc:Vpc")
    subnets = [i.inputs["subnetId"] for i in _instances(run)]
    assert subnets == ["subnet-0a", "subnet-0b", "subnet-0c", "subnet-0a"]
    assert of_type(run, SG)[0].inputs["vpcId"] == "vpc-0default"


def test_without_a_default_vpc_the_pool_makes_its_own(run_aws: RunAws) -> None:
    run, _ = run_aws(make_settings("aws", workers=2), AwsLookups(default_vpc=False))
    (vpc,) = of_type(run, "aws:ec2/vpc:Vpc")
    (subnet,) = of_type(run, "aws:ec2/subnet:Subnet")
    (table,) = of_type(run, "aws:ec2/routeTable:RouteTable")
    assert of_type(run, "aws:ec2/internetGateway:InternetGateway")
    assert subnet.inputs["mapPublicIpOnLaunch"] is True
    assert table.inputs["routes"][0]["cidrBlock"] == "0.0.0.0/0"
    assert vpc.inputs["cidrBlock"] == infra_aws.OWN_VPC_CIDR
    assert {i.inputs["subnetId"] for i in _instances(run)} == {f"{subnet.name}-id"}


def test_size_not_offered_in_the_region_is_a_capacity_error(run_aws: RunAws) -> None:
    with pytest.raises(infra_aws.CapacityError, match="InstanceTypeNotOffered"):
        run_aws(make_settings("aws"), AwsLookups(zones=()))


def test_sizes_that_cannot_nest_are_refused_with_the_good_ones(run_aws: RunAws) -> None:
    with pytest.raises(UnsupportedSizeError, match=r"m8i\.2xlarge.*\.metal"):
        run_aws(make_settings("aws", size="t3.large"))


def test_metal_sizes_need_no_nested_flag(run_aws: RunAws) -> None:
    run, _ = run_aws(make_settings("aws", size="c5.metal"))
    assert "cpuOptions" not in _instances(run)[0].inputs


def test_user_data_is_the_workers_cloud_init_within_the_aws_limit(run_aws: RunAws) -> None:
    run, _ = run_aws(make_settings("aws"))
    encoded = _instances(run)[0].inputs["userDataBase64"]
    raw = base64.b64decode(encoded)
    assert len(raw) <= 16 * 1024
    text = gzip.decompress(raw).decode("utf-8")
    assert text.startswith("#cloud-config\n")
    doc = yaml.safe_load(text)
    timer = next(f for f in doc["write_files"] if f["path"].endswith("oa-vm-expiry.timer"))
    assert "OnCalendar=2026-03-01 18:30:05 UTC" in timer["content"]
    assert _instances(run)[0].inputs["userDataReplaceOnChange"] is True


def test_spot_user_data_carries_the_spot_watcher_within_the_aws_limit(run_aws: RunAws) -> None:
    run, _ = run_aws(make_settings("aws", spot=True))
    raw = base64.b64decode(_instances(run)[0].inputs["userDataBase64"])
    assert len(raw) <= 16 * 1024
    doc = yaml.safe_load(gzip.decompress(raw).decode("utf-8"))
    paths = {f["path"] for f in doc["write_files"]}
    assert {"/opt/oa-vm/spot_watch.sh", "/etc/systemd/system/oa-vm-spot-watch.service"} <= paths
    assert ["systemctl", "enable", "--now", "oa-vm-spot-watch.service"] in doc["runcmd"]


def test_component_outputs_resolve_through_output_all() -> None:
    """The style the Pulumi docs show: assert on outputs with ``Output.all(...).apply``. Run
    through :func:`infra.offline.run_offline` (its own thread and event loop, one run at a
    time): driving ``pulumi.runtime.test`` on the test's own thread shared that thread's
    event loop and Pulumi's global settings with every other program run in the process."""
    seen: dict[str, Any] = {}

    def program() -> Any:
        pool = infra_aws.AwsWorkerPool("p", make_settings("aws", workers=2))

        def verify(values: list[Any]) -> None:
            workers, sg_id = values
            seen["workers"] = workers
            assert sg_id == "p-ssh-id"

        return pulumi.Output.all(pool.workers, pool.security_group_id).apply(verify)

    run_offline(program, AwsLookups())
    addresses = [w["public_ip"] for w in seen["workers"]]
    assert len(addresses) == 2 and all(a.startswith("203.0.113.") for a in addresses), addresses
    assert EXPIRES.tzinfo is not None


def test_each_workers_storage_volume_is_made_from_the_image(run_aws: RunAws) -> None:
    run, _ = run_aws(make_settings("aws", workers=2))
    for inst in _instances(run):
        (storage,) = inst.inputs["ebsBlockDevices"]
        assert storage["snapshotId"] == AWS_IMAGE
        assert (storage["deviceName"], storage["volumeType"], storage["encrypted"]) == (
            "/dev/sdf", "gp3", True
        )
        assert storage["deleteOnTermination"] is True
    # A pool never makes a volume to snapshot: that is an image builder's.
    assert not of_type(run, "aws:ebs/volume:Volume")


def test_the_cloud_terminates_the_instances_at_the_expiry(run_aws: RunAws) -> None:
    run, _ = run_aws(make_settings("aws", workers=2))
    (schedule,) = of_type(run, "aws:scheduler/schedule:Schedule")
    inputs = schedule.inputs
    # 18:30:05 rounds up: the pool never ends before the time it was promised.
    assert inputs["scheduleExpression"] == "at(2026-03-01T18:31:00)"
    assert inputs["scheduleExpressionTimezone"] == "UTC"
    assert inputs["flexibleTimeWindow"] == {"mode": "OFF"}
    target = inputs["target"]
    assert target["arn"] == "arn:aws:scheduler:::aws-sdk:ec2:terminateInstances"
    assert json.loads(target["input"]) == {"InstanceIds": ["waa-eval-w0-id", "waa-eval-w1-id"]}
    (role,) = of_type(run, "aws:iam/role:Role")
    trust = json.loads(role.inputs["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"] == {"Service": "scheduler.amazonaws.com"}
    (policy,) = of_type(run, "aws:iam/rolePolicy:RolePolicy")
    (statement,) = json.loads(policy.inputs["policy"])["Statement"]
    # Scoped to this pool's instances: the role can terminate nothing else.
    assert statement["Action"] == "ec2:TerminateInstances"
    assert statement["Resource"] == [
        "arn:aws:ec2:offline:instance/waa-eval-w0", "arn:aws:ec2:offline:instance/waa-eval-w1"
    ]


def test_the_installed_sdk_has_nested_virtualization() -> None:
    import importlib.metadata

    import pulumi_aws

    fields = pulumi_aws.ec2.InstanceCpuOptionsArgs.__init__.__code__.co_varnames
    assert "nested_virtualization" in fields
    floor = next(
        r for r in importlib.metadata.requires("oa-vm") or [] if r.startswith("pulumi-aws")
    )
    assert ">=7.51" in floor, floor


def test_a_later_expiry_moves_the_schedule_and_tags_and_a_new_hosts_user_data(
    run_aws: RunAws
) -> None:
    """``pool-extend`` runs the program with a later expiry: the kill switch and the tags move;
    the user data renders it too, for a host created from now on (an existing instance keeps
    its own: test_first_boot)."""
    from dataclasses import replace
    from datetime import timedelta

    created = make_settings("aws", workers=2)
    extended = replace(created, expires_at=EXPIRES + timedelta(days=3, hours=2))
    after, _ = run_aws(extended)
    (schedule,) = of_type(after, "aws:scheduler/schedule:Schedule")
    assert schedule.inputs["scheduleExpression"] == "at(2026-03-04T20:31:00)"
    for new in _instances(after):
        assert "userDataBase64" in new.ignore_changes
        assert new.inputs["tags"]["oa-vm:expires-at"] == "2026-03-04T20:30:05Z"
        assert new.inputs["rootBlockDevice"]["tags"]["oa-vm:expires-at"] == "2026-03-04T20:30:05Z"
    # the user data says the current expiry: its power-off timer and worker.env
    text = gzip.decompress(base64.b64decode(_instances(after)[0].inputs["userDataBase64"]))
    assert b"OnCalendar=2026-03-04 20:30:05 UTC" in text
    assert b"OA_VM_EXPIRES_AT=2026-03-04T20:30:05Z" in text
    # its timer's units are the ones a moved expiry re-arms over SSH (one builder)
    from infra.worker.cloud_init import poweroff_units

    written = {f["path"]: f["content"] for f in yaml.safe_load(text)["write_files"]}
    for path, unit in poweroff_units(extended.expires_at).items():
        assert written[path] == unit
