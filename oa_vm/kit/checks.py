"""A health check's one line (:class:`Check`), and the check the Azure provider also runs before
it creates (its resource providers registered), so that ``oa-vm doctor`` and the provider ask
the same question the same way without the provider importing the doctor.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

AZ_TIMEOUT_S = 60.0
RESOURCE_PROVIDERS = {"Microsoft.DevTestLab": "shutdown schedules", "Microsoft.Logic": "deleters"}
"""The resource providers an Azure pool needs registered on the subscription, with what for."""


@dataclass(frozen=True)
class Check:
    """One line of the doctor's report.

    Attributes:
        name: what was checked.
        ok: whether it is fine.
        detail: what was found.
        fix: what to do when not ok (empty when ok).
    """

    name: str
    ok: bool
    detail: str
    fix: str = ""


def check_resource_providers(
    run: Callable[[list[str]], subprocess.CompletedProcess[str]] | None = None,
    az: str | None = None,
) -> Check:
    """Whether the Azure subscription registered every namespace of :data:`RESOURCE_PROVIDERS`
    (asked with ``az``); not ok names the first one missing.

    Without the ``az`` CLI the check is skipped (ok, saying so): pools would then find out at
    create, where the resource's failure names the same fix.
    """
    name = "azure resource providers"
    az = az if az is not None else shutil.which("az")
    if not az:
        return Check(name, True, "not checked (no 'az' CLI on PATH)")
    runner = run or (lambda args: subprocess.run(  # fixed argv, no shell
        args, capture_output=True, text=True, timeout=AZ_TIMEOUT_S, check=False
    ))
    for namespace, needs in RESOURCE_PROVIDERS.items():
        fix = f"az provider register --namespace {namespace} (takes a few minutes)"
        try:
            done = runner([az, "provider", "show", "--namespace", namespace,
                           "--query", "registrationState", "-o", "tsv"])
        except (OSError, subprocess.TimeoutExpired) as exc:
            from oa_vm.kit.cli_failure import why_it_failed

            return Check(name, False, f"could not ask az ({why_it_failed(exc)})", fix)
        answer = done.stdout.strip()
        if done.returncode != 0:
            from oa_vm.kit.cli_failure import tool_said

            said = tool_said(done.stderr, "no output")
            return Check(name, False, f"az failed: {said}", "az login, then " + fix)
        if answer != "Registered":
            return Check(name, False, f"{namespace} is {answer or 'not registered'} on this "
                         f"subscription (Azure pools' {needs} need it)", fix)
    return Check(name, True, f"{' and '.join(RESOURCE_PROVIDERS)} are registered")
