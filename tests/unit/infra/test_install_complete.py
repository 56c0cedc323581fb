"""``lib.sh``'s ``install_complete`` agrees with dockur's own install/boot decision.

The build accepts a storage volume only when it holds a finished Windows install; "finished" is
dockur's word: its ``needsInstall`` (``windows/src/install.sh``, with its helpers from
``qemu/src/utils.sh`` and ``windows/src/define.sh``, run here from ``../shared/dockur/upstream``)
boots such a volume instead of installing again. Both are asked about the same storage folders.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DOCKUR = ROOT.parent / "shared" / "dockur" / "upstream"
BASH = shutil.which("bash") or "/bin/bash"
QEMU_IMG = shutil.which("qemu-img") or "qemu-img"

# (name, files: name -> content); bytes for the data disk. A ``.qcow2`` disk's content is its
# VIRTUAL disk's: the test writes a real qcow2 file holding it (qemu-img convert), whose own
# first bytes are always its header.
STATES: list[tuple[str, dict[str, bytes]]] = [
    ("empty", {}),
    ("installed", {"windows.base": b"win11x64-enterprise-eval.iso\n", "windows.boot": b"",
                   "data.img": b"EFI PART" + bytes(200_000)}),
    ("installed, qcow2 disk", {"windows.boot": b"", "data.qcow2": b"EFI PART" + bytes(200_000)}),
    ("boot marker, empty qcow2 disk", {"windows.boot": b"", "data.qcow2": bytes(200_000)}),
    ("boot marker, data past the first 100 KiB of a qcow2 disk",
     {"windows.boot": b"", "data.qcow2": bytes(102_400) + b"EFI PART" + bytes(1024)}),
    ("no boot marker", {"windows.base": b"win11x64-enterprise-eval.iso\n",
                        "data.img": b"EFI PART" + bytes(200_000)}),
    ("boot marker, all-zero disk", {"windows.boot": b"", "data.img": bytes(200_000)}),
    ("boot marker, empty disk", {"windows.boot": b"", "data.img": b""}),
    ("boot marker, no disk", {"windows.boot": b""}),
]


def _storage(tmp_path: Path, files: dict[str, bytes]) -> Path:
    storage = tmp_path / "storage"
    storage.mkdir()
    for name, content in files.items():
        if name.endswith(".qcow2"):
            raw = tmp_path / "virtual.raw"
            raw.write_bytes(content)
            subprocess.run([QEMU_IMG, "convert", "-f", "raw", "-O", "qcow2", str(raw),
                            str(storage / name)], check=True, timeout=60)
            assert (storage / name).read_bytes()[:4] == b"QFI\xfb"
        else:
            (storage / name).write_bytes(content)
    return storage


def _ours(storage: Path) -> bool:
    done = subprocess.run([BASH, "-c", '. "$0"; install_complete "$1"',
                           str(ROOT / "infra/worker/lib.sh"), str(storage)],
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode == 0


def _dockur_boots(storage: Path) -> bool:
    script = f"""set -Eeuo pipefail
export STORAGE={storage} APP=Windows PLATFORM=x64 BOOT_MODE=windows PROCESS=windows
export FOOTER1="" FOOTER2="" TEMPLATE=/dev/null VERSION=11e LANGUAGE=en DEBUG=""
. {DOCKUR}/qemu/src/utils.sh
. {DOCKUR}/windows/src/define.sh
. <(sed '/^startWindows$/d' {DOCKUR}/windows/src/install.sh)
parseVersion; parseLanguage; detectCustom
if needsInstall; then echo install; else echo boot; fi
"""
    done = subprocess.run([BASH, "-c", script], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1] == "boot"


@pytest.mark.parametrize(("name", "files"), STATES, ids=[s[0] for s in STATES])
def test_install_complete_agrees_with_dockurs_decision(
    tmp_path: Path, name: str, files: dict[str, bytes]
) -> None:
    if not (DOCKUR / "windows" / "src" / "install.sh").is_file():
        pytest.skip("dockur's upstream code not found at ../shared/dockur/upstream")
    if shutil.which("qemu-img") is None:
        pytest.skip("qemu-img not installed (apt-get install qemu-utils)")
    storage = _storage(tmp_path, files)
    expected = name.startswith("installed")
    assert _dockur_boots(storage) is expected, "dockur's own decision changed: re-read it"
    assert _ours(storage) is expected


def test_an_unreadable_qcow2_disk_is_not_a_finished_install(tmp_path: Path) -> None:
    """Where dockur's hasData assumes data on a disk it cannot read (it must not replace a
    user's disk), a build must not publish one."""
    if shutil.which("qemu-img") is None:
        pytest.skip("qemu-img not installed (apt-get install qemu-utils)")
    storage = _storage(tmp_path, {"windows.boot": b""})
    (storage / "data.qcow2").write_bytes(b"QFI\xfb" + b"\xff" * 200_000)
    assert _ours(storage) is False
