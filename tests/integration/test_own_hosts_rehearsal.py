"""A pool on your own hosts (``--cloud ssh``), rehearsed from the plan to the cleanup.

Two hosts, each a real OpenSSH server on a loopback port with a private root (``OA_VM_ROOT``)
holding what a KVM host has and a prepared image in its image cache, and the host stand-ins on
its sessions' PATH (docker, systemd, sudo: ``tests/support/host_standins.py``). The real CLI
(``tests/support/fake_hosts_cli.py``: the shipped ``ssh`` provider, only the tunnels' far ports
moved to the guests) plans, claims each host, ships the worker files, and systemd's stand-in
runs the shipped ``bootstrap.sh`` once per slot. Two workers per host; each worker's Windows
guest is a simulated worker behind its host's SSH tunnels, and its QEMU monitor a
:mod:`tests.support.qmp_machine` on the slot's QMP socket, so the shipped ``reset.sh`` puts a
clean snapshot back before each task.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from infra.worker import slots
from tests.conftest import ROOT
from tests.support import sshd as sshd_support
from tests.support.host_standins import HostSshServer, set_outcomes, write_standins
from tests.support.own_hosts import make_root, tree
from tests.support.sshd import generate_key
from tests.support.worker_proc import WorkerProcess, running_worker

pytestmark = [pytest.mark.integration, pytest.mark.sshd]

POOL = "lab"
PER_HOST = 2


@dataclass
class Host:
    """A rehearsal host: its sshd, its root and its stand-ins' state."""

    name: str
    root: Path
    server: HostSshServer
    fake: Path
    before: dict[str, str] = field(default_factory=dict)

    @property
    def address(self) -> str:
        return f"{self.server.user}@127.0.0.1:{self.server.port}"

    @property
    def key(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    def status(self, slot: int) -> str:
        path = self.root / slots.slot(slot).status_file.lstrip("/")
        return path.read_text() if path.exists() else ""


@dataclass
class Lab:
    hosts: list[Host]
    key: Path
    home: Path
    env: dict[str, str]
    guests: WorkerProcess

    def oa_vm(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "tests.support.fake_hosts_cli", *args],
                              capture_output=True, text=True, cwd=ROOT, env=self.env,
                              timeout=timeout, stdin=subprocess.DEVNULL, check=False)

    def evals(self, *args: str, timeout: float = 600) -> subprocess.Popen[str]:
        return subprocess.Popen([str(Path(sys.executable).parent / "openadapt-evals"), *args],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                cwd=ROOT, env=self.env, stdin=subprocess.DEVNULL)

    def create_args(self, *extra: str) -> list[str]:
        args = ["pool-create", "--cloud", "ssh", "--pool", POOL, "--ssh-key", str(self.key),
                "--workers-per-host", str(PER_HOST), *extra]
        for host in self.hosts:
            args += ["--host", host.address]
        return args


@contextlib.contextmanager
def _monitor(socket_path: Path, scoring_url: str) -> Iterator[None]:
    """The slot's QEMU monitor, whose machine is its simulated guest."""
    socket_path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.qmp_machine", str(socket_path),
                             scoring_url], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "listening", proc.stdout.read()
        yield
    finally:
        proc.kill()
        proc.wait(timeout=60)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    if not sshd_support.sshd_available():
        pytest.skip("OpenSSH server not installed (/usr/sbin/sshd; apt-get install openssh-server)")
    base = tmp_path_factory.mktemp("own-hosts")
    key = generate_key(base / "id_ed25519")
    bin_dir = write_standins(base / "bin")
    guests_count = 2 * PER_HOST
    with contextlib.ExitStack() as stack:
        guests = stack.enter_context(running_worker(base / "guests", count=guests_count,
                                                    auth=False))
        hosts: list[Host] = []
        for index, name in enumerate(("alpha", "beta")):
            # Short: a QMP socket's path has at most 108 bytes.
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=f"oa-{name}-")))
            make_root(root, image_cache=True)
            fake = base / name / "fake"
            server = HostSshServer(base / name / "sshd", bin_dir, fake, OA_VM_ROOT=str(root),
                                   OA_VM_STATE_DIR=str(root / "var/lib/oa-vm"))
            server.authorized_keys.write_text((base / "id_ed25519.pub").read_text())
            server.start()
            stack.callback(server.stop)
            first = index * PER_HOST
            set_outcomes(fake, FAKE_SYSTEMD="run", FAKE_PROBE_AFTER="1",
                         FAKE_GUEST_WAA=guests.url(first, "waa"),
                         OA_VM_RESET_CLOCK_URL=guests.url(first, "waa") + "/execute",
                         OA_VM_CLOCK_COMMAND="echo @MS@")
            host = Host(name, root, server, fake)
            host.before = tree(root)
            hosts.append(host)
            for s in slots.host_slots(PER_HOST):
                stack.enter_context(_monitor(root / s.qmp_socket.lstrip("/"),
                                             guests.url(first + s.index, "scoring")))
        config = base / "fake-hosts.json"
        config.write_text(json.dumps({"guests": {
            host.key: [[guests.workers[i * PER_HOST + s]["waa_port"],
                        guests.workers[i * PER_HOST + s]["scoring_port"]]
                       for s in range(PER_HOST)]
            for i, host in enumerate(hosts)}}))
        home = base / "home"
        env = {**os.environ, "OA_VM_HOME": str(home), "FAKE_HOSTS": str(config),
               "PYTHONUNBUFFERED": "1"}
        yield Lab(hosts, key, home, env, guests)


def test_create_plans_first_then_claims_each_host_and_boots_two_workers(lab: Lab) -> None:
    done = lab.oa_vm(*lab.create_args("--yes"))
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert out.index("Plan: 4 worker(s) on ssh") < out.index("claiming it for pool")
    for host in lab.hosts:
        assert (host.root / "var/lib/oa-vm/pool").read_text() == POOL + "\n"
        units = host.root / "etc/systemd/system"
        assert (units / "oa-vm-expiry.timer").is_file()
        for s in slots.host_slots(PER_HOST):
            assert (units / f"oa-vm-bootstrap-{s.name}.service").is_file()
    waited = lab.oa_vm("pool-wait", "--pool", POOL, "--timeout", "5m")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    for host in lab.hosts:
        for index in range(PER_HOST):
            assert "step=ready" in host.status(index), host.status(index)
    record = json.loads((lab.home / "pools" / POOL / "pool.json").read_text())
    assert {w["host"] for w in record["workers"]} == {h.address for h in lab.hosts}
    assert [w["state"] for w in record["workers"]] == ["ready"] * 4
