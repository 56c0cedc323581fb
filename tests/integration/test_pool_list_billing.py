"""``pool-list`` and ``pool-status`` say what a paused pool keeps billing (its disks, and on Azure
its public IPs), and nothing for an expired pool, which its cloud's kill switch ended with its
disks (AWS's schedule, Azure's deleter), through the real CLI, on both of its paths (the fast one
without Typer, and Typer's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import run_cli

pytestmark = pytest.mark.integration

SAVE = """
from datetime import timedelta
from oa_vm.model import state
from oa_vm.model.state import PoolRecord, PoolState, WorkerRecord
now = state.utcnow()
for name, cloud, expired in (("deleted", "azure", True), ("ended", "aws", True),
                             ("paused", "azure", False)):
    state.save(PoolRecord(
        name=name, cloud=cloud, state=PoolState.PAUSED if name == "paused" else PoolState.READY,
        created_at=now - timedelta(hours=30),
        expires_at=now + timedelta(hours=-26 if expired else 4), price_per_hour=0.4,
        workers=[WorkerRecord(name="worker-0"), WorkerRecord(name="worker-1")],
        settings={"size": "Standard_D8s_v5" if cloud == "azure" else "m8i.2xlarge",
                  "disk_gb": 160, "storage_gb": 96},
        provider_data={"pauses": [{"from": state.format_time(now - timedelta(hours=1)),
                                   "to": None, "per_day": 3.5}]} if name == "paused" else {}))
"""


@pytest.mark.parametrize("fast_path", ["1", "0"])
def test_an_expired_pool_bills_nothing_more_a_paused_one_its_disks_and_addresses(
    tmp_path: Path, fast_path: str
) -> None:
    home = tmp_path / "home"
    subprocess.run([sys.executable, "-c", SAVE], check=True, timeout=120,  # fixed argv
                   env={**os.environ, "OA_VM_HOME": str(home)})
    env = {"OA_VM_FAST_PATH": fast_path}
    listing = run_cli("oa-vm", "pool-list", home=home, env=env)
    assert listing.returncode == 0, listing.stderr
    rows = {line.split()[0]: line for line in listing.stdout.splitlines()[1:4]}
    assert "/day" not in rows["deleted"] and "/day" not in rows["ended"]
    assert "$3.50/day (disks and public IPs)" in rows["paused"]
    assert "Keeps billing" not in listing.stdout
    for pool in ("deleted", "ended"):
        status = run_cli("oa-vm", "pool-status", "--pool", pool, "--json", home=home, env=env)
        data = json.loads(status.stdout)
        assert data["keeps_billing_per_day"] is None and data["keeps_billing"] is None
        # 4 h running for two workers; nothing once the expiry ended them
        assert data["cost_so_far_usd"] == pytest.approx(4 * 0.4 * 2, rel=1e-3)
