"""A health check's one line (:class:`Check`), and the check the Azure provider also runs before
it creates (``Microsoft.DevTestLab`` registered), so that ``oa-vm doctor`` and the provider ask
the same question the same way without the provider importing the doctor.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

AZ_TIMEOUT_S = 60.0
DEVTESTLAB = "Microsoft.DevTestLab"


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


def check_devtestlab(
    run: Callable[[list[str]], subprocess.CompletedProcess[str]] | None = None,
    az: str | None = None,
) -> Check:
    """Whether the Azure subscription registered ``Microsoft.DevTestLab`` (asked with ``az``).

    Without the ``az`` CLI the check is skipped (ok, saying so): pools would then find out at
    create, where the schedule's failure names the same fix.
    """
    name = "azure devtestlab provider"
    fix = f"az provider register --namespace {DEVTESTLAB} (takes a few minutes)"
    az = az if az is not None else shutil.which("az")
    if not az:
        return Check(name, True, "not checked (no 'az' CLI on PATH)")
    runner = run or (lambda args: subprocess.run(  # fixed argv, no shell
        args, capture_output=True, text=True, timeout=AZ_TIMEOUT_S, check=False
    ))
    try:
        done = runner([az, "provider", "show", "--namespace", DEVTESTLAB,
                       "--query", "registrationState", "-o", "tsv"])
    except (OSError, subprocess.TimeoutExpired) as exc:
        from oa_vm.kit.cli_failure import why_it_failed

        return Check(name, False, f"could not ask az ({why_it_failed(exc)})", fix)
    answer = done.stdout.strip()
    if done.returncode != 0:
        from oa_vm.kit.cli_failure import tool_said

        said = tool_said(done.stderr, "no output")
        return Check(name, False, f"az failed: {said}", "az login, then " + fix)
    if answer == "Registered":
        return Check(name, True, f"{DEVTESTLAB} is registered")
    return Check(name, False, f"{DEVTESTLAB} is {answer or 'not registered'} on this subscription "
                 "(Azure pools' shutdown schedules need it)", fix)
