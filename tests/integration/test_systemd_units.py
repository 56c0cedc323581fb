"""The worker's units under a real systemd: every start a unit's program waits for returns.

``bootstrap.sh`` (run by ``oa-vm-bootstrap.service``, a oneshot that is "activating" for as long
as it runs) starts docker, the egress timer, the scoring server and its bridge with ``systemctl
enable --now`` and waits for each start; ``expiry_arm.sh`` (``oa-vm-expiry-arm.service``)
restarts the power-off timer. A unit ordered ``After=`` the unit whose program starts it would
wait for that program to end first: neither ever would.

systemd itself runs here (``/usr/lib/systemd/systemd --system``) as PID 1 of its own PID and
mount namespaces (and its own hostname, IPC, network and cgroup namespaces), with the shipped
units' dependencies as written. Only what cannot run here is
replaced: each unit's programs (the bootstrap's by the same ``systemctl enable --now`` call,
the servers' by a sleep) and the settings file they read, ``docker.service`` and the standard
targets by empty units. Its namespace sees none of this machine's units or generators, and has
its own ``/run``, ``/tmp`` and ``/var``: nothing starts but these units. The drop-ins the
host's setup writes (``lib.sh``'s ``write_docker_dropin``, run here) sit beside them, read by
this systemd as the host's reads them: the stand-in ``docker.service`` sets no stop timeout, as
Debian's and Ubuntu's do not. What it leaves on
the machine: the empty cgroups systemd makes for them (under this process's cgroup; on a
cgroup v1 machine whose processes sit at its root, at the root).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from infra.worker import slots
from infra.worker.cloud_init import poweroff_units
from tests.support.host_standins import lib_value, setup_dropins
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
UNITS = ROOT / "infra" / "worker" / "systemd"
SYSTEMD = Path("/usr/lib/systemd/systemd")
EMPTY_TARGETS = ("sysinit.target", "basic.target", "shutdown.target", "network-online.target",
                 "multi-user.target", "timers.target", "time-set.target", "time-sync.target",
                 "oa-test.target")
STANDIN_DOCKER = """[Unit]
Description=docker (stand-in)
DefaultDependencies=no

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true
"""
NAMESPACE = """set -e
mount --make-rprivate /
for d in /usr/lib/systemd/system /lib/systemd/system /usr/local/lib/systemd/system \\
    /usr/lib/systemd/system-generators /lib/systemd/system-generators \\
    /usr/local/lib/systemd/system-generators /etc/systemd/system-generators; do
  if [ -d "$d" ]; then mount --bind "$EMPTY" "$d"; fi
done
mount --bind "$UNITS" /etc/systemd/system
for d in /run /tmp /var; do mount -t tmpfs tmpfs "$d"; done
mkdir -p /run/systemd/system
exec "$SYSTEMD" --system --unit=oa-test.target
"""


def _unavailable() -> str | None:
    if os.geteuid() != 0:
        return "systemd as PID 1 of a namespace needs root"
    for tool in ("unshare", "nsenter"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if not SYSTEMD.is_file() or not Path("/etc/systemd/system").is_dir():
        return f"systemd is not installed ({SYSTEMD}, /etc/systemd/system)"
    return None


def _played(text: str, exec_start: str) -> str:
    """``text`` with its programs replaced by ``exec_start`` and without the settings file they
    read (dependencies kept as written)."""
    text = re.sub(r"^(ExecStop|EnvironmentFile)=.*\n", "", text, flags=re.MULTILINE)
    return re.sub(r"^ExecStart=.*(\n.*\\$)*\n?.*$", f"ExecStart={exec_start}", text, count=1,
                  flags=re.MULTILINE)


def _host_units(folder: Path) -> list[str]:
    """The one-worker host's units, a second slot's and the expiry timer's, played, into
    ``folder``; returns the units whose programs start others (the bootstraps, the expiry's
    arming)."""
    folder.mkdir()
    s = slots.slot(1)
    hosts = [
        ("oa-vm-bootstrap", "oa-vm-scoring", "oa-vm-bridge",
         *((UNITS / f"{name}.service").read_text(encoding="utf-8")
           for name in ("oa-vm-bootstrap", "oa-vm-scoring", "oa-vm-bridge"))),
        (s.bootstrap, f"oa-vm-scoring-{s.name}", f"oa-vm-bridge-{s.name}",
         slots.bootstrap_unit(s), slots.scoring_unit(s), slots.bridge_unit(s)),
    ]
    for bootstrap, scoring, bridge, boot_text, scoring_text, bridge_text in hosts:
        # the starts bootstrap.sh waits for, in its order (start_docker, apply_egress,
        # finish_pool; test_cloud_bootstrap_rehearsal.py sees the calls)
        start = ("/bin/sh -c 'systemctl enable --now docker && systemctl enable --now "
                 f"oa-vm-egress.timer && systemctl enable --now {scoring}.service "
                 f"{bridge}.service'")
        (folder / f"{bootstrap}.service").write_text(_played(boot_text, start))
        (folder / f"{scoring}.service").write_text(_played(scoring_text, "/bin/sleep 1000"))
        (folder / f"{bridge}.service").write_text(_played(bridge_text, "/bin/sleep 1000"))
    (folder / "docker.service").write_text(STANDIN_DOCKER)
    # the drop-ins the host's setup writes, as its own function writes them
    for name, text in setup_dropins(folder.parent / "setup-root").items():
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_text(text)
    (folder / "oa-vm-egress.timer").write_text((UNITS / "oa-vm-egress.timer").read_text())
    (folder / "oa-vm-egress.service").write_text(
        _played((UNITS / "oa-vm-egress.service").read_text(), "/bin/true"))
    # expiry_arm.sh's restart of the power-off timer (its time moved); the power-off is played
    arm = "/bin/sh -c 'systemctl daemon-reload && systemctl restart oa-vm-expiry.timer'"
    (folder / "oa-vm-expiry-arm.service").write_text(
        _played((UNITS / "oa-vm-expiry-arm.service").read_text(), arm))
    for path, text in poweroff_units(datetime(2099, 1, 1, tzinfo=UTC)).items():
        name = Path(path).name
        (folder / name).write_text(_played(text, "/bin/true") if name.endswith(".service")
                                   else text)
    for target in EMPTY_TARGETS:
        (folder / target).write_text("[Unit]\nDefaultDependencies=no\n")
    return [bootstrap for bootstrap, *_ in hosts] + ["oa-vm-expiry-arm"]  # the starters


class Systemd:
    """systemd as PID 1 of its own namespaces; :meth:`ctl` runs systemctl against it."""

    def __init__(self, units: Path, empty: Path) -> None:
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "container": "oa-test",
               "EMPTY": str(empty), "UNITS": str(units), "SYSTEMD": str(SYSTEMD)}
        self.proc = subprocess.Popen(
            ["unshare", "--pid", "--fork", "--mount", "--mount-proc", "--kill-child", "--uts",
             "--ipc", "--net", "--cgroup",
             "bash", "-c", NAMESPACE], env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self.pid = 0

    def init_pid(self) -> int:
        """The namespace's PID 1 (systemd), as this machine numbers it; 0 until it runs."""
        for child in Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text(
                ).split():
            if Path(f"/proc/{child}/exe").resolve() == SYSTEMD.resolve():
                return int(child)
        return 0

    def ctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["nsenter", "-t", str(self.pid), "-m", "-p", "systemctl", *args],
                              capture_output=True, text=True, timeout=60, check=False)

    def running(self) -> bool:
        self.pid = self.pid or self.init_pid()
        return bool(self.pid) and self.ctl("is-system-running").stdout.strip() in (
            "running", "degraded")

    def stop(self) -> None:
        """Ends the namespace (its PID 1 with SIGKILL: every process in it ends too)."""
        with_pid = self.pid or self.init_pid()
        if with_pid:
            os.kill(with_pid, signal.SIGKILL)
        self.proc.wait(timeout=60)


@pytest.fixture
def systemd(tmp_path: Path) -> Iterator[tuple[Systemd, list[str]]]:
    reason = _unavailable()
    if reason:
        pytest.skip(reason)
    bootstraps = _host_units(tmp_path / "units")
    (tmp_path / "empty").mkdir()
    manager = Systemd(tmp_path / "units", tmp_path / "empty")
    try:
        wait_until(manager.running, "systemd to run as PID 1 of its namespace")
        yield manager, bootstraps
    finally:
        manager.stop()


def test_every_start_a_units_program_waits_for_returns(
    systemd: tuple[Systemd, list[str]],
) -> None:
    manager, starters = systemd
    names = [f"{name}.service" for name in starters]
    assert manager.ctl("start", "--no-block", *names).returncode == 0

    def no_job_left() -> bool:
        return "No jobs running." in manager.ctl("list-jobs", "--no-pager").stdout

    wait_until(no_job_left, lambda: "the units' starts to end; systemd's jobs:\n"
               + manager.ctl("list-jobs", "--no-pager").stdout)
    states = manager.ctl("show", "-p", "Id,ActiveState,Result", *names).stdout
    assert "Result=success" in states and "failed" not in states, states
    for unit in ("oa-vm-scoring.service", "oa-vm-bridge.service", "oa-vm-scoring-w1.service",
                 "oa-vm-bridge-w1.service", "oa-vm-egress.timer", "oa-vm-expiry.timer",
                 "oa-vm-bootstrap.service", "oa-vm-bootstrap-w1.service"):
        assert manager.ctl("is-active", unit).stdout.strip() == "active", unit


DOCKERD_GRACE_S = 5
"""What dockerd waits beyond a container's stop timeout when it shuts down (moby's
``ShutdownTimeout``: the longest container stop timeout plus 5 s)."""
STOPS_THE_CONTAINER = re.compile(r"^ExecStop(Post)?=.*\bdocker\s+(stop|kill|rm)\b", re.MULTILINE)


def _seconds(span: str) -> float:
    """A systemd time span as ``systemctl show`` prints it (``3min``, ``1min 30s``,
    ``infinity``) in seconds."""
    if span == "infinity":
        return float("inf")
    scale = {"us": 1e-6, "ms": 1e-3, "s": 1, "min": 60, "h": 3600, "d": 86400}
    parts = re.findall(r"([0-9.]+)(us|ms|s|min|h|d)", span)
    assert parts and "".join(f"{n}{u}" for n, u in parts) == span.replace(" ", ""), span
    return sum(float(n) * scale[u] for n, u in parts)


def _shipped_unit_texts() -> dict[str, str]:
    """Every unit a host of ours may run, as shipped (static files, a slot's, the expiry's)."""
    s = slots.slot(1)
    texts = {p.name: p.read_text(encoding="utf-8") for p in UNITS.iterdir() if p.is_file()}
    texts.update({f"{s.bootstrap}.service": slots.bootstrap_unit(s),
                  f"oa-vm-scoring-{s.name}.service": slots.scoring_unit(s),
                  f"oa-vm-bridge-{s.name}.service": slots.bridge_unit(s)})
    texts.update({Path(path).name: text for path, text in
                  poweroff_units(datetime(2099, 1, 1, tzinfo=UTC)).items()})
    return texts


def test_every_unit_that_stops_the_container_gives_it_its_stop_timeout(
    systemd: tuple[Systemd, list[str]],
) -> None:
    # On a host shutdown systemd stops docker.service, whose daemon stops the WAA container
    # within the container's stop timeout (Windows shutting down): a unit whose own stop
    # timeout is shorter is killed first, and Windows with it.
    manager, _ = systemd
    container_s = int(lib_value("OA_VM_STOP_TIMEOUT_S"))
    assert container_s >= 60, container_s  # the value bootstrap.sh gives docker run
    stopping = ["docker.service", *(name for name, text in _shipped_unit_texts().items()
                                     if STOPS_THE_CONTAINER.search(text))]
    for unit in stopping:
        span = manager.ctl("show", "-P", "TimeoutStopUSec", unit).stdout.strip()
        assert _seconds(span) > container_s + DOCKERD_GRACE_S, (
            f"{unit} stops within {span}, the container within {container_s} s")
