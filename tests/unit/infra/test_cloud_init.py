"""The worker's cloud-init document, rendered and parsed back (a pure function)."""

from __future__ import annotations

import ast
import base64
import gzip
import io
import shlex
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]

from infra import aws as infra_aws
from infra import azure as infra_azure
from infra.worker import cloud_init, units
from infra.worker.cloud_init import ship_python, ship_text
from tests.support.pool_programs import AWS_IMAGE, make_settings

ROOT = Path(__file__).resolve().parents[3]
WORKER = ROOT / "infra" / "worker"


def _doc(cloud: str = "aws", **changes: Any) -> dict[str, Any]:
    facts = infra_aws.HOST_FACTS if cloud == "aws" else infra_azure.HOST_FACTS
    text = cloud_init.render(make_settings(cloud, **changes), facts)
    assert text.startswith("#cloud-config\n")
    doc: dict[str, Any] = yaml.safe_load(text)
    return doc


def _files(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["path"]: f for f in doc["write_files"]}


def _content(entry: dict[str, Any]) -> str:
    if entry.get("encoding") == "gz+b64":
        return gzip.decompress(base64.b64decode(entry["content"])).decode("utf-8")
    return str(entry["content"])


def _env(doc: dict[str, Any]) -> dict[str, str]:
    text = _content(_files(doc)["/etc/oa-vm/worker.env"])
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition("=")
        out[key] = " ".join(shlex.split(value))
    return out


def test_installs_docker_socat_and_curl() -> None:
    assert {"docker.io", "socat", "curl"} <= set(_doc()["packages"])


def test_ships_the_scripts_servers_and_dockerfile_verbatim() -> None:
    files = _files(_doc())
    for shipped, source in [
        ("/opt/oa-vm/bootstrap.sh", WORKER / "bootstrap.sh"),
        ("/opt/oa-vm/lib.sh", WORKER / "lib.sh"),
        ("/opt/oa-vm/scoring.sh", WORKER / "scoring.sh"),
        ("/opt/oa-vm/waa-image/Dockerfile", WORKER / "waa-image" / "Dockerfile"),
    ]:
        # The same lines in the same order, without the comment lines and blank lines.
        text = source.read_text(encoding="utf-8")
        assert _content(files[shipped]) == ship_text(text), shipped
        code = [line for line in text.splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
        assert _content(files[shipped]).splitlines()[-len(code):] == code, shipped
    late = _late_files()
    for shipped, source in [
        ("scoring_server.py", WORKER / "scoring_server.py"),
        ("scoring_rules.py", ROOT / "infra/scoring_rules.py"),
        ("relay.py", WORKER / "relay.py"),
        ("qmp_snapshot.py", WORKER / "qmp_snapshot.py"),
    ]:
        # The same program (its syntax tree, docstrings aside), without comments or docstrings;
        # the scorer's and the QMP client's files in pool-wait's delivery, not the user data.
        text = source.read_text(encoding="utf-8")
        content = late[shipped] if shipped in late else _content(files[shipped])
        assert f"/opt/oa-vm/{shipped}" not in files or shipped not in late, shipped
        assert content == ship_python(text), shipped
        assert len(content) < len(text)
        names = [
            {n.name for n in ast.walk(ast.parse(t))
             if isinstance(n, ast.FunctionDef | ast.ClassDef)}
            for t in (text, content)
        ]
        assert names[0] == names[1], shipped
    assert files["/opt/oa-vm/bootstrap.sh"]["permissions"] == "0755"
    for unit in units.STATIC_UNITS:
        assert _content(files[f"/etc/systemd/system/{unit}"]) == (
            WORKER / "systemd" / unit
        ).read_text(encoding="utf-8")


def test_the_bootstrap_runs_as_a_unit_and_cloud_init_does_not_wait_for_it() -> None:
    doc = _doc()
    assert ["systemctl", "enable", "oa-vm-bootstrap.service"] in doc["runcmd"]
    assert doc["runcmd"][-1] == ["systemctl", "start", "--no-block", "oa-vm-bootstrap.service"]
    unit = _content(_files(doc)["/etc/systemd/system/oa-vm-bootstrap.service"])
    assert "EnvironmentFile=/etc/oa-vm/worker.env" in unit
    assert "ExecStart=/opt/oa-vm/bootstrap.sh" in unit
    # The old unit named a service that never existed; nor is it ordered after the bootstrap,
    # which starts it and waits (tests/integration/test_systemd_units.py)
    scoring = _content(_files(doc)["/etc/systemd/system/oa-vm-scoring.service"])
    assert "oa-vm-waa.service" not in scoring and "\nAfter=docker.service\n" in scoring


def test_worker_env_carries_the_settings_the_bootstrap_reads() -> None:
    env = _env(_doc(disk_size="80G"))
    assert env["OA_VM_MODE"] == "pool"
    assert env["OA_VM_SIZE"] == "m8i.2xlarge"
    assert env["OA_VM_STORAGE_DEVICES"] == "/dev/sdf /dev/xvdf ebs"
    assert (env["VERSION"], env["RAM_SIZE"], env["CPU_CORES"], env["DISK_SIZE"]) == (
        "11e", "8G", "4", "80G"
    )
    assert env["OA_VM_WAA_IMAGE"] == "windowsarena/winarena:latest"
    assert env["OA_VM_BASE_IMAGE"] == "dockurr/windows:latest"
    assert "m8i.2xlarge" in env["OA_VM_SIZE_HINT"]
    assert _env(_doc(mode="build", image_id=None))["OA_VM_MODE"] == "build"


def test_expiry_timer_is_armed_first_on_aws_only() -> None:
    doc = _doc("aws")
    timer = _content(_files(doc)["/etc/systemd/system/oa-vm-expiry.timer"])
    assert "OnCalendar=2026-03-01 18:30:05 UTC" in timer and "Persistent=true" in timer
    service = _content(_files(doc)["/etc/systemd/system/oa-vm-expiry.service"])
    assert "ExecStart=/usr/bin/systemctl poweroff" in service
    steps = [" ".join(step) for step in doc["runcmd"]]
    assert steps.index("systemctl start oa-vm-expiry.timer") < steps.index(
        "systemctl start --no-block oa-vm-bootstrap.service"
    )
    # started, never enabled: at every later boot the arm unit starts it, once it holds the
    # pool's current expiry (its tag), so a stopped host's old time cannot fire first
    assert "[Install]" not in timer
    assert not [s for s in steps if "enable" in s and "oa-vm-expiry.timer" in s]
    assert "systemctl enable oa-vm-expiry-arm.service" in steps
    arm = _content(_files(doc)["/etc/systemd/system/oa-vm-expiry-arm.service"])
    assert "ExecStart=/opt/oa-vm/expiry_arm.sh\n" in arm and "WantedBy=multi-user.target" in arm
    assert "After=network-online.target" in arm
    script = _files(doc)["/opt/oa-vm/expiry_arm.sh"]
    assert script["permissions"] == "0755"
    assert _content(script) == ship_text(units.read("expiry_arm.sh"))
    azure = _files(_doc("azure"))
    assert not {"/etc/systemd/system/oa-vm-expiry.timer", "/opt/oa-vm/expiry_arm.sh",
                "/etc/systemd/system/oa-vm-expiry-arm.service"} & set(azure)


def _late_files() -> dict[str, str]:
    payload = base64.b64decode(cloud_init.late_payload())
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(payload))) as tar:
        return {m.name: tar.extractfile(m).read().decode()  # type: ignore[union-attr]
                for m in tar.getmembers()}


def _bootstrap_install_list() -> list[str]:
    """The files ``bootstrap.sh``'s ``await_files`` installs from the delivery."""
    body = (WORKER / "bootstrap.sh").read_text(encoding="utf-8")
    start = body.index("await_files() {")
    line = next(x for x in body[start:].splitlines() if x.strip().startswith("for name in "))
    return line.split(" in ", 1)[1].split(";")[0].split()


def test_the_late_files_travel_whole_and_the_same_each_time() -> None:
    assert sorted(_late_files()) == sorted(units.LATE_FILES)
    assert sorted(_bootstrap_install_list()) == sorted(units.LATE_FILES)
    assert cloud_init.late_payload() == cloud_init.late_payload()


@pytest.mark.parametrize("spot", [False, True])
@pytest.mark.parametrize("mode", ["pool", "build"])
def test_rendering_is_deterministic_and_fits_aws_user_data_with_room_to_spare(
    spot: bool, mode: str
) -> None:
    settings = make_settings("azure")
    facts = infra_azure.HOST_FACTS
    assert cloud_init.render(settings, facts) == cloud_init.render(settings, facts)
    aws_settings = make_settings("aws", spot=spot, mode=mode,
                                 image_id=None if mode == "build" else AWS_IMAGE)
    raw = gzip.compress(cloud_init.render(aws_settings, infra_aws.HOST_FACTS).encode())
    # 2 KiB of room: what the worker ships grows with every feature; it must not reach the cap
    # unnoticed (the scorer's files already travel over SSH: units.LATE_FILES)
    assert len(raw) < cloud_init.MAX_USER_DATA - 2048, len(raw)


def test_expiry_calendar_is_utc() -> None:
    from datetime import datetime

    local = datetime.fromisoformat("2026-06-01T01:00:00+02:00")
    assert units.expiry_calendar(local) == "2026-05-31 23:00:00 UTC"


def test_the_worker_image_is_built_on_a_current_dockur_with_waas_files() -> None:
    dockerfile = (WORKER / "waa-image" / "Dockerfile").read_text(encoding="utf-8")
    assert "FROM ${BASE_IMAGE}" in dockerfile and "ARG BASE_IMAGE=dockurr/windows:latest" in (
        dockerfile
    )
    for copied in ("/client", "/oem", "/entry.sh"):
        assert f"COPY --from=waa {copied}" in dockerfile
    # Several GB of weights only WAA's own agent uses: not in every worker's volume.
    assert "/models" not in dockerfile.replace("# Not copied: /models", "")
    # dockur's guest is at GUEST_IP (172.30.0.2); WAA's scripts say 20.20.20.21.
    assert "ARG GUEST_IP=172.30.0.2" in dockerfile
    assert "s/20\\.20\\.20\\.21/${GUEST_IP}/g" in dockerfile


def test_the_shipped_shell_scripts_parse_and_hold_no_here_documents(tmp_path: Path) -> None:
    """ship_text drops lines starting with '#': safe only without here-documents."""
    for name in (*units.SCRIPTS, units.SPOT_WATCH_SCRIPT, units.AZURE_SPOT_WATCH_SCRIPT,
                 units.EXPIRY_ARM_SCRIPT):
        source = units.read(name)
        assert "<<" not in source, f"{name} holds a here-document: ship_text would change it"
        shipped = tmp_path / name
        shipped.write_text(ship_text(source), encoding="utf-8")
        assert ship_text(source).startswith("#!/bin/bash\n")
        done = subprocess.run(["bash", "-n", str(shipped)], capture_output=True, text=True,
                              timeout=30, check=False)
        assert done.returncode == 0, (name, done.stderr)


@pytest.mark.parametrize("cloud", ["aws", "azure"])
def test_the_clean_reset_ships_to_every_worker(cloud: str) -> None:
    """Without ``reset.sh`` (or its QMP helper) the default ``clean-or-stock`` would fall back
    to WAA's stock reset on every cloud worker, and nothing else would say so."""
    from oa_vm.clouds.pulumi.reset import RESET_SCRIPT

    files = _files(_doc(cloud))
    assert RESET_SCRIPT in files and files[RESET_SCRIPT].get("permissions") == "0755"
    shipped = _content(files[RESET_SCRIPT])
    assert shipped.startswith("#!/bin/bash") and "qmp_snapshot.py" in shipped
    # the QMP helper travels with pool-wait's delivery (units.LATE_FILES), which the
    # bootstrap installs beside reset.sh before its first use (finish_pool's snapshot check)
    assert "qmp_snapshot.py" in units.LATE_FILES
    helper = _late_files()["qmp_snapshot.py"]
    assert "snapshot-load" in helper and "blocked-reasons" in helper
    assert "qmp_snapshot.py" in _bootstrap_install_list()
