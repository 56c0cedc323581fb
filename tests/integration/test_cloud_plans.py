"""Cloud plans through the real ``oa-vm`` CLI: what they refuse, what they compare, and that
many of them in one process leave nothing behind (no event loop for the interpreter to collect
at exit, which printed an ``Exception ignored ... BaseEventLoop.__del__`` traceback)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import Result, run_cli

pytestmark = pytest.mark.integration

# 22 plans through the CLI's own entry point in one interpreter, then: how many event loops
# are still open once the plans are done (each would be closed, or not, by the collector at
# exit; the traceback came from that).
MANY_PLANS = """
import asyncio, gc, sys
from oa_vm.cli.app import app
for i in range(6):  # a leak of one loop a plan shows at the second
    cloud = ("aws", "azure")[i % 2]
    try:
        app(["pool-create", "--cloud", cloud, "--pool", f"p{i}", "--workers", str(1 + i % 3),
             "--plan", "--allow-cidr", "203.0.113.7/32"], standalone_mode=False)
    except SystemExit as exc:
        assert not exc.code, exc.code
gc.collect()
left = [o for o in gc.get_objects()
        if isinstance(o, asyncio.AbstractEventLoop) and not o.is_closed()]
print(f"open event loops: {len(left)}", file=sys.stderr)
"""


def _offline_env(tmp_path: Path) -> dict[str, str]:
    """No pulumi CLI on PATH, and caller-IP detection pointed at a closed loopback port."""
    empty = tmp_path / "empty-path"
    empty.mkdir(exist_ok=True)
    return {"PATH": str(empty), "OA_VM_IP_ECHO_URL": "http://127.0.0.1:9/"}


def test_many_plans_in_one_process_leave_no_event_loop(tmp_path: Path) -> None:
    env = {**os.environ, "OA_VM_HOME": str(tmp_path / "home"), **_offline_env(tmp_path)}
    proc = subprocess.run(  # fixed argv, no shell
        [sys.executable, "-c", MANY_PLANS], capture_output=True, text=True, env=env,
        timeout=600, stdin=subprocess.DEVNULL, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("Plan: ") == 6
    assert "Exception ignored" not in proc.stderr, proc.stderr
    assert "open event loops: 0" in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["pool-create", "--cloud", "aws", "--region", "mars-1", "--plan"],
         "unknown AWS region 'mars-1' (closest known: "),
        (["pool-create", "--cloud", "aws", "--region", "us-eats-1", "--plan"],
         "unknown AWS region 'us-eats-1' (closest known: us-east-1)"),
        (["pool-create", "--cloud", "aws", "--region", "eastus", "--plan"],
         "'eastus' is an Azure region, not an AWS one: pass --cloud azure, or an AWS region "
         "such as us-east-1 (the nearest to eastus)"),
        (["pool-create", "--cloud", "azure", "--region", "us-east-1", "--plan"],
         "'us-east-1' is an AWS region, not an Azure one: pass --cloud aws, or an Azure "
         "region such as eastus (the nearest to us-east-1)"),
        # by the city, not the name: Ireland, and Amsterdam's nearest AWS region (Frankfurt)
        (["pool-create", "--cloud", "azure", "--region", "eu-west-1", "--plan"],
         "an Azure region such as northeurope (the nearest to eu-west-1)"),
        (["image-create", "--cloud", "aws", "--region", "westeurope", "--plan"],
         "an AWS region such as eu-central-1 (the nearest to westeurope)"),
        (["pool-create", "--cloud", "azure", "--region", "westeurop", "--plan"],
         "unknown Azure region 'westeurop' (closest known: westeurope)"),
        # the second region of a failover list is checked too, and a real create likewise
        (["pool-create", "--cloud", "aws", "--region", "us-east-1", "--region", "mars-1",
          "--plan"], "unknown AWS region 'mars-1'"),
        (["pool-create", "--cloud", "aws", "--region", "mars-1", "--yes"],
         "unknown AWS region 'mars-1'"),
        (["image-create", "--cloud", "azure", "--region", "mars-1", "--plan"],
         "unknown Azure region 'mars-1'"),
        # a region as a person says it: each cloud's own spelling of it is the one suggested
        (["pool-create", "--cloud", "azure", "--region", "us east", "--plan"],
         "unknown Azure region 'us east' (closest known: eastus)"),
        (["pool-create", "--cloud", "aws", "--region", "US East", "--plan"],
         "unknown AWS region 'US East' (closest known: us-east-1)"),
        # every --region, listing the account's images too: before the cloud's CLI is asked
        (["image-list", "--cloud", "aws", "--region", "us east"],
         "unknown AWS region 'us east' (closest known: us-east-1)"),
        (["image-list", "--cloud", "azure", "--region", "mars-1"],
         "unknown Azure region 'mars-1'"),
        (["image-list", "--region", "us-east-1"], "--region needs --cloud"),
    ],
)
def test_unknown_region_is_refused_before_any_plan(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    home = tmp_path / "home"
    result = run_cli("oa-vm", *args, home=home, env=_offline_env(tmp_path))
    line = result.assert_one_line_error()
    assert expected in line and result.returncode == 2, (result.returncode, line)
    assert "Plan:" not in result.stdout
    assert not home.exists(), "a refused region must write nothing"


def test_a_real_region_outside_the_catalog_plans_with_its_price_unknown(tmp_path: Path) -> None:
    result = run_cli("oa-vm", "pool-create", "--cloud", "aws", "--region", "ap-south-1",
                     "--plan", home=tmp_path / "home", env=_offline_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "Price: UNKNOWN for the whole pool" in result.stdout


def _alternatives_block(stdout: str) -> list[str]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Cheapest alternatives"))
    block = []
    for line in lines[start + 1:]:
        if not line.startswith("  "):
            break
        block.append(line)
    return block


PlanPair = tuple[Result, Result]
"""A plan's text and ``--json`` runs."""


@pytest.fixture(scope="module")
def team_a_plans(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], PlanPair]:
    """``oa-vm pool-create --cloud CLOUD --pool team-a --plan`` and the same with ``--json``
    (the default size, region and workers), run once for the tests of this file that read
    them."""
    root = tmp_path_factory.mktemp("team-a")
    env = _offline_env(root)

    @functools.cache
    def plans(cloud: str) -> PlanPair:
        args = ["pool-create", "--cloud", cloud, "--pool", "team-a", "--plan"]
        return (run_cli("oa-vm", *args, home=root / "h", env=env),
                run_cli("oa-vm", *args, "--json", home=root / "h", env=env))

    return plans


@pytest.mark.parametrize(("cloud", "size", "region"),
                         [("aws", "m8i.2xlarge", "us-east-1"),
                          ("azure", "Standard_D8s_v5", "eastus")])
def test_alternatives_are_a_table_of_distinct_sizes_and_regions(
    team_a_plans: Callable[[str], PlanPair], cloud: str, size: str, region: str
) -> None:
    text, js = team_a_plans(cloud)
    assert text.returncode == 0, text.stderr
    header, *rows = _alternatives_block(text.stdout)
    assert header.split() == ["CLOUD", "REGION", "SIZE", "VCPUS", "MEMORY", "ON-DEMAND/H",
                              "SPOT/H"]
    cells = [row.split() for row in rows]
    chosen = [c for c in cells if c[0] == "*"]
    assert chosen and chosen[0][1:4] == [cloud, region, size], rows
    assert chosen[0][4:6] == ["8", "32"] and chosen[0][6] == "GiB"
    others = [c for c in cells if c[0] != "*"]
    assert len(others) >= 4
    sizes = {c[2] for c in others}
    regions = {c[1] for c in others}
    clouds = {c[0] for c in others}
    assert len(sizes) >= 3 and len(regions) >= 2 and clouds == {"aws", "azure"}, rows
    # each row is a distinct machine, every one priced both ways
    assert len({(c[0], c[1], c[2]) for c in others}) == len(others)
    assert all(c[-1].startswith("$") and c[-2].startswith("$") for c in cells)

    assert js.returncode == 0, js.stderr
    plan = json.loads(js.stdout)
    first = plan["alternatives"][0]
    assert first["chosen"] and (first["vcpus"], first["memory_gib"]) == (8, 32)
    assert all({"cloud", "region", "size", "vcpus", "memory_gib", "on_demand", "spot",
                "price_per_hour"} <= set(a) for a in plan["alternatives"])
    prices = [a["price_per_hour"] for a in plan["alternatives"][1:]]
    assert prices == sorted(prices)


def test_spot_alternatives_are_ranked_by_spot_price(tmp_path: Path) -> None:
    js = run_cli("oa-vm", "pool-create", "--cloud", "aws", "--spot", "--plan", "--json",
                 home=tmp_path / "h", env=_offline_env(tmp_path))
    assert js.returncode == 0, js.stderr
    rows = json.loads(js.stdout)["alternatives"]
    assert all(a["price_per_hour"] == a["spot"] for a in rows)
    assert [a["spot"] for a in rows[1:]] == sorted(a["spot"] for a in rows[1:])


def test_azure_plan_names_the_resource_group_it_creates(
    team_a_plans: Callable[[str], PlanPair],
) -> None:
    text, as_json = team_a_plans("azure")
    assert text.returncode == 0, text.stderr
    assert "<pool>" not in text.stdout
    assert "Note: everything lives in the resource group oa-vm-team-a (" in text.stdout
    js = json.loads(as_json.stdout)
    group = next(r for r in js["resources"] if r["type"].endswith(":ResourceGroup"))
    assert group["inputs"]["resourceGroupName"] == "oa-vm-team-a"
    assert any("resource group oa-vm-team-a" in note for note in js["notes"])


# --- openadapt-evals sweep --plan ---------------------------------------------------------------


def test_sweep_plan_shows_the_cloud_pool_and_creates_nothing(tmp_path: Path) -> None:
    home, results = tmp_path / "home", tmp_path / "results"
    env = _offline_env(tmp_path)
    text = run_cli("openadapt-evals", "sweep", "--tasks", "all", "--agent", "noop",
                   "--cloud", "aws", "--region", "eu-west-1", "--size", "c8i.2xlarge", "--spot",
                   "--workers", "2", "--ttl", "90m", "--pool", "sw-plan", "--plan",
                   "--results-dir", str(results), home=home, env=env)
    assert text.returncode == 0, text.stderr
    out = text.stdout
    assert "Plan: 2 worker(s) on aws (pool sw-plan) in eu-west-1, size c8i.2xlarge" in out
    assert "Price: $" in out and "/hour for the whole pool" in out
    assert "2 x aws:ec2/instance:Instance" in out
    header, *rows = _alternatives_block(out)
    assert header.split()[:3] == ["CLOUD", "REGION", "SIZE"]
    assert rows[0].split()[:4] == ["*", "aws", "eu-west-1", "c8i.2xlarge"]
    assert "nothing was created" in out
    assert not home.exists() and not results.exists(), "--plan must create and write nothing"

    js = run_cli("openadapt-evals", "sweep", "--tasks", "all", "--agent", "noop",
                 "--cloud", "azure", "--workers", "1", "--plan", "--json",
                 "--results-dir", str(results), home=home, env=env)
    assert js.returncode == 0, js.stderr
    data = json.loads(js.stdout)
    assert data["plan"]["cloud"] == "azure" and data["plan"]["workers"] == 1
    assert data["plan"]["price_per_hour"] > 0 and data["sweep"]["agent"] == "noop"
    assert not home.exists() and not results.exists()


def test_sweep_plan_on_the_local_pool_starts_no_worker(tmp_path: Path) -> None:
    home, results = tmp_path / "home", tmp_path / "results"
    text = run_cli("openadapt-evals", "sweep", "--tasks", "all", "--agent", "noop", "--plan",
                   "--results-dir", str(results), home=home, env=_offline_env(tmp_path))
    assert text.returncode == 0, text.stderr
    assert "Plan: 3 worker(s) on local" in text.stdout
    # a local pool's worker processes, their logs and its record all live under the home
    assert not home.exists() and not results.exists()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--cloud", "aws", "--region", "mars-1"], "unknown AWS region 'mars-1'"),
        (["--cloud", "azure", "--region", "us-east-1"], "is an AWS region, not an Azure one"),
        (["--cloud", "aws", "--size", "t3.micro"], "t3.micro"),
        (["--cloud", "aws", "--ttl", "0"], "--ttl"),
    ],
)
def test_sweep_plan_refuses_bad_cloud_options_in_one_line(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    home = tmp_path / "home"
    result = run_cli("openadapt-evals", "sweep", "--tasks", "all", "--agent", "noop", *args,
                     "--plan", home=home, env=_offline_env(tmp_path))
    assert expected in result.assert_one_line_error()
    assert not home.exists()
