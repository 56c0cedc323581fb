"""A pool on your own hosts (``--cloud ssh``), rehearsed from the plan to the cleanup.

Two hosts, each a real OpenSSH server on a loopback port with a private root (``OA_VM_ROOT``)
holding what a KVM host has (no image cache yet), and the host stand-ins on its sessions' PATH
(docker, systemd, sudo: ``tests/support/host_standins.py``). The real CLI
(``tests/support/fake_hosts_cli.py``: the shipped ``ssh`` provider, only the tunnels' far ports
moved to the guests) plans, claims each host, ships the worker files, and systemd's stand-in
runs the shipped ``bootstrap.sh``: in ``build`` mode into the host's image cache where it holds
no prepared image (docker's stand-in plays dockur's install; the same build with WAA's and
dockur's own scripts: ``test_waa_entry_rehearsal.py``), then once per slot. Two workers
per host; each worker's Windows guest is a simulated worker behind its host's SSH tunnels, and
its QEMU monitor a :mod:`tests.support.qmp_machine` on the slot's QMP socket, so the shipped
``reset.sh`` puts a clean snapshot back before each task.

The slow rehearsal runs two workers per host from the plan to the cleanup, with a host killed
mid-run; the quick test builds each host's image once (a failed build first), puts one worker
on each host and pauses, extends, resumes and repairs the pool (the containers stop and come
back, each host's expiry timer follows the record), then a second pool reuses the images.
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
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest

from infra.worker import own_host, slots, units
from oa_vm.kit import timings
from oa_vm.model import state
from tests.conftest import ROOT
from tests.support.host_standins import (
    HostSshServer,
    calls,
    running_host,
    set_outcomes,
)
from tests.support.own_hosts import make_root, tree
from tests.support.sshd import generate_key, ipv6_loopback, require_sshd
from tests.support.waiting import wait_gone, wait_until
from tests.support.worker_proc import WorkerProcess, running_worker

pytestmark = [pytest.mark.integration, pytest.mark.sshd]

POOL = "lab"
PER_HOST = 2
CACHE = own_host.IMAGE_CACHE_DIR.lstrip("/") + "/"


@dataclass
class Host:
    """A rehearsal host: its sshd, its root and its stand-ins' state."""

    name: str
    root: Path
    server: HostSshServer
    fake: Path
    outcomes: dict[str, str]
    before: dict[str, str] = field(default_factory=dict)

    @property
    def address(self) -> str:
        host = self.server.host
        return f"{self.server.user}@{f'[{host}]' if ':' in host else host}:{self.server.port}"

    @property
    def key(self) -> str:
        return f"{self.server.host}:{self.server.port}"

    @property
    def cache(self) -> Path:
        return self.root / own_host.IMAGE_CACHE_DIR.lstrip("/")

    def builds(self) -> int:
        """How many image builds a create has started on this host."""
        return calls(self.fake).count(f"systemctl start --no-block {own_host.BUILD_UNIT}")

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

    def evals(self, *args: str, timeout: float = 600,
              env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen([str(Path(sys.executable).parent / "openadapt-evals"), *args],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                cwd=ROOT, env={**self.env, **(env or {})},
                                stdin=subprocess.DEVNULL)

    def create_args(self, *extra: str, per_host: int = PER_HOST) -> list[str]:
        args = ["pool-create", "--cloud", "ssh", "--pool", POOL, "--ssh-key", str(self.key),
                "--workers-per-host", str(per_host), *extra]
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
    require_sshd()
    base = tmp_path_factory.mktemp("own-hosts")
    key = generate_key(base / "id_ed25519")
    guests_count = 2 * PER_HOST
    with contextlib.ExitStack() as stack:
        guests = stack.enter_context(running_worker(base / "guests", count=guests_count,
                                                    auth=False))
        hosts: list[Host] = []
        for index, name in enumerate(("alpha", "beta")):
            # Short: a QMP socket's path has at most 108 bytes.
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=f"oa-{name}-")))
            make_root(root)
            # beta is reached over IPv6 (--host user@[::1]:PORT) where the machine has it
            listen = "::1" if name == "beta" and ipv6_loopback() is None else "127.0.0.1"
            server = stack.enter_context(running_host(
                base / name, listen=listen, OA_VM_ROOT=str(root),
                OA_VM_STATE_DIR=str(root / "var/lib/oa-vm"), OA_VM_POLL_S="0.2"))
            server.authorized_keys.write_text((base / "id_ed25519.pub").read_text())
            fake = server.fake_state
            first = index * PER_HOST
            outcomes = {"FAKE_SYSTEMD": "run", "FAKE_PROBE_AFTER": "1", "FAKE_INSTALL": "complete",
                        "FAKE_GUEST_WAA": guests.url(first, "waa"),
                        "OA_VM_RESET_CLOCK_URL": guests.url(first, "waa") + "/execute",
                        "OA_VM_CLOCK_COMMAND": "echo @MS@"}
            set_outcomes(fake, **outcomes)
            host = Host(name, root, server, fake, outcomes)
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


def _executions(results: Path) -> dict[str, dict[str, object]]:
    found: dict[str, dict[str, object]] = {}
    for path in results.glob("*/tasks/*/execution.json"):
        with contextlib.suppress(ValueError):
            found[path.parent.name] = json.loads(path.read_text())
    return found


@pytest.mark.slow  # minutes; quick: test_a_pool_on_own_hosts_pauses_extends_resumes_repairs...
@pytest.mark.timeout(1500)  # a 24-task run and a repair on a busy machine
def test_two_hosts_two_workers_each_from_the_plan_to_the_cleanup(lab: Lab) -> None:
    # create: the plan first, then each host claimed, its files shipped, a bootstrap per slot
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
    # wait: each slot's own status file, container and probes through its host's tunnel
    waited = lab.oa_vm("pool-wait", "--pool", POOL, "--timeout", "5m")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    for host in lab.hosts:
        for index in range(PER_HOST):
            assert "step=ready" in host.status(index), host.status(index)
    record = json.loads((lab.home / "pools" / POOL / "pool.json").read_text())
    assert [w["host"] for w in record["workers"]] == [h.address for h in lab.hosts
                                                      for _ in range(PER_HOST)]
    assert [w["state"] for w in record["workers"]] == ["ready"] * 4
    alpha_workers = {w["name"] for w in record["workers"]
                     if w["host"] == lab.hosts[0].address}

    # a run of the local suite with a clean reset per task; host alpha dies mid-run and stays
    # down past the run's patience for an SSH server (a short one here: with the default five
    # minutes, beta ran every task left before alpha's outage counted, and nothing was
    # quarantined, as it should be; test_run_ssh_outage.py has an outage within the patience)
    results = lab.home.parent / "results"
    run = lab.evals("run", "--pool", POOL, "--tasks", "local_all", "--agent", "oracle",
                    "--reset", "clean", "--run-name", "r1", "--results-dir", str(results),
                    env={"OA_EVALS_SSH_PATIENCE_S": "0.1"})
    # the slow rehearsal (a clean reset per task) keeps its own, longer wait
    wait_until(lambda: len(_executions(results)) >= 4, "four finished tasks", 300, interval=0.5)
    alpha = lab.hosts[0]
    alpha.server.stop()  # the host is gone: its sessions and its containers with it
    # read after the stop: no attempt can end on alpha later (its tunnels went with it)
    killed_at = datetime.now(UTC).isoformat()
    for state_file in (alpha.fake / "containers").glob("*"):
        state_file.unlink()
    output, _ = run.communicate(timeout=900)
    records = _executions(results)
    assert len(records) == 24, output
    assert {r["status"] for r in records.values()} == {"success"}, output
    assert all(r["reset"] == "clean" for r in records.values()), output
    # every task finished after the kill ran on the other host, and the tasks alpha held
    # (an attempt of theirs there) were run again there
    after = {task: r for task, r in records.items() if str(r["ended_at"]) > killed_at}
    assert after and all(r["worker"] not in alpha_workers for r in after.values()), output
    rerun = [r for r in after.values()
             if any(a.get("worker") in alpha_workers
                    for a in r.get("previous_attempts") or [])]  # type: ignore[union-attr]
    assert rerun, output
    # the host is quarantined once, as one host: one line names it (none of its workers is
    # quarantined alone), the tunnels say it is down once (not per worker and retry), and the
    # summary lists it once; only the tasks' own retry and give-back lines name its workers
    lines = [line for line in output.splitlines()
             if not line.startswith(("retry ", "[", "given back "))]
    named = [line for line in lines if alpha.key in line]
    said = [line for line in named if line.startswith(f"host {alpha.address} quarantined: ")]
    tunnels = [line for line in named if line.startswith(f"tunnels to {alpha.address} (")]
    summary = [line for line in named if line.startswith(f"Quarantined host {alpha.address} ")]
    down = [line for line in named if line.startswith(f"SSH endpoint {alpha.address} is down: ")]
    assert len(said) == 1 and len(tunnels) <= 1 and len(summary) == 1, output
    assert len(down) <= 1, output  # the outage said once, before the patience ran out
    assert sorted(named) == sorted(said + tunnels + summary + down), output
    assert not [line for line in lines if line.startswith("worker ") and "quarantined" in line
                and any(name in line for name in alpha_workers)], output
    metadata = json.loads(next(results.glob("*/metadata.json")).read_text())
    assert [h["host"] for h in metadata["quarantined_hosts"]] == [alpha.address], metadata

    # repair: the host is back; its workers' containers are gone, pool-repair restarts them
    alpha.server.start()
    repaired = lab.oa_vm("pool-repair", "--pool", POOL, "--timeout", "5m")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    record = json.loads((lab.home / "pools" / POOL / "pool.json").read_text())
    assert [w["state"] for w in record["workers"]] == ["ready"] * 4, record
    # ... and alpha's docker holds their containers again (the bootstraps' docker run)
    assert [(alpha.fake / "containers" / s.container).read_text().strip()
            for s in slots.host_slots(PER_HOST)] == ["up"] * PER_HOST
    said = next(line for line in repaired.stdout.splitlines() if "replaced" in line)
    assert sorted(alpha_workers) == sorted(n for n in alpha_workers if n in said), said

    # cleanup: what the pool added is gone; each host keeps its own files and the image cache
    # its create built
    cleaned = lab.oa_vm("pool-cleanup", "--pool", POOL, "--yes")
    assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
    for host in lab.hosts:
        assert {k: v for k, v in tree(host.root).items()
                if not k.startswith(CACHE)} == host.before
        assert sorted(p.name for p in (host.root / "var/lib/oa-vm").iterdir()) == [
            "image-cache"]
        assert not list((host.root / "etc/systemd/system").iterdir())
        assert not list((host.root / "opt").iterdir())


def _expiry_timers_follow_the_record(lab: Lab) -> dict[str, object]:
    """The record, once every host's expiry timer is set to the record's expiry."""
    record: dict[str, object] = json.loads((lab.home / "pools" / POOL / "pool.json").read_text())
    expires = state.parse_time(str(record["expires_at"]))
    assert expires is not None
    for host in lab.hosts:
        timer = (host.root / "etc/systemd/system/oa-vm-expiry.timer").read_text()
        assert f"OnCalendar={units.expiry_calendar(expires)}\n" in timer, (timer, expires)
    return record


def _containers(lab: Lab) -> list[str]:
    """Each host's worker container as docker's stand-in holds it (up, exited or gone)."""
    found = []
    for host in lab.hosts:
        path = host.fake / "containers" / slots.slot(0).container
        found.append(path.read_text().strip() if path.exists() else "gone")
    return found


@pytest.mark.long
def test_a_pool_on_own_hosts_builds_each_image_once_pauses_extends_resumes_repairs_and_purges(
    lab: Lab,
) -> None:
    for host in lab.hosts:  # hosts that never had a pool (the slow test leaves image caches)
        shutil.rmtree(host.root / "var/lib/oa-vm", ignore_errors=True)
    alpha, beta = lab.hosts
    earlier = [h.builds() for h in lab.hosts]

    def builds() -> list[int]:
        """The image builds each host started in this test."""
        return [h.builds() - n for h, n in zip(lab.hosts, earlier, strict=True)]
    # the plan, before anything changes: each host builds its image first, how long, from what
    planned = lab.oa_vm(*lab.create_args("--plan", "--json", per_host=1))
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    for host in lab.hosts:
        assert (f"host {host.address}: this pool first builds its prepared image into "
                f"{own_host.IMAGE_CACHE_DIR} from dockur's download of Windows "
                f"({timings.IMAGE_BUILD.text()}); later pools on it reuse it") in plan["notes"]
    assert plan["ready_in"] == timings.IMAGE_BUILD.text()
    assert [tree(h.root) for h in lab.hosts] == [h.before for h in lab.hosts]

    # a build that fails (beta cannot pull) fails the create in one line naming its step; both
    # hosts are released, beta's cache has no ready marker, alpha keeps the image it built
    set_outcomes(beta.fake, **beta.outcomes, FAKE_PULL_FAIL="1")
    failed = lab.oa_vm(*lab.create_args("--yes", per_host=1))
    errors = [line for line in failed.stderr.splitlines() if line.strip()]
    assert failed.returncode != 0 and len(errors) == 1, failed.stdout + failed.stderr
    assert errors[0].startswith(f"oa-vm: error: host {beta.address}: image build failed at pull: "
                                "could not pull windowsarena/winarena:latest"), errors
    assert f"sudo journalctl -u {own_host.BUILD_UNIT}" in errors[0], errors  # where its log is
    set_outcomes(beta.fake, **beta.outcomes)
    for host in lab.hosts:
        assert not (host.root / own_host.MARKER_FILE.lstrip("/")).exists()
        assert not list((host.root / "etc/systemd/system").iterdir())
    assert (alpha.cache / "oa-vm-image.ready").is_file()
    assert beta.cache.is_dir() and not (beta.cache / "oa-vm-image.ready").exists()
    assert not (lab.home / "pools" / POOL).exists()
    assert builds() == [1, 1]

    # a create interrupted while beta's build waits for Windows leaves a failed record, whose
    # cleanup releases both hosts and stops the build
    set_outcomes(beta.fake, **{**beta.outcomes, "FAKE_INSTALL": "", "FAKE_PROBE_AFTER": "never"})
    status = beta.root / own_host.BUILD_STATUS.lstrip("/")
    cli = [sys.executable, "-m", "tests.support.fake_hosts_cli"]
    create = subprocess.Popen([*cli, *lab.create_args("--yes", per_host=1)], cwd=ROOT,
                              env=lab.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, stdin=subprocess.DEVNULL)
    wait_until(lambda: status.exists() and "step=guest" in status.read_text(), "beta's build")
    create.send_signal(signal.SIGINT)
    output, _ = create.communicate(timeout=120)
    record = json.loads((lab.home / "pools" / POOL / "pool.json").read_text())
    assert create.returncode != 0 and record["state"] == "failed", output
    build = int((beta.fake / f"{own_host.BUILD_UNIT}.pid").read_text())
    cleaned = lab.oa_vm("pool-cleanup", "--pool", POOL, "--yes")
    assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
    wait_gone(build)
    for host in lab.hosts:
        assert [p.name for p in (host.root / "var/lib/oa-vm").iterdir()] == ["image-cache"]
        assert not list((host.root / "etc/systemd/system").iterdir())
    set_outcomes(beta.fake, **beta.outcomes)
    assert builds() == [1, 2]

    # the create builds beta's image from the user's ISO (alpha's is reused), uploaded to beta
    # only, then starts each host's worker
    iso = lab.home.parent / "Win11.iso"
    iso.write_bytes(bytes(32768) + b"\x01CD001\x01" + bytes(100_000))  # an ISO 9660 descriptor
    planned = lab.oa_vm(*lab.create_args("--iso", str(iso), "--plan", per_host=1))
    assert planned.returncode == 0, planned.stderr
    assert f"host {beta.address}: this pool first builds its prepared image into " \
        f"{own_host.IMAGE_CACHE_DIR} from your ISO {iso} (0.0 GB, uploaded over SSH)" \
        in planned.stdout, planned.stdout
    assert f"host {alpha.address}: this pool first builds" not in planned.stdout
    done = lab.oa_vm(*lab.create_args("--iso", str(iso), "--yes", per_host=1))
    assert done.returncode == 0, done.stdout + done.stderr
    assert builds() == [1, 3]
    assert f"host {beta.address}: image built into {own_host.IMAGE_CACHE_DIR}" in done.stdout
    uploaded = beta.root / "var/lib/oa-vm/iso/custom.iso"
    assert uploaded.read_bytes() == iso.read_bytes()
    assert not (alpha.root / "var/lib/oa-vm/iso").exists()
    build_run = [c for c in calls(beta.fake) if c.startswith("docker run")
                 and "--prepare-image true" in c][-1]
    assert f"-v {uploaded}:/custom.iso" in build_run, build_run
    info = (beta.cache / "oa-vm-image.ready").read_text()
    assert "waa_image=windowsarena/winarena@sha256:" in info, info
    for host in lab.hosts:
        assert (host.root / "var/lib/oa-vm/pool").read_text() == POOL + "\n"
        assert (host.root / "opt/oa-vm/bootstrap.sh").is_file()
    waited = lab.oa_vm("pool-wait", "--pool", POOL, "--timeout", "5m")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    for host in lab.hosts:
        # the worker's storage is filled from the cache the build made: by the worker's own
        # bootstrap, which the create starts and pool-wait waits for (on a busy machine it may
        # not have run yet when the create returns)
        storage = host.root / slots.slot(0).storage_dir.lstrip("/")
        assert (storage / "oa-vm-image.ready").read_text() == (
            host.cache / "oa-vm-image.ready").read_text()
    assert _containers(lab) == ["up", "up"]
    _expiry_timers_follow_the_record(lab)

    # pause: the containers stop, the record says paused, and the hosts' timers move to the
    # paused pool's expiry (days ahead), so a host does not release a paused pool at the old one
    paused = lab.oa_vm("pool-pause", "--pool", POOL, "--keep-days", "3")
    assert paused.returncode == 0, paused.stdout + paused.stderr
    assert _containers(lab) == ["exited", "exited"]
    record = _expiry_timers_follow_the_record(lab)
    assert record["state"] == "paused"
    assert [w["state"] for w in record["workers"]] == ["paused"] * 2  # type: ignore[attr-defined]
    # pool-extend moves them too
    extended = lab.oa_vm("pool-extend", "--pool", POOL, "--by", "5h")
    assert extended.returncode == 0, extended.stdout + extended.stderr
    assert _expiry_timers_follow_the_record(lab)["expires_at"] != record["expires_at"]
    # resume: the containers come back, the workers are ready, the timers follow once more
    resumed = lab.oa_vm("pool-resume", "--pool", POOL, "--timeout", "5m")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert _containers(lab) == ["up", "up"]
    record = _expiry_timers_follow_the_record(lab)
    assert [w["state"] for w in record["workers"]] == ["ready"] * 2  # type: ignore[attr-defined]

    # repair: a container gone from its host makes its worker lost; pool-repair runs the slot's
    # bootstrap again, which starts the container anew
    (lab.hosts[1].fake / "containers" / slots.slot(0).container).unlink()
    repaired = lab.oa_vm("pool-repair", "--pool", POOL, "--timeout", "5m")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    lost = record["workers"][1]["name"]  # type: ignore[index]
    assert f"replaced {lost}" in repaired.stdout, repaired.stdout
    assert _containers(lab) == ["up", "up"]
    record = json.loads((lab.home / "pools" / POOL / "pool.json").read_text())
    assert [w["state"] for w in record["workers"]] == ["ready"] * 2

    # cleanup leaves each host's own files and its image cache, nothing else
    cleaned = lab.oa_vm("pool-cleanup", "--pool", POOL, "--yes")
    assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
    for host in lab.hosts:
        after = tree(host.root)
        assert {k: v for k, v in after.items() if not k.startswith(CACHE)} == host.before
        assert f"{CACHE}oa-vm-image.ready" in after
        assert [p.name for p in (host.root / "var/lib/oa-vm").iterdir()] == ["image-cache"]

    # a second pool on the same hosts builds nothing: the plan says so, the create starts the
    # workers from the caches at once
    planned = lab.oa_vm(*lab.create_args("--plan", "--json", per_host=1))
    assert planned.returncode == 0, planned.stderr
    assert not [n for n in json.loads(planned.stdout)["notes"] if "builds its prepared" in n]
    again = lab.oa_vm(*lab.create_args("--yes", per_host=1))
    assert again.returncode == 0, again.stdout + again.stderr
    assert "building its prepared image" not in again.stdout, again.stdout
    assert "image built" not in again.stdout, again.stdout
    assert builds() == [1, 3]
    waited = lab.oa_vm("pool-wait", "--pool", POOL, "--timeout", "5m")
    assert waited.returncode == 0, waited.stdout + waited.stderr

    # --purge removes the cache too: each host is as it was before the first plan
    cleaned = lab.oa_vm("pool-cleanup", "--pool", POOL, "--purge", "--yes")
    assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
    for host in lab.hosts:
        assert tree(host.root) == host.before
        assert not (host.root / "var/lib/oa-vm").exists()
        assert not list((host.root / "opt").iterdir())


def test_every_host_whose_build_or_start_failed_is_named_in_one_error(lab: Lab) -> None:
    for host in lab.hosts:  # hosts that never had a pool
        shutil.rmtree(host.root / "var/lib/oa-vm", ignore_errors=True)
    alpha, beta = lab.hosts

    def create(**outcomes: dict[str, str]) -> list[str]:
        """A create with each host's own outcomes; the lines of its error."""
        for host in lab.hosts:
            set_outcomes(host.fake, **{**host.outcomes, **outcomes.get(host.name, {})})
        try:
            failed = lab.oa_vm(*lab.create_args("--yes", per_host=1))
        finally:
            for host in lab.hosts:
                set_outcomes(host.fake, **host.outcomes)
        assert failed.returncode != 0 and "Traceback" not in failed.stderr, failed.stderr
        # nothing of the pool is left anywhere, here or on either host
        assert not (lab.home / "pools" / POOL).exists()
        for host in lab.hosts:
            assert not (host.root / own_host.MARKER_FILE.lstrip("/")).exists()
            assert not list((host.root / "etc/systemd/system").iterdir())
        return [line for line in failed.stderr.splitlines() if line.strip()]

    # both builds fail, each at its own step: one error names both, with their steps
    errors = create(alpha={"FAKE_PULL_FAIL": "1"},
                    beta={"FAKE_INSTALL": "", "FAKE_EXIT_AFTER": "0"})  # exits, no Windows
    assert errors[0] == (f"oa-vm: error: pool {POOL} failed on 2 of 2 hosts; nothing of it is "
                         "left on any host:"), errors
    assert errors[1].startswith(f"host {alpha.address}: image build failed at pull: could not "
                                "pull windowsarena/winarena:latest"), errors
    assert errors[2].startswith(f"host {beta.address}: image build failed at guest: Windows "
                                "answered, but the storage volume shows no completed install"
                                ), errors
    assert len(errors) == 3, errors
    for host in lab.hosts:
        assert not (host.cache / "oa-vm-image.ready").exists()

    # both images build, neither host's workers start: both are named, both keep their image
    errors = create(**{h.name: {"FAKE_SYSTEMCTL_FAIL": slots.slot(0).bootstrap}
                       for h in lab.hosts})
    assert errors[0] == (f"oa-vm: error: pool {POOL} failed on 2 of 2 hosts; nothing of it is "
                         "left on any host:"), errors
    for line, host in zip(errors[1:], lab.hosts, strict=True):
        assert line.startswith(f"host {host.address}: its workers did not start: Job for "
                               f"{slots.slot(0).bootstrap}.service failed"), errors
    for host in lab.hosts:
        assert (host.cache / "oa-vm-image.ready").is_file()
