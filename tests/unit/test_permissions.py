"""``oa-vm doctor``'s permission lines: the identity's IAM and EventBridge Scheduler actions
(AWS) and role on the subscription (Azure), asked of a stand-in CLI on PATH that plays the real
CLI's recorded answers (``tests/support/fake_cloud_identity_cli.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oa_vm.cli import doctor
from oa_vm.clouds.permissions import AWS_ACTIONS, aws_permissions_check, azure_permissions_check
from oa_vm.kit import checks
from tests.support import fake_cloud_identity_cli as fake

ROLE_SESSION = "arn:aws:sts::123456789012:assumed-role/oa-vm-dev/alice"
ROLE = "arn:aws:iam::123456789012:role/oa-vm-dev"


def _simulated(denied: dict[str, str]) -> dict[str, Any]:
    """``aws iam simulate-principal-policy``'s answer: each action allowed unless denied."""
    return {"EvaluationResults": [
        {"EvalActionName": action, "EvalResourceName": "*",
         "EvalDecision": denied.get(action, "allowed"), "MatchedStatements": [],
         "MissingContextValues": []} for action in AWS_ACTIONS]}


def _aws(tmp_path: Path, denied: dict[str, str]) -> Path:
    return fake.install(tmp_path / "bin", "aws", {
        "sts get-caller-identity": {"UserId": "AROAEXAMPLE:alice", "Account": "123456789012",
                                    "Arn": ROLE_SESSION},
        "iam simulate-principal-policy": _simulated(denied),
    })


def test_a_missing_scheduler_permission_is_one_line_naming_the_action(tmp_path: Path) -> None:
    aws = _aws(tmp_path, {"scheduler:CreateSchedule": "implicitDeny"})
    check = aws_permissions_check(cli=str(aws))
    assert not check.ok
    assert check.detail == (f"{ROLE} may not scheduler:CreateSchedule (implicitDeny), which a "
                            "pool needs to schedule the pool's expiry (the cloud stops it on "
                            "time)")
    assert check.fix == f"ask the account's admin to allow scheduler:CreateSchedule to {ROLE}"
    asked = fake.calls(aws.parent)[1]
    # the session's role is simulated, with every action the pool's stack needs
    assert asked[:4] == ["iam", "simulate-principal-policy", "--policy-source-arn", ROLE]
    for action in ("iam:CreateRole", "iam:PassRole", "scheduler:CreateSchedule",
                   "ec2:RunInstances"):
        assert action in asked


def test_several_missing_iam_permissions_are_all_named(tmp_path: Path) -> None:
    aws = _aws(tmp_path, {"iam:CreateRole": "explicitDeny", "iam:PassRole": "implicitDeny"})
    check = aws_permissions_check(cli=str(aws))
    assert not check.ok and "\n" not in check.detail
    assert check.detail.startswith(f"{ROLE} may not iam:CreateRole (explicitDeny)")
    assert "(and 1 more: iam:PassRole)" in check.detail
    assert "iam:CreateRole, iam:PassRole" in check.fix


def test_every_action_allowed_is_ok(tmp_path: Path) -> None:
    check = aws_permissions_check(cli=str(_aws(tmp_path, {})))
    assert check.ok and check.detail == f"{ROLE} may do all {len(AWS_ACTIONS)} actions a pool needs"


def test_no_aws_credentials_is_said_not_a_traceback(tmp_path: Path) -> None:
    aws = fake.install(tmp_path / "bin", "aws",
                       {"sts get-caller-identity": fake.AWS_NO_CREDENTIALS})
    check = aws_permissions_check(cli=str(aws))
    assert not check.ok
    assert "Unable to locate credentials" in check.detail and "aws configure" in check.fix
    assert len(fake.calls(aws.parent)) == 1, "nothing simulated without a caller"


def _az_with_roles(where: Path, roles: list[str]) -> Path:
    return fake.install(where, "az", {
        "account show": {"id": "0000-sub", "user": {"name": "alice@example.com",
                                                      "type": "user"}},
        "role assignment list": [{"roleDefinitionName": role, "scope": "/subscriptions/0000-sub"}
                                 for role in roles],
    })


CREATE = "az role assignment create --assignee alice@example.com --role "
GRANT = f"ask an admin: {CREATE}"
SCOPE = " --scope /subscriptions/0000-sub"


@pytest.mark.parametrize(("roles", "lacks", "fix"), [
    (["Reader"], "Contributor and User Access Administrator",
     f"{GRANT}Contributor{SCOPE}; {CREATE}'User Access Administrator'{SCOPE}"),
    # Contributor makes everything but may not give the deleter its role on the group
    (["Contributor", "Reader"], "User Access Administrator",
     f"{GRANT}'User Access Administrator'{SCOPE}"),
    (["Role Based Access Control Administrator"], "Contributor", f"{GRANT}Contributor{SCOPE}"),
])
def test_azure_without_the_roles_a_pool_needs_names_each_grant(
    tmp_path: Path, roles: list[str], lacks: str, fix: str
) -> None:
    check = azure_permissions_check(cli=str(_az_with_roles(tmp_path / "bin", roles)))
    assert not check.ok and "\n" not in check.detail
    assert check.detail.startswith(f"alice@example.com lacks {lacks} on subscription 0000-sub "
                                   f"(roles: {', '.join(sorted(roles))}): a pool needs Owner, "
                                   "or Contributor"), check.detail
    assert check.fix == fix


@pytest.mark.parametrize("roles", [
    ["Owner"], ["Contributor", "User Access Administrator"],
    ["Contributor", "Role Based Access Control Administrator"],
])
def test_azure_roles_that_let_a_pool_authorise_its_deleter_are_enough(
    tmp_path: Path, roles: list[str]
) -> None:
    check = azure_permissions_check(cli=str(_az_with_roles(tmp_path / "bin", roles)))
    assert check.ok and check.detail == (
        f"alice@example.com is {' and '.join(sorted(roles))} on subscription 0000-sub")


def test_azure_signed_out_is_said_not_a_traceback(tmp_path: Path) -> None:
    logged_out = fake.install(tmp_path / "bin3", "az", {"account show": fake.AZ_NOT_LOGGED_IN})
    check = azure_permissions_check(cli=str(logged_out))
    assert not check.ok and "az login" in check.detail and "az login" in check.fix


def test_doctor_asks_only_a_cloud_with_credentials() -> None:
    missing = {"aws": checks.Check("aws credentials", False, "none", "aws configure"),
               "azure": checks.Check("azure credentials", False, "none", "az login")}

    def run(args: list[str]) -> Any:
        raise AssertionError(f"asked without credentials: {args}")

    lines = doctor.check_permissions(missing, run=run)
    assert [c.detail for c in lines] == ["not checked (no aws credentials)",
                                         "not checked (no azure credentials)"]
