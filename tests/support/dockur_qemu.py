"""QEMU's command line as dockur assembles it on a cloud worker, made runnable here.

dockur's real scripts (``../shared/dockur/upstream/qemu/src``) run in bash with the container's
environment as ``bootstrap.sh`` gives it (``CPU_MODEL``, ``CPU_FLAGS`` and ``HV`` from
``lib.sh``'s ``dockur_cpu_env`` on this machine's KVM, ``DISK_CACHE`` from ``lib.sh``,
``DISK_FMT=qcow2`` from the worker image, ``QMP`` on a unix socket, ``RAM_SIZE``, and the fixed
values ``bootstrap.sh`` passes, such as ``RAM_CHECK``): ``utils.sh``, ``init.sh``'s defaults and
its reading of the storage's file system, then ``memory.sh``, ``disk.sh`` (which creates the
qcow2 data disk in the storage folder with ``qemu-img``), ``proc.sh`` under KVM and
``config.sh``, whose ``ARGS`` is what dockur's ``entry.sh`` hands to ``qemu-system-x86_64``.

What cannot run here, and replaces it (:func:`runnable`):

- ``init.sh``'s checks of the container (its variable defaults are read from the file and kept)
  and the web status page (``html``);
- KVM: ``accel=kvm``, ``-enable-kvm`` and the in-kernel PIT become ``-accel tcg``; the ``host``
  model becomes dockur's own TCG model for the vendor (``proc.sh``'s
  ``configureTcgAmd64WindowsModel``), with every worker flag TCG accepts kept (``hv_*``
  enlightenments are KVM's);
- ``network.sh`` (a bridge, a tap, nftables on the host) and ``boot.sh`` (OVMF and the Windows
  ISO): user-mode networking on a loopback forward, and the tiny guest's kernel;
- the disk size (1 GB instead of 64 GB) and the serial console (a file, not stdio).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKUR_SRC = ROOT.parent / "shared" / "dockur" / "upstream" / "qemu" / "src"
LIB_SH = ROOT / "infra" / "worker" / "lib.sh"

OVMF_CODE = Path("/usr/share/OVMF/OVMF_CODE_4M.fd")
"""The firmware dockur's ``boot.sh`` copies for a Windows guest (Debian's ``ovmf``, as in
dockur's image)."""
KVM_ONLY = ("hv_", "hv-", "kvm=")
"""``-cpu`` items of dockur's KVM branch that TCG rejects (Hyper-V enlightenments)."""
TCG_MODEL = {"AuthenticAMD": "EPYC", "GenuineIntel": "Skylake-Client-v4"}
"""dockur's own TCG models for Windows (``proc.sh``, ``configureTcgAmd64WindowsModel``)."""

SCRIPT = r"""set -Eeuo pipefail
exec 3>&1 1>&2  # dockur's messages to stderr, ARGS alone on stdout
. "$OA_LIB"
while IFS= read -r line; do export "${line?}"; done < <(dockur_cpu_env)
DISK_CACHE="$OA_VM_DISK_CACHE"
if [ -n "${OA_DOCKUR_OWN_CPU:-}" ]; then CPU_MODEL="" CPU_FLAGS="" HV=""; fi  # dockur's default
cd "$DOCKUR_SRC"
. ./utils.sh
html() { :; }  # dockur's web status page
eval "$(grep -E '^: "[$][{]' init.sh)"
eval "$(grep -E '^FS=' init.sh)"  # the storage's file system, which the RAM check reads
PROCESS="${APP,,}" QEMU_DIR="$STORAGE" QEMU_PID="$STORAGE/qemu.pid"
CPU="$(awk -F ': *' '/^model name/{print $2; exit}' /proc/cpuinfo)"
DISPLAY_OPTS="-display none" NET_OPTS="" BOOT_OPTS="" SM_BIOS="" SMM="N"
. ./memory.sh
. ./disk.sh
if [ -n "${OA_DOCKUR_BOOT:-}" ]; then
  # dockur's firmware for a Windows worker (BOOT_MODE=windows: OVMF on pflash, its variables
  # in a writable raw file in the storage); the host's KVM module parameter stays untouched.
  MACHINE="q35" LOGO="N"
  . <(sed '/^enableIgnoreMsrs$/d' ./boot.sh)
fi
. ./proc.sh
. ./config.sh
printf '%s' "$ARGS" >&3
"""


def available() -> str | None:
    """Why the rehearsal cannot run here, or None."""
    if not (DOCKUR_SRC / "proc.sh").is_file():
        return "dockur's upstream code not found at ../shared/dockur/upstream"
    return None


def bootstrap_fixed_env() -> dict[str, str]:
    """The container variables ``bootstrap.sh`` gives ``docker run`` as fixed values
    (``-e "NAME=VALUE"`` with no shell expansion in the value), read from the shipped file."""
    text = (ROOT / "infra" / "worker" / "bootstrap.sh").read_text(encoding="utf-8")
    return dict(re.findall(r'-e "([A-Z_]+)=([^"$]*)"', text))


def dockur_args(storage: Path, qmp_socket: Path, ram: str = "1G", *,
                worker_cpu: bool = True, firmware: bool = False,
                available_bytes: int | None = None) -> list[str]:
    """dockur's ``ARGS`` for a cloud worker (KVM), with its data disk created in ``storage``.

    ``worker_cpu=False``: dockur's own ``-cpu`` (no ``CPU_MODEL``/``CPU_FLAGS``), the one
    whose invariant TSC blocks every snapshot under KVM. ``firmware=True``: with dockur's
    ``boot.sh`` for a Windows guest (OVMF's code and its variables on two pflash drives, the
    variables a writable raw file in the storage, as every Windows worker boots).
    ``available_bytes``: the host's free memory as ``free`` reports it to dockur's
    ``getMemoryInfo`` (default: this machine's)."""
    storage.mkdir(parents=True, exist_ok=True)
    path = "/usr/sbin:/usr/bin:/sbin:/bin"
    if available_bytes is not None:
        # A smaller machine than this one: the one thing here that cannot be made smaller.
        bin_dir = storage / "bin"
        bin_dir.mkdir(exist_ok=True)
        free = bin_dir / "free"
        free.write_text("#!/bin/sh\necho '              total        used        free      shared"
                        "  buff/cache   available'\n"
                        f"echo 'Mem: {available_bytes * 2} {available_bytes} {available_bytes} 0 0 "
                        f"{available_bytes}'\n")
        free.chmod(0o755)
        path = f"{bin_dir}:{path}"
    env = {
        **bootstrap_fixed_env(),
        "PATH": path, "OA_LIB": str(LIB_SH),
        "DOCKUR_SRC": str(DOCKUR_SRC), "STORAGE": str(storage), "APP": "Windows",
        "PLATFORM": "x64", "ENGINE": "Docker", "BOOT_MODE": "windows", "ARCH": "amd64",
        "DISK_FMT": "qcow2", "DISK_NAME": "data", "DISK_SIZE": "1G", "RAM_SIZE": ram,
        "CPU_CORES": "1", "DEBUG": "N",
        "QMP": f"unix:{qmp_socket},server=on,wait=off",
        **({} if worker_cpu else {"OA_DOCKUR_OWN_CPU": "1"}),
        **({"OA_DOCKUR_BOOT": "1"} if firmware else {}),
    }
    done = subprocess.run(["bash", "-c", SCRIPT], env=env, capture_output=True, text=True,
                          timeout=300, cwd=storage)
    if done.returncode != 0:
        raise RuntimeError(f"dockur's scripts failed ({done.returncode}): "
                           f"{done.stderr.strip()[-800:]}")
    return done.stdout.split()


def vendor() -> str:
    """This machine's CPU vendor (``/proc/cpuinfo``)."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("vendor_id"):
            return line.split(":", 1)[1].strip()
    return "GenuineIntel"


def runnable(args: list[str]) -> list[str]:
    """``args`` with only what cannot run here replaced (see the module's docstring)."""
    out: list[str] = []
    skip = 0
    for i, arg in enumerate(args):
        if skip:
            skip -= 1
            continue
        if arg == "-enable-kvm":
            continue
        if arg == "-global" and args[i + 1].startswith("kvm-pit."):
            skip = 1
            continue
        if arg == "-serial":
            skip = 1  # the tiny guest's serial goes to a file
            continue
        if arg.startswith("type=") and ",accel=kvm" in arg:
            out.append(arg.replace(",accel=kvm", ",accel=tcg"))
            continue
        if i and args[i - 1] == "-cpu":
            model, *items = arg.split(",")
            if model == "host":
                model = TCG_MODEL.get(vendor(), "Skylake-Client-v4")
            out.append(",".join([model, *(x for x in items if not x.startswith(KVM_ONLY))]))
            continue
        out.append(arg)
    return out
