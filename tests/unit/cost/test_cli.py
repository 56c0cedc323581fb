"""``openadapt-eval-flow`` and ``oa-vm prices``: through Typer's runner and as real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evals.compat.flow.cli import app as flow_app
from oa_vm.cli.prices import prices_app
from oa_vm.cost import pricing
from tests.unit.cost.conftest import PriceServer

BIN = Path(sys.executable).parent
REFERENCE_LINE = (
    "154 tasks, replay mode, $0.19/h, claude-sonnet-4, W=1: 2.82 VM-hours, $0.54 total, "
    "$0.0035/task, baseline $39.06 (22 steps/task), savings $38.53"
)


def run(
    prog: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run one of the console scripts as a real process."""
    return subprocess.run(
        [str(BIN / prog), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        check=False,
    )


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *fragments: str) -> None:
    """Non-zero exit, one line on stderr holding ``fragments``, no traceback."""
    assert proc.returncode != 0, proc.stdout
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in lines[0]


# --- openadapt-eval-flow -----------------------------------------------------------------------


@pytest.mark.integration
def test_reference_figures_printed_by_the_real_cli(oa_home: Path) -> None:
    proc = run("openadapt-eval-flow", "--dry-run", "--tasks", "154", "--mode", "replay",
               "--vm-hourly", "0.19")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"  {REFERENCE_LINE}\n" in out
    assert "VM-hours:              2.82 VM-hours @ $0.19/h = $0.54" in out
    assert "-> TOTAL:              $0.54 ($0.0035/task)" in out
    assert "Pure-agent baseline:   $39.06 (22 steps/task, all paid)" in out
    assert "Savings vs baseline:   $38.53" in out
    assert "DRY-RUN" in out and "COST ESTIMATE  (mode=replay, model=Claude Sonnet 4)" in out
    # its start-up is the reference's, and it says what a cloud pool takes (oa_vm.kit.timings)
    assert ("Times are estimates: the 0.25 h start-up is the reference's figure; an oa-vm "
            "cloud pool is ready in about 20 min (10-20 min, estimated) from an image") in out


@pytest.mark.integration
@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--model", "gpt-5"], ["unknown model 'gpt-5'", "gpt-4o-mini", "claude-haiku-4.5"]),
        (["--cloud", "aws", "--size", "m9.huge"], ["unknown aws size", "m8i.2xlarge", "m5.metal"]),
        (["--cloud", "azure", "--region", "mars"], ["region 'mars'", "eastus", "northeurope"]),
        (["--cloud", "gcp"], ["unknown cloud 'gcp'", "aws, azure"]),
        (["--vm-hourly", "-0.5"], ["--vm-hourly must be a non-negative number"]),
        (["--vm-hourly", "abc"], ["--vm-hourly"]),
        (["--fallback-rate", "1.5"], ["between 0 and 1"]),
        (["--tasks", "0"], ["at least 1"]),
        (["--tasks", "three"], ["--tasks"]),
    ],
)
def test_bad_input_is_one_line(oa_home: Path, args: list[str], fragments: list[str]) -> None:
    proc = run("openadapt-eval-flow", "--dry-run", *args)
    assert_one_line_error(proc, "openadapt-eval-flow: error:", *fragments)
    assert proc.stdout == ""


def test_eight_workers_on_aws_spot(oa_home: Path) -> None:
    result = CliRunner().invoke(
        flow_app, ["--dry-run", "--tasks", "154", "--cloud", "aws", "--spot", "--workers", "8"]
    )
    assert result.exit_code == 0, result.output
    spot = pricing.hourly_price("aws", "us-east-1", "m8i.2xlarge", spot=True)
    vm_hours = (154 / 60 / 8 + 0.25) * 8
    assert f"4.57 VM-hours @ ${spot:.4f}".rstrip("0") in result.output
    assert f"= ${vm_hours * spot:.2f}" in result.output
    assert "Wall time:             0.57 h (8 workers" in result.output
    assert "spot, aws m8i.2xlarge in us-east-1 (price catalog" in result.output
    assert ", W=8: 4.57 VM-hours" in result.output


def test_hybrid_prints_the_fallback_and_the_full_suite(oa_home: Path) -> None:
    result = CliRunner().invoke(
        flow_app, ["--mode", "hybrid", "--tasks", "10", "--fallback-rate", "0.5",
                   "--model", "gpt-4o"]
    )
    assert result.exit_code == 0, result.output
    assert "paid tasks=5.0, 10 steps each" in result.output
    assert "154 tasks (the full WAA suite):" in result.output
    # no price given: the catalog's figure for the default machine, and the dry run says which
    assert "10 tasks, hybrid mode, $0.42336/h, gpt-4o, W=1, f=0.5:" in result.output
    assert ("$0.42336/h on-demand, aws m8i.2xlarge in us-east-1 (price catalog, figure of "
            in result.output)
    assert "the default cloud, size and region: pick with --cloud/--size/--region" in (
        result.output)


def test_json_output(oa_home: Path, tmp_path: Path) -> None:
    ids = tmp_path / "ids.txt"
    ids.write_text("a\nb\n", encoding="utf-8")
    (tmp_path / "bundles" / "a").mkdir(parents=True)
    (tmp_path / "bundles" / "a" / "workflow.json").write_text("{}", encoding="utf-8")
    result = CliRunner().invoke(
        flow_app,
        ["--dry-run", "--task-ids", f"@{ids}", "--bundles", str(tmp_path / "bundles"), "--json"],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["plan"]["task_ids"] == ["a", "b"]
    assert data["plan"]["bundles"]["missing"] == ["b"]
    assert data["estimate"]["n_tasks"] == 2
    entry = pricing.load_catalog().lookup("aws", "us-east-1", "m8i.2xlarge")
    assert data["price"] == {
        "hourly": entry.on_demand, "origin": "catalog", "cloud": "aws", "region": "us-east-1",
        "size": "m8i.2xlarge", "spot": False, "source": entry.source, "date": entry.date,
        "defaulted": ["cloud", "size", "region"],
    }


def test_bundle_counts_in_text(tmp_path: Path) -> None:
    (tmp_path / "b" / "t1").mkdir(parents=True)
    (tmp_path / "b" / "t1" / "workflow.json").write_text("{}", encoding="utf-8")
    result = CliRunner().invoke(
        flow_app, ["--task-ids", "t1,t2", "--bundles", str(tmp_path / "b")]
    )
    assert result.exit_code == 0, result.output
    assert "1 of 2 tasks have one in" in result.output
    assert "missing 1: t2" in result.output


@pytest.mark.integration
def test_live_stops_with_one_line(oa_home: Path, tmp_path: Path) -> None:
    bundles = tmp_path / "bundles"
    (bundles / "t1").mkdir(parents=True)
    (bundles / "t1" / "workflow.json").write_text("{}", encoding="utf-8")

    proc = run("openadapt-eval-flow", "--live")
    assert_one_line_error(proc, "--live: no compiled bundle was given; pass --bundles DIR")
    proc = run("openadapt-eval-flow", "--live", "--bundles", str(bundles))
    assert_one_line_error(proc, "--live needs --pool NAME")

    # the pool's catalog is read first (an unknown ID is not a missing bundle), so without the
    # pool a missing bundle is not the refusal (test_flow_live has it on a pool)
    for ids in ("t1,t2", "t1"):
        proc = run("openadapt-eval-flow", "--live", "--task-ids", ids, "--bundles",
                   str(bundles), "--pool", "p")
        assert_one_line_error(proc, "no pool named 'p'")


# --- oa-vm prices ------------------------------------------------------------------------------


def test_prices_table(oa_home: Path) -> None:
    result = CliRunner().invoke(prices_app, ["--cloud", "azure", "--region", "westeurope"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "shipped with oa-vm" in lines[0]
    assert lines[1].split()[:5] == ["CLOUD", "REGION", "SIZE", "ON-DEMAND/H", "BASIS"]
    rows = [line for line in lines if line.startswith("azure ")]
    assert len(rows) == 6 and all("westeurope" in r for r in rows)
    assert "$0.428" in rows[0] and "2026-11-30" in rows[0]


def test_prices_json(oa_home: Path) -> None:
    result = CliRunner().invoke(prices_app, ["--cloud", "aws", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert len(data["entries"]) == 25
    assert {e["cloud"] for e in data["entries"]} == {"aws"}


@pytest.mark.integration
def test_prices_bad_region_is_one_line(oa_home: Path) -> None:
    proc = run("oa-vm", "prices", "--cloud", "aws", "--region", "eastus")
    assert_one_line_error(proc, "unknown region 'eastus' for aws", "us-east-1", "eu-central-1")


@pytest.mark.integration
def test_prices_refresh_unreachable_leaves_catalog(
    oa_home: Path, refused_port: Callable[[], int]
) -> None:
    oa_home.mkdir(parents=True, exist_ok=True)
    user_copy = oa_home / "prices.json"
    user_copy.write_text(pricing.SHIPPED_CATALOG.read_text(encoding="utf-8"), encoding="utf-8")
    before = user_copy.read_bytes()
    proc = run("oa-vm", "prices", "refresh", "--cloud", "azure",
               env={pricing.AZURE_URL_ENV: f"http://127.0.0.1:{refused_port()}/prices"})
    assert_one_line_error(proc, "prices not refreshed", "left as it was", "ConnectionError")
    assert user_copy.read_bytes() == before


@pytest.mark.integration
def test_prices_refresh_then_show(oa_home: Path, price_server: PriceServer) -> None:
    proc = run("oa-vm", "prices", "refresh", "--cloud", "azure",
               env={pricing.AZURE_URL_ENV: price_server.azure_url})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"refreshed {oa_home / 'prices.json'}")
    shown = run("oa-vm", "prices", "--cloud", "azure", "--region", "westeurope", "--json")
    assert shown.returncode == 0, shown.stderr
    entries = {e["size"]: e for e in json.loads(shown.stdout)["entries"]}
    assert entries["Standard_D8s_v5"]["on_demand"] == 0.396
    assert entries["Standard_D8s_v5"]["spot"] == 0.0812
    assert entries["Standard_D8s_v5"]["basis"].startswith("live")
    # sizes the sample answers do not price keep their catalog figures
    assert entries["Standard_D8ds_v5"]["basis"].startswith("derived")


@pytest.mark.integration
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], "$0.42336/h on-demand, aws m8i.2xlarge in us-east-1 (price catalog"),
        (["--region", "eu-west-1", "--spot"], "$0.2123/h spot, aws m8i.2xlarge in eu-west-1"),
        (["--cloud", "azure"], "$0.384/h on-demand, azure Standard_D8s_v5 in eastus"),
        (["--vm-hourly", "0.5"], "$0.50/h (--price-per-hour)"),
    ],
)
def test_dry_run_prices_the_machine_from_the_catalog(
    oa_home: Path, args: list[str], expected: str
) -> None:
    proc = run("openadapt-eval-flow", "--dry-run", "--tasks", "10", *args,
               env={"OA_VM_HOME": str(oa_home)})
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.strip().startswith("VM price:"))
    assert expected in line, line
    assert "0.19" not in proc.stdout  # the old built-in figure is gone


@pytest.mark.integration
def test_dry_run_follows_the_configured_default_cloud(oa_home: Path) -> None:
    env = {"OA_VM_HOME": str(oa_home)}
    assert run("oa-vm", "config", "set", "default-cloud", "azure", env=env).returncode == 0
    proc = run("openadapt-eval-flow", "--dry-run", "--tasks", "10", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "azure Standard_D8s_v5 in eastus (price catalog" in proc.stdout
