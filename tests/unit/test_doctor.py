"""``oa-vm doctor``'s checks: local facts only, each with a fix when it fails."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from oa_vm.cli import doctor
from oa_vm.kit import checks
from tests.support import fake_quota_cli


def test_missing_pulumi_engine_says_how_to_install() -> None:
    check = doctor.check_pulumi(path_lookup="")
    assert not check.ok and "curl -fsSL https://get.pulumi.com | sh" in check.fix
    assert doctor.check_pulumi(path_lookup="/usr/local/bin/pulumi").ok


def test_aws_credentials_from_env_or_files(tmp_path: Path) -> None:
    assert not doctor.check_aws_credentials({"HOME": str(tmp_path)}).ok
    assert "aws configure" in doctor.check_aws_credentials({"HOME": str(tmp_path)}).fix
    keys = {"HOME": str(tmp_path), "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y"}
    assert doctor.check_aws_credentials(keys).ok
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "credentials").write_text("[default]\naws_access_key_id = x\n")
    assert doctor.check_aws_credentials({"HOME": str(tmp_path)}).ok


def test_azure_credentials_from_env_or_az_login(tmp_path: Path) -> None:
    empty = doctor.check_azure_credentials({"HOME": str(tmp_path)})
    assert not empty.ok and "az login" in empty.fix
    sp = {"ARM_CLIENT_ID": "a", "ARM_TENANT_ID": "t", "ARM_CLIENT_SECRET": "s"}
    assert doctor.check_azure_credentials(sp).ok
    (tmp_path / ".azure").mkdir()
    (tmp_path / ".azure" / "msal_token_cache.json").write_text("{}")
    assert doctor.check_azure_credentials({"HOME": str(tmp_path)}).ok


def test_home_permissions(tmp_path: Path) -> None:
    home = tmp_path / "oa"
    assert doctor.check_home(home).ok  # not created yet
    (home / "pulumi").mkdir(parents=True)
    os.chmod(home, 0o700)
    passphrase = home / "pulumi" / "passphrase"
    passphrase.write_text("secret")
    os.chmod(passphrase, 0o644)
    check = doctor.check_home(home)
    assert not check.ok and f"chmod 600 {passphrase}" in check.fix
    os.chmod(passphrase, 0o600)
    assert doctor.check_home(home).ok
    os.chmod(home, 0o777)
    check = doctor.check_home(home)
    assert not check.ok and f"chmod go-w {home}" in check.fix


def test_run_checks_names_every_check(oa_home: Path) -> None:
    names = [c.name for c in doctor.run_checks()]
    assert names == ["pulumi engine", "aws extra", "azure extra", "aws credentials",
                     "azure credentials", "azure resource providers",
                     "aws vCPU quota (us-east-1, m8i.2xlarge)",
                     "azure vCPU quota (eastus, Standard_D8s_v5)",
                     "aws permissions (IAM, EventBridge Scheduler)", "azure role assignment",
                     "ssh", "oa-vm home",
                     "results folder"]
    for check in doctor.run_checks():
        assert check.ok or check.fix, check


def test_fix_installs_the_pulumi_cli_matching_the_sdk_into_the_home(
    tmp_path: Path, oa_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The download is the only stand-in: the Automation API's installer runs for real and then
    checks the installed CLI's version, as it does after a real download."""
    import pulumi.automation._cmd as cmd

    from oa_vm.clouds.pulumi import driver as pulumi_driver

    version = pulumi_driver.sdk_version()
    fetched: list[str] = []

    def download(url: str, path: str) -> None:
        fetched.append(url)
        # What get.pulumi.com/install.sh does, in short: put bin/pulumi under --install-root.
        Path(path).write_text(
            "#!/bin/bash\nset -e\nwhile [ $# -gt 0 ]; do case $1 in --install-root) root=$2;"
            " shift 2;; --version) ver=$2; shift 2;; *) shift;; esac; done\n"
            'mkdir -p "$root/bin"\n'
            'printf \'#!/bin/bash\\necho v%s\\n\' "$ver" > "$root/bin/pulumi"\n'
            'chmod +x "$root/bin/pulumi"\n'
        )

    monkeypatch.setattr(cmd, "_download_to_file", download)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")  # no pulumi on PATH
    assert not doctor.check_pulumi().ok
    assert pulumi_driver.AutomationEngine().missing() == pulumi_driver.PULUMI_INSTALL_HINT
    installed = doctor.install_pulumi()
    assert fetched == ["https://get.pulumi.com/install.sh"]
    assert installed == oa_home / "pulumi-cli" / version / "bin" / "pulumi"
    assert doctor.check_pulumi().ok
    assert pulumi_driver.AutomationEngine().missing() is None
    # Installing again reuses what is there (no second download).
    assert doctor.install_pulumi() == installed and len(fetched) == 1


def test_a_failed_download_is_one_line_naming_the_manual_install(
    tmp_path: Path, oa_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pulumi.automation._cmd as cmd

    def offline(url: str, path: str) -> None:
        raise OSError("Network is unreachable")

    monkeypatch.setattr(cmd, "_download_to_file", offline)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    with pytest.raises(doctor.PulumiInstallError) as info:
        doctor.install_pulumi()
    assert "Network is unreachable" in str(info.value) and "get.pulumi.com" in str(info.value)
    assert "\n" not in str(info.value)


def _az(tmp_path: Path, body: str) -> str:
    """A stand-in ``az`` that answers like the real CLI (recorded answers)."""
    az = tmp_path / "az"
    az.write_text("#!/bin/bash\necho \"$*\" >> \"$(dirname \"$0\")/az.calls\"\n" + body)
    az.chmod(0o755)
    return str(az)


def test_resource_provider_registration(tmp_path: Path) -> None:
    registered = checks.check_resource_providers(az=_az(tmp_path, "echo Registered\n"))
    assert registered.ok
    calls = (tmp_path / "az.calls").read_text()
    for namespace in ("Microsoft.DevTestLab", "Microsoft.Logic"):  # the schedules, the deleter
        assert f"provider show --namespace {namespace} --query registrationState -o tsv" in calls
    missing = checks.check_resource_providers(az=_az(tmp_path, "echo NotRegistered\n"))
    assert not missing.ok and "NotRegistered" in missing.detail
    assert "az provider register --namespace Microsoft.DevTestLab" in missing.fix
    no_logic = checks.check_resource_providers(az=_az(
        tmp_path, "case \"$*\" in *Microsoft.Logic*) echo NotRegistered;; *) echo Registered;; "
        "esac\n"))
    assert not no_logic.ok and no_logic.detail == (
        "Microsoft.Logic is NotRegistered on this subscription (Azure pools' deleters need it)")
    assert no_logic.fix.startswith("az provider register --namespace Microsoft.Logic")
    logged_out = checks.check_resource_providers(az=_az(
        tmp_path, "echo \"ERROR: Please run 'az login' to setup account.\" >&2; exit 1\n"
    ))
    assert not logged_out.ok and "az login" in logged_out.detail
    assert checks.check_resource_providers(az="").ok  # no az CLI: not checked, says so


def _answering(answer: object) -> Callable[[list[str]], subprocess.CompletedProcess[str]]:
    """A CLI runner printing ``answer`` (a recorded one) as the real CLI's JSON."""
    def run(args: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(args, 0, json.dumps(answer), "")
    return run


@pytest.mark.parametrize(
    ("cloud", "answer", "ok", "fragments"),
    [
        ("aws", fake_quota_cli.aws_answer(256), True,
         ["L-1216C47A", "256 vCPUs", "fits 32 worker(s) of 8 vCPUs"]),
        ("aws", fake_quota_cli.aws_answer(4), False,
         ["1 x m8i.2xlarge need 8 vCPUs", "request an increase to 8"]),
        ("azure", fake_quota_cli.az_answer(100, in_use=4), True,
         ["standardDSv5Family", "100 vCPUs, 4 in use", "fits 12 worker(s) of 8 vCPUs"]),
        ("azure", fake_quota_cli.az_answer(10, in_use=4), False,
         ["6 vCPUs left (4 of 10 in use)", "no worker of this size fits"]),
    ],
)
def test_vcpu_quota_line(cloud: str, answer: object, ok: bool, fragments: list[str]) -> None:
    credentials = {"aws": checks.Check("aws credentials", True, "set"),
                   "azure": checks.Check("azure credentials", True, "set")}
    line = next(c for c in doctor.check_vcpu_quotas(credentials, run=_answering(answer))
                if c.name.startswith(cloud))
    assert line.ok is ok, line
    for fragment in fragments:
        assert fragment in line.detail, line


def test_vcpu_quota_is_not_asked_without_credentials() -> None:
    asked: list[list[str]] = []

    def run(args: list[str]) -> subprocess.CompletedProcess[str]:
        asked.append(args)
        raise AssertionError("asked without credentials")

    missing = {"aws": checks.Check("aws credentials", False, "none", "aws configure"),
               "azure": checks.Check("azure credentials", False, "none", "az login")}
    lines = doctor.check_vcpu_quotas(missing, run=run)
    assert [c.detail for c in lines] == ["not checked (no aws credentials)",
                                         "not checked (no azure credentials)"]
    assert all(c.ok for c in lines) and asked == []


def test_doctor_names_the_results_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = tmp_path / "runs"
    (results / "r1").mkdir(parents=True)
    (results / "r1" / "metadata.json").write_text("{}")
    monkeypatch.setenv("OA_EVALS_RESULTS", str(results))
    check = doctor.check_results_folder()
    assert check.ok and str(results) in check.detail and "$OA_EVALS_RESULTS" in check.detail
    assert "1 run(s)" in check.detail
    monkeypatch.delenv("OA_EVALS_RESULTS")
    monkeypatch.chdir(tmp_path)
    assert str(tmp_path / "benchmark_results") in doctor.check_results_folder().detail
