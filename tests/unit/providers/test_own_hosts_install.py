"""What a create writes on one of your own hosts (pure builders of
``oa_vm/clouds/hosts/install.py``): every file at its place, no directory entry that could
change ``/etc`` or ``/opt``, and each slot's bootstrap started."""

from __future__ import annotations

import base64
import gzip
import io
import re
import tarfile
from datetime import UTC, datetime

from infra.worker import own_host, slots, units
from oa_vm.clouds.hosts import install

EXPIRES = datetime(2026, 12, 3, 18, 30, tzinfo=UTC)


def _members(data: str) -> dict[str, tarfile.TarInfo]:
    raw = gzip.decompress(base64.b64decode(data))
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        return {m.name: m for m in tar.getmembers()}


def test_the_payload_holds_files_only_with_their_modes() -> None:
    files = install.host_files("lab", "alice", EXPIRES, 2)
    members = _members(install.payload(files))
    assert set(members) == {path.lstrip("/") for path in files}
    assert all(m.isfile() for m in members.values())
    assert members["opt/oa-vm/bootstrap.sh"].mode == 0o755
    assert members["etc/oa-vm/worker.env"].mode == 0o644
    for s in slots.host_slots(2):
        assert f"etc/oa-vm/workers/{s.name}.env" in members
        assert f"etc/systemd/system/oa-vm-bootstrap-{s.name}.service" in members
    assert "etc/systemd/system/oa-vm-expiry.timer" in members
    env = files["/etc/oa-vm/worker.env"]
    assert "OA_VM_IMAGE_CACHE=/var/lib/oa-vm/image-cache" in env
    assert "OA_VM_STORAGE_DEVICES" not in env


def test_the_install_claims_first_and_starts_every_slot() -> None:
    command = install.install_command("lab", "alice", EXPIRES, 3)
    assert command.index("host_pool.sh claim lab") < command.index("base64 -d")
    assert "oa-vm-bootstrap-w0.service oa-vm-bootstrap-w1.service " \
           "oa-vm-bootstrap-w2.service" in command
    assert command.index("oa-vm-expiry.timer") < command.index("oa-vm-bootstrap-w0")
    assert len(command) < 100_000  # one argument of a command line holds at most 128 KiB


def test_release_and_containers() -> None:
    assert install.release_command("lab").endswith("host_pool.sh release lab")
    assert install.release_command("lab", purge=True).endswith("release lab --purge")
    stop = install.containers_command("stop", slots.host_slots(2))
    assert "docker stop winarena winarena-w1 >/dev/null" in stop
    restart = install.containers_command("restart", [slots.slot(1)])
    assert "restart --no-block oa-vm-bootstrap-w1.service" in restart


def test_with_egress_each_slot_names_its_mode_and_mac_and_the_host_table_only_those() -> None:
    files = install.host_files("lab", "alice", EXPIRES, 2, egress="allowlist",
                               allowlist="site.test:80\n")
    macs = [own_host.container_mac(s) for s in slots.host_slots(2)]
    assert len(set(macs)) == 2 and not any(m.startswith("02:42:") for m in macs)
    for s, mac in zip(slots.host_slots(2), macs, strict=True):
        assert f"OA_VM_EGRESS=allowlist\nOA_VM_SLOT_MAC={mac}\n" in files[s.env_file]
    host = files["/opt/oa-vm/egress-host.nft"]
    others = f"ether saddr != {{ {', '.join(macs)} }} accept"
    assert f'iifname "docker0" {others}' in host and f"    {others}\n" in host
    # every rule of the pool's container comes after the line that lets other frames pass
    for chain in ("chain input", "chain forward"):
        body = host[host.index(chain):].split("}\n", 1)[0]
        assert body.index(others) < min(body.index(r) for r in ("drop", "established"))
    assert files["/opt/oa-vm/egress-allowlist.txt"] == "site.test 80\n"
    assert "ether" not in files["/opt/oa-vm/egress-guest.nft"]
    assert "/etc/systemd/system/oa-vm-egress.timer" in files
    assert "/usr/sbin/nft" in install.install_command("lab", "alice", EXPIRES, 2, egress="none")


def test_without_egress_nothing_of_it_is_written_or_installed() -> None:
    files = install.host_files("lab", "alice", EXPIRES, 2)
    assert not any(path.endswith(".nft") or "oa-vm-egress" in path for path in files)
    assert all("OA_VM_EGRESS" not in files[s.env_file] and "OA_VM_SLOT_MAC" not in
               files[s.env_file] for s in slots.host_slots(2))
    assert "OA_VM_EGRESS" not in files["/etc/oa-vm/worker.env"]
    assert "/usr/sbin/nft" not in install.install_command("lab", "alice", EXPIRES, 2)


HOST_PROGRAMS = ("docker", "python3", "curl", "socat", "qemu-img")
"""Programs the shipped host scripts and units run that a Debian host may lack (none of them
is in an Essential package)."""


def test_every_program_the_host_files_run_is_installed_when_missing() -> None:
    files = install.host_files("lab", "alice", EXPIRES, 2)
    text = "\n".join(files.values())
    command = install.install_command("lab", "alice", EXPIRES, 2)
    used = [p for p in HOST_PROGRAMS if re.search(rf"(^|[\s;&|(\"'/]){re.escape(p)}\s", text,
                                                  re.MULTILINE)]
    assert {"python3", "curl", "qemu-img"} <= set(used)  # the scan finds them
    assert [p for p in used if f"command -v {p} " not in command] == []


def test_a_pause_gives_every_container_its_stop_timeout_at_once() -> None:
    # a pause's docker stop is silent while Windows shuts down (up to the container's stop
    # timeout): one docker stop for the host's containers (docker stops them together), and
    # the command's allowed silence above that timeout, read where bash reads it
    from oa_vm.clouds.hosts.provider import _silence_allowed
    from tests.support.host_standins import lib_value

    stop = install.containers_command("stop", slots.host_slots(3))
    assert stop.count("docker stop") == 1, stop
    assert "docker stop winarena winarena-w1 winarena-w2 >/dev/null" in stop
    container_s, margin_s = units.container_stop_s()
    assert (str(container_s), str(margin_s)) == (
        lib_value("OA_VM_STOP_TIMEOUT_S"), lib_value("OA_VM_DOCKER_STOP_MARGIN_S"))
    assert _silence_allowed("stop") > container_s + 5  # dockerd's own grace beyond it
