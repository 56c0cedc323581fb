"""A pool's hold on one of your own hosts, rehearsed: the shipped ``host_pool.sh`` claims a host
and releases it (what ``pool-cleanup`` and the host's own expiry timer run) in a private root
(``OA_VM_ROOT``) with stand-ins for docker and systemctl. Afterwards the root holds the host's
own files and the image cache only; ``--purge`` removes the cache too; a host held by another
pool is left untouched."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from infra.worker import own_host, slots, units
from tests.support.host_standins import (
    calls,
    setup_dropins,
    standin_env,
    write_shipped,
    write_standins,
)

pytestmark = pytest.mark.integration

BASH = shutil.which("bash") or "/bin/bash"
HOST_OWN = {"etc/hostname": "lab-1\n", "usr/bin/python3": "#!", "var/lib/docker/x": "theirs",
            "etc/systemd/system/nginx.service": "[Unit]\n",
            "etc/systemd/system/docker.service.d/proxy.conf": "[Service]\n"}


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _host(tmp_path: Path, pool: str = "lab") -> tuple[Path, dict[str, str]]:
    """A host root as a create on two workers leaves it, with the host's own files beside."""
    root = tmp_path / "root"
    for path, text in HOST_OWN.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    own = _tree(root)
    write_shipped(root / "opt/oa-vm")
    shutil.copy(units.WORKER_DIR / own_host.HOST_POOL_SCRIPT, root / "opt/oa-vm")
    expiry = own_host.expiry_units(pool, datetime(2026, 12, 2, tzinfo=UTC))
    added = {**slots.host_files(2), **expiry,
             "/etc/oa-vm/worker.env": "OA_VM_POOL=lab\n",
             f"{own_host.IMAGE_CACHE_DIR}/oa-vm-image.ready": "waa_image=w@sha256:1\n",
             f"{own_host.IMAGE_CACHE_DIR}/oa-vm-waa-image.tar": "image",
             f"{units.STORAGE_DIR}/data.img": "disk", f"{units.STATE_DIR}/status": "state=done\n",
             f"{slots.slot(1).storage_dir}/data.img": "disk"}
    for path, text in added.items():
        (root / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (root / path.lstrip("/")).write_text(text)
    assert setup_dropins(root)  # as the bootstrap writes them
    return root, own


def _run(tmp_path: Path, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The script as cleanup sends it (its text, to ``bash -c``), not the shipped copy that the
    release itself removes."""
    env = standin_env(write_standins(tmp_path / "bin"), tmp_path / "fake")
    env["OA_VM_ROOT"] = str(root)
    script = (units.WORKER_DIR / own_host.HOST_POOL_SCRIPT).read_text(encoding="utf-8")
    return subprocess.run([BASH, "-c", script, "host_pool.sh", *args], env=env,
                          capture_output=True, text=True, timeout=60, check=False)


def test_claim_then_release_leaves_only_the_hosts_own_files_and_the_image_cache(
    tmp_path: Path
) -> None:
    root, own = _host(tmp_path)
    claimed = _run(tmp_path, root, "claim", "lab")
    assert claimed.returncode == 0, claimed.stderr
    assert (root / own_host.MARKER_FILE.lstrip("/")).read_text() == "lab\n"
    # The expiry service runs exactly what cleanup runs, on the host itself, and never powers off.
    service = own_host.expiry_units("lab", datetime(2026, 12, 2, tzinfo=UTC))
    text = service[f"{units.UNIT_DIR}/oa-vm-expiry.service"]
    assert f"ExecStart={own_host.release_command('lab')}\n" in text
    assert "poweroff" not in text
    done = _run(tmp_path, root, "release", "lab")
    assert done.returncode == 0, done.stderr
    made = calls(tmp_path / "fake")
    for s in slots.host_slots(2):
        assert f"docker rm -f {s.container}" in made
        assert f"removed: container {s.container}" in done.stdout
        assert f"systemctl disable --now oa-vm-bridge-{s.name}.service" in made
    assert "systemctl disable --now oa-vm-expiry.timer" in made
    assert "removed: drop-in docker.service.d/oa-vm-stop-timeout.conf" in done.stdout
    cache = {k: v for k, v in _tree(root).items() if k.startswith("var/lib/oa-vm/image-cache/")}
    assert len(cache) == 2
    assert _tree(root) == {**own, **cache}
    assert "kept: /var/lib/oa-vm/image-cache" in done.stdout
    # A second release finds nothing of the pool and succeeds; --purge takes the cache.
    again = _run(tmp_path, root, "release", "lab", "--purge")
    assert again.returncode == 0, again.stderr
    assert _tree(root) == own


def test_a_host_held_by_another_pool_is_neither_claimed_nor_released(tmp_path: Path) -> None:
    root, _own = _host(tmp_path, pool="other")
    assert _run(tmp_path, root, "claim", "other").returncode == 0
    before = _tree(root)
    for args in (("claim", "lab"), ("release", "lab"), ("release", "lab", "--purge")):
        done = _run(tmp_path, root, *args)
        assert done.returncode == 3 and "serves pool other, not lab" in done.stderr
    assert _tree(root) == before
    assert not any(c.startswith("docker") for c in calls(tmp_path / "fake"))
