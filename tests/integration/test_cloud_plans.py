"""Cloud plans through the real ``oa-vm`` CLI: what they refuse, what they compare, and that
many of them in one process leave nothing behind (no event loop for the interpreter to collect
at exit, which printed an ``Exception ignored ... BaseEventLoop.__del__`` traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import run_cli

pytestmark = pytest.mark.integration

# 22 plans through the CLI's own entry point in one interpreter, then: how many event loops
# are still open once the plans are done (each would be closed, or not, by the collector at
# exit; the traceback came from that).
MANY_PLANS = """
import asyncio, gc, sys
from oa_vm.cli import app
for i in range(22):
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
    assert proc.stdout.count("Plan: ") == 22
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
         "'eastus' is an Azure region, not an AWS one: pass --cloud azure"),
        (["pool-create", "--cloud", "azure", "--region", "us-east-1", "--plan"],
         "'us-east-1' is an AWS region, not an Azure one: pass --cloud aws, or an Azure "
         "region such as eastus"),
        (["pool-create", "--cloud", "azure", "--region", "westeurop", "--plan"],
         "unknown Azure region 'westeurop' (closest known: westeurope)"),
        # the second region of a failover list is checked too, and a real create likewise
        (["pool-create", "--cloud", "aws", "--region", "us-east-1", "--region", "mars-1",
          "--plan"], "unknown AWS region 'mars-1'"),
        (["pool-create", "--cloud", "aws", "--region", "mars-1", "--yes"],
         "unknown AWS region 'mars-1'"),
        (["image-create", "--cloud", "azure", "--region", "mars-1", "--plan"],
         "unknown Azure region 'mars-1'"),
    ],
)
def test_unknown_region_is_refused_before_any_plan(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    home = tmp_path / "home"
    result = run_cli("oa-vm", *args, home=home, env=_offline_env(tmp_path))
    line = result.assert_one_line_error()
    assert expected in line, line
    assert "Plan:" not in result.stdout
    assert not home.exists(), "a refused region must write nothing"


def test_a_real_region_outside_the_catalog_plans_with_its_price_unknown(tmp_path: Path) -> None:
    result = run_cli("oa-vm", "pool-create", "--cloud", "aws", "--region", "ap-south-1",
                     "--plan", home=tmp_path / "home", env=_offline_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "Price: UNKNOWN for the whole pool" in result.stdout
