"""Whether the signed-in cloud identity may do what a pool's stack does, asked of the cloud's CLI.

A pool made by someone allowed to start instances but not to make the IAM role its expiry
schedule runs as (or the schedule itself) fails half-way, with instances already billing and no
schedule to stop them. ``oa-vm doctor`` therefore asks first, the way :mod:`oa_vm.clouds.quota`
reads
the vCPU quota (the cloud's own CLI, with a timeout; a recorded answer in tests):

- AWS: ``aws sts get-caller-identity`` names the caller; ``aws iam simulate-principal-policy``
  evaluates every action in :data:`AWS_ACTIONS` against that identity's policies (an assumed
  role's session ARN is turned into its role's ARN, which IAM can simulate). The account's root
  user is allowed everything and cannot be simulated: the line says so.
- Azure: ``az account show`` names the signed-in user and subscription; ``az role assignment
  list --assignee ... --scope /subscriptions/SUB --include-inherited`` lists its roles there. A
  pool makes networks, VMs, DevTest Labs shutdown schedules and its deleter (a Logic App) in its
  own resource group, which ``Contributor`` on the subscription allows, and gives the deleter's
  identity a role on that group, which needs ``Microsoft.Authorization/roleAssignments/write``:
  ``Owner``, or ``Contributor`` with ``User Access Administrator`` or ``Role Based Access
  Control Administrator`` (:data:`AZURE_ROLES`).

Without the CLI or credentials the check is *not made* and says so in one line: nothing guessed.
"""

from __future__ import annotations

import re
import shlex

from oa_vm.clouds.quota import Runner, _ask, _find, _run_cli
from oa_vm.kit.checks import Check

AWS_ACTIONS: dict[str, str] = {
    "ec2:RunInstances": "start the workers",
    "ec2:TerminateInstances": "remove the workers",
    "ec2:CreateTags": "tag every resource with its pool",
    "ec2:CreateVpc": "make the pool's network",
    "ec2:CreateSubnet": "make the pool's network",
    "ec2:CreateSecurityGroup": "open SSH to this machine only",
    "ec2:AuthorizeSecurityGroupIngress": "open SSH to this machine only",
    "ec2:ImportKeyPair": "give the workers the pool's SSH key",
    "ec2:CreateSnapshot": "save a built image",
    "iam:CreateRole": "make the role the expiry schedule runs as",
    "iam:PutRolePolicy": "let that role stop the pool's instances",
    "iam:PassRole": "hand that role to EventBridge Scheduler",
    "iam:DeleteRole": "remove that role with the pool",
    "scheduler:CreateSchedule": "schedule the pool's expiry (the cloud stops it on time)",
    "scheduler:DeleteSchedule": "remove the expiry schedule with the pool",
}
"""Every action an AWS pool's stack (``infra/aws.py``) and image build need, with what for."""

MAKES = "Contributor"
GRANTS = ("User Access Administrator", "Role Based Access Control Administrator")
AZURE_ROLES: tuple[frozenset[str], ...] = (
    frozenset({"Owner"}), *(frozenset({MAKES, grants}) for grants in GRANTS))
"""The sets of roles on the subscription that each let a pool make its resource group and
everything in it (:data:`MAKES`) and give its deleter a role on that group (one of
:data:`GRANTS`)."""


def azure_roles_missing(held: set[str]) -> list[str]:
    """The roles to add to those ``held`` on the subscription so that a set of
    :data:`AZURE_ROLES` is held: none when one is, else :data:`MAKES`, the first of
    :data:`GRANTS` or both."""
    if any(roles <= held for roles in AZURE_ROLES):
        return []
    return [role for role, has in ((MAKES, MAKES in held), (GRANTS[0], bool(held & set(GRANTS))))
            if not has]


_CLI_TIMEOUTS = ["--cli-connect-timeout", "10", "--cli-read-timeout", "30"]


def _role_arn(arn: str) -> str:
    """The ARN IAM can simulate for a caller: an assumed role's session
    (``arn:aws:sts::1:assumed-role/Name/session``) becomes its role
    (``arn:aws:iam::1:role/Name``)."""
    found = re.fullmatch(r"arn:(aws[\w-]*):sts::(\d+):assumed-role/([^/]+)/.+", arn)
    if found is None:
        return arn
    partition, account, role = found.groups()
    return f"arn:{partition}:iam::{account}:role/{role}"


def aws_permissions_check(run: Runner | None = None, cli: str | None = None) -> Check:
    """``oa-vm doctor``'s line for AWS: every action in :data:`AWS_ACTIONS` allowed to the
    caller, or the first one denied named with what it is for and what to do.

    Args:
        run: runs one argv (tests pass recorded answers); default a subprocess with a timeout.
        cli: the ``aws`` CLI's path (default: found on PATH).
    """
    name = "aws permissions (IAM, EventBridge Scheduler)"
    aws = _find("aws", cli, run)
    if not aws:
        return Check(name, True, "not checked (no 'aws' CLI on PATH)")
    runner = run or _run_cli
    who, why = _ask(runner, [aws, "sts", "get-caller-identity", *_CLI_TIMEOUTS,
                             "--output", "json"])
    arn = who.get("Arn") if isinstance(who, dict) else None
    if not isinstance(arn, str):
        return Check(name, False, f"not checked: the caller is unknown ({why or 'no Arn'})",
                     "sign in ('aws configure' or 'aws sso login'), then run 'oa-vm doctor' again")
    if arn.endswith(":root"):
        return Check(name, True, f"{arn} is the account's root user (allowed everything; "
                                 "IAM cannot simulate it)")
    source = _role_arn(arn)
    answer, why = _ask(runner, [
        aws, "iam", "simulate-principal-policy", "--policy-source-arn", source,
        "--action-names", *AWS_ACTIONS, *_CLI_TIMEOUTS, "--output", "json"])
    results = answer.get("EvaluationResults") if isinstance(answer, dict) else None
    if not isinstance(results, list):
        return Check(name, True, f"not checked ({why or 'no EvaluationResults'}); simulating "
                                 "needs iam:SimulatePrincipalPolicy: check with 'aws iam "
                                 f"simulate-principal-policy --policy-source-arn {source} "
                                 "--action-names ec2:RunInstances scheduler:CreateSchedule'")
    denied = [(str(r.get("EvalActionName")), str(r.get("EvalDecision")))
              for r in results if isinstance(r, dict) and r.get("EvalDecision") != "allowed"]
    if denied:
        action, decision = denied[0]
        more = f" (and {len(denied) - 1} more: {', '.join(a for a, _ in denied[1:])})" \
            if len(denied) > 1 else ""
        return Check(name, False,
                     f"{source} may not {action} ({decision}), which a pool needs to "
                     f"{AWS_ACTIONS.get(action, 'run')}{more}",
                     f"ask the account's admin to allow {', '.join(a for a, _ in denied)} "
                     f"to {source}")
    return Check(name, True, f"{source} may do all {len(AWS_ACTIONS)} actions a pool needs")


def azure_permissions_check(run: Runner | None = None, cli: str | None = None) -> Check:
    """``oa-vm doctor``'s line for Azure: the signed-in identity holds one of
    :data:`AZURE_ROLES` on its subscription, or what is missing and the command that grants it.
    ``run`` and ``cli`` (the ``az`` CLI's path) as for :func:`aws_permissions_check`."""
    name = "azure role assignment"
    az = _find("az", cli, run)
    if not az:
        return Check(name, True, "not checked (no 'az' CLI on PATH)")
    runner = run or _run_cli
    account, why = _ask(runner, [az, "account", "show", "-o", "json"])
    user = account.get("user") if isinstance(account, dict) else None
    assignee = user.get("name") if isinstance(user, dict) else None
    sub = account.get("id") if isinstance(account, dict) else None
    if not isinstance(assignee, str) or not isinstance(sub, str):
        return Check(name, False, f"not checked: no signed-in account ({why or 'no user'})",
                     "run 'az login', then 'oa-vm doctor' again")
    scope = f"/subscriptions/{sub}"
    roles, why = _ask(runner, [az, "role", "assignment", "list", "--assignee", assignee,
                               "--scope", scope, "--include-inherited", "-o", "json"])
    if not isinstance(roles, list):
        return Check(name, True, f"not checked ({why}); check it with 'az role assignment "
                                 f"list --assignee {assignee} --scope {scope}'")
    held = sorted({str(r.get("roleDefinitionName")) for r in roles if isinstance(r, dict)})
    missing = azure_roles_missing(set(held))
    if not missing:
        enough = next(sorted(roles) for roles in AZURE_ROLES if roles <= set(held))
        return Check(name, True, f"{assignee} is {' and '.join(enough)} on subscription {sub}")
    return Check(name, False,
                 f"{assignee} lacks {' and '.join(missing)} on subscription {sub} (roles: "
                 f"{', '.join(held) or 'none'}): a pool needs Owner, or {MAKES} (its resource "
                 f"group, network, VMs and schedules) with {' or '.join(GRANTS)} (its "
                 "deleter's role on that group)",
                 "ask an admin: " + "; ".join(
                     f"az role assignment create --assignee {assignee} --role "
                     f"{shlex.quote(role)} --scope {scope}" for role in missing))
