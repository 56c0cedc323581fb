"""``oa-vm smoke`` end to end: the real CLI as a subprocess, on a stand-in AWS.

The cloud is the tests' fake Pulumi engine (the real pool program under Pulumi's mocks); the
instance it "creates" is a rehearsal host: a real OpenSSH server on loopback with the host
stand-ins on its sessions' PATH and the bootstrap's status file in a folder of the test, and a
real simulated worker behind it, reached through SSH tunnels (``tests/support/fake_cloud_cli.py``).
The worker serves WAA's own task files under a ``test_small`` index, so the smoke's task phase
runs ``openadapt-evals run`` with the noop agent through setup and the scoring server.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest

from oa_vm.model import image_records, state
from tests.conftest import ROOT, WAA_DATA
from tests.support import dockur_qemu
from tests.support.cli import run_cli
from tests.support.host_standins import (
    HostSshServer,
    running_host,
    set_outcomes,
    write_shipped,
)
from tests.support.output_lines import OutputLines
from tests.support.worker_proc import WorkerProcess, running_worker

WAA_DIGEST = "windowsarena/winarena@sha256:" + "0123" * 16
"""What the fake builder reports: a real digest's shape (a build refuses tag names)."""

pytestmark = [pytest.mark.integration, pytest.mark.sshd]

SCORED = ("settings", "46adf721-2949-4426-b069-010b7c128d8f-wos")
"""A WAA task the simulated worker sets up and scores (the noop agent fails it: a score)."""
SETUP_FAILS = ("chrome", "2ae9ba84-3a0d-4d4c-8338-3a1478dc5fe3-wos")
"""A WAA task whose setup the simulated worker refuses (no Chrome): a task-phase error."""


def _tasks(folder: Path, domain: str, task_id: str) -> Path:
    """A WAA-layout folder: ``test_small.json`` naming one of WAA's own task files."""
    source = WAA_DATA / "examples" / domain / f"{task_id}.json"
    if not source.is_file():
        pytest.skip(f"WAA task data not found at ../shared/waa ({source.name})")
    (folder / "examples" / domain).mkdir(parents=True)
    shutil.copy(source, folder / "examples" / domain / source.name)
    (folder / "test_small.json").write_text(json.dumps({domain: [task_id]}))
    return folder


@dataclass
class FakeCloud:
    """The rehearsal host, its worker and the environment ``fake_cloud_cli`` reads."""

    host: HostSshServer
    worker: WorkerProcess
    home: Path
    status: Path
    engine_state: Path
    env: dict[str, str]
    builder_status: Path
    qemu: list[str]
    """The command line the host's QEMU monitor carries (dockur's arguments, or empty)."""

    def set_status(self, body: str) -> None:
        self.status.write_text(body)

    def left(self) -> dict[str, list[str]]:
        stacks: dict[str, list[str]] = json.loads(self.engine_state.read_text())["stacks"]
        return {name: types for name, types in stacks.items() if types}

    def args(self, *extra: str) -> list[str]:
        return [sys.executable, "-m", "tests.support.fake_cloud_cli", "smoke", "--cloud", "aws",
                "--region", "us-east-1", "--allow-cidr", "198.51.100.7/32", "--name", "smoke-t",
                "-y", *extra]

    def run(self, *extra: str, timeout: float = 600.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.args(*extra), capture_output=True, text=True, cwd=ROOT,
                              env=self.env, timeout=timeout, stdin=subprocess.DEVNULL,
                              check=False)


INVTSC = "State blocked by non-migratable CPU device (invtsc flag)"
"""QEMU's words for dockur's own ``-cpu`` under KVM (``tests/unit/infra/test_cpu_flags.py``)."""


@contextlib.contextmanager
def _qemu_monitor(root: Path, scoring_url: str, *, refused: bool) -> Iterator[list[str]]:
    """QEMU's monitor on the host's QMP socket (:mod:`tests.support.qmp_machine`: the machine
    is the simulated worker), its command line the one dockur's scripts assemble (with the
    worker's CPU flags, or dockur's own when ``refused``); yields that command line."""
    socket_path = root / "var" / "lib" / "oa-vm" / "qmp" / "qmp.sock"
    socket_path.parent.mkdir(parents=True, mode=0o700)
    qemu: list[str] = []
    if dockur_qemu.available() is None:
        qemu = ["qemu-system-x86_64", *dockur_qemu.dockur_args(
            root / "storage", socket_path, ram="8G", worker_cpu=not refused)]
    command = [sys.executable, "-m", "tests.support.qmp_machine", str(socket_path), scoring_url,
               *(["--blocked", INVTSC] if refused else []), "--", *qemu]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "listening", proc.stdout.read()
        yield qemu
    finally:
        proc.kill()
        proc.wait(timeout=60)


def _cloud(
    tmp_path: Path, domain: str, task_id: str, *, image: bool = True, faults: tuple[str, ...] = (),
    refused: bool = False,
) -> Iterator[FakeCloud]:
    tasks = _tasks(tmp_path / "tasks", domain, task_id)
    home = tmp_path / "home"
    # The host's root (lib.sh's OA_VM_ROOT): the shipped scripts under opt/oa-vm, the status file
    # and QEMU's QMP socket under var/lib/oa-vm. Short: a unix socket's path has 108 bytes.
    with tempfile.TemporaryDirectory(prefix="oa-smoke-") as short:
        root = Path(short)
        host_state = root / "var" / "lib" / "oa-vm"
        host_state.mkdir(parents=True)
        write_shipped(root / "opt" / "oa-vm")
        # It plays a cloud worker, reached only through the host's SSH tunnels: no local pool's
        # secret prefix (a cloud host's servers have none).
        with running_host(tmp_path / "host", OA_VM_STATE_DIR=str(host_state),
                          OA_VM_ROOT=str(root)) as host, \
                running_worker(tmp_path, tasks=tasks, faults=faults, auth=False) as worker, \
                _qemu_monitor(root, worker.url(0, "scoring"), refused=refused) as qemu:
            # reset.sh reaches the guest's WAA server (its probe, and its /execute for the
            # clock's resync: the simulated guest keeps no clock, so it echoes the host's)
            set_outcomes(host.fake_state, FAKE_DOCKER_DENIED="1", FAKE_UID="1000",
                         FAKE_GUEST_WAA=worker.url(0, "waa"),
                         OA_VM_RESET_CLOCK_URL=worker.url(0, "waa") + "/execute",
                         OA_VM_CLOCK_COMMAND="echo @MS@")
            entry = worker.workers[0]
            config = tmp_path / "fake-cloud.json"
            config.write_text(json.dumps({
                "ssh": {"host": host.host, "port": host.port, "user": host.user,
                        "authorized_keys": str(host.authorized_keys)},
                "waa_port": entry["waa_port"], "scoring_port": entry["scoring_port"],
                "engine_state": str(tmp_path / "engine.json"),
                "builder_state": str(_builder_state(tmp_path / "builder-state")),
            }))
            if image:
                _save_image(home)
            env = {**os.environ, "OA_VM_HOME": str(home), "FAKE_CLOUD": str(config),
                   "PULUMI_CONFIG_PASSPHRASE": "test", "PYTHONUNBUFFERED": "1"}
            yield FakeCloud(host, worker, home, host_state / "status",
                            tmp_path / "engine.json", env,
                            tmp_path / "builder-state" / "status", qemu)


def _save_image(home: Path) -> None:
    """A prepared image of the region, as image-create leaves it (``OA_VM_HOME`` set meanwhile,
    then given back as it was: the test process's own home must outlive this test)."""
    previous = os.environ.get("OA_VM_HOME")
    os.environ["OA_VM_HOME"] = str(home)
    try:
        image_records.save(image_records.ImageRecord(
            id="waa-us-east-1-20261130-1200", cloud="aws", region="us-east-1",
            state=image_records.READY, size_gb=60, created_at=state.utcnow(),
            licence_expires=state.utcnow() + timedelta(days=80),
            waa_image=WAA_DIGEST, builder_size="m8i.2xlarge",
            project="oa-vm-aws-images", stack="waa-us-east-1-20261130-1200",
            owner="alice", cloud_id="snap-0123456789abcdef0",
        ))
    finally:
        if previous is None:
            os.environ.pop("OA_VM_HOME", None)
        else:
            os.environ["OA_VM_HOME"] = previous


def _builder_state(folder: Path) -> Path:
    """What the builder's bootstrap leaves when the build succeeded (bootstrap.sh's files)."""
    folder.mkdir()
    (folder / "status").write_text("state=done\nstep=built\nmessage=Windows installed and "
                                   "shut down\n")
    (folder / "image-info").write_text("waa_image=" + WAA_DIGEST + "\n"
                                       "base_image=dockurr/windows@sha256:" + "4567" * 16 + "\n"
                                       "built=2026-12-01T09:00:00Z\n")
    return folder


@pytest.fixture
def cloud_without_image(tmp_path: Path) -> Iterator[FakeCloud]:
    yield from _cloud(tmp_path, *SCORED, image=False)


@pytest.fixture
def slow_cloud(tmp_path: Path) -> Iterator[FakeCloud]:
    """Every request to the worker takes two seconds more (so a Ctrl-C lands mid-task)."""
    yield from _cloud(tmp_path, *SCORED, faults=("latency=2",))


@pytest.fixture
def cloud(tmp_path: Path) -> Iterator[FakeCloud]:
    yield from _cloud(tmp_path, *SCORED)


@pytest.fixture
def refused_cloud(tmp_path: Path) -> Iterator[FakeCloud]:
    """The host's QEMU refuses snapshots (dockur's own CPU flags: an invariant TSC)."""
    yield from _cloud(tmp_path, *SCORED, refused=True)


@pytest.fixture
def cloud_task_errors(tmp_path: Path) -> Iterator[FakeCloud]:
    yield from _cloud(tmp_path, *SETUP_FAILS)


READY = "state=done\nstep=ready\nmessage=Windows answers /probe\n"


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_smoke_from_plan_to_cleanup_with_a_scored_task(cloud: FakeCloud) -> None:
    cloud.set_status(READY)
    result = cloud.run()
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    verdict = _lines(out)[-1]
    assert verdict.startswith("smoke PASSED"), verdict
    assert f"task {SCORED[1]}: failure, score 0.0 (exact_match=0), scored by the checker" in verdict
    # the plan came first, with its bound, then every phase in order
    assert out.index("Most it can spend: $") < out.index("PHASE    STATUS")
    timeline = out[out.index("PHASE    STATUS"):]
    rows = [line.split()[:2] for line in _lines(timeline)[1:-2]]
    assert rows == [["plan", "ok"], ["image", "ok"], ["create", "ok"], ["wait", "ok"],
                    ["task", "ok"], ["cleanup", "ok"]]
    assert "uses waa-us-east-1-20261130-1200" in timeline
    assert cloud.left() == {}, "the fake cloud still holds the pool's resources"
    assert not (cloud.home / "pools" / "smoke-t" / "pool.json").exists()
    # the task really went through setup and the scoring server of the worker behind the host
    run = next((cloud.home / "smoke").iterdir())
    execution = json.loads((run / "tasks" / SCORED[1] / "execution.json").read_text())
    assert execution["status"] == "failure" and execution["reason"] == "exact_match=0"
    # the default reset was the clean one: the shipped reset.sh took the snapshot through the
    # host's QEMU monitor and put it back, and the guest showed the snapshot's token
    assert execution["reset"] == "clean", execution
    fingerprint = execution["fingerprint"]
    assert fingerprint["ok"] is True and fingerprint["marker_gone"] is True, fingerprint
    assert fingerprint["token"] == fingerprint["expected"], fingerprint
    assert 0 <= fingerprint["clock_skew_s"] <= 5, fingerprint  # the clock's resync answered
    if cloud.qemu:  # QEMU's command line as the host's reset.sh check read it
        metadata = json.loads((run / "metadata.json").read_text())
        (qemu,) = metadata["reset"]["qemu"].values()
        assert qemu["cpu"] == cloud.qemu[cloud.qemu.index("-cpu") + 1]
        assert ",-invtsc,-vmx,-svm" in qemu["cpu"] and "passthrough" not in qemu["cpu"], qemu
        # and in the run's manifest, with the whole command line
        manifest = json.loads((run / "manifest.json").read_text())
        (worker,) = manifest["workers"]
        assert worker["kind"] == "cloud"
        (recorded,) = worker["qemu"].values()
        assert recorded["cpu"] == qemu["cpu"]
        assert recorded["cmdline"][-len(cloud.qemu):] == cloud.qemu


@pytest.mark.slow  # a minute: test_clean_reset_local checks the fallback's line quickly
def test_a_worker_whose_snapshot_is_refused_runs_on_stock_resets(
    refused_cloud: FakeCloud,
) -> None:
    cloud = refused_cloud
    cloud.set_status(READY)
    result = cloud.run()
    assert result.returncode == 0, result.stdout + result.stderr
    assert _lines(result.stdout)[-1].startswith("smoke PASSED"), result.stdout
    run = next((cloud.home / "smoke").iterdir())
    execution = json.loads((run / "tasks" / SCORED[1] / "execution.json").read_text())
    assert execution["status"] == "failure" and execution["reset"] == "stock", execution
    assert execution.get("error_type") is None
    metadata = json.loads((run / "metadata.json").read_text())
    (worker,) = metadata["workers"]
    assert metadata["reset"]["stock"] == [worker]
    assert INVTSC in metadata["reset"]["fallbacks"][worker]
    # the fallback is said once, naming the worker and QEMU's reason
    said = [line for line in result.stdout.splitlines() if INVTSC in line]
    assert len(said) == 1 and worker in said[0], result.stdout


@pytest.mark.parametrize("delete_image", [False, True])
@pytest.mark.long
def test_a_region_without_an_image_builds_one_first(
    cloud_without_image: FakeCloud, delete_image: bool
) -> None:
    cloud = cloud_without_image
    cloud.set_status(READY)
    result = cloud.run(*(["--delete-image"] if delete_image else []))
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "Image: none in us-east-1 yet: one is built first" in out
    assert _lines(out)[-1].startswith("smoke PASSED"), _lines(out)[-1]
    image_row = next(line for line in _lines(out) if line.startswith("image    ok"))
    assert "built waa-us-east-1-" in image_row
    left = cloud.left()
    assert "smoke-t" not in left, "the pool was removed"
    images = {name: types for name, types in left.items() if name.startswith("waa-us-east-1-")}
    if delete_image:
        assert images == {}, left
        assert "deleted (--delete-image)" in out
    else:
        assert list(images.values()) == [["aws:ebs/snapshot:Snapshot"]], left
        assert "stays for later pools" in out and "oa-vm image-delete waa-us-east-1-" in out


def test_a_failed_build_fails_at_image_and_makes_no_pool(cloud_without_image: FakeCloud) -> None:
    cloud = cloud_without_image
    cloud.builder_status.write_text("state=failed\nstep=guest\nmessage=Windows did not answer "
                                    "/probe in time\n")
    result = cloud.run()
    assert result.returncode == 1, result.stdout + result.stderr
    verdict = _lines(result.stdout)[-1]
    assert verdict.startswith("smoke FAILED at image: "), verdict
    assert "failed at guest: Windows did not answer /probe in time" in verdict
    assert "logs: oa-vm image-list" in verdict
    assert "cleanup  skipped  " in result.stdout and "no pool was made" in result.stdout
    assert cloud.left() == {}, "the builder was rolled back and no pool was made"
    assert not list(cloud.home.rglob("pool.json"))


def test_json_document_and_keep(cloud: FakeCloud) -> None:
    cloud.set_status(READY)
    result = cloud.run("--json", "--keep")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["passed"] is True and doc["failed_phase"] is None
    assert [p["name"] for p in doc["phases"]] == ["plan", "image", "create", "wait", "task",
                                                  "cleanup"]
    assert doc["phases"][-1]["status"] == "kept"
    assert "oa-vm pool-cleanup --pool smoke-t -y" in doc["phases"][-1]["detail"]
    assert doc["plan"]["max_cost_usd"] <= doc["plan"]["max_cost_limit_usd"]
    assert all(p["cost_usd"] is not None for p in doc["phases"])
    assert "aws:ec2/instance:Instance" in cloud.left()["smoke-t"], "--keep kept the worker"
    record = json.loads((cloud.home / "pools" / "smoke-t" / "pool.json").read_text())
    assert record["state"] == "ready"


def test_a_worker_never_ready_fails_at_wait_and_still_cleans_up(cloud: FakeCloud) -> None:
    cloud.set_status("state=running\nstep=guest\nmessage=waiting for Windows to answer /probe\n")
    result = cloud.run("--wait-timeout", "2s")
    assert result.returncode == 1, result.stdout + result.stderr
    verdict = _lines(result.stdout)[-1]
    assert verdict.startswith("smoke FAILED at wait: "), verdict
    assert "stuck at bootstrap: guest" in verdict
    assert "oa-vm pool-status --pool smoke-t" in verdict
    assert "journalctl -u oa-vm-bootstrap" in verdict
    assert "cleanup  ok" in result.stdout
    assert cloud.left() == {}
    assert "Traceback" not in result.stderr


def test_a_task_that_errors_fails_at_task_and_still_cleans_up(
    cloud_task_errors: FakeCloud,
) -> None:
    cloud_task_errors.set_status(READY)
    result = cloud_task_errors.run()
    assert result.returncode == 1, result.stdout + result.stderr
    verdict = _lines(result.stdout)[-1]
    assert verdict.startswith("smoke FAILED at task: "), verdict
    assert f"task {SETUP_FAILS[1]}: setup error" in verdict and "google-chrome" in verdict
    assert "logs: openadapt-evals view smoke-t-" in verdict
    assert cloud_task_errors.left() == {}


@pytest.mark.parametrize("signum", [signal.SIGINT,
                                    pytest.param(signal.SIGTERM, marks=pytest.mark.slow)])
def test_ctrl_c_or_sigterm_during_the_wait_cleans_up(cloud: FakeCloud, signum: int) -> None:
    cloud.set_status("state=running\nstep=guest\nmessage=waiting for Windows to answer /probe\n")
    proc = subprocess.Popen(cloud.args(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT, env=cloud.env, stdin=subprocess.DEVNULL)
    output = OutputLines(proc)
    try:
        output.wait_for("bootstrap: guest", 300)
        proc.send_signal(signum)
        assert proc.wait(timeout=300) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
    out = output.finish()
    verdict = _lines(out)[-1]
    assert verdict.startswith("smoke FAILED at wait: the wait phase was interrupted"), verdict
    assert "cleanup  ok" in out
    assert cloud.left() == {}
    assert not (cloud.home / "pools" / "smoke-t" / "pool.json").exists()


def test_plan_json_renders_offline_without_an_engine(tmp_path: Path) -> None:
    empty = tmp_path / "empty-path"
    empty.mkdir()
    home = tmp_path / "home"
    result = run_cli("oa-vm", "smoke", "--cloud", "aws", "--region", "us-east-1", "--plan",
                     "--json", home=home,
                     env={"PATH": str(empty), "OA_VM_IP_ECHO_URL": "http://127.0.0.1:9/"})
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["kind"] == "smoke" and plan["region"] == "us-east-1"
    assert [p["name"] for p in plan["phases"]] == ["plan", "image", "create", "wait", "task",
                                                   "cleanup"]
    # no image in the region: the build is planned, priced, and part of the bound
    assert plan["image"] is None and plan["image_build"]["kind"] == "image"
    build = next(p for p in plan["phases"] if p["name"] == "image")
    assert build["deadline_s"] > 0 and build["max_cost_usd"] > 0
    worker = plan["worker_price_per_hour"]
    assert plan["max_cost_usd"] == pytest.approx(
        worker * plan["ttl_hours"] + plan["image_build"]["max_spend_usd"]
    )
    assert plan["within_limit"] is True
    assert not home.exists(), "a plan must write nothing"


@pytest.mark.parametrize(
    ("args", "needle"),
    [(["--cloud", "local"], "use aws or azure"),
     (["--cloud", "aws", "--max-cost-usd", "0"], "--max-cost-usd must be above 0"),
     (["--cloud", "aws", "--max-cost-usd", "1", "-y"], "more than --max-cost-usd 1"),
     (["--cloud", "aws", "--name", "Bad_Name", "-y"], "invalid pool name")],
)
def test_bad_input_is_one_line_before_anything_is_made(
    tmp_path: Path, args: list[str], needle: str
) -> None:
    empty = tmp_path / "empty-path"
    empty.mkdir()
    home = tmp_path / "home"
    result = run_cli("oa-vm", "smoke", *args, home=home,
                     env={"PATH": str(empty), "OA_VM_IP_ECHO_URL": "http://127.0.0.1:9/"})
    line = result.assert_one_line_error()
    assert needle in line, line
    assert not home.exists() or not list(home.rglob("pool.json"))


@pytest.mark.long
def test_ctrl_c_during_the_task_stops_the_run_and_cleans_up(slow_cloud: FakeCloud) -> None:
    import psutil

    cloud = slow_cloud
    cloud.set_status(READY)
    proc = subprocess.Popen(cloud.args(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT, env=cloud.env, stdin=subprocess.DEVNULL)
    output = OutputLines(proc)
    try:
        output.wait_for("run started:", 300)  # the child openadapt-evals run is at work
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=300) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
    out = output.finish()
    verdict = _lines(out)[-1]
    assert verdict.startswith("smoke FAILED at task: the task phase was interrupted"), verdict
    assert "cleanup  ok" in out
    assert cloud.left() == {}
    runs = [p for p in psutil.process_iter(["cmdline"])
            if str(cloud.home) in " ".join(p.info["cmdline"] or [])]
    assert runs == [], "the task's openadapt-evals run outlived the smoke"
