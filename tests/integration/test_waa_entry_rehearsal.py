"""An image build and a pool start rehearsed with WAA's and dockur's real scripts.

Our real ``bootstrap.sh`` runs with the shipped files; WAA's real ``entry.sh`` and
``entry_setup.sh`` run as PID 1 of their own PID namespace with the arguments our ``docker run``
passes; dockur's real functions decide between installing and booting from the storage folder.
Only Docker's daemon, dockur's runtime with QEMU and Windows, the disks and systemd are played
(``tests/support/waa_container.py``, ``tests/support/host_standins.py``). Everything runs in a
private network namespace: the guest address lives on its own loopback.
"""

from __future__ import annotations

import contextlib
import filecmp
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from infra.worker import units
from infra.worker.cloud_init import WorkerFiles
from oa_vm.reach.host_status import parse_status
from tests.support import procs, waa_container
from tests.support.host_standins import calls, standin_env, write_shipped, write_standins
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
WORKER = ROOT / "infra" / "worker"
BASH = shutil.which("bash") or "/bin/bash"
_why_not = functools.cache(waa_container.unshare_works)


@pytest.fixture(autouse=True)
def _needs_namespaces() -> None:
    if not waa_container.WAA_CONTAINER_SRC.is_dir() or not waa_container.DOCKUR.is_dir():
        pytest.skip("WAA's or dockur's upstream code not found under ../shared")
    reason = _why_not()
    if reason:
        pytest.skip(reason)


@dataclass
class Rehearsal:
    """One rehearsed host: its root, shipped files, stand-ins and the last bootstrap's result."""

    tmp: Path
    returncode: int = -1
    output: str = ""

    @property
    def root(self) -> Path:
        return self.tmp / "host"

    @property
    def ship(self) -> Path:
        return self.tmp / "opt-oa-vm"

    @property
    def state_dir(self) -> Path:
        return self.tmp / "fake"

    @property
    def storage(self) -> Path:
        return self.root / "var/lib/oa-vm/storage"

    @property
    def container(self) -> Path:
        return self.state_dir / "docker" / "container"

    def status(self) -> dict[str, str]:
        return parse_status((self.root / "var/lib/oa-vm/status").read_text(encoding="utf-8"))

    def log(self) -> str:
        return (self.container / "log").read_text(encoding="utf-8", errors="replace")

    def build_steps(self) -> list[dict[str, object]]:
        data = json.loads((self.state_dir / "docker" / "build.json").read_text())
        steps: list[dict[str, object]] = data["steps"]
        return steps


def make_rehearsal(tmp_path: Path) -> Rehearsal:
    host = Rehearsal(tmp_path)
    (host.root / "dev").mkdir(parents=True)
    (host.root / "dev/kvm").touch()
    (host.root / "dev/sdf").touch()
    host.storage.mkdir(parents=True)
    write_shipped(host.ship)  # /opt/oa-vm as cloud-init writes it
    bin_dir = write_standins(tmp_path / "bin", only=("systemctl", "journalctl", "blkid",
                                                     "mountpoint", "mount", "umount",
                                                     "mkfs.ext4"))
    waa_container.write_docker(bin_dir)
    waa_container.waa_rootfs(tmp_path / "waa-rootfs")
    waa_container.base_rootfs(tmp_path / "dockur-rootfs")
    return host


def bootstrap(host: Rehearsal, mode: str, timeout_s: int = 120,
              then: Callable[[Rehearsal], None] | None = None, **fake: str) -> Rehearsal:
    """Run the shipped ``bootstrap.sh MODE``; ``then(host)`` runs once it has ended, while
    the container still runs (it is stopped afterwards in any case)."""
    env = standin_env(host.tmp / "bin", host.state_dir, **fake)
    env["PATH"] = f"{host.tmp / 'bin'}:/usr/sbin:/usr/bin:/sbin:/bin"
    env.update({
        "OA_VM_ROOT": str(host.root),
        "OA_VM_STORAGE_DEVICES": "/dev/sdf",
        "OA_VM_POLL_S": "0.2",
        "OA_VM_GUEST_TIMEOUT_S": str(timeout_s),
        "OA_VM_SCORING_TIMEOUT_S": "60",
        "FAKE_WAA_ROOTFS": str(host.tmp / "waa-rootfs"),
        "FAKE_BASE_ROOTFS": str(host.tmp / "dockur-rootfs"),
    })
    env.update({k: v for k, v in fake.items() if k.startswith("OA_VM_") or k == "VERSION"})
    # A private network namespace: the guest's address on its own loopback, nothing outside.
    script = (f"ip link set lo up && ip addr add {units.GUEST_IP}/32 dev lo && "
              f'exec {BASH} "$0" "$1"')
    try:
        done = subprocess.run(
            ["unshare", "--net", BASH, "-c", script, str(host.ship / "bootstrap.sh"), mode],
            env=env, capture_output=True, text=True, timeout=timeout_s + 180, check=False)
        if then is not None:
            then(host)
    finally:
        waa_container.stop_container(host.state_dir)
        scorer = host.state_dir / "scorer.pid"
        if scorer.exists():
            procs.signal_group(scorer, signal.SIGTERM)
            scorer.unlink()
    host.returncode, host.output = done.returncode, done.stdout + done.stderr
    return host


def dockur_decides(storage: Path) -> str:
    """dockur's own install/boot decision (``needsInstall``) for a storage folder: ``install``
    or ``boot``, from its real functions in ``../shared/dockur/upstream``."""
    src = waa_container.DOCKUR
    script = f"""set -Eeuo pipefail
export STORAGE={storage} APP=Windows PLATFORM=x64 BOOT_MODE=windows PROCESS=windows
export FOOTER1="" FOOTER2="" TEMPLATE=/dev/null VERSION=11e LANGUAGE=en DEBUG=""
. {src}/qemu/src/utils.sh
. {src}/windows/src/define.sh
. <(sed '/^startWindows$/d' {src}/windows/src/install.sh)
parseVersion; parseLanguage; detectCustom
if needsInstall; then echo install; else echo boot; fi
"""
    done = subprocess.run([BASH, "-c", script], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_a_build_succeeds_though_waas_entry_exits_127_and_pools_boot_from_it(
    tmp_path: Path,
) -> None:
    host = bootstrap(make_rehearsal(tmp_path), "build")
    assert host.returncode == 0, host.output + host.log()
    status = host.status()
    assert (status["state"], status["step"]) == ("done", "built"), status
    log = host.log()
    # Our entry was PID 1 and ran WAA's real entry.sh with our arguments: it saw Windows, shut
    # it down, and ended with 'wait -n' and no child jobs (127); PID 1 then waited for QEMU to
    # exit and read the boot marker dockur wrote after it.
    assert ("rehearsal: PID 1 is /bin/bash /oa-vm/waa_entry.sh --prepare-image true "
            "--start-client false") in log
    assert "VM is up and running, and the Windows Arena Server is ready to use!" in log
    assert "Windows VM is shutting down..." in log
    assert "oa-vm entry: WAA's entry.sh ended (code 127)" in log
    assert "oa-vm entry: QEMU exited and dockur marked the install booted" in log
    assert (host.container / "rc").read_text().strip() == "0"
    assert (host.storage / "data.qcow2").is_file()  # dockur's DISK_FMT from the recipe
    assert "falling back" not in log  # /dev/net/tun was passed: dockur's NAT network
    assert "rehearsal: dockur decides: install Windows" in log
    # The container pinned dockur's guest address and took QMP on the unix socket only.
    assert f"guest address {units.GUEST_IP}" in log
    assert "QMP unix:/run/oa-vm-qmp/qmp.sock,server=on,wait=off" in log
    qmp = host.root / "var/lib/oa-vm/qmp"
    assert qmp.is_dir() and qmp.stat().st_mode & 0o777 == 0o700
    # The storage the build leaves is, for dockur's own functions, a finished install.
    assert dockur_decides(host.storage) == "boot"
    marker = (host.storage / "oa-vm-image.ready").read_text()
    assert "waa_image=windowsarena/winarena@sha256:" in marker
    assert "base_image=dockurr/windows@sha256:" in marker
    assert marker == (host.root / "var/lib/oa-vm/image-info").read_text()

    # A pool worker from that volume: dockur boots the installed Windows, no second install.
    pool = bootstrap(host, "pool", FAKE_SCORER_CMD=_scorer_cmd(tmp_path))
    assert pool.returncode == 0, pool.output + pool.log()
    assert (pool.status()["state"], pool.status()["step"]) == ("done", "ready")
    assert "rehearsal: dockur decides: boot the installed Windows" in pool.log()
    assert ("PID 1 is /bin/bash /oa-vm/waa_entry.sh --prepare-image false --start-client false"
            in pool.log())


@pytest.mark.slow  # a build and a pool rehearsed end to end (about 16 s)
def test_pools_boot_an_image_built_from_an_iso_at_a_url(tmp_path: Path) -> None:
    """``image-create --iso https://...`` builds with dockur's ``VERSION`` set to the URL, and
    dockur records the download's own file name as the install's source; its pools pass
    ``VERSION=11e``. dockur's own ``needsInstall`` decides in the pool's container."""
    url = "https://isos.example.test/win11/Win11_Custom.iso?X-Amz-Signature=abc"
    host = bootstrap(make_rehearsal(tmp_path), "build", VERSION=url)
    assert host.returncode == 0, host.output + host.log()
    assert "rehearsal: dockur decides: install Windows" in host.log()
    assert (host.storage / "windows.base").read_text().strip() == "Win11_Custom.iso"
    pool = bootstrap(host, "pool", FAKE_SCORER_CMD=_scorer_cmd(tmp_path))
    assert pool.returncode == 0, pool.output + pool.log()
    assert "rehearsal: dockur decides: boot the installed Windows" in pool.log()
    assert "install Windows" not in pool.log()


@pytest.mark.slow  # a container rehearsed to its end, each mode (about 16 s)
@pytest.mark.parametrize("mode", ["build", "pool"])
def test_dockur_refusing_to_start_fails_the_guest_step_at_once(tmp_path: Path, mode: str) -> None:
    """dockur stops within a second (its KVM check, here), between two of PID 1's polls, while
    WAA's entry_setup.sh polls for Windows for ever: the container ends, and the bootstrap fails
    with dockur's own words, long before its deadline."""
    host = make_rehearsal(tmp_path)
    if mode == "pool":
        host = bootstrap(host, "build")
        assert host.returncode == 0, host.output + host.log()
    host = bootstrap(host, mode, timeout_s=300, FAKE_DOCKUR_EXIT="88",
                     FAKE_SCORER_CMD=_scorer_cmd(tmp_path))
    assert host.returncode == 1, host.output + host.log()
    status = host.status()
    assert (status["state"], status["step"]) == ("failed", "guest"), status
    code = "4" if mode == "build" else "5"
    assert f"exited (code {code}) before Windows answered" in status["message"], status
    assert "dockur said: ERROR: KVM acceleration is not available" in status["message"], status
    assert "dockur's runtime ended (exit 88)" in host.log()


def docker(host: Rehearsal, *args: str) -> subprocess.CompletedProcess[str]:
    """The ``docker`` stand-in, as the host's own commands run it (e.g. a pause's ``stop``)."""
    env = standin_env(host.tmp / "bin", host.state_dir,
                      FAKE_WAA_ROOTFS=str(host.tmp / "waa-rootfs"),
                      FAKE_BASE_ROOTFS=str(host.tmp / "dockur-rootfs"))
    return subprocess.run([str(host.tmp / "bin" / "docker"), *args], env=env,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.long
def test_docker_stop_reaches_dockurs_shutdown_through_waas_entry(tmp_path: Path) -> None:
    """'docker stop' (a pause on an own host, a host shutting down) signals PID 1 alone. dockur
    counts on that signal reaching its trap, which shuts Windows down by ACPI within the
    container's 120 s stop timeout. With WAA's entry.sh as PID 1 (a bash script that traps
    nothing) the kernel dropped it: Windows was killed 120 s later (137). Our PID 1 passes it on
    to dockur's tini."""
    host = make_rehearsal(tmp_path)
    assert bootstrap(host, "build").returncode == 0, host.output + host.log()
    stopped: list[subprocess.CompletedProcess[str]] = []
    pool = bootstrap(host, "pool", FAKE_SCORER_CMD=_scorer_cmd(tmp_path),
                     then=lambda h: stopped.append(docker(h, "stop", "winarena")))
    assert pool.returncode == 0, pool.output + pool.log()
    assert stopped and stopped[0].returncode == 0, stopped
    log = pool.log()
    assert "Received SIGTERM signal, sending ACPI shutdown signal..." in log, log
    assert (pool.container / "rc").read_text().strip() == "143"  # not SIGKILL's 137
    assert log.index("guest: ACPI power button") < log.index("guest: powered off")
    assert "❯ Shutdown completed!" in log
    assert "oa-vm entry: received SIGTERM: passing SIGTERM to dockur's runtime" in log
    assert "oa-vm entry: dockur's runtime ended after SIGTERM" in log


def test_an_own_hosts_build_fills_its_image_cache_and_its_workers_boot_from_copies(
    tmp_path: Path,
) -> None:
    """``--cloud ssh`` on a host without a prepared image: the build unit's own settings (its
    storage the image cache folder, its own status file) with the host's ``OA_VM_IMAGE_CACHE``;
    no volume is mounted or unmounted; a worker's storage is then a copy of the cache, from
    which dockur boots the installed Windows."""
    from infra.worker import own_host

    settings = dict(pair.split("=", 1) for line in own_host.build_unit().splitlines()
                    if line.startswith("Environment=")
                    for pair in line.removeprefix("Environment=").split())
    cache = own_host.IMAGE_CACHE_DIR
    host = bootstrap(make_rehearsal(tmp_path), "build", OA_VM_IMAGE_CACHE=cache, **settings)
    assert host.returncode == 0, host.output + host.log()
    status = parse_status((host.root / own_host.BUILD_STATUS.lstrip("/")).read_text())
    assert (status["state"], status["step"]) == ("done", "built"), status
    folder = host.root / cache.lstrip("/")
    assert dockur_decides(folder) == "boot"
    assert "waa_image=windowsarena/winarena@sha256:" in (folder / "oa-vm-image.ready").read_text()
    assert (folder / "oa-vm-waa-image.tar").is_file()  # the saved worker image
    made = calls(host.state_dir)
    assert not [c for c in made if c.split()[0] in ("mount", "umount", "mkfs.ext4")], made
    assert not list(host.storage.iterdir()), "the build used the cache, not a slot's storage"

    from infra.worker.cloud_init import ship_text

    seed = host.ship / own_host.SEED_SCRIPT  # shipped to own hosts beside the cloud's files
    seed.write_text(ship_text(units.read(own_host.SEED_SCRIPT)))
    seed.chmod(0o755)
    pool = bootstrap(host, "pool", OA_VM_IMAGE_CACHE=cache,
                     FAKE_SCORER_CMD=_scorer_cmd(tmp_path))
    assert pool.returncode == 0, pool.output + pool.log()
    assert (pool.status()["state"], pool.status()["step"]) == ("done", "ready")
    assert "rehearsal: dockur decides: boot the installed Windows" in pool.log()
    assert (host.storage / "oa-vm-image.ready").read_bytes() == (
        folder / "oa-vm-image.ready").read_bytes()


def _scorer_cmd(tmp_path: Path) -> str:
    """The shipped scoring server on the bridge's port, beside WAA's real ``desktop_env``."""
    from tests.support.waa_upstream import WAA_CLIENT, stub_pythonpath

    stubs = stub_pythonpath(tmp_path / "stubs")
    ship = tmp_path / "opt-oa-vm"
    return (f"PYTHONPATH={stubs} exec {sys.executable} {ship}/scoring_server.py --host 127.0.0.1 "
            f"--port 5051 --waa-client {WAA_CLIENT} --tasks-dir {tmp_path}")


def test_a_guest_answering_for_only_3s_is_still_seen(tmp_path: Path) -> None:
    # The host polls only every 10 s; the guest comes up after 1 s and powers off at most 3 s
    # after its first answer (WAA's own probe): only WAA's log can tell the host it answered.
    host = bootstrap(make_rehearsal(tmp_path), "build", OA_VM_GUEST_POLL_S="10",
                     FAKE_GUEST_DELAY_S="1", FAKE_GUEST_WINDOW_S="3")
    assert host.returncode == 0, host.output + host.log()
    assert (host.status()["state"], host.status()["step"]) == ("done", "built")
    assert "guest: powered off" in host.log()


def test_windows_that_never_answers_fails_the_guest_step(tmp_path: Path) -> None:
    host = bootstrap(make_rehearsal(tmp_path), "build", timeout_s=8, FAKE_GUEST="never")
    assert host.returncode == 1
    status = host.status()
    assert (status["state"], status["step"]) == ("failed", "guest")
    assert "Windows did not answer /probe within 8s" in status["message"]
    assert "Waiting for a response from the windows server" in host.log()
    assert not (host.storage / "oa-vm-image.ready").exists()


def test_a_storage_without_a_finished_install_fails_the_build(tmp_path: Path) -> None:
    host = bootstrap(make_rehearsal(tmp_path), "build", FAKE_INSTALL="no-boot-marker")
    assert host.returncode == 1, host.output
    status = host.status()
    assert (status["state"], status["step"]) == ("failed", "guest")
    assert "shows no completed install" in status["message"]
    assert "exited with code 4" in status["message"]
    assert "dockur wrote no windows.boot" in host.log()
    assert dockur_decides(host.storage) == "install"
    assert not (host.storage / "oa-vm-image.ready").exists()


def test_no_stand_in_replaces_a_shipped_or_upstream_entry_script(tmp_path: Path) -> None:
    host = bootstrap(make_rehearsal(tmp_path), "build")
    assert host.returncode == 0, host.output
    image = host.state_dir / "docker" / "image"
    src = waa_container.WAA_CONTAINER_SRC
    for name in ("entry.sh", "entry_setup.sh", "start_client.sh"):
        # Upstream's own script, changed only by the recipe's address rewrite.
        expected = (src / name).read_text().replace("20.20.20.21", units.GUEST_IP)
        assert (image / name).read_text() == expected, name
    # /start_vm.sh is the recipe's own, dockur's /run scripts are dockur's.
    start_vm = '#!/bin/bash\n/usr/bin/tini -s /run/entry.sh\necho "$?" >/run/oa-vm-dockur.rc\n'
    assert (image / "start_vm.sh").read_text() == start_vm
    for name in ("entry.sh", "install.sh", "power.sh"):
        assert filecmp.cmp(image / "run" / name, waa_container.DOCKUR / "windows/src" / name,
                           shallow=False)
    assert filecmp.cmp(image / "run" / "utils.sh", waa_container.DOCKUR / "qemu/src/utils.sh",
                       shallow=False)
    # What ran, and what the container mounts at /oa-vm, is what cloud-init writes.
    for name, content in WorkerFiles.from_package().files.items():
        assert (host.ship / name).read_text() == content, name
    # The bootstrap ran the shipped file, and no stand-in carries a shipped or upstream name.
    assert not {p.name for p in (tmp_path / "bin").iterdir()} & {
        "bootstrap.sh", "lib.sh", "scoring.sh", "entry.sh", "entry_setup.sh", "start_vm.sh"}
    stand_ins = {p.relative_to(tmp_path / "dockur-rootfs").as_posix()
                 for p in (tmp_path / "dockur-rootfs").rglob("*")
                 if p.is_file() and "run" not in p.parts}
    assert stand_ins == {"usr/bin/tini", "usr/local/bin/sleep", "usr/share/oa-rehearsal/guest.py"}
    # Only the steps that need the network or WAA's Python were not run.
    skipped = [str(s["step"]) for s in host.build_steps() if "skipped" in s]
    assert all("python3.9" in s or "apt-get" in s or "/usr/local/" in s for s in skipped)
    ran = [str(s["step"]) for s in host.build_steps() if s.get("ran")]
    assert any("sed -i" in s for s in ran) and any("start_vm.sh" in s for s in ran)
    calls_made = calls(host.state_dir)
    assert any(c.startswith("docker build -t oa-vm/waa:local") for c in calls_made)
    assert f"GUEST_IP={units.GUEST_IP}" in next(c for c in calls_made
                                                 if c.startswith("docker build"))


@pytest.mark.parametrize(("step", "builds"), [
    ("RUN false && true", False),            # the step's status is its whole command's
    ("RUN [[ -n x ]]", False),               # /bin/sh -c, not bash: Debian's sh is dash
    ("RUN test -z \"$TOP\"", True),          # an ARG before FROM is not the stage's
    ("ARG TOP\nRUN test \"$TOP\" = top", True),  # until the stage declares it
    ("ARG IN=in\nRUN test \"$IN\" = in", True),
])
def test_the_docker_stand_in_builds_as_docker_does(tmp_path: Path, step: str,
                                                   builds: bool) -> None:
    """The recipe's RUN steps meet what Docker gives them: one ``/bin/sh -c STEP`` whose status
    fails the build, and the ARGs of their own stage only."""
    context = tmp_path / "context"
    context.mkdir()
    (context / "Dockerfile").write_text(f"ARG TOP=top\nFROM ${{TOP}}\n{step}\n")
    bin_dir = tmp_path / "bin"
    waa_container.write_docker(bin_dir)
    env = standin_env(bin_dir, tmp_path / "fake",
                      FAKE_WAA_ROOTFS=str(waa_container.waa_rootfs(tmp_path / "waa-rootfs")),
                      FAKE_BASE_ROOTFS=str(waa_container.base_rootfs(tmp_path / "base")))
    env["PATH"] = f"{bin_dir}:/usr/sbin:/usr/bin:/sbin:/bin"
    done = subprocess.run(["docker", "build", "-t", "t", str(context)], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert (done.returncode == 0) is builds, done.stderr
    if builds:
        steps = json.loads((tmp_path / "fake" / "docker" / "build.json").read_text())["steps"]
        assert steps[0]["from"] == "top" and steps[-1].get("ran"), steps


@pytest.mark.long
def test_a_windows_slower_to_power_off_than_waas_180s_still_builds(tmp_path: Path) -> None:
    """WAA's entry.sh gives Windows 180 s (4 s here) after /shutdown, then ends; dockur writes
    windows.boot only once QEMU has exited. A Windows that takes longer (pending updates: 10 s
    here) is waited for by our PID 1 instead of being killed with the container."""
    host = bootstrap(make_rehearsal(tmp_path), "build", FAKE_GUEST_POWEROFF_S="10")
    assert host.returncode == 0, host.output + host.log()
    assert (host.status()["state"], host.status()["step"]) == ("done", "built")
    log = host.log()
    assert log.index("oa-vm entry: WAA's entry.sh ended") < log.index("guest: powered off")
    assert dockur_decides(host.storage) == "boot"


def test_a_windows_that_never_powers_off_fails_the_build_at_its_own_deadline(
    tmp_path: Path,
) -> None:
    host = bootstrap(make_rehearsal(tmp_path), "build", FAKE_GUEST_POWEROFF_S="600",
                     OA_VM_POWEROFF_TIMEOUT_S="3")
    assert host.returncode == 1, host.output
    status = host.status()
    assert (status["state"], status["step"]) == ("failed", "guest")
    assert "Windows did not power off within 3s after WAA's /shutdown" in status["message"]
    assert (host.container / "rc").read_text().strip() == "3"
    assert not (host.storage / "oa-vm-image.ready").exists()


def test_dockurs_fallback_to_user_mode_networking_fails_the_network_step_at_once(
    tmp_path: Path,
) -> None:
    """The guest would answer (the rehearsal's guest is reachable either way), but with
    user-mode networking a real guest is not at dockur's address: the build fails at once, in
    dockur's own words, instead of two hours later."""
    host = bootstrap(make_rehearsal(tmp_path), "build", FAKE_NETWORK="fallback",
                     FAKE_GUEST_DELAY_S="30")
    assert host.returncode == 1, host.output
    status = host.status()
    assert (status["state"], status["step"]) == ("failed", "network"), status
    assert "dockur said: ❯ Warning: failed to setup NAT networking, falling back to user-mode " \
           "networking!" in status["message"]
    assert "/dev/net/tun" in status["message"]
    assert "VM is up and running" not in host.log()  # it did not wait for Windows


def _windows_iso(path: Path) -> Path:
    """A file dockur and ``image-create --iso`` take for an ISO: ISO 9660's system area, its
    primary volume descriptor (``CD001`` at sector 16), then content."""
    import os

    path.write_bytes(bytes(16 * 2048) + b"\x01CD001\x01" + bytes(2041) + os.urandom(3 << 20))
    return path


@pytest.mark.long
def test_a_build_from_a_local_iso_installs_from_the_uploaded_file(tmp_path: Path) -> None:
    """``image-create --iso PATH``: the file goes over the builder's SSH (a real sshd, the
    shipped upload command), the bootstrap binds it as dockur's ``/custom.iso``, and dockur's own
    ``detectCustom`` takes it as its installation media, so nothing is downloaded; the ISO stays
    off the storage volume (the snapshot), and a pool from that volume boots the installed
    Windows without it."""
    import hashlib

    from oa_vm.clouds import iso_delivery
    from oa_vm.model.state import SshEndpoint
    from tests.support.host_standins import running_host

    host = make_rehearsal(tmp_path)
    iso = _windows_iso(tmp_path / "Win11_Enterprise_Eval.iso")
    state_dir = host.root / "var/lib/oa-vm"
    lines: list[str] = []
    with running_host(tmp_path / "ssh", only=("sudo",), OA_VM_STATE_DIR=str(state_dir)) as server:
        ssh = SshEndpoint(host=server.host, port=server.port, user=server.user,
                          key_path=str(server.client_key))
        iso_delivery.deliver(iso, ssh, tmp_path / "known_hosts", name="img-builder",
                             progress=lines.append)
    delivered = state_dir / "iso" / "custom.iso"
    assert delivered.read_bytes() == iso.read_bytes()
    assert not delivered.with_name("custom.iso.part").exists()
    assert "uploading your ISO" in lines[-1]

    host = bootstrap(host, "build", OA_VM_ISO_BYTES=str(iso.stat().st_size),
                     OA_VM_ISO_TIMEOUT_S="60")
    assert host.returncode == 0, host.output + host.log()
    assert (host.status()["state"], host.status()["step"]) == ("done", "built")
    digest = hashlib.sha256(iso.read_bytes()).hexdigest()
    log = host.log()
    assert f"rehearsal: dockur installs from /custom.iso without a download, sha256 {digest}" \
        in log, log
    assert "rehearsal: dockur decides: install Windows" in log
    assert not list(host.storage.glob("custom.iso*")), "the ISO never reaches the snapshot"

    pool = bootstrap(host, "pool", FAKE_SCORER_CMD=_scorer_cmd(tmp_path))
    assert pool.returncode == 0, pool.output + pool.log()
    assert "rehearsal: dockur decides: boot the installed Windows" in pool.log()


def _guest_pid(under: Path) -> int:
    """This rehearsal's Windows guest (its ``guest.py`` process, chrooted into a container
    folder under ``under``): another test's rehearsal beside it runs a guest of the same
    command line."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if (b"oa-rehearsal/guest.py" in cmdline.read_bytes()
                    and os.readlink(cmdline.parent / "root").startswith(str(under))):
                return int(cmdline.parent.name)
        except OSError:
            continue
    raise AssertionError("the rehearsal's guest is not running")


@pytest.mark.long
def test_windows_gone_from_a_pools_container_ends_it_for_its_restart_policy(
    tmp_path: Path,
) -> None:
    """A pool's WAA entry.sh never ends (a 'sleep 60' loop): a Windows that shut itself down (a
    task's command through WAA's /shutdown here) left a container running without Windows, and
    its restart policy (on-failure) never acted. Our PID 1 ends it, code 5."""
    host = make_rehearsal(tmp_path)
    assert bootstrap(host, "build").returncode == 0, host.output + host.log()
    ended: list[str] = []

    def shut_windows_down(h: Rehearsal) -> None:
        guest = _guest_pid(tmp_path)
        subprocess.run(["nsenter", "--net", "--target", str(guest), "curl", "-fsS",
                        "--max-time", "10", "-X", "POST", "http://127.0.0.1:5000/shutdown"],
                       check=True, capture_output=True, timeout=60)

        def stopped() -> str | None:
            state = docker(h, "inspect", "-f", "{{.State.Running}} {{.State.ExitCode}}",
                           "winarena").stdout.strip()
            return None if state.startswith("true") else state

        # ended stays empty when the container outlives the wait: the assertion below says so
        with contextlib.suppress(AssertionError):
            ended.append(wait_until(stopped, "the container to end", 120))

    pool = bootstrap(host, "pool", FAKE_SCORER_CMD=_scorer_cmd(tmp_path),
                     then=shut_windows_down)
    assert pool.returncode == 0, pool.output + pool.log()
    assert ended == ["false 5"], pool.log()
    log = pool.log()
    assert log.index("guest: powered off") < log.index("oa-vm entry: dockur's runtime ended")
