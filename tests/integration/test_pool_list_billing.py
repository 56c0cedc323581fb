"""``pool-list`` and ``pool-status`` say what a deallocated Azure pool keeps billing (its disks
and public IPs, after a pause or its expiry) and the command that ends it, through the real
CLI, on both of its paths (the fast one without Typer, and Typer's)."""

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
for name, cloud, expired in (("deallocated", "azure", True), ("ended", "aws", True),
                             ("live", "azure", False)):
    state.save(PoolRecord(
        name=name, cloud=cloud, state=PoolState.READY, created_at=now - timedelta(hours=30),
        expires_at=now + timedelta(hours=-26 if expired else 4), price_per_hour=0.4,
        workers=[WorkerRecord(name="worker-0"), WorkerRecord(name="worker-1")],
        settings={"size": "Standard_D8s_v5" if cloud == "azure" else "m8i.2xlarge",
                  "disk_gb": 160, "storage_gb": 96}))
"""


@pytest.mark.parametrize("fast_path", ["1", "0"])
def test_an_expired_azure_pool_is_listed_with_what_it_keeps_billing(
    tmp_path: Path, fast_path: str
) -> None:
    home = tmp_path / "home"
    subprocess.run([sys.executable, "-c", SAVE], check=True, timeout=120,  # fixed argv
                   env={**os.environ, "OA_VM_HOME": str(home)})
    env = {"OA_VM_FAST_PATH": fast_path}
    listing = run_cli("oa-vm", "pool-list", home=home, env=env)
    assert listing.returncode == 0, listing.stderr
    rows = {line.split()[0]: line for line in listing.stdout.splitlines()[1:4]}
    per_day = 2 * ((38.01 + 19.71) * 24 / 730 + 0.005 * 24)  # P15 + P10 disks, a static IP
    assert f"${per_day:.2f}/day (disks and public IPs after expiry)" in rows["deallocated"]
    assert "/day" not in rows["ended"] and "/day" not in rows["live"]
    assert ("Keeps billing: deallocated: Azure bills a deallocated (paused or expired) worker's "
            "disks and public IPs until the pool is removed ('oa-vm pool-cleanup --pool "
            "deallocated')") in listing.stdout
    status = run_cli("oa-vm", "pool-status", "--pool", "deallocated", "--json", home=home,
                     env=env)
    data = json.loads(status.stdout)
    assert data["keeps_billing_per_day"] == pytest.approx(per_day)
    assert data["keeps_billing"] == "disks and public IPs after expiry"
    # 4 h running for two workers, then 26 h of disks and public IPs
    assert data["cost_so_far_usd"] == pytest.approx(4 * 0.4 * 2 + 26 / 24 * per_day, rel=1e-3)
