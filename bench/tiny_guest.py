"""A tiny real QEMU guest for rehearsing clean resets: Debian's kernel and busybox, nothing else.

The guest is built from the packages installed on this machine (``linux-image-cloud-amd64``,
``busybox-static``): an initramfs (a ``newc`` cpio written here) whose ``/init`` loads the disk
and network drivers, then serves ``/cgi-bin/state`` over HTTP on port 80, forwarded with
user-mode networking to a loopback port. The guest keeps two pieces of state, one in memory (a
file in the initramfs, which lives in RAM) and one on its qcow2 disk (attached as ``ide-hd``,
written raw at offset 0), and ``/cgi-bin/set?mem=..&disk=..`` changes both. ``POST
/cgi-bin/execute`` answers like WAA's ``/execute`` (``{"command": "...", "shell": true}`` run by
the guest's shell; ``output``, ``error``, ``returncode``): the guest's clock, for one, is set and
read through it, as ``reset.sh`` does on a Windows guest after a restore. QMP listens on a
unix socket, as on a cloud worker; the serial console goes to a file.

Used by the QEMU rehearsal test and by ``bench/reset.py``; imports nothing of the project.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import socket
import subprocess
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from waa_client.poll import poll_until

QEMU = "qemu-system-x86_64"
BUSYBOX = "/usr/bin/busybox"
BOOT_TIMEOUT_S = float(os.environ.get("TINY_GUEST_BOOT_S", "240"))
"""TCG on a busy 2-core machine: a boot takes about 5 s alone, far more under load."""

MODULES = (  # load order: dependencies first (modules.dep of the cloud kernel)
    "kernel/drivers/scsi/scsi_common.ko",
    "kernel/drivers/scsi/scsi_mod.ko",
    "kernel/drivers/ata/libata.ko",
    "kernel/drivers/ata/ata_piix.ko",
    "kernel/drivers/scsi/sd_mod.ko",
    "kernel/drivers/virtio/virtio_ring.ko",
    "kernel/drivers/virtio/virtio.ko",
    "kernel/drivers/virtio/virtio_pci_legacy_dev.ko",
    "kernel/drivers/virtio/virtio_pci_modern_dev.ko",
    "kernel/drivers/virtio/virtio_pci.ko",
    "kernel/drivers/scsi/virtio_scsi.ko",  # dockur's data disk: scsi-hd on virtio-scsi-pci
    "kernel/net/core/failover.ko",
    "kernel/drivers/net/net_failover.ko",
    "kernel/drivers/net/virtio_net.ko",
)

INIT = """#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /modules.list); do insmod "/lib/modules/$m"; done
n=0
while [ ! -b /dev/sda ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
mkdir -p /fill
mount -t tmpfs -o size=95% tmpfs /fill
echo booted > /state/mem
httpd -p 80 -h /www
echo "tiny-guest: serving"
while true; do sleep 3600; done
"""

STATE_CGI = """#!/bin/sh
echo "Content-Type: application/json"
echo ""
mem=$(cat /state/mem)
disk=$(dd if=/dev/sda bs=512 count=1 iflag=direct 2>/dev/null | head -c 64 \\
  | tr -d '\\000\\n' | sed 's/ *$//')
echo "{\\"mem\\": \\"$mem\\", \\"disk\\": \\"$disk\\"}"
"""

SET_CGI = """#!/bin/sh
echo "Content-Type: application/json"
echo ""
for pair in $(echo "$QUERY_STRING" | tr '&' ' '); do
  key=${pair%%=*}; value=${pair#*=}
  case "$key" in
    mem) echo "$value" > /state/mem ;;
    disk) printf '%-512s' "$value" \\
      | dd of=/dev/sda bs=512 count=1 oflag=direct conv=notrunc,fsync 2>/dev/null ;;
  esac
done
sync
echo '{"ok": true}'
"""


CLOCK_COMMAND = "date -u -s @$((@MS@ / 1000)) >/dev/null && echo $(($(date +%s) * 1000))"
"""The guest's clock set to the host's (``@MS@``, epoch milliseconds) and read back, as
``reset.sh`` asks a Windows guest with PowerShell (``OA_VM_CLOCK_COMMAND``)."""

EXECUTE_CGI = """#!/bin/sh
echo "Content-Type: application/json"
echo ""
body=$(head -c "${CONTENT_LENGTH:-0}")
command=$(echo "$body" | sed -n 's/^{"command": "\\(.*\\)", "shell": true}$/\\1/p')
sh -c "$command" >/state/execute.out 2>/state/execute.err
code=$?
output=$(tr -d '"\\\\' < /state/execute.out | tr '\\n' ' ')
error=$(tr -d '"\\\\' < /state/execute.err | tr '\\n' ' ')
printf '{"status": "success", "output": "%s", "error": "%s", "returncode": %d}\\n' \\
  "$output" "$error" "$code"
"""


FILL_CGI = """#!/bin/sh
echo "Content-Type: application/json"
echo ""
mb=${QUERY_STRING#mb=}
printf '%01024d' 7 > /fill/pat
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do
  cat /fill/pat /fill/pat > /fill/two; mv /fill/two /fill/pat
done
rm -f /fill/ram
n=0
while [ $n -lt $((mb / 64)) ]; do cat /fill/pat >> /fill/ram; n=$((n + 1)); done
rm -f /fill/pat
echo "{\\"filled_mb\\": $(($(wc -c < /fill/ram) / 1048576))}"
"""


class GuestUnavailable(Exception):
    """QEMU, the kernel or busybox is not installed here (the reason is the message)."""


def find_kernel() -> tuple[Path, Path]:
    """``(vmlinuz, modules folder)`` of the installed cloud kernel."""
    for vmlinuz in sorted(glob.glob("/boot/vmlinuz-*cloud-amd64"), reverse=True):
        version = vmlinuz.removeprefix("/boot/vmlinuz-")
        modules = Path("/lib/modules") / version
        if os.access(vmlinuz, os.R_OK) and (modules / MODULES[-1]).is_file():
            return Path(vmlinuz), modules
    raise GuestUnavailable("no readable /boot/vmlinuz-*-cloud-amd64 with its modules "
                           "(apt-get install linux-image-cloud-amd64)")


def check_available() -> None:
    """Raise :class:`GuestUnavailable` unless everything the guest needs is installed."""
    for tool in (QEMU, "qemu-img"):
        if shutil.which(tool) is None:
            raise GuestUnavailable(f"{tool} is not installed (apt-get install qemu-system-x86 "
                                   "qemu-utils)")
    if not os.access(BUSYBOX, os.X_OK):
        raise GuestUnavailable("busybox is not installed (apt-get install busybox-static)")
    find_kernel()


def _cpio_newc(entries: list[tuple[str, int, bytes]]) -> bytes:
    """A ``newc`` cpio archive of ``(name, mode, data)`` (directories have empty data)."""
    out = bytearray()
    for inode, (name, mode, data) in enumerate([*entries, ("TRAILER!!!", 0, b"")], start=1):
        encoded = name.encode() + b"\0"
        header = "070701" + "".join(f"{v:08x}" for v in (
            inode, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(encoded), 0))
        out += header.encode() + encoded
        out += b"\0" * (-len(out) % 4)
        out += data
        out += b"\0" * (-len(out) % 4)
    return bytes(out)


def build_initramfs(path: Path) -> Path:
    """Write the guest's initramfs to ``path``."""
    _, modules = find_kernel()
    directory, script = 0o040755, 0o100755
    entries: list[tuple[str, int, bytes]] = [
        (d, directory, b"") for d in ("bin", "proc", "sys", "dev", "state", "www", "www/cgi-bin",
                                      "lib", "lib/modules")
    ]
    entries += [
        ("bin/busybox", script, Path(BUSYBOX).read_bytes()),
        ("init", script, INIT.encode()),
        ("www/cgi-bin/state", script, STATE_CGI.encode()),
        ("www/cgi-bin/set", script, SET_CGI.encode()),
        ("www/cgi-bin/fill", script, FILL_CGI.encode()),
        ("www/cgi-bin/execute", script, EXECUTE_CGI.encode()),
        ("modules.list", 0o100644, "\n".join(Path(m).name for m in MODULES).encode() + b"\n"),
    ]
    entries += [(f"lib/modules/{Path(m).name}", 0o100644, (modules / m).read_bytes())
                for m in MODULES]
    path.write_bytes(_cpio_newc(entries))
    return path


def free_port() -> int:
    """A free loopback TCP port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def accelerator() -> str:
    """``kvm`` when ``TINY_GUEST_ACCEL=kvm`` and /dev/kvm opens, else ``tcg``.

    Not KVM by default: on nested cloud machines /dev/kvm opens and then the guest dies of a
    "KVM internal error" a few instructions in; TCG always works, only slower.
    """
    if os.environ.get("TINY_GUEST_ACCEL") != "kvm":
        return "tcg"
    try:
        os.close(os.open("/dev/kvm", os.O_RDWR))
    except OSError:
        return "tcg"
    return "kvm"


@dataclass
class TinyGuest:
    """A running tiny guest: its process, its QMP socket, its HTTP endpoint and serial log."""

    process: subprocess.Popen[bytes]
    qmp_socket: Path
    port: int
    serial_log: Path
    accel: str

    @property
    def url(self) -> str:
        """The guest's HTTP endpoint as this machine reaches it."""
        return f"http://127.0.0.1:{self.port}"

    def state(self, timeout: float = 60.0) -> dict[str, str]:
        """``{"mem", "disk"}`` as the guest reports them."""
        with urllib.request.urlopen(f"{self.url}/cgi-bin/state", timeout=timeout) as response:
            value: dict[str, str] = json.loads(response.read())
            return value

    def set(self, mem: str, disk: str, timeout: float = 60.0) -> None:
        """Change the guest's memory and disk state."""
        url = f"{self.url}/cgi-bin/set?mem={mem}&disk={disk}"
        with urllib.request.urlopen(url, timeout=timeout) as response:
            response.read()

    def execute(self, command: str, timeout: float = 60.0) -> dict[str, object]:
        """Run ``command`` in the guest through ``/cgi-bin/execute`` (WAA's ``/execute``)."""
        body = json.dumps({"command": command, "shell": True}).encode()
        request = urllib.request.Request(f"{self.url}/cgi-bin/execute", data=body,
                                         method="POST")
        with urllib.request.urlopen(request, timeout=timeout) as response:
            answer: dict[str, object] = json.loads(response.read())
            return answer

    def reset_env(self, wait_s: float = 240.0) -> dict[str, str]:
        """What ``reset.sh`` needs to reach this guest as it reaches WAA's server on a worker:
        the probe, and the clock's resync in the guest's own shell (busybox ``date``)."""
        return {
            "OA_VM_RESET_PROBE_URL": f"{self.url}/cgi-bin/state",
            "OA_VM_RESET_WAIT_S": f"{wait_s:g}",
            "OA_VM_RESET_CLOCK_URL": f"{self.url}/cgi-bin/execute",
            "OA_VM_CLOCK_COMMAND": CLOCK_COMMAND,
        }

    def fill(self, megabytes: int, timeout: float = 1800.0) -> int:
        """Touch ``megabytes`` of the guest's RAM with non-zero pages (QEMU writes zero pages
        to the vmstate as flags only, so an untouched guest's vmstate is small)."""
        url = f"{self.url}/cgi-bin/fill?mb={megabytes}"
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return int(json.loads(response.read())["filled_mb"])

    def wait_serving(self, timeout: float = BOOT_TIMEOUT_S) -> None:
        """Wait until the endpoint answers (the guest printed nothing useful otherwise)."""

        def serving() -> bool:
            if self.process.poll() is not None:
                raise RuntimeError(f"QEMU exited ({self.process.returncode}); serial: "
                                   f"{self.serial_tail()}")
            try:
                self.state(timeout=5.0)
            except OSError:
                return False
            return True

        if not poll_until(serving, timeout_s=timeout, interval_s=0.2):
            raise TimeoutError(f"the tiny guest did not serve within {timeout:.0f} s; "
                               f"serial: {self.serial_tail()}")

    def serial_tail(self) -> str:
        """The serial console's last lines."""
        try:
            return " | ".join(self.serial_log.read_text(errors="replace").splitlines()[-5:])
        except OSError:
            return "(no serial log)"

    def stop(self) -> None:
        """End QEMU (this process only)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)


def disk_args(disk: Path, mibps: float | None) -> list[str]:
    """QEMU arguments attaching ``disk`` as ``ide-hd`` (qcow2 node ``disk0``), through a
    ``throttle`` filter of ``mibps`` when given."""
    if mibps is None:
        return ["-drive", f"file={disk},format=qcow2,if=none,id=drive0,node-name=disk0",
                "-device", "ide-hd,drive=drive0"]
    limit = int(mibps * 1024 * 1024)
    return [
        "-object", f"throttle-group,id=slow,x-bps-total={limit},x-bps-total-max={limit}",
        "-blockdev", f"driver=file,node-name=file0,filename={disk}",
        "-blockdev", "driver=throttle,node-name=throttle0,throttle-group=slow,file=file0",
        "-blockdev", "driver=qcow2,node-name=disk0,file=throttle0",
        "-device", "ide-hd,drive=disk0",
    ]


def start_guest(folder: Path, qmp_socket: Path, memory_mb: int = 256,
                disk_mibps: float | None = None, monitor: Path | None = None,
                prefill: bool = False, extra: tuple[str, ...] = ()) -> TinyGuest:
    """Build the guest in ``folder`` and start QEMU with QMP on ``qmp_socket``.

    Args:
        disk_mibps: throttle the disk (and so the vmstate stored in it) to this rate with
            QEMU's own ``throttle`` filter between the qcow2 image and its file: a slow volume.
        monitor: a second QMP socket, for a test to watch QEMU while ``reset.sh`` holds the
            first.
        prefill: the guest's RAM starts as a host file of non-zero pages (a private mapping),
            so the vmstate is as large as the RAM from the first second: a guest filling 2 GB
            itself takes over ten minutes under TCG on a busy machine.
        extra: more QEMU arguments (a device that registers a migration blocker, say).

    Beside the disk the guest has a read-only qcow2 node (no device), as a worker with a
    read-only image has: it can hold no snapshot and must be left out of one.
    """
    check_available()
    vmlinuz, _ = find_kernel()
    initrd = build_initramfs(folder / "initramfs.cpio")
    disk = folder / "disk.qcow2"
    base = folder / "readonly.qcow2"
    for image in (disk, base):
        subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(image), "16M"],
                       check=True, timeout=60)
    qmp_socket.parent.mkdir(parents=True, exist_ok=True)
    port = free_port()
    serial = folder / "serial.log"
    accel = accelerator()
    argv = [
        QEMU, "-nodefaults", "-display", "none", "-no-user-config",
        "-machine", f"pc,accel={accel}", "-m", str(memory_mb), "-smp", "1",
        "-kernel", str(vmlinuz), "-initrd", str(initrd),
        "-append", "console=ttyS0 panic=-1",
        "-serial", f"file:{serial}",
        *disk_args(disk, disk_mibps),
        "-blockdev", f"driver=qcow2,node-name=readonly0,read-only=on,file.driver=file,"
                     f"file.filename={base}",
        # QEMU's own user-mode network, restricted: the guest (at SLIRP's 10.0.2.15 inside
        # QEMU) reaches nothing outside; the host reaches it only on the loopback forward.
        "-netdev", f"user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:80",
        "-device", "virtio-net-pci,netdev=net0",
        "-qmp", f"unix:{qmp_socket},server=on,wait=off",
        "-no-reboot",
    ]
    if monitor is not None:
        argv += ["-qmp", f"unix:{monitor},server=on,wait=off"]
    argv += list(extra)
    if prefill:
        ram = folder / "ram.fill"
        with ram.open("wb") as handle:
            chunk = b"oa-vm-touched-ram" * (1 << 16)
            for _ in range(memory_mb * (1 << 20) // len(chunk) + 1):
                handle.write(chunk)
        argv[argv.index(f"pc,accel={accel}")] = f"pc,accel={accel},memory-backend=ram0"
        argv += ["-object", f"memory-backend-file,id=ram0,size={memory_mb}M,mem-path={ram},"
                            "share=off"]
    log = (folder / "qemu.log").open("wb")
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    log.close()
    return TinyGuest(process, qmp_socket, port, serial, accel)


def start_with_args(folder: Path, qmp_socket: Path, args: list[str]) -> TinyGuest:
    """Start QEMU with another program's ``args`` (machine, CPU, RAM, disks, QMP on
    ``qmp_socket``), adding only the tiny guest itself: its kernel and initramfs, its serial
    file and a user-mode network on a loopback forward."""
    check_available()
    vmlinuz, _ = find_kernel()
    initrd = build_initramfs(folder / "initramfs.cpio")
    port = free_port()
    serial = folder / "serial.log"
    argv = [
        QEMU, *args, "-no-user-config",
        "-kernel", str(vmlinuz), "-initrd", str(initrd), "-append", "console=ttyS0 panic=-1",
        "-serial", f"file:{serial}",
        "-netdev", f"user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:80",
        "-device", "virtio-net-pci,netdev=net0",
    ]
    log = (folder / "qemu.log").open("wb")
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    log.close()
    accel = "kvm" if any("accel=kvm" in a for a in args) else "tcg"
    return TinyGuest(process, qmp_socket, port, serial, accel)
