"""The scorer's files travel by ``pool-wait`` over SSH (AWS's user data has no room for them):
the delivery command, run by a real shell as the host runs it, lays them down whole, and a
bootstrap waiting in its ``files`` step installs them and goes on."""

from __future__ import annotations

import subprocess
from pathlib import Path

from infra.worker import units
from infra.worker.cloud_init import WorkerFiles, late_payload
from oa_vm.reach.host_status import delivery_command


def test_the_delivery_lays_the_files_down_whole(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "delivery.tmp").mkdir()  # a half delivery of an earlier pass is replaced
    (state / "delivery.tmp" / "scoring_server.py").write_text("half")
    for _ in range(2):  # a second pass (the host asked again) gives the same folder
        done = subprocess.run(["sh", "-c", delivery_command(late_payload())], timeout=60,
                              env={"OA_VM_STATE_DIR": str(state), "PATH": "/usr/bin:/bin"},
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
    shipped = WorkerFiles.from_package().files
    delivered = state / "delivery"
    assert sorted(p.name for p in delivered.iterdir()) == sorted(units.LATE_FILES)
    for name in units.LATE_FILES:
        assert (delivered / name).read_text(encoding="utf-8") == shipped[name]
    assert not (state / "delivery.tmp").exists()


def test_the_bootstrap_waits_for_the_delivery_then_installs_it(tmp_path: Path) -> None:
    """``await_files`` as ``bootstrap.sh`` defines it, run by bash with the shipped lib.sh."""
    ship = tmp_path / "opt"
    ship.mkdir()
    files = WorkerFiles.from_package().files
    for name in ("lib.sh", "bootstrap.sh"):
        (ship / name).write_text(files[name], encoding="utf-8")
    state = tmp_path / "state"
    body = (ship / "bootstrap.sh").read_text(encoding="utf-8")
    start = body.index("await_files() {")
    function = body[start:body.index("\n}\n", start) + 3]
    script = (f'set -euo pipefail; here={ship}; poll_s=0.2; . "$here/lib.sh"\n{function}\n'
              "await_files\necho installed\n")
    waiting = subprocess.Popen(
        ["bash", "-c", script], text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={"OA_VM_ROOT": str(tmp_path / "root"), "OA_VM_STATE_DIR": str(state),
             "PATH": "/usr/bin:/bin", "OA_VM_POOL": "waa"},
    )
    try:
        status = tmp_path / "root" / "var/lib/oa-vm/status"
        deadline_waits = 0
        while not (status.exists() and "step=files" in status.read_text()):
            assert waiting.poll() is None, waiting.communicate()
            deadline_waits += 1
            assert deadline_waits < 600, "the bootstrap never reported its files step"
            subprocess.run(["sleep", "0.1"], check=True)
        assert "oa-vm pool-wait --name waa" in status.read_text()
        done = subprocess.run(["sh", "-c", delivery_command(late_payload())], timeout=60,
                              env={"OA_VM_STATE_DIR": str(tmp_path / "root/var/lib/oa-vm"),
                                   "PATH": "/usr/bin:/bin"}, check=False)
        assert done.returncode == 0
        out, err = waiting.communicate(timeout=120)
    finally:
        if waiting.poll() is None:
            waiting.kill()
    assert waiting.returncode == 0, err
    assert out.strip().endswith("installed")
    for name in units.LATE_FILES:
        assert (ship / name).read_text(encoding="utf-8") == files[name]
