"""Several workers on one host never share a port, a folder, a QMP socket, a guest address, a
snapshot or a container: the values are listed from the rendered files, as the host's shell
(the shipped ``lib.sh``, sourced with each slot) and systemd (the rendered units) read them."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from infra.worker import slots

WORKER = Path(__file__).resolve().parents[3] / "infra" / "worker"
BASH = shutil.which("bash") or "/bin/bash"
LIB_NAMES = ("OA_VM_CONTAINER", "OA_VM_STATUS_FILE", "OA_VM_STORAGE", "OA_VM_QMP_DIR",
             "OA_VM_QMP_SOCKET", "OA_VM_GUEST_IP", "OA_VM_WAA_HOST_PORT", "OA_VM_VNC_HOST_PORT",
             "OA_VM_SCORING_HOST_PORT", "OA_VM_SNAPSHOT_TAG", "OA_VM_UNIT_SUFFIX")


def _lib_values(root: Path, slot: str | None) -> dict[str, str]:
    """What ``lib.sh`` resolves on a host rooted at ``root`` for ``slot`` (None: no slot)."""
    show = "; ".join(f'printf "%s=%s\\n" {n} "${n}"' for n in LIB_NAMES)
    env = {"PATH": "/usr/bin:/bin", "OA_VM_ROOT": str(root)}
    if slot is not None:
        env["OA_VM_SLOT"] = slot
    done = subprocess.run([BASH, "-c", f'. "$0"; {show}', str(WORKER / "lib.sh")], env=env,
                          capture_output=True, text=True, timeout=30, check=True)
    return dict(line.split("=", 1) for line in done.stdout.splitlines())


def _install(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


@pytest.mark.parametrize("workers", [2, 4, slots.MAX_SLOTS])
def test_no_two_workers_of_a_host_share_any_resource(tmp_path: Path, workers: int) -> None:
    files = slots.host_files(workers)
    _install(tmp_path, files)
    seen: dict[str, dict[str, str]] = {}  # resource kind -> value -> the slot that has it
    ports: dict[int, str] = {}  # every port of every slot, whatever its kind

    def claim(kind: str, value: str, who: str) -> None:
        owner = seen.setdefault(kind, {}).setdefault(value, who)
        assert owner == who, f"{who} and {owner} share {kind} {value}"

    for s in slots.host_slots(workers):
        values = _lib_values(tmp_path, s.name)
        for name in LIB_NAMES:
            claim(name, values[name], s.name)
        for name in ("OA_VM_WAA_HOST_PORT", "OA_VM_VNC_HOST_PORT", "OA_VM_SCORING_HOST_PORT"):
            port = int(values[name])
            assert 1024 < port < 65536
            assert ports.setdefault(port, s.name) == s.name, f"port {port} taken twice"
        # The folders are distinct and none holds another (a storage folder inside another
        # worker's would be wiped with it).
        for name in ("OA_VM_STORAGE", "OA_VM_QMP_DIR"):
            for kind in ("OA_VM_STORAGE", "OA_VM_QMP_DIR"):
                for other, who in seen.get(kind, {}).items():
                    if who != s.name:
                        assert not values[name].startswith(other + "/")
        # The units systemd runs for the slot say the same as lib.sh does.
        bridge = files[f"/etc/systemd/system/oa-vm-bridge-{s.name}.service"]
        listen = re.search(r"TCP-LISTEN:(\d+),bind=127\.0\.0\.1", bridge)
        assert listen and listen.group(1) == values["OA_VM_SCORING_HOST_PORT"]
        assert f"docker exec -i {values['OA_VM_CONTAINER']} " in bridge
        for unit in ("bootstrap", "scoring"):
            text = files[f"/etc/systemd/system/oa-vm-{unit}-{s.name}.service"]
            assert f"Environment=OA_VM_SLOT={s.name}\n" in text
        # The guest's address is one dockur takes as VM_NET_IP with its default /24 mask.
        assert re.fullmatch(r"172\.30\.\d{1,3}\.2", values["OA_VM_GUEST_IP"])
    assert len(ports) == 3 * workers


def test_slot_zero_is_the_one_worker_host(tmp_path: Path) -> None:
    """A host with one worker looks the same whether or not it was given slots."""
    _install(tmp_path, slots.host_files(1))
    plain = _lib_values(tmp_path, None)
    assert _lib_values(tmp_path, "w0") == {**plain, "OA_VM_UNIT_SUFFIX": "-w0"}
    assert plain["OA_VM_CONTAINER"] == "winarena" and plain["OA_VM_WAA_HOST_PORT"] == "5000"


def test_a_slot_without_its_settings_is_refused(tmp_path: Path) -> None:
    done = subprocess.run([BASH, "-c", '. "$0"', str(WORKER / "lib.sh")],
                          env={"PATH": "/usr/bin:/bin", "OA_VM_ROOT": str(tmp_path),
                               "OA_VM_SLOT": "w3"},
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2 and "no settings for worker slot w3" in done.stderr
    with pytest.raises(ValueError, match="at most"):
        slots.slot(slots.MAX_SLOTS)
