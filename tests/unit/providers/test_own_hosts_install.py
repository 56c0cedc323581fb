"""What a create writes on one of your own hosts (pure builders of
``oa_vm/clouds/hosts/install.py``): every file at its place, no directory entry that could
change ``/etc`` or ``/opt``, and each slot's bootstrap started."""

from __future__ import annotations

import base64
import gzip
import io
import tarfile
from datetime import UTC, datetime

from infra.worker import slots
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
    assert "docker stop winarena " in stop and "docker stop winarena-w1" in stop
    restart = install.containers_command("restart", [slots.slot(1)])
    assert "restart --no-block oa-vm-bootstrap-w1.service" in restart
