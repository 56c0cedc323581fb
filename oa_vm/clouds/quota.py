"""The account's vCPU quota for a pool's machines: read from the cloud's own CLI, or named absent.

40 workers of ``m8i.2xlarge`` are 320 vCPUs; a new AWS account's on-demand quota for standard
instances is often far below that, and a create above it fails half-way with instances made.
So plans read the quota first and refuse above it in one line (:func:`refusal`), and
``oa-vm doctor`` reports it (:func:`quota_check`).

Where each cloud keeps it:

- AWS: Service Quotas, ``ec2`` quota ``L-1216C47A`` (Running On-Demand Standard (A, C, D, H, I,
  M, R, T, Z) instances, in vCPUs, per region) or ``L-34B43A08`` for spot (All Standard Spot
  Instance Requests), asked with ``aws service-quotas get-service-quota``. It gives the limit
  only: vCPUs already running count against it too, which the line says.
- Azure: ``az vm list-usage --location R``: per VM family (``standardDSv5Family`` for
  ``Standard_D8s_v5``) and for the region (``cores``), each with its limit and current use; the
  room left is the smaller of the two.

Without the CLI, or when it fails (no login, no permission), the quota is *not read* and the
plan says so, with the command to check it by hand: nothing is guessed.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from oa_vm.kit.checks import Check

CLI_TIMEOUT_S = 60.0
"""How long one quota question may take (the CLIs' own connect and read timeouts are shorter)."""

AWS_ON_DEMAND = ("L-1216C47A", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances")
AWS_SPOT = ("L-34B43A08", "All Standard Spot Instance Requests")

Runner = Callable[[list[str]], "subprocess.CompletedProcess[str]"]


@dataclass(frozen=True)
class VcpuQuota:
    """What the account allows in one region for one kind of machine.

    Attributes:
        cloud, region: where.
        quota: which quota (``L-1216C47A (Running On-Demand ...)``, ``standardDSv5Family``).
        limit: its limit in vCPUs, or None when not read.
        in_use: vCPUs already counted against it (Azure says; AWS's quota API does not: None).
        missing: why it was not read (empty when it was).
        how_to_check: the command that reads it by hand.
        how_to_raise: what to do to raise it (``{needed}`` stands for the vCPUs asked for).
    """

    cloud: str
    region: str
    quota: str
    limit: float | None
    in_use: float | None = None
    missing: str = ""
    how_to_check: str = ""
    how_to_raise: str = ""

    @property
    def room(self) -> float | None:
        """vCPUs a new pool may still take (the limit less what is in use, where known)."""
        if self.limit is None:
            return None
        return self.limit - (self.in_use or 0.0)

    def describe(self, needed: int | None = None) -> str:
        """One phrase for a plan: the quota read (and the need), or why it was not."""
        need = f"{needed} vCPUs needed; " if needed is not None else ""
        if self.limit is None:
            return (f"{need}vCPU quota not read ({self.missing}); check it with "
                    f"'{self.how_to_check}'")
        used = "" if self.in_use is None else f", {self.in_use:g} in use"
        note = " (running instances count against it too)" if self.in_use is None else ""
        return (f"{need}quota {self.quota} in {self.region}: {self.limit:g} vCPUs{used}{note}, "
                "read from the account (measured)")


def vcpus_needed(cloud: str, size: str, workers: int) -> int | None:
    """vCPUs ``workers`` machines of ``size`` take (None when the size's vCPUs are unknown)."""
    from oa_vm.cost.cloud_plan import machine

    vcpus = machine(cloud, size, 0, 0).get("vcpus")
    return None if vcpus is None else int(vcpus) * workers


def azure_family(size: str) -> str | None:
    """The usage name of an Azure size's family: ``Standard_D8s_v5`` -> ``standardDSv5Family``,
    ``Standard_D8as_v5`` -> ``standardDASv5Family`` (None for a name outside the D series)."""
    found = re.fullmatch(r"Standard_D\d+([a-z]*)_v(\d+)", size, flags=re.IGNORECASE)
    if found is None:
        return None
    return f"standardD{found.group(1).upper()}v{found.group(2)}Family"


def _run_cli(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # fixed argv, no shell
        args, capture_output=True, text=True, timeout=CLI_TIMEOUT_S, check=False
    )


def _ask(run: Runner, args: list[str]) -> tuple[object | None, str]:
    """The CLI's JSON answer, or None and why there is none (one short phrase)."""
    try:
        done = run(args)
    except (OSError, subprocess.TimeoutExpired) as exc:
        from oa_vm.kit.cli_failure import why_it_failed

        return None, f"could not run {args[0].rsplit('/', 1)[-1]}: {why_it_failed(exc)}"
    if done.returncode != 0:
        from oa_vm.kit.cli_failure import tool_said

        return None, f"{args[0].rsplit('/', 1)[-1]} failed: {tool_said(done.stderr, 'no output')}"
    try:
        return json.loads(done.stdout), ""
    except ValueError:
        return None, "the answer was not JSON"


def read_vcpu_quota(
    cloud: str, region: str, size: str, *, spot: bool = False,
    run: Runner | None = None, cli: str | None = None,
) -> VcpuQuota:
    """The vCPU quota ``size`` counts against in ``region`` (see the module docstring).

    Args:
        cloud: ``aws`` or ``azure`` (any other cloud has no quota: a VcpuQuota with no limit).
        region, size, spot: the machines a pool would make.
        run: runs one argv and returns its result (tests pass a recorded answer this way or
            put a stand-in CLI on PATH); default a subprocess with :data:`CLI_TIMEOUT_S`.
        cli: the CLI's path (default: ``aws``/``az`` found on PATH, or the bare name when
            ``run`` is given).
    """
    if cloud == "aws":
        code, name = AWS_SPOT if spot else AWS_ON_DEMAND
        check = (f"aws service-quotas get-service-quota --service-code ec2 --quota-code {code} "
                 f"--region {region}")
        raise_it = ("request an increase to {needed} (Service Quotas console, or 'aws "
                    "service-quotas request-service-quota-increase --service-code ec2 "
                    f"--quota-code {code} --region {region} --desired-value {{needed}}')")
        base = VcpuQuota(cloud, region, f"{code} ({name})", None, how_to_check=check,
                         how_to_raise=raise_it)
        aws = _find("aws", cli, run)
        if not aws:
            return _missing(base, "no 'aws' CLI on PATH")
        answer, why = _ask(run or _run_cli, [
            aws, "service-quotas", "get-service-quota", "--service-code", "ec2", "--quota-code",
            code, "--region", region, "--cli-connect-timeout", "10", "--cli-read-timeout", "30",
            "--output", "json"])
        value = answer.get("Quota", {}).get("Value") if isinstance(answer, dict) else None
        if not isinstance(value, int | float):
            return _missing(base, why or "the answer holds no Quota.Value")
        return _limit(base, float(value), None)
    if cloud == "azure":
        family = azure_family(size) or size
        check = f"az vm list-usage --location {region} -o table"
        raise_it = ("request an increase to {needed} (Azure portal: Subscriptions > Usage + "
                    f"quotas, {family} and Total Regional vCPUs in {region})")
        base = VcpuQuota(cloud, region, family, None, how_to_check=check,
                         how_to_raise=raise_it)
        az = _find("az", cli, run)
        if not az:
            return _missing(base, "no 'az' CLI on PATH")
        answer, why = _ask(run or _run_cli,
                           [az, "vm", "list-usage", "--location", region, "-o", "json"])
        usages = {str((u.get("name") or {}).get("value", "")).lower(): u
                  for u in answer if isinstance(u, dict)} if isinstance(answer, list) else {}
        rows = [usages[key] for key in (family.lower(), "cores") if key in usages]
        if not rows:
            return _missing(base, why or f"the answer lists neither {family} nor cores")
        # the tighter of the family's and the region's own limit decides
        tight = min(rows, key=lambda u: float(u.get("limit", 0)) - float(u.get("currentValue", 0)))
        label = family if tight is usages.get(family.lower()) else "cores (Total Regional vCPUs)"
        return _limit(VcpuQuota(cloud, region, label, None, how_to_check=check,
                                how_to_raise=raise_it),
                      float(tight.get("limit", 0)), float(tight.get("currentValue", 0)))
    return VcpuQuota(cloud, region, "none", None, missing=f"{cloud} has no vCPU quota")


def _find(name: str, cli: str | None, run: Runner | None) -> str | None:
    """The CLI to run: ``cli``; else with a ``run`` of the caller's, its bare name; else the
    one on PATH (None: there is none)."""
    if cli is not None:
        return cli
    return name if run is not None else shutil.which(name)


def _missing(base: VcpuQuota, why: str) -> VcpuQuota:
    return VcpuQuota(base.cloud, base.region, base.quota, None, None, why, base.how_to_check,
                     base.how_to_raise)


def _limit(base: VcpuQuota, limit: float, in_use: float | None) -> VcpuQuota:
    return VcpuQuota(base.cloud, base.region, base.quota, limit, in_use, "", base.how_to_check,
                     base.how_to_raise)


def refusal(quota: VcpuQuota, size: str, workers: int) -> str | None:
    """One line when ``workers`` machines of ``size`` need more vCPUs than the quota leaves
    (what it is, what to do: raise it, or fewer workers), else None (also when not read)."""
    needed = vcpus_needed(quota.cloud, size, workers)
    room = quota.room
    if needed is None or room is None or needed <= room:
        return None
    per = needed // workers
    fits = max(0, math.floor(room / per)) if per else 0
    used = "" if quota.in_use is None else f" ({quota.in_use:g} of {quota.limit:g} in use)"
    fewer = (f"or run at most {fits} worker(s) (--workers {fits})" if fits
             else "no worker of this size fits until then")
    raise_it = quota.how_to_raise.replace("{needed}", str(needed))
    return (f"{workers} x {size} need {needed} vCPUs, above the {quota.cloud} vCPU quota "
            f"{quota.quota} in {quota.region}: {room:g} vCPUs left{used}; {raise_it}, {fewer}")


def quota_check(cloud: str, region: str, size: str, workers: int = 1,
                run: Runner | None = None) -> Check:
    """``oa-vm doctor``'s line: the quota for ``workers`` machines of ``size`` in ``region``;
    not ok above it, ok (saying so) when it cannot be read."""
    quota = read_vcpu_quota(cloud, region, size, run=run)
    name = f"{cloud} vCPU quota ({region}, {size})"
    needed = vcpus_needed(cloud, size, workers)
    if quota.limit is None:
        return Check(name, True, f"not checked ({quota.missing}); check it with "
                                 f"'{quota.how_to_check}'")
    problem = refusal(quota, size, workers)
    if problem:
        return Check(name, False, problem, quota.how_to_raise.replace("{needed}", str(needed)))
    per = needed // workers if needed else 0
    fits = "" if not per or quota.room is None else (
        f"; fits {math.floor(quota.room / per)} worker(s) of {per} vCPUs")
    return Check(name, True, quota.describe().removesuffix(", read from the account (measured)")
                 + fits)
