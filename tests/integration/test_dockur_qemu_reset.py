"""The clean reset on QEMU started with the arguments dockur assembles for a cloud worker.

dockur's real scripts build QEMU's command line (:mod:`tests.support.dockur_qemu`: the worker's
``CPU_MODEL``/``CPU_FLAGS``, ``DISK_FMT=qcow2``, QMP on a unix socket); only KVM, the network,
the firmware and the disk size are replaced. The tiny guest (:mod:`bench.tiny_guest`) runs on
that machine, and the shipped ``reset.sh`` (with ``qmp_snapshot.py``) checks it, takes the
clean snapshot and puts it back.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench import tiny_guest
from tests.support import dockur_qemu

RESET_SH = Path(__file__).resolve().parents[2] / "infra" / "worker" / "reset.sh"


def _unavailable() -> str | None:
    try:
        tiny_guest.check_available()
    except tiny_guest.GuestUnavailable as exc:
        return str(exc)
    return dockur_qemu.available()


pytestmark = [pytest.mark.slow, pytest.mark.skipif(_unavailable() is not None,
                                reason=f"dockur QEMU rehearsal: {_unavailable()}")]


def _reset(root: Path, guest: tiny_guest.TinyGuest, *args: str) -> tuple[int, dict[str, object]]:
    env = dict(os.environ, OA_VM_ROOT=str(root),
               **guest.reset_env(wait_s=300))
    done = subprocess.run([str(RESET_SH), *args], env=env, capture_output=True, text=True,
                          timeout=900)
    lines = done.stdout.strip().splitlines()
    assert lines, f"reset.sh {args} printed nothing; stderr: {done.stderr}"
    return done.returncode, json.loads(lines[-1])


@contextlib.contextmanager
def _dockur_guest(firmware: bool) -> Iterator[tuple[Path, list[str], tiny_guest.TinyGuest]]:
    with tempfile.TemporaryDirectory(prefix="oa-dockur-") as folder:  # a short socket path
        root = Path(folder)
        qmp = root / "var" / "lib" / "oa-vm" / "qmp" / "qmp.sock"
        qmp.parent.mkdir(parents=True)
        args = dockur_qemu.dockur_args(root / "storage", qmp, ram="512M", firmware=firmware)
        guest = tiny_guest.start_with_args(root, qmp, dockur_qemu.runnable(args))
        try:
            guest.wait_serving()
            yield root, args, guest
        finally:
            guest.stop()


@pytest.fixture
def dockur_guest() -> Iterator[tuple[Path, list[str], tiny_guest.TinyGuest]]:
    with _dockur_guest(firmware=False) as guest:
        yield guest


def test_clean_reset_on_dockurs_qemu(
    dockur_guest: tuple[Path, list[str], tiny_guest.TinyGuest],
) -> None:
    root, args, vm = dockur_guest
    cpu = args[args.index("-cpu") + 1]
    # What dockur asked of KVM: the worker's flags, after dockur's own (they win), and no
    # hv_passthrough (tests/unit/infra/test_cpu_flags.py).
    assert cpu.startswith("host,") and ",-invtsc,-vmx,-svm" in cpu, cpu
    assert "migratable=no" not in cpu and "passthrough" not in cpu
    # The disk, and the vmstate in it, through the host's page cache (docs/performance.md).
    drive = next(a for a in args if a.startswith("file=") and "data.qcow2" in a)
    assert "cache=writeback" in drive and "aio=threads" in drive, drive

    status, answer = _reset(root, vm, "check")
    assert status == 0, answer
    assert answer["blockers"] == []
    qemu = answer["qemu"]
    assert isinstance(qemu, dict)
    assert qemu["cmdline"][0].endswith("qemu-system-x86_64")
    assert "-invtsc,-vmx,-svm" in qemu["cpu"]  # the worker's flags reached QEMU under TCG

    vm.set(mem="clean-mem", disk="clean-disk")
    status, answer = _reset(root, vm, "take", "fp-dockur")
    assert status == 0, answer
    assert len(answer["disks"]) == 1  # dockur's data disk (an automatic node name)
    for round_ in range(2):
        vm.set(mem=f"dirty-{round_}", disk=f"dirty-{round_}")
        status, answer = _reset(root, vm, "restore")
        assert status == 0, answer
        assert answer["token"] == "fp-dockur"
        assert vm.state() == {"mem": "clean-mem", "disk": "clean-disk"}


@pytest.mark.skipif(not dockur_qemu.OVMF_CODE.is_file(),
                    reason=f"OVMF (Debian's ovmf) is not installed: no {dockur_qemu.OVMF_CODE}")
def test_clean_reset_beside_dockurs_uefi_variables_on_a_writable_raw_pflash() -> None:
    """A Windows worker boots through dockur's ``boot.sh`` (``BOOT_MODE=windows``): OVMF's code
    and its variables on two pflash drives, the variables a writable *raw* file, which cannot
    hold a snapshot. The clean reset names its qcow2 disks to ``snapshot-save`` and
    ``snapshot-load`` (``devices``), so the firmware's drive is left out and the reset works;
    no TPM is attached (dockur enables one only for ``windows_secure``)."""
    with _dockur_guest(firmware=True) as (root, args, vm):
        pflash = [a for a in args if "if=pflash" in a]
        assert len(pflash) == 2, args
        assert pflash[1].endswith("windows.vars,if=pflash,unit=1,format=raw"), pflash
        assert not any(a.startswith("emulator,") for a in args)  # no -tpmdev
        status, answer = _reset(root, vm, "check")
        assert status == 0, answer
        vm.set(mem="clean-mem", disk="clean-disk")
        status, answer = _reset(root, vm, "take", "fp-uefi")
        assert status == 0, answer
        assert len(answer["disks"]) == 1  # the data disk alone, never the firmware's variables
        vm.set(mem="dirty", disk="dirty")
        status, answer = _reset(root, vm, "restore")
        assert status == 0, answer
        assert vm.state() == {"mem": "clean-mem", "disk": "clean-disk"}


def test_a_clean_snapshot_loads_after_a_restart_with_less_memory_free() -> None:
    """A worker's container starts again (a pause on one's own host, the restart policy, a
    reboot) on a host with less memory free than at its first start: dockur, as the worker
    runs it (``bootstrap.sh``'s ``RAM_CHECK=N``), gives the guest the same RAM, so the clean
    snapshot taken at the first start still loads. dockur's own check would have shrunk the
    guest to fit what is free, and QEMU loads no snapshot into another RAM size ("Size
    mismatch: pc.ram"): every reset of that worker would fail."""
    with tempfile.TemporaryDirectory(prefix="oa-dockur-") as folder:
        root = Path(folder)
        qmp = root / "var" / "lib" / "oa-vm" / "qmp" / "qmp.sock"
        qmp.parent.mkdir(parents=True)
        first = dockur_qemu.dockur_args(root / "storage", qmp, ram="512M")
        vm = tiny_guest.start_with_args(root, qmp, dockur_qemu.runnable(first))
        try:
            vm.wait_serving()
            vm.set(mem="clean-mem", disk="clean-disk")
            status, answer = _reset(root, vm, "take", "fp-restart")
            assert status == 0, answer
        finally:
            vm.stop()
        # 512 MB wanted, 700 MB free: under dockur's margin of 500 MB.
        again = dockur_qemu.dockur_args(root / "storage", qmp, ram="512M",
                                        available_bytes=700 * 10**6)
        assert again[again.index("-m") + 1] == first[first.index("-m") + 1] == "512M"
        vm = tiny_guest.start_with_args(root, qmp, dockur_qemu.runnable(again))
        try:
            vm.wait_serving()
            vm.set(mem="dirty", disk="dirty")
            status, answer = _reset(root, vm, "restore")
            assert status == 0, answer
            assert vm.state() == {"mem": "clean-mem", "disk": "clean-disk"}
        finally:
            vm.stop()
