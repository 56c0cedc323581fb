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

# (name, files: name -> content); bytes for the data disk.
STATES: list[tuple[str, dict[str, bytes]]] = [
    ("empty", {}),
    ("installed", {"windows.base": b"win11x64-enterprise-eval.iso\n", "windows.boot": b"",
                   "data.img": b"EFI PART" + bytes(200_000)}),
    ("installed, qcow2 disk", {"windows.boot": b"", "data.qcow2": b"QFI\xfb" + bytes(200_000)}),
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
    storage = _storage(tmp_path, files)
    expected = name.startswith("installed")
    assert _dockur_boots(storage) is expected, "dockur's own decision changed: re-read it"
    assert _ours(storage) is expected
