"""No cloud credential within the guest's reach, checked under Pulumi's mocks.

The egress boundary (``infra/egress_rules.py``) keeps the guest off the metadata address;
these are the second wall: on AWS the metadata service answers only IMDSv2 and its token cannot
cross more than one hop (the host itself, never a container or the guest behind it); on Azure the
VM carries no managed identity, so there is no token to ask for (the pool's one identity is its
deleter workflow's, outside every VM).
"""

from __future__ import annotations

import pytest

from tests.support.pool_programs import make_settings, of_type
from tests.unit.infra.conftest import RunAws, RunAzure


@pytest.mark.parametrize("building", [False, True])
def test_aws_workers_and_builders_answer_imdsv2_only_within_one_hop(
    run_aws: RunAws, building: bool
) -> None:
    if building:
        settings = make_settings("aws", workers=1, mode="build", image_id=None)
    else:
        settings = make_settings("aws", workers=2)
    run, _ = run_aws(settings)
    instances = of_type(run, "aws:ec2/instance:Instance")
    assert instances
    for instance in instances:
        options = instance.inputs["metadataOptions"]
        assert options["httpTokens"] == "required"
        assert options["httpPutResponseHopLimit"] == 1


def test_azure_vms_have_no_managed_identity(run_azure: RunAzure) -> None:
    run = run_azure(make_settings("azure", workers=2))
    vms = of_type(run, "azure-native:compute:VirtualMachine")
    assert len(vms) == 2
    for vm in vms:
        assert not vm.inputs.get("identity"), vm.inputs.get("identity")
    assert not of_type(run, "azure-native:managedidentity:UserAssignedIdentity")
    # the one identity given a role is the pool's deleter workflow's, not a VM's
    (role,) = of_type(run, "azure-native:authorization:RoleAssignment")
    (workflow,) = of_type(run, "azure-native:logic:Workflow")
    assert role.inputs["principalId"] == f"{workflow.name}-principal"
