"""``oa-vm doctor``'s checks: local facts only, each with a fix when it fails."""

from __future__ import annotations

import os
from pathlib import Path

from oa_vm import doctor


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
                     "azure credentials", "ssh", "oa-vm home"]
    for check in doctor.run_checks():
        assert check.ok or check.fix, check
