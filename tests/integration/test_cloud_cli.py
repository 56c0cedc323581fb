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


IMAGES = {
    "aws": "snap-0123456789abcdef0",
    "azure": "/subscriptions/0/resourceGroups/g/providers/Microsoft.Compute/snapshots/x",
}


@pytest.mark.parametrize("cloud", ["aws", "azure"])
def test_create_without_engine_is_one_line_and_writes_nothing(tmp_path: Path, cloud: str) -> None:
    home = tmp_path / "home"
    result = run_cli("oa-vm", "pool-create", "--cloud", cloud, "--workers", "1", "-y",
                     "--image", IMAGES[cloud], home=home, env=_no_engine_env(tmp_path))
    line = result.assert_one_line_error()
    assert "pulumi" in line.lower() and "install" in line
    assert not home.exists() or not list(home.rglob("pool.json"))


def test_unpriced_region_is_planned_with_unknown_price(tmp_path: Path) -> None:
    result = run_cli("oa-vm", "pool-create", "--cloud", "azure", "--region", "southindia",
                     "--workers", "1", "--plan", home=tmp_path / "h", env=_no_engine_env(tmp_path))
    assert result.returncode == 0, result.stderr
    # a real region the catalog does not price: planned, but said on the price line (a region
    # the cloud lacks is refused: tests/integration/test_cloud_plans.py)
    assert "Price: UNKNOWN for the whole pool: no azure price" in result.stdout
    assert "known regions: eastus" in result.stdout


@pytest.mark.parametrize(
    ("cloud", "region", "known", "near"),
    [("azure", "southindia", "eastus", None), ("aws", "ap-south-1", "us-east-1", None),
     ("azure", "SouthIndia", "eastus", None)],
)
def test_image_plan_in_a_region_without_a_price_says_so_loudly(
    tmp_path: Path, cloud: str, region: str, known: str, near: str | None
) -> None:
    home = tmp_path / "home"
    text = run_cli("oa-vm", "image-create", "--cloud", cloud, "--region", region, "--plan",
                   home=home, env=_no_engine_env(tmp_path))
    assert text.returncode == 0, text.stderr
    price_line = next(line for line in text.stdout.splitlines() if line.startswith("Price:"))
    assert price_line.startswith("Price: UNKNOWN for the builder, while it runs: no "), price_line
    assert f"region {region!r}" in price_line and f"known regions: {known}" in price_line
    assert (f"(did you mean {near}?)" in price_line) == (near is not None), price_line
    assert "(price unknown)" in text.stdout and "$0.00" not in text.stdout  # never a false $0
    as_json = run_cli("oa-vm", "image-create", "--cloud", cloud, "--region", region, "--plan",
                      "--json", home=home, env=_no_engine_env(tmp_path))
    assert as_json.returncode == 0, as_json.stderr
    plan = json.loads(as_json.stdout)
    assert plan["price_per_hour"] is None and plan["region"] == region
    assert plan["price_unknown"].startswith("price unknown: no ")
    assert f"known regions: {known}" in plan["price_unknown"]
    assert not home.exists(), "a plan must write nothing"


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


@pytest.mark.parametrize(("given", "per_host", "said"), [
    ((), "2", "the default count (3 workers) does not fill hosts of 2: every host runs "
              "--workers-per-host workers; pass --workers N with N a multiple of 2 (the "
              "nearest: --workers 4, 2 host(s))"),
    ((), "5", "the default count (3 workers) does not fill hosts of 5: every host runs "
              "--workers-per-host workers; pass --workers N with N a multiple of 5 (the "
              "nearest: --workers 5, 1 host(s))"),
    (("--workers", "3"), "2", "--workers 3 does not fill hosts of 2: every host runs "
                              "--workers-per-host workers; use --workers 4 (2 host(s)) or "
                              "--workers 2"),
])
@pytest.mark.parametrize("cloud", ["aws", "azure"])
def test_hosts_the_count_does_not_fill_are_refused_naming_only_what_was_given(
    tmp_path: Path, cloud: str, given: tuple[str, ...], per_host: str, said: str
) -> None:
    # a refusal names a --workers the user typed, never the default as if it had been typed
    home = tmp_path / "home"
    for plan in (("--plan",), ("-y",)):
        result = run_cli("oa-vm", "pool-create", "--cloud", cloud, *given, "--workers-per-host",
                         per_host, *plan, home=home, env=_no_engine_env(tmp_path))
        line = result.assert_one_line_error()
        assert said in line, line
        assert ("--workers 3" in line) == bool(given), line
        assert result.returncode == 2
    assert not home.exists() or not list(home.rglob("pool.json"))


def test_cloud_sweep_without_engine_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = run_cli("openadapt-evals", "sweep", "--cloud", "azure", "--workers", "1",
                     "--agent", "noop", "--tasks", "all", "--results-dir",
                     str(tmp_path / "results"), home=home, env=_no_engine_env(tmp_path))
    assert "pulumi" in result.assert_one_line_error().lower()
    assert not list(home.rglob("pool.json")) if home.exists() else True
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    ("cloud", "region", "builder", "image_type"),
    [("aws", "us-east-1", "aws:ec2/instance:Instance", "aws:ebs/snapshot:Snapshot"),
     ("azure", "eastus", "azure-native:compute:VirtualMachine",
      "azure-native:compute:Snapshot")],
)
def test_image_plan_offline(
    tmp_path: Path, cloud: str, region: str, builder: str, image_type: str
) -> None:
    home = tmp_path / "home"
    result = run_cli("oa-vm", "image-create", "--cloud", cloud, "--region", region, "--plan",
                     "--json", home=home, env=_no_engine_env(tmp_path))
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert all({"type", "name", "inputs"} <= set(r) for r in plan["resources"])
    types = [r["type"] for r in plan["resources"]]
    assert types.count(builder) == 1 and types.count(image_type) == 1
    assert plan["price_per_hour"] > 0 and plan["region"] == region
    assert plan["price_unknown"] is None
    assert plan["ready_in"] == "about 2 h (1.5-3 h, estimated)"
    assert plan["image"]["licence_expires"] and plan["image"]["storage_usd_per_month"] > 0
    snapshot = next(r for r in plan["resources"] if r["type"] == image_type)
    assert snapshot["inputs"]["tags"]["oa-vm:image"] == plan["name"]
    text = run_cli("oa-vm", "image-create", "--cloud", cloud, "--region", region, "--plan",
                   home=home, env=_no_engine_env(tmp_path))
    assert text.returncode == 0, text.stderr
    assert image_type in text.stdout and "keeping the image costs about $" in text.stdout
    assert not home.exists(), "a plan must write nothing"


def test_pool_plan_from_an_image_shows_each_workers_storage_from_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = run_cli("oa-vm", "pool-create", "--cloud", "aws", "--workers", "2", "--image",
                     IMAGES["aws"], "--allow-cidr", "203.0.113.7/32", "--plan", "--json",
                     home=home, env=_no_engine_env(tmp_path))
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    instances = [r for r in plan["resources"] if r["type"] == "aws:ec2/instance:Instance"]
    assert len(instances) == 2
    for instance in instances:
        (storage,) = instance["inputs"]["ebsBlockDevices"]
        assert storage["snapshotId"] == IMAGES["aws"]
    # Everything the plan must carry (text and JSON).
    assert plan["name"] == "waa-pool" and plan["image"]["id"] == IMAGES["aws"]
    assert plan["tree"][0].startswith("pulumi:pulumi:Stack") and len(plan["tree"]) > 5
    assert plan["machine"] == {"vcpus": 8, "memory_gib": 32, "os_disk_gb": 160,
                               "storage_gb": 96}
    assert any("traffic" in item for item in plan["not_priced"])
    assert plan["max_spend_usd"] == pytest.approx(plan["price_per_hour"] * 4, rel=0.01)
    assert plan["ready_in"].startswith("about 20 min")
    assert plan["bills_after_expiry"] and plan["alternatives"]
    assert all({"size", "region", "price_per_hour"} <= set(a) for a in plan["alternatives"])
    text = run_cli("oa-vm", "pool-create", "--cloud", "aws", "--workers", "2", "--image",
                   IMAGES["aws"], "--plan", home=home, env=_no_engine_env(tmp_path))
    for fragment in ("pulumi:pulumi:Stack", "8 vCPUs, 32 GiB memory", "Not priced:",
                     "Most it can spend before it expires: $", "Expected ready in: about 20 min",
                     "Keeps billing after expiry:", "Cheapest alternatives"):
        assert fragment in text.stdout, fragment


@pytest.mark.parametrize("cloud", ["aws", "azure"])
def test_real_create_without_an_image_names_image_create(tmp_path: Path, cloud: str) -> None:
    home = tmp_path / "home"
    result = run_cli("oa-vm", "pool-create", "--cloud", cloud, "--workers", "2", "-y",
                     "--allow-cidr", "203.0.113.7/32", home=home, env=_no_engine_env(tmp_path))
    line = result.assert_one_line_error()
    assert f"oa-vm image-create --cloud {cloud}" in line
    assert not home.exists() or not list(home.rglob("pool.json"))


def test_pool_create_without_a_cloud_asks_or_uses_the_configured_default(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = _no_engine_env(tmp_path)
    refused = run_cli("oa-vm", "pool-create", "--workers", "1", "--plan", home=home, env=env)
    line = refused.assert_one_line_error()
    assert "--cloud" in line and "oa-vm config set default-cloud" in line
    assert not home.exists()
    bad = run_cli("oa-vm", "config", "set", "default-cloud", "gcp", home=home, env=env)
    assert "local, aws, azure" in bad.assert_one_line_error()
    ok = run_cli("oa-vm", "config", "set", "default-cloud", "aws", home=home, env=env)
    assert ok.returncode == 0, ok.stderr
    planned = run_cli("oa-vm", "pool-create", "--workers", "1", "--plan", "--json",
                      home=home, env=env)
    assert planned.returncode == 0, planned.stderr
    assert json.loads(planned.stdout)["cloud"] == "aws"
    shown = run_cli("oa-vm", "config", "--json", home=home, env=env)
    assert json.loads(shown.stdout) == {"default-cloud": "aws"}


def test_image_list_and_delete_of_an_unknown_image(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = _no_engine_env(tmp_path)
    listed = run_cli("oa-vm", "image-list", "--json", home=home, env=env)
    assert listed.returncode == 0 and json.loads(listed.stdout) == []
    empty = run_cli("oa-vm", "image-list", home=home, env=env)
    assert "oa-vm image-create" in empty.stdout
    gone = run_cli("oa-vm", "image-delete", "waa-us-east-1-20260101-0000", "-y",
                   home=home, env=env)
    assert "no image named" in gone.assert_one_line_error()
    assert gone.returncode == 2  # a name that names nothing, as an unknown --pool (it was 1)


def _record_image(home: Path, monkeypatch: pytest.MonkeyPatch, *, expired: bool = False) -> str:
    """An image as image-create records it (the cloud cannot be reached here)."""
    from datetime import timedelta

    from oa_vm.model import image_records, state

    monkeypatch.setenv("OA_VM_HOME", str(home))
    created = state.utcnow() - timedelta(days=100 if expired else 1)
    record = image_records.ImageRecord(
        id="waa-us-east-1-20261101-1200", cloud="aws", region="us-east-1",
        state=image_records.READY, size_gb=96, created_at=created,
        licence_expires=created + timedelta(days=90),
        waa_image="windowsarena/winarena@sha256:0123", builder_size="m8i.2xlarge",
        project="oa-vm-aws-images", stack="waa-us-east-1-20261101-1200", owner="alice",
        cloud_id="snap-0fedcba9876543210", volume_id="vol-0abc", storage_usd_per_month=4.8,
    )
    image_records.save(record)
    return record.id


def test_a_recorded_image_is_listed_and_used_by_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    env = _no_engine_env(tmp_path)
    image = _record_image(home, monkeypatch)
    listed = run_cli("oa-vm", "image-list", home=home, env=env)
    assert listed.returncode == 0, listed.stderr
    for fragment in ("aws", "us-east-1", image, "96 GB", "$4.80", "ready"):
        assert fragment in listed.stdout, fragment
    (entry,) = json.loads(run_cli("oa-vm", "image-list", "--json", home=home, env=env).stdout)
    assert entry["cloud_id"] == "snap-0fedcba9876543210" and entry["expired"] is False
    plan = run_cli("oa-vm", "pool-create", "--cloud", "aws", "--workers", "2", "--image", image,
                   "--allow-cidr", "203.0.113.7/32", "--plan", "--json", home=home, env=env)
    assert plan.returncode == 0, plan.stderr
    data = json.loads(plan.stdout)
    snapshots = {
        r["inputs"]["ebsBlockDevices"][0]["snapshotId"]
        for r in data["resources"] if r["type"] == "aws:ec2/instance:Instance"
    }
    assert snapshots == {"snap-0fedcba9876543210"}
    assert data["image"]["id"] == image and data["image"]["licence_expires"]
    # Without --image, the newest ready image of the region is the one.
    newest = json.loads(run_cli("oa-vm", "pool-create", "--cloud", "aws", "--plan", "--json",
                                home=home, env=env).stdout)
    assert newest["image"]["id"] == image


def test_an_expired_image_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    image = _record_image(home, monkeypatch, expired=True)
    result = run_cli("oa-vm", "pool-create", "--cloud", "aws", "--workers", "1", "--image",
                     image, "--allow-cidr", "203.0.113.7/32", "-y", home=home,
                     env=_no_engine_env(tmp_path))
    line = result.assert_one_line_error()
    assert "expired on" in line and "oa-vm image-create --cloud aws --region us-east-1" in line
    assert not list(home.rglob("pool.json"))
    listed = run_cli("oa-vm", "image-list", home=home, env=_no_engine_env(tmp_path))
    assert "(EXPIRED)" in listed.stdout


def test_pool_create_without_a_cloud_asks_on_a_terminal(tmp_path: Path) -> None:
    """On a terminal the question is asked (a pseudo-terminal stands for the user's)."""
    import os
    import pty
    import select
    import subprocess
    import time

    from tests.support.cli import BIN
    from tests.support.waiting import WAIT_LIMIT_S

    primary, secondary = pty.openpty()
    env = {**os.environ, **_no_engine_env(tmp_path), "OA_VM_HOME": str(tmp_path / "home"),
           "COLUMNS": "200"}
    proc = subprocess.Popen(
        [str(BIN / "oa-vm"), "pool-create", "--workers", "1", "--plan", "--json"],
        stdin=secondary, stdout=subprocess.PIPE, stderr=secondary, env=env,
    )
    os.close(secondary)
    shown = b""
    deadline = time.monotonic() + WAIT_LIMIT_S
    while b"Which cloud?" not in shown and time.monotonic() < deadline:
        ready, _, _ = select.select([primary], [], [], 1.0)
        if ready:
            shown += os.read(primary, 4096)
    assert b"Which cloud?" in shown and b"billed by the hour" in shown
    os.write(primary, b"azure\n")
    out, _ = proc.communicate(timeout=120)
    os.close(primary)
    assert proc.returncode == 0
    assert json.loads(out)["cloud"] == "azure"


@pytest.mark.parametrize("plan", [[], ["--plan"]])
def test_image_create_refuses_a_missing_iso_in_one_line_before_anything(
    tmp_path: Path, plan: list[str]
) -> None:
    home = tmp_path / "home"
    missing = tmp_path / "nowhere" / "win11.iso"
    result = run_cli("oa-vm", "image-create", "--cloud", "aws", "--region", "us-east-1",
                     "--iso", str(missing), "--yes", *plan, home=home,
                     env=_no_engine_env(tmp_path))
    line = result.assert_one_line_error()
    assert line.endswith(f"--iso {missing} does not exist; pass the path of your Windows ISO, "
                         "an s3:// address or an https:// URL"), line
    assert not home.exists(), "nothing written before the ISO is checked"


def test_image_create_refuses_a_file_that_is_not_an_iso_in_one_line_before_anything(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    download = tmp_path / "Win11.iso"  # what a failed download often leaves: an HTML page
    download.write_text("<html><body>Access denied</body></html>\n" * 2000)
    result = run_cli("oa-vm", "image-create", "--cloud", "aws", "--region", "us-east-1",
                     "--iso", str(download), "--yes", home=home, env=_no_engine_env(tmp_path))
    line = result.assert_one_line_error()
    assert line.endswith(f"--iso {download}: not an ISO image (no ISO 9660 or UDF volume "
                         "descriptor); pass a Windows installation .iso"), line
    assert not home.exists(), "nothing written before the ISO is checked"
