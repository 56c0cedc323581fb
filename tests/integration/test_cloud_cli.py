"""Cloud pools through the real ``oa-vm`` CLI, here where no engine, credentials or network exist.

``--plan`` runs the real Pulumi programs under Pulumi's mocks, so it must work offline; creating
must fail in one line naming the missing engine, before anything is written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run_cli

pytestmark = pytest.mark.integration


def _no_engine_env(tmp_path: Path) -> dict[str, str]:
    """A PATH without the pulumi CLI, and no way out to the internet for CIDR detection."""
    empty = tmp_path / "empty-path"
    empty.mkdir(exist_ok=True)
    return {"PATH": str(empty), "OA_VM_IP_ECHO_URL": "http://127.0.0.1:9/"}


@pytest.mark.parametrize(
    ("cloud", "compute_type", "size"),
    [("aws", "aws:ec2/instance:Instance", "m8i.2xlarge"),
     ("azure", "azure-native:compute:VirtualMachine", "Standard_D8s_v5")],
)
def test_plan_offline(tmp_path: Path, cloud: str, compute_type: str, size: str) -> None:
    home = tmp_path / "home"
    env = _no_engine_env(tmp_path)
    text = run_cli("oa-vm", "pool-create", "--cloud", cloud, "--workers", "2", "--plan",
                   home=home, env=env)
    assert text.returncode == 0, text.stderr
    assert f"2 x {compute_type}" in text.stdout and size in text.stdout
    assert "/hour for the whole pool" in text.stdout

    js = run_cli("oa-vm", "pool-create", "--cloud", cloud, "--workers", "2", "--plan", "--json",
                 "--allow-cidr", "203.0.113.7/32", home=home, env=env)
    assert js.returncode == 0, js.stderr
    plan = json.loads(js.stdout)
    assert plan["price_per_hour"] > 0
    types = [r["type"] for r in plan["resources"]]
    assert types.count(compute_type) == 2
    assert all({"type", "name", "inputs"} <= set(r) for r in plan["resources"])
    rendered = json.dumps(plan["resources"])
    assert "203.0.113.7/32" in rendered
    # Nothing may be let in from everywhere (egress for downloads is fine).
    ingress = json.dumps([
        r["inputs"].get("ingress") or r["inputs"].get("securityRules")
        for r in plan["resources"]
    ])
    assert "0.0.0.0/0" not in ingress
    assert not home.exists(), "a plan must write nothing"


def test_open_to_everyone_needs_asking_and_warns(tmp_path: Path) -> None:
    result = run_cli("oa-vm", "pool-create", "--cloud", "aws", "--workers", "1", "--plan",
                     "--json", "--allow-cidr", "0.0.0.0/0", home=tmp_path / "h",
                     env=_no_engine_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "warning" in result.stderr and "0.0.0.0/0" in result.stderr
    assert "0.0.0.0/0" in result.stdout


@pytest.mark.parametrize("cloud", ["aws", "azure"])
def test_create_without_engine_is_one_line_and_writes_nothing(tmp_path: Path, cloud: str) -> None:
    home = tmp_path / "home"
    result = run_cli("oa-vm", "pool-create", "--cloud", cloud, "--workers", "1", "-y",
                     home=home, env=_no_engine_env(tmp_path))
    line = result.assert_one_line_error()
    assert "pulumi" in line.lower() and "install" in line
    assert not home.exists() or not list(home.rglob("pool.json"))


def test_unknown_region_is_planned_with_unknown_price(tmp_path: Path) -> None:
    result = run_cli("oa-vm", "pool-create", "--cloud", "azure", "--region", "mars-1",
                     "--workers", "1", "--plan", home=tmp_path / "h", env=_no_engine_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "Price: -" in result.stdout and "known regions: eastus" in result.stdout


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--cloud", "aws", "--size", "t3.micro"], "t3.micro"),
        (["--cloud", "aws", "--ttl-hours", "0"], "--ttl-hours"),
        (["--cloud", "aws", "--fault", "latency=1"], "local pools"),
    ],
)
def test_cloud_bad_input(tmp_path: Path, args: list[str], fragment: str) -> None:
    result = run_cli("oa-vm", "pool-create", "--workers", "1", "--plan", *args,
                     home=tmp_path / "h", env=_no_engine_env(tmp_path))
    assert fragment in result.assert_one_line_error()


def test_cloud_sweep_without_engine_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = run_cli("openadapt-evals", "sweep", "--cloud", "azure", "--workers", "1",
                     "--agent", "noop", "--tasks", "all", "--results-dir",
                     str(tmp_path / "results"), home=home, env=_no_engine_env(tmp_path))
    assert "pulumi" in result.assert_one_line_error().lower()
    assert not list(home.rglob("pool.json")) if home.exists() else True
    assert not (tmp_path / "results").exists()
