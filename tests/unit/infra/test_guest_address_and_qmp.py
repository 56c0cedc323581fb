"""One address for the Windows guest, dockur's own; and QEMU's QMP out of the guest's reach.

The guest address is held in four places that cannot import each other (``lib.sh`` on the host,
the image recipe, the scoring server shipped as a loose file, ``units.py`` for the Python side):
they must agree with one another and with what dockur's own ``network.sh`` computes, and no file
on a path to the guest may still say WAA's 20.20.20.21. QMP: the rendered user data of both
clouds' programs (Pulumi mocks) publish no QMP TCP port and no 0.0.0.0 monitor, and use
dockur's ``QMP`` variable with a unix socket in the host's root-only folder.
"""

from __future__ import annotations

import base64
import gzip
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]

from infra.worker import scoring_server, units
from tests.support.pool_programs import make_settings, of_type
from tests.unit.infra.conftest import RunAws, RunAzure

ROOT = Path(__file__).resolve().parents[3]
WORKER = ROOT / "infra" / "worker"
DOCKUR_NETWORK = ROOT.parent / "shared" / "dockur" / "upstream" / "qemu" / "src" / "network.sh"
BASH = shutil.which("bash") or "/bin/bash"
WAA_ADDRESS = "20.20.20.21"


def _lib_value(name: str) -> str:
    done = subprocess.run([BASH, "-c", f'. "$0"; printf %s "${name}"', str(WORKER / "lib.sh")],
                          capture_output=True, text=True, timeout=30, check=True,
                          env={"PATH": "/usr/bin:/bin"})
    return done.stdout


def test_the_guest_address_is_one_value_everywhere() -> None:
    dockerfile = (WORKER / "waa-image" / "Dockerfile").read_text(encoding="utf-8")
    (recipe,) = re.findall(r"^ARG GUEST_IP=(\S+)$", dockerfile, flags=re.M)
    assert _lib_value("OA_VM_GUEST_IP") == units.GUEST_IP
    assert scoring_server.DEFAULT_VM_IP == units.GUEST_IP
    assert recipe == units.GUEST_IP
    # The container pins it: dockur reads VM_NET_IP (else it may rotate subnets).
    assert 'VM_NET_IP="${GUEST_IP}"' in dockerfile
    assert '-e "VM_NET_IP=$OA_VM_GUEST_IP"' in (WORKER / "bootstrap.sh").read_text()
    assert '--build-arg "GUEST_IP=$OA_VM_GUEST_IP"' in (WORKER / "bootstrap.sh").read_text()


def test_the_constant_is_dockurs_default_guest_address() -> None:
    """dockur's own functions, from its network.sh, for a container on Docker's default bridge
    (its first container is 172.17.0.2) with no route in the way."""
    if not DOCKUR_NETWORK.is_file():
        pytest.skip("dockur's upstream code not found at ../shared/dockur/upstream")
    script = f"""set -Eeuo pipefail
error() {{ echo "$*" >&2; }}
subnetInUse() {{ return 1; }}
networkCIDR() {{ echo "${{1%.*}}.0/24"; }}
. <(sed -n '/^guestIP() {{/,/^}}/p; /^natGuestIP() {{/,/^}}/p' "{DOCKUR_NETWORK}")
natGuestIP 172.17.0.2
"""
    done = subprocess.run([BASH, "-c", script], capture_output=True, text=True, timeout=30,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == units.GUEST_IP
    # ...and dockur reads the pin from VM_NET_IP.
    assert ': "${IP:="${VM_NET_IP:-}"}"' in DOCKUR_NETWORK.read_text(encoding="utf-8")


def test_no_path_to_the_guest_uses_waas_address() -> None:
    shipped = [p for p in WORKER.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert len(shipped) >= 10
    for path in shipped:
        assert WAA_ADDRESS not in path.read_text(encoding="utf-8"), path
    # The recipe rewrites WAA's files and fails the build if one still says it.
    dockerfile = (WORKER / "waa-image" / "Dockerfile").read_text(encoding="utf-8")
    assert "! grep -rq '20\\.20\\.20\\.21' /entry.sh /entry_setup.sh /start_client.sh /client" \
        in dockerfile
    # The scoring server's own default, with no VM_NET_IP in its environment.
    assert scoring_server.parse_args([]).vm_ip == units.GUEST_IP


def test_the_scoring_server_follows_the_containers_pin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VM_NET_IP", "172.31.0.2")
    assert scoring_server.parse_args([]).vm_ip == "172.31.0.2"


def test_scoring_sh_runs_waas_python_against_the_guest_address(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text('#!/bin/bash\necho "docker $*" >> "$LOG"\n')
    (bin_dir / "docker").chmod(0o755)
    log = tmp_path / "calls.log"
    done = subprocess.run([BASH, str(WORKER / "scoring.sh"), "start"], capture_output=True,
                          text=True, timeout=30, check=False,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin", "LOG": str(log)})
    assert done.returncode == 0, done.stderr
    stop, start = log.read_text().splitlines()
    # A scorer left from an earlier start is stopped first (its pidfile inside the container).
    assert stop.startswith("docker exec winarena sh -c test -f /run/oa-vm-scoring.pid && kill")
    assert start.startswith("docker exec winarena /usr/local/bin/python3.9 "
                            "/oa-vm/scoring_server.py ")
    assert f"--vm-ip {units.GUEST_IP}" in start


def test_lib_sh_holds_the_qmp_contract() -> None:
    assert _lib_value("OA_VM_QMP_DIR") == units.QMP_DIR
    assert _lib_value("OA_VM_QMP_SOCKET") == units.QMP_SOCKET == "/var/lib/oa-vm/qmp/qmp.sock"
    assert _lib_value("OA_VM_QMP_MOUNT") == units.QMP_MOUNT == "/run/oa-vm-qmp"


def _bootstrap_and_recipe(doc: dict[str, Any]) -> tuple[str, str]:
    files = {f["path"]: f["content"] for f in doc["write_files"]}
    return files["/opt/oa-vm/bootstrap.sh"], files["/opt/oa-vm/waa-image/Dockerfile"]


def _assert_no_qmp_port(bootstrap: str, recipe: str) -> None:
    # Loopback only; each worker of a host its own host ports (infra/worker/slots.py).
    published = re.findall(r'\s-p "?([0-9][^\s"]*)', bootstrap)
    assert published == ["127.0.0.1:$OA_VM_WAA_HOST_PORT:5000",
                         "127.0.0.1:$OA_VM_VNC_HOST_PORT:8006"]
    for text in (bootstrap, recipe):
        assert "0.0.0.0" not in text
        assert "7200" not in text
        assert not re.search(r"-qmp\s+tcp|tcp:[^\s\"]*,server", text)
        assert "ARGUMENTS=" not in text
    assert '-e "QMP=unix:$OA_VM_QMP_MOUNT/qmp.sock,server=on,wait=off"' in bootstrap
    assert '-v "$OA_VM_QMP_DIR:$OA_VM_QMP_MOUNT"' in bootstrap
    assert 'chmod 0700 "$OA_VM_QMP_DIR"' in bootstrap


def test_aws_user_data_exposes_no_qmp_port(run_aws: RunAws) -> None:
    run, _ = run_aws(make_settings("aws"))
    (instance,) = of_type(run, "aws:ec2/instance:Instance")
    text = gzip.decompress(base64.b64decode(instance.inputs["userDataBase64"])).decode("utf-8")
    _assert_no_qmp_port(*_bootstrap_and_recipe(yaml.safe_load(text)))


def test_azure_custom_data_exposes_no_qmp_port(run_azure: RunAzure) -> None:
    run = run_azure(make_settings("azure"))
    (vm,) = of_type(run, "azure-native:compute:VirtualMachine")
    text = gzip.decompress(base64.b64decode(vm.inputs["osProfile"]["customData"])).decode()
    _assert_no_qmp_port(*_bootstrap_and_recipe(yaml.safe_load(text)))


def test_the_host_probes_the_scorer_on_the_port_the_tools_use() -> None:
    assert _lib_value("OA_VM_SCORING_HOST_PORT") == str(units.SCORING_PORT_ON_HOST)
    bridge = (WORKER / "systemd" / "oa-vm-bridge.service").read_text(encoding="utf-8")
    assert f"TCP-LISTEN:{units.SCORING_PORT_ON_HOST},bind=127.0.0.1" in bridge
