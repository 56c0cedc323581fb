"""The shipped host-side reset (``infra/worker/reset.sh``) against a real QEMU guest.

The guest (:mod:`bench.tiny_guest`) is Debian's cloud kernel with a busybox initramfs built by
the test; it keeps state in memory and on a qcow2 disk attached as ``ide-hd`` and serves it over
HTTP through user-mode networking. QMP is a unix socket under ``OA_VM_ROOT``, where a cloud
worker has it, and ``reset.sh`` runs exactly as shipped (it sources ``lib.sh``). TCG unless
``TINY_GUEST_ACCEL=kvm``.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench import tiny_guest

RESET_SH = Path(__file__).resolve().parents[2] / "infra" / "worker" / "reset.sh"


def _unavailable() -> str | None:
    try:
        tiny_guest.check_available()
    except tiny_guest.GuestUnavailable as exc:
        return str(exc)
    return None


pytestmark = pytest.mark.skipif(_unavailable() is not None, reason=f"QEMU rehearsal: "
                                f"{_unavailable()}")


def _reset(root: Path, guest: tiny_guest.TinyGuest, *args: str) -> tuple[int, dict[str, object]]:
    env = dict(os.environ, OA_VM_ROOT=str(root),
               **guest.reset_env(wait_s=240))
    done = subprocess.run([str(RESET_SH), *args], env=env, capture_output=True, text=True,
                          timeout=600)
    lines = done.stdout.strip().splitlines()
    assert lines, f"reset.sh {args} printed nothing; stderr: {done.stderr}"
    return done.returncode, json.loads(lines[-1])


@pytest.fixture
def guest() -> Iterator[tuple[Path, tiny_guest.TinyGuest]]:
    # A short root: a unix socket path must stay under 108 bytes.
    with tempfile.TemporaryDirectory(prefix="oa-qemu-") as folder:
        root = Path(folder)
        qmp = root / "var" / "lib" / "oa-vm" / "qmp" / "qmp.sock"
        running = tiny_guest.start_guest(root, qmp)
        try:
            running.wait_serving()
            yield root, running
        finally:
            running.stop()


def test_restore_brings_back_memory_and_disk(guest: tuple[Path, tiny_guest.TinyGuest]) -> None:
    root, vm = guest
    status, answer = _reset(root, vm, "restore")
    assert status == 1 and answer["ok"] is False
    assert "no clean snapshot" in str(answer["error"])
    status, answer = _reset(root, vm, "check")
    assert status == 0 and answer["blockers"] == [] and "token" not in answer

    vm.set(mem="clean-mem", disk="clean-disk")
    status, answer = _reset(root, vm, "take", "fingerprint-1")
    assert status == 0, answer
    assert answer["disks"] == ["disk0"]  # not the read-only qcow2 node beside it
    first_tag = answer["tag"]

    for round_ in range(2):
        vm.set(mem=f"dirty-mem-{round_}", disk=f"dirty-disk-{round_}")
        assert vm.state() == {"mem": f"dirty-mem-{round_}", "disk": f"dirty-disk-{round_}"}
        status, answer = _reset(root, vm, "restore")
        assert status == 0, answer
        assert answer["token"] == "fingerprint-1"
        # reset.sh returned only once the endpoint answered again
        assert vm.state() == {"mem": "clean-mem", "disk": "clean-disk"}

    status, answer = _reset(root, vm, "check")
    assert status == 0 and answer["token"] == "fingerprint-1" and answer["tag"] == first_tag

    # A second take: a new tag, the record moves to it, the first snapshot is deleted.
    vm.set(mem="clean-2", disk="clean-2")
    status, answer = _reset(root, vm, "take", "fingerprint-2")
    assert status == 0 and answer["tag"] != first_tag and str(answer["tag"]).startswith(
        "oa-vm-clean-")
    vm.set(mem="dirty", disk="dirty")
    status, answer = _reset(root, vm, "restore")
    assert status == 0 and answer["token"] == "fingerprint-2"
    assert vm.state() == {"mem": "clean-2", "disk": "clean-2"}
    snapshots = subprocess.run(["qemu-img", "snapshot", "-U", "-l", str(root / "disk.qcow2")],
                               capture_output=True, text=True, timeout=60).stdout
    assert first_tag not in snapshots and str(answer["tag"]) in snapshots


def test_a_failed_load_or_a_guest_that_never_answers_ends_in_one_line(
    guest: tuple[Path, tiny_guest.TinyGuest],
) -> None:
    root, vm = guest
    assert _reset(root, vm, "take", "fp")[0] == 0
    # A load job that QEMU concludes with an error (the recorded snapshot is gone) is a failure.
    record = root / "var" / "lib" / "oa-vm" / "clean-snapshot.json"
    kept = record.read_text()
    record.write_text(json.dumps({**json.loads(kept), "tag": "oa-vm-clean-gone"}))
    status, answer = _reset(root, vm, "restore")
    assert status == 1 and "oa-vm-clean-gone" in str(answer["error"]), answer
    record.write_text(kept)
    env = dict(os.environ, OA_VM_ROOT=str(root), OA_VM_RESET_WAIT_S="3",
               OA_VM_RESET_PROBE_URL=f"{vm.url}/cgi-bin/nothing-here")
    done = subprocess.run([str(RESET_SH), "restore"], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 1
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "ok": False, "error": "WAA not up 3s after the restore"}


# ivshmem in peer mode (master=off, its default) registers a migration blocker under any
# accelerator (hw/misc/ivshmem.c), as invtsc does under KVM: QEMU then refuses snapshot-save.
BLOCKER = ("-object", "memory-backend-ram,id=shm0,size=1M,share=on",
           "-device", "ivshmem-plain,memdev=shm0,master=off")


def test_qemu_naming_a_blocker_is_refused_in_one_line(tmp_path: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="oa-qemu-") as folder:
        root = Path(folder)
        qmp = root / "var" / "lib" / "oa-vm" / "qmp" / "qmp.sock"
        vm = tiny_guest.start_guest(root, qmp, extra=BLOCKER)
        try:
            vm.wait_serving()
            for args in (("check",), ("take", "fp")):
                status, answer = _reset(root, vm, *args)
                assert status == 3, answer  # cannot restore at all: clean-or-stock falls back
                assert str(answer["error"]).startswith("QEMU refuses snapshots on this machine: ")
                assert "ivshmem" in str(answer["error"])
            assert not (root / "var" / "lib" / "oa-vm" / "clean-snapshot.json").exists()
        finally:
            vm.stop()


def test_a_worker_without_a_monitor_says_so(tmp_path: Path) -> None:
    done = subprocess.run([str(RESET_SH), "check"], env=dict(os.environ, OA_VM_ROOT=str(tmp_path)),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    assert "cannot restore snapshots" in json.loads(done.stdout)["error"]


def test_the_cloud_control_over_ssh_restores_the_guest(
    guest: tuple[Path, tiny_guest.TinyGuest], tmp_path: Path
) -> None:
    """What a run does on a cloud worker: ``sudo -n reset.sh`` over the pool's SSH path."""
    from oa_vm.clouds.pulumi.reset import HostSnapshotControl
    from oa_vm.model.snapshots import SnapshotError
    from oa_vm.model.state import SshEndpoint
    from oa_vm.reach.host_status import ParamikoRunner
    from tests.support.host_standins import running_host

    root, vm = guest
    with running_host(tmp_path / "host", only=("sudo",), OA_VM_ROOT=str(root),
                      **vm.reset_env()) as host:
        ssh = SshEndpoint(host=host.host, port=host.port, user=host.user,
                          key_path=str(host.client_key))
        control = HostSnapshotControl(ssh, ParamikoRunner(tmp_path / "known_hosts"),
                                      script=str(RESET_SH))
        assert control.check().snapshot is False
        with pytest.raises(SnapshotError, match="no clean snapshot") as refused:
            control.restore()
        assert refused.value.unsupported is False
        vm.set(mem="m0", disk="d0")
        assert control.take("tok-ssh").token == "tok-ssh"
        assert control.check().token == "tok-ssh"
        vm.set(mem="m1", disk="d1")
        restored = control.restore()
        assert restored.token == "tok-ssh" and restored.seconds is not None
        assert vm.state() == {"mem": "m0", "disk": "d0"}

        no_monitor = HostSnapshotControl(ssh, ParamikoRunner(tmp_path / "known_hosts"),
                                         script=str(RESET_SH))
        (root / "var" / "lib" / "oa-vm" / "qmp" / "qmp.sock").rename(root / "moved.sock")
        with pytest.raises(SnapshotError, match="cannot restore snapshots") as missing:
            no_monitor.check()
        assert missing.value.unsupported is True


def test_a_restore_sets_the_guests_clock_from_the_hosts(
    guest: tuple[Path, tiny_guest.TinyGuest],
) -> None:
    """The snapshot is taken while the guest's clock says 2001: a restore brings that clock back
    (QEMU restores the guest's time with its memory), and reset.sh must set it from the host's
    through the guest's own /execute before it answers."""
    root, vm = guest
    assert vm.execute("date -u -s @978307200 >/dev/null")["returncode"] == 0
    status, answer = _reset(root, vm, "take", "fp-clock")
    assert status == 0, answer
    vm.execute(f"date -u -s @{int(time.time())} >/dev/null")
    status, answer = _reset(root, vm, "restore")
    assert status == 0, answer
    assert "clock_skew_s" in answer, answer
    assert 0 <= float(answer["clock_skew_s"]) <= 5, answer  # type: ignore[arg-type]
    said = vm.execute("date +%s")
    assert abs(int(str(said["output"]).strip()) - time.time()) < 120, said


def test_a_guest_that_refuses_the_clock_fails_the_restore_in_one_line(
    guest: tuple[Path, tiny_guest.TinyGuest],
) -> None:
    root, vm = guest
    assert _reset(root, vm, "take", "fp-clock")[0] == 0
    env = {**os.environ, "OA_VM_ROOT": str(root), **vm.reset_env(), "OA_VM_CLOCK_COMMAND":
           "echo 'Set-Date : A required privilege is not held' >&2; false"}
    done = subprocess.run([str(RESET_SH), "restore"], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 1, done.stdout
    (line,) = done.stdout.strip().splitlines()
    answer = json.loads(line)
    assert answer["ok"] is False and "the guest's clock could not be set" in answer["error"]
    assert "required privilege" in answer["error"], answer
