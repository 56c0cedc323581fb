"""Several workers per host on AWS and Azure, as the pool programs render them (Pulumi's mocks):
one machine per N workers, each worker its own storage volume from the image, N workers in the
stack outputs with their slot's ports, and a cloud-init that runs the bootstrap once per slot
with ``slots.py``'s values. The values are listed from the rendered user data, as the host's
shell (the shipped ``lib.sh``, sourced with each slot) and systemd read them: no two workers of
a host share a port, a folder, a QMP socket, a guest address, a snapshot or a storage volume."""

from __future__ import annotations

import base64
import gzip
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]

from infra import azure as infra_azure
from infra.offline import OfflineRun
from infra.worker import slots
from tests.support.pool_programs import AWS_IMAGE, AZURE_IMAGE, make_settings, of_type
from tests.unit.infra.conftest import RunAws, RunAzure

WORKER = Path(__file__).resolve().parents[3] / "infra" / "worker"
BASH = shutil.which("bash") or "/bin/bash"
MACHINE = {"aws": "aws:ec2/instance:Instance", "azure": "azure-native:compute:VirtualMachine"}
SIZE = {"aws": "m8i.4xlarge", "azure": "Standard_D16s_v5"}
PER_HOST = 4
NAMES = ("OA_VM_CONTAINER", "OA_VM_STATUS_FILE", "OA_VM_STORAGE", "OA_VM_QMP_SOCKET",
         "OA_VM_GUEST_IP", "OA_VM_WAA_HOST_PORT", "OA_VM_VNC_HOST_PORT",
         "OA_VM_SCORING_HOST_PORT", "OA_VM_SNAPSHOT_TAG", "OA_VM_STORAGE_DEVICES")
PORTS = ("OA_VM_WAA_HOST_PORT", "OA_VM_VNC_HOST_PORT", "OA_VM_SCORING_HOST_PORT")


def _run(cloud: str, run_aws: RunAws, run_azure: RunAzure) -> OfflineRun:
    settings = make_settings(cloud, workers=2, workers_per_host=PER_HOST, size=SIZE[cloud])
    return run_aws(settings)[0] if cloud == "aws" else run_azure(settings)


def _user_data(cloud: str, machine: Any) -> dict[str, Any]:
    if cloud == "aws":
        raw = base64.b64decode(machine.inputs["userDataBase64"])
        assert len(raw) <= 16 * 1024  # AWS's cap, with every slot's files
    else:
        raw = base64.b64decode(machine.inputs["osProfile"]["customData"])
    loaded: dict[str, Any] = yaml.safe_load(gzip.decompress(raw).decode("utf-8"))
    return loaded


@pytest.mark.parametrize("cloud", ["aws", "azure"])
def test_each_host_renders_its_workers_with_their_own_volumes_and_ports(
    cloud: str, run_aws: RunAws, run_azure: RunAzure
) -> None:
    run = _run(cloud, run_aws, run_azure)
    machines = of_type(run, MACHINE[cloud])
    assert sorted(m.name for m in machines) == ["waa-eval-w0", "waa-eval-w1"]
    workers = run.result
    assert [w["name"] for w in workers] == [f"waa-eval-w{h}-s{i}" for h in range(2)
                                            for i in range(PER_HOST)]
    for host in ("waa-eval-w0", "waa-eval-w1"):
        mine = [w for w in workers if w["host"] == host]
        assert [w["slot"] for w in mine] == list(range(PER_HOST))
        assert len({w["instance_id"] for w in mine}) == 1  # one machine
        ports = [p for w in mine for p in (w["waa_port"], w["scoring_port"])]
        assert len(set(ports)) == 2 * PER_HOST
        assert (mine[1]["waa_port"], mine[1]["scoring_port"]) == (
            slots.slot(1).waa_port, slots.slot(1).scoring_port)
    for machine in machines:
        if cloud == "aws":
            volumes = machine.inputs["ebsBlockDevices"]
            assert [v["deviceName"] for v in volumes] == ["/dev/sdf", "/dev/sdg", "/dev/sdh",
                                                         "/dev/sdi"]
            assert {v["snapshotId"] for v in volumes} == {AWS_IMAGE}
            assert all(v["deleteOnTermination"] for v in volumes)  # the expiry ends them too
        else:
            disks = machine.inputs["storageProfile"]["dataDisks"]
            assert [d["lun"] for d in disks] == list(range(PER_HOST))
    if cloud == "azure":
        copies = of_type(run, "azure-native:compute:Disk")
        assert len(copies) == 2 * PER_HOST
        assert {d.inputs["creationData"]["sourceResourceId"] for d in copies} == {AZURE_IMAGE}
    doc = _user_data(cloud, machines[0])
    units = [f"oa-vm-bootstrap-w{i}.service" for i in range(PER_HOST)]
    assert ["systemctl", "enable", *units] in doc["runcmd"]
    assert ["systemctl", "start", "--no-block", *units] in doc["runcmd"]
    assert "nvme-cli" in doc["packages"]


def _lib_values(root: Path, slot: str, host_env: str) -> dict[str, str]:
    """What the shipped ``lib.sh`` resolves for ``slot`` on a host rooted at ``root``, with the
    host's ``worker.env`` loaded first as systemd's ``EnvironmentFile`` does."""
    show = "; ".join(f'printf "%s=%s\\n" {n} "${n}"' for n in NAMES)
    done = subprocess.run(
        [BASH, "-c", f'set -a; . "$1"; set +a; . "$0"; {show}', str(root / "opt/oa-vm/lib.sh"),
         host_env],
        env={"PATH": "/usr/bin:/bin", "OA_VM_ROOT": str(root), "OA_VM_SLOT": slot},
        capture_output=True, text=True, timeout=30, check=True)
    return dict(line.split("=", 1) for line in done.stdout.splitlines())


@pytest.mark.parametrize("cloud", ["aws", "azure"])
def test_no_two_workers_of_a_rendered_host_share_anything(
    cloud: str, run_aws: RunAws, run_azure: RunAzure, tmp_path: Path
) -> None:
    doc = _user_data(cloud, of_type(_run(cloud, run_aws, run_azure), MACHINE[cloud])[0])
    for entry in doc["write_files"]:  # the host as cloud-init leaves it
        target = tmp_path / entry["path"].lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(entry["content"], encoding="utf-8")
    (tmp_path / "opt/oa-vm/lib.sh").write_text((WORKER / "lib.sh").read_text(), "utf-8")
    host_env = str(tmp_path / "etc/oa-vm/worker.env")
    seen: dict[str, dict[str, str]] = {}
    ports: dict[str, str] = {}
    for i in range(PER_HOST):
        name = f"w{i}"
        unit = (tmp_path / f"etc/systemd/system/oa-vm-bootstrap-{name}.service").read_text()
        assert f"Environment=OA_VM_SLOT={name}\n" in unit
        values = _lib_values(tmp_path, name, host_env)
        for key in NAMES:
            owner = seen.setdefault(key, {}).setdefault(values[key], name)
            assert owner == name, f"{name} and {owner} share {key} {values[key]}"
        for key in PORTS:
            assert ports.setdefault(values[key], name) == name, f"port {values[key]} twice"
        assert values["OA_VM_STORAGE_DEVICES"]  # its own volume, never "the" data disk
    assert len(ports) == 3 * PER_HOST


def test_a_slots_guest_address_reaches_waas_scripts_before_they_run(tmp_path: Path) -> None:
    """waa_entry.sh points WAA's scripts (baked for the image's address) at the slot's guest;
    an address that merely starts with the baked one stays."""
    scripts = tmp_path / "client"
    scripts.mkdir()
    (scripts / "config.py").write_text("VM_IP = '172.30.0.2'\nOTHER = '172.30.0.21'\n")
    entry = tmp_path / "entry.sh"
    entry.write_text("#!/bin/sh\necho \"ran with $*\"\n")
    entry.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "OA_VM_ENTRY_WAA": str(entry),
           "OA_VM_ENTRY_WAA_FILES": f"{entry} {scripts}", "VM_NET_IP": "172.30.3.2",
           "OA_VM_IMAGE_GUEST_IP": "172.30.0.2",
           "OA_VM_ENTRY_DOCKUR_RC": str(tmp_path / "dockur.rc")}
    done = subprocess.run([BASH, str(WORKER / "waa_entry.sh"), "--start-client", "true"],
                          env=env, capture_output=True, text=True, timeout=30, check=True)
    assert "ran with --start-client true" in done.stdout
    text = (scripts / "config.py").read_text()
    assert "VM_IP = '172.30.3.2'" in text and "OTHER = '172.30.0.21'" in text
    # slot 0 (the image's own address): nothing is touched
    (scripts / "config.py").write_text("VM_IP = '172.30.0.2'\n")
    subprocess.run([BASH, str(WORKER / "waa_entry.sh")], env={**env, "VM_NET_IP": "172.30.0.2"},
                   capture_output=True, text=True, timeout=30, check=True)
    assert (scripts / "config.py").read_text() == "VM_IP = '172.30.0.2'\n"


def test_azure_slot_devices_are_their_luns() -> None:
    devices = infra_azure.HOST_FACTS.slot_storage_devices
    assert devices is not None and devices(2) == ("/dev/disk/azure/data/by-lun/2",
                                                  "/dev/disk/azure/scsi1/lun2")


def test_a_notice_about_the_host_reaches_every_worker_on_it(tmp_path: Path) -> None:
    """What the spot watchers publish (``lib.sh``'s ``publish_host_status``) becomes every slot's
    status: the host's notice drains each of its workers."""
    for i in (1, 2):
        status = tmp_path / f"var/lib/oa-vm/workers/w{i}/status"
        status.parent.mkdir(parents=True)
        status.write_text("state=done\nstep=ready\n")
    notice = tmp_path / "notice"
    notice.write_text("state=draining\nstep=spot-interruption\n")
    subprocess.run([BASH, "-c", '. "$0"; publish_host_status "$1"', str(WORKER / "lib.sh"),
                    str(notice)], env={"PATH": "/usr/bin:/bin", "OA_VM_ROOT": str(tmp_path)},
                   capture_output=True, text=True, timeout=30, check=True)
    for path in ("var/lib/oa-vm/status", "var/lib/oa-vm/workers/w1/status",
                 "var/lib/oa-vm/workers/w2/status"):
        assert (tmp_path / path).read_text() == "state=draining\nstep=spot-interruption\n"
    assert not notice.exists()
