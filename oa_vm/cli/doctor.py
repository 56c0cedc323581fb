"""``oa-vm doctor``: what this machine has and lacks for cloud pools, without touching a cloud.

Every check is local (files, environment, PATH), except two, each asked through the cloud's CLI
with a timeout: with the ``az`` CLI installed and logged in, whether the subscription
registered the resource providers Azure pools need (``Microsoft.DevTestLab``,
``Microsoft.Logic``); and for a cloud whose credentials are found, its account's vCPU quota
for a worker of the default size (:mod:`oa_vm.clouds.quota`; the line says how many workers
fit) and whether the signed-in identity may do what a pool does
(:mod:`oa_vm.clouds.permissions`: AWS's IAM and EventBridge Scheduler actions, Azure's roles on
the subscription). A cloud whose credentials are missing fails its check, but only matters
for pools on that cloud: the ``fix`` says what to run.

``oa-vm doctor --fix`` installs a missing Pulumi CLI, the version matching the installed SDK,
into ``$OA_VM_HOME/pulumi-cli/<version>`` with the Automation API's ``PulumiCommand.install``.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import stat
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from oa_vm.clouds.pulumi.driver import (
    PULUMI_INSTALL_HINT,
    local_cli,
    local_cli_root,
    passphrase_path,
    sdk_version,
)
from oa_vm.clouds.quota import Runner, quota_check
from oa_vm.errors import OaVmError
from oa_vm.kit import safe_fs
from oa_vm.kit.checks import Check, check_resource_providers
from oa_vm.kit.lazy import pulumi_automation, semver
from oa_vm.model import state


def check_pulumi(path_lookup: str | None = None) -> Check:
    """The Pulumi engine (the ``pulumi`` CLI) is on PATH or installed in the oa-vm home."""
    if path_lookup is None:
        installed = local_cli()
        found = shutil.which("pulumi") or (str(installed) if installed else None)
    else:
        found = path_lookup
    if found:
        return Check("pulumi engine", True, f"found at {found}")
    return Check("pulumi engine", False, "the 'pulumi' CLI is not on PATH",
                 PULUMI_INSTALL_HINT.split("; ", 1)[1])


class PulumiInstallError(OaVmError):
    """Installing the Pulumi CLI failed (the message says why and what to do instead)."""


def install_pulumi(progress: Callable[[str], None] = lambda _line: None) -> Path:
    """Install the Pulumi CLI matching the installed SDK into the oa-vm home; return its path.

    Uses the Automation API's ``PulumiCommand.install`` (it downloads Pulumi's install script and
    runs it with an install root); an install already there is reused.

    Raises:
        PulumiInstallError: the download or the install failed.
    """
    root = local_cli_root()
    version = sdk_version()
    progress(f"installing the Pulumi CLI {version} into {root}")
    safe_fs.ensure_dir(root.parent, root=state.home())  # 0700 whatever the umask
    try:
        pulumi_automation.PulumiCommand.install(
            root=str(root), version=semver.VersionInfo.parse(version))
    except (OSError, subprocess.CalledProcessError, ValueError) as exc:
        raise PulumiInstallError(
            f"installing the Pulumi CLI {version} failed ({type(exc).__name__}: {exc}); "
            "install it yourself: curl -fsSL https://get.pulumi.com | sh"
        ) from exc
    installed = local_cli()
    if installed is None:
        raise PulumiInstallError(
            f"the Pulumi installer finished but {root}/bin/pulumi is missing; install it "
            "yourself: curl -fsSL https://get.pulumi.com | sh"
        )
    return installed


def check_extra(cloud: str, module: str) -> Check:
    """The cloud's Pulumi package is installed (found without importing it)."""
    if importlib.util.find_spec(module) is not None:
        return Check(f"{cloud} extra", True, f"{module} installed")
    return Check(f"{cloud} extra", False, f"{module} is not installed",
                 f"pip install 'oa-vm[{cloud}]'")


def _home_path(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home())


def check_aws_credentials(env: Mapping[str, str] | None = None) -> Check:
    """AWS credentials in the environment or in the shared files (not validated online)."""
    env = os.environ if env is None else env
    name = "aws credentials"
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        return Check(name, True, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are set")
    for var in ("AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"):
        if env.get(var):
            return Check(name, True, f"{var} is set")
    files = [
        Path(env.get("AWS_SHARED_CREDENTIALS_FILE") or _home_path(env) / ".aws" / "credentials"),
        Path(env.get("AWS_CONFIG_FILE") or _home_path(env) / ".aws" / "config"),
    ]
    for path in files:
        if path.is_file() and path.stat().st_size > 0:
            profile = env.get("AWS_PROFILE")
            return Check(name, True, f"{path}" + (f" (profile {profile})" if profile else ""))
    return Check(name, False, "no AWS credentials in the environment or ~/.aws",
                 "run 'aws configure' (or 'aws sso login'), or set AWS_ACCESS_KEY_ID and "
                 "AWS_SECRET_ACCESS_KEY")


def check_azure_credentials(env: Mapping[str, str] | None = None) -> Check:
    """Azure credentials: a service principal in the environment or an ``az login`` profile."""
    env = os.environ if env is None else env
    name = "azure credentials"
    for prefix in ("ARM", "AZURE"):
        if env.get(f"{prefix}_CLIENT_ID") and env.get(f"{prefix}_TENANT_ID") and (
            env.get(f"{prefix}_CLIENT_SECRET") or env.get(f"{prefix}_USE_MSI")
            or env.get(f"{prefix}_USE_OIDC")
        ):
            return Check(name, True, f"{prefix}_CLIENT_ID and {prefix}_TENANT_ID are set")
    config_dir = Path(env.get("AZURE_CONFIG_DIR") or _home_path(env) / ".azure")
    for file in ("msal_token_cache.json", "msal_token_cache.bin", "accessTokens.json"):
        if (config_dir / file).is_file():
            return Check(name, True, f"az login tokens in {config_dir}")
    return Check(name, False, f"no service principal in the environment, no login in {config_dir}",
                 "run 'az login' (or set ARM_CLIENT_ID, ARM_CLIENT_SECRET, ARM_TENANT_ID and "
                 "ARM_SUBSCRIPTION_ID)")


def check_ssh(path_lookup: str | None = None) -> Check:
    """The ``ssh`` client, for ``oa-vm pool-tunnel``'s commands and manual access."""
    found = path_lookup if path_lookup is not None else shutil.which("ssh")
    if found:
        return Check("ssh", True, f"found at {found}")
    return Check("ssh", False, "no 'ssh' client on PATH",
                 "install OpenSSH's client (e.g. apt-get install openssh-client)")


def check_home(home: Path | None = None) -> Check:
    """``$OA_VM_HOME`` is not writable by others; the passphrase and pool keys are 0600."""
    root = home or state.home()
    name = "oa-vm home"
    if not root.exists():
        return Check(name, True, f"{root} (not created yet)")
    problems: list[str] = []
    fixes: list[str] = []
    mode = stat.S_IMODE(root.stat().st_mode)
    if mode & 0o022:
        problems.append(f"{root} is writable by group or others ({mode:04o})")
        fixes.append(f"chmod go-w {root}")
    secrets = [passphrase_path() if home is None else root / "pulumi" / "passphrase"]
    secrets += sorted((root / "pools").glob("*/id_ed25519"))
    for path in secrets:
        if path.exists():
            file_mode = stat.S_IMODE(path.stat().st_mode)
            if file_mode & 0o077:
                problems.append(f"{path} is readable by others ({file_mode:04o})")
                fixes.append(f"chmod 600 {path}")
    if problems:
        return Check(name, False, "; ".join(problems), "; ".join(fixes))
    return Check(name, True, f"{root} (permissions fine)")


def check_vcpu_quotas(
    credentials: Mapping[str, Check], run: Runner | None = None
) -> list[Check]:
    """Each cloud's vCPU quota for one worker of its default size in its default region (the
    line says how many fit), asked only of a cloud whose credentials were found: without them
    the CLI could only fail, after a wait.

    Args:
        credentials: the credentials check of each cloud (``{"aws": Check, "azure": Check}``).
        run: runs one CLI argv (tests pass a recorded answer); default a subprocess.
    """
    from infra.sizes import AWS_DEFAULT_SIZE, AZURE_DEFAULT_SIZE

    defaults = {"aws": ("us-east-1", AWS_DEFAULT_SIZE), "azure": ("eastus", AZURE_DEFAULT_SIZE)}
    found = []
    for cloud, (region, size) in defaults.items():
        if credentials.get(cloud) is not None and not credentials[cloud].ok:
            found.append(Check(f"{cloud} vCPU quota ({region}, {size})", True,
                               f"not checked (no {cloud} credentials)"))
            continue
        found.append(quota_check(cloud, region, size, 1, run=run))
    return found


def check_permissions(
    credentials: Mapping[str, Check], run: Runner | None = None
) -> list[Check]:
    """Whether each cloud's signed-in identity may do what a pool does
    (:mod:`oa_vm.clouds.permissions`: AWS's IAM and EventBridge Scheduler actions, Azure's role on
    the subscription), asked only of a cloud whose credentials were found.

    Args:
        credentials: the credentials check of each cloud (``{"aws": Check, "azure": Check}``).
        run: runs one CLI argv (tests pass recorded answers); default a subprocess.
    """
    from oa_vm.clouds.permissions import aws_permissions_check, azure_permissions_check

    asks = {"aws": ("aws permissions (IAM, EventBridge Scheduler)", aws_permissions_check),
            "azure": ("azure role assignment", azure_permissions_check)}
    found = []
    for cloud, (name, ask) in asks.items():
        if credentials.get(cloud) is not None and not credentials[cloud].ok:
            found.append(Check(name, True, f"not checked (no {cloud} credentials)"))
            continue
        found.append(ask(run=run))
    return found


def check_results_folder() -> Check:
    """Names the folder ``openadapt-evals`` keeps runs in (from here), and how many it holds."""
    from oa_vm.kit.results_dir import DEFAULT_RESULTS_DIR, RESULTS_ENV, results_root

    root = results_root().absolute()
    source = (f"${RESULTS_ENV}" if os.environ.get(RESULTS_ENV)
              else f"./{DEFAULT_RESULTS_DIR} under the current folder; set ${RESULTS_ENV} to "
                   "keep every run in one place")
    runs = len(list(root.glob("*/metadata.json"))) if root.is_dir() else 0
    return Check("results folder", True, f"{root} ({source}; {runs} run(s))")


def run_checks() -> list[Check]:
    """Every check, in the order ``oa-vm doctor`` prints them."""
    aws, azure = check_aws_credentials(), check_azure_credentials()
    return [
        check_pulumi(),
        check_extra("aws", "pulumi_aws"),
        check_extra("azure", "pulumi_azure_native"),
        aws,
        azure,
        check_resource_providers(),
        *check_vcpu_quotas({"aws": aws, "azure": azure}),
        *check_permissions({"aws": aws, "azure": azure}),
        check_ssh(),
        check_home(),
        check_results_folder(),
    ]
