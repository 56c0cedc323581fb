"""The guest's egress boundary, rehearsed with real network namespaces and real nftables.

Five namespaces the test makes and removes: the *guest* (Windows' place, 172.30.0.2 behind
dockur's bridge ``docker``), the *container* (dockur's bridge and NAT, as dockur sets them up),
the *host* (the bridge ``docker0`` towards the container, its own services), the *user*'s own
container on the same ``docker0`` (on your own host it must pass untouched) and the *world*
behind the host (the instance metadata service at 169.254.169.254, another worker at 10.9.0.2,
and two public "sites" in TEST-NET-2). Nothing leaves these namespaces. The shipped
``egress.sh`` runs in the host namespace as the host runs it, with Docker's daemon the one thing
played (``docker inspect`` answers the container's PID); the guest's probes are real TCP
connections.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from infra.worker import own_host, slots, units
from infra.worker.cloud_init import egress_files
from oa_vm.clouds.hosts import install
from tests.support.host_standins import write_shipped
from tests.support.pool_programs import make_settings

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("nft") or not shutil.which("ip"),
        reason="needs root, ip and nft (Debian's iproute2 and nftables; .ci/run installs them)",
    ),
]

IMDS = "169.254.169.254:80"
OTHER_WORKER = "10.9.0.2:22"
HOST_SSH = "172.17.0.1:22"
HOST_SSH_UPLINK = "10.9.0.1:22"
HOST_SCORING = "172.17.0.1:5051"
CONTAINER_SERVICE = "172.30.0.1:8006"
SITE = "198.51.100.10:80"
SITE_OTHER_PORT = "198.51.100.10:8443"
UNLISTED = "198.51.100.20:80"
FORBIDDEN = (IMDS, OTHER_WORKER, HOST_SSH, HOST_SSH_UPLINK, HOST_SCORING, CONTAINER_SERVICE)

REACHED = {
    "none": set(),
    "allowlist": {SITE},
    "web": {SITE, UNLISTED},
    "open": {SITE, SITE_OTHER_PORT, UNLISTED},
}
"""Which of the public destinations each mode lets the guest reach (the forbidden ones never)."""

LISTENER = textwrap.dedent("""
    import socket, sys, threading
    socks = []
    for target in sys.argv[1:]:
        a, p = target.rsplit(":", 1)
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((a, int(p))); s.listen(16); socks.append(s)
    def serve(s):
        while True:
            c, _ = s.accept(); c.close()
    for s in socks:
        threading.Thread(target=serve, args=(s,), daemon=True).start()
    print("ready", flush=True)
    threading.Event().wait()
""")

FAKE_GUEST = textwrap.dedent("""
    # WAA's guest server as far as the proof uses it: POST /execute runs the command (a list,
    # shell false) and answers with its output, as server/main.py does.
    import json, socketserver, subprocess, sys
    from http.server import BaseHTTPRequestHandler, HTTPServer
    class Server(HTTPServer):
        def server_bind(self):
            # HTTPServer would look up its own name in DNS first: no DNS in the guest's place
            socketserver.TCPServer.server_bind(self)
            self.server_name, self.server_port = "guest", 5000
    class H(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            r = subprocess.run(body["command"], shell=body.get("shell", False),
                               capture_output=True, text=True, timeout=120)
            out = json.dumps({"status": "success", "output": r.stdout, "error": r.stderr,
                              "returncode": r.returncode}).encode()
            self.send_response(200); self.send_header("Content-Length", str(len(out)))
            self.end_headers(); self.wfile.write(out)
        def log_message(self, *a):
            pass
    server = Server((sys.argv[1], 5000), H)
    print("ready", flush=True)
    server.serve_forever()
""")

DOCKER = """#!/bin/bash
# Docker's daemon, played: 'docker inspect -f {{.State.Pid}} NAME' names the container's process
# (a process in the container's namespace); nothing else is asked of it here.
pid="$FAKE_CONTAINERS/${*: -1}.pid"
[ -f "$pid" ] || { echo "Error: No such object: ${*: -1}" >&2; exit 1; }
cat "$pid"
"""


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=60, check=check)


def in_ns(ns: str, *cmd: str) -> None:
    sh("ip", "netns", "exec", ns, *cmd)


class Topology:
    """The five namespaces, their links and listeners; ``index``: the worker's slot on its host
    (its guest at ``172.30.<index>.2``, dockur's bridge at ``.1``, as ``infra/worker/slots.py``
    and dockur's ``network.sh`` give them)."""

    def __init__(self, tmp: Path, index: int = 0, mac: str = "") -> None:
        tag = f"oae{os.getpid() % 100000}"
        self.guest_ip, self.gateway = f"172.30.{index}.2", f"172.30.{index}.1"
        self.container_name = slots.slot(index).container
        self.guest, self.ctr, self.host, self.world, self.user = (f"{tag}{n}" for n in "gchwu")
        self.mac = mac
        """The container's MAC address as ``docker run --mac-address`` gives it (your own
        host); none: the kernel's own."""
        self.tmp = tmp
        self.procs: list[subprocess.Popen[str]] = []

    def up(self) -> None:
        for ns in (self.guest, self.ctr, self.host, self.world, self.user):
            sh("ip", "netns", "add", ns)
            in_ns(ns, "ip", "link", "set", "lo", "up")
        g, c, h, w, u = self.guest, self.ctr, self.host, self.world, self.user
        # world <-> host: the host's uplink (10.9.0.1) in the subnet shared with another worker
        sh("ip", "link", "add", "eh", "netns", h, "type", "veth", "peer", "ew", "netns", w)
        in_ns(h, "ip", "addr", "add", "10.9.0.1/24", "dev", "eh")
        in_ns(w, "ip", "addr", "add", "10.9.0.2/24", "dev", "ew")
        for addr in ("169.254.169.254/32", "198.51.100.10/32", "198.51.100.20/32"):
            in_ns(w, "ip", "addr", "add", addr, "dev", "lo")
        # host <-> containers: Docker's default bridge, docker0 on the host, with the worker's
        # container and a container of the host's owner (the user's own) on it
        in_ns(h, "ip", "link", "add", "docker0", "type", "bridge")
        in_ns(h, "ip", "addr", "add", "172.17.0.1/16", "dev", "docker0")
        for port, ns, addr in (("vc", c, "172.17.0.2/16"), ("vu", u, "172.17.0.3/16")):
            sh("ip", "link", "add", port, "netns", h, "type", "veth", "peer", "eth0", "netns", ns)
            in_ns(h, "ip", "link", "set", port, "master", "docker0")
            in_ns(ns, "ip", "addr", "add", addr, "dev", "eth0")
        if self.mac:
            in_ns(c, "ip", "link", "set", "eth0", "address", self.mac)
        # container <-> guest: dockur's bridge 'docker' with the guest at 172.30.0.2
        in_ns(c, "ip", "link", "add", "docker", "type", "bridge")
        in_ns(c, "ip", "addr", "add", f"{self.gateway}/24", "dev", "docker")
        sh("ip", "link", "add", "tap0", "netns", c, "type", "veth", "peer", "eth0", "netns", g)
        in_ns(c, "ip", "link", "set", "tap0", "master", "docker")
        in_ns(g, "ip", "addr", "add", f"{self.guest_ip}/24", "dev", "eth0")
        for ns, dev in ((h, "eh"), (w, "ew"), (h, "docker0"), (h, "vc"), (h, "vu"), (c, "eth0"),
                        (u, "eth0"), (c, "docker"), (c, "tap0"), (g, "eth0")):
            in_ns(ns, "ip", "link", "set", dev, "up")
        in_ns(g, "ip", "route", "add", "default", "via", self.gateway)
        for ns in (c, u):
            in_ns(ns, "ip", "route", "add", "default", "via", "172.17.0.1")
        in_ns(h, "ip", "route", "add", "default", "via", "10.9.0.2")
        subnet = self.guest_ip.rsplit(".", 1)[0] + ".0/24"
        in_ns(h, "ip", "route", "add", subnet, "via", "172.17.0.2")
        in_ns(w, "ip", "route", "add", "172.17.0.0/16", "via", "10.9.0.1")
        for ns in (c, h):
            in_ns(ns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        # dockur's NAT of the guest's subnet out of the container (dockur writes it with iptables)
        nat = ("table ip dockur {\n chain post {\n  type nat hook postrouting priority 100;\n"
               f'  ip saddr {subnet} oifname != "docker" masquerade\n }}\n}}\n')
        subprocess.run(["ip", "netns", "exec", c, "nft", "-f", "-"], input=nat, text=True,
                       check=True, timeout=60)
        self.listen(w, IMDS, OTHER_WORKER, SITE, SITE_OTHER_PORT, UNLISTED)
        self.listen(h, "0.0.0.0:22", "0.0.0.0:5051")
        self.listen(c, "0.0.0.0:8006")
        self.container_pid = self.start(c, "sleep", "3600", wait=False).pid
        self.start(g, sys.executable, "-c", FAKE_GUEST, self.guest_ip,
                   env_path=str(self.tmp / "guest-bin"))

    def start(self, ns: str, *cmd: str, wait: bool = True,
              env_path: str | None = None) -> subprocess.Popen[str]:
        env = dict(os.environ)
        if env_path:
            env["PATH"] = f"{env_path}:{env['PATH']}"
        proc = subprocess.Popen(["ip", "netns", "exec", ns, *cmd], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, env=env)
        self.procs.append(proc)
        if wait:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
        return proc

    def listen(self, ns: str, *targets: str) -> None:
        self.start(ns, sys.executable, "-c", LISTENER, *targets)

    def reachable(self, *targets: str, ns: str = "") -> set[str]:
        """Which of ``targets`` answer a TCP connection from the guest (or from ``ns``)."""
        from infra.worker import egress_probe

        out = sh("ip", "netns", "exec", ns or self.guest, sys.executable, egress_probe.__file__,
                 "run", *targets).stdout
        return {t for t, ok in json.loads(out).items() if ok}

    def down(self) -> None:
        for proc in self.procs:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)
        for ns in (self.guest, self.ctr, self.host, self.world, self.user):
            sh("ip", "netns", "del", ns, check=False)


@pytest.fixture()
def net(tmp_path: Path) -> Iterator[Topology]:
    bin_dir = tmp_path / "guest-bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    topo = Topology(tmp_path)
    try:
        topo.up()
        yield topo
    finally:
        topo.down()


def egress(net: Topology, tmp: Path, command: str, mode: str, allowlist: str = "",
           slot: str = "", host_workers: int = 0,
           own_host: bool = False) -> subprocess.CompletedProcess[str]:
    """Run the shipped ``egress.sh COMMAND`` in the host's namespace, as the host runs it;
    ``host_workers``: a host with that many workers (their slots' settings files), ``slot``
    the one named (``OA_VM_SLOT``, as a slot's bootstrap runs it; none: as the host's timer).
    ``own_host``: the files a create on your own host writes (``--cloud ssh``), slot ``w0``."""
    ship = tmp / "opt-oa-vm"
    if not ship.exists():
        write_shipped(ship)
    root = tmp / "root"
    if own_host:  # the tables, each slot's settings (its mode and MAC), as the install writes
        written = install.host_files("lab", "root", datetime(2026, 12, 3, tzinfo=UTC), 1,
                                     egress=mode, allowlist=allowlist)
        for path, text in written.items():
            if path.startswith((f"{units.SHIP_DIR}/egress", slots.SLOT_ENV_DIR)):
                target = (ship / path.removeprefix(f"{units.SHIP_DIR}/") if
                          path.startswith(units.SHIP_DIR) else root / path.lstrip("/"))
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
    else:  # the pool's own files, as its cloud-init carries them for this mode
        settings = make_settings("aws", egress=mode, egress_allowlist=allowlist)
        for name, content in egress_files(settings).items():
            (ship / name).write_text(content, encoding="utf-8")
    (root / "etc").mkdir(parents=True, exist_ok=True)
    (root / "etc" / "resolv.conf").write_text("nameserver 10.9.0.53\n", encoding="utf-8")
    (root / "etc" / "hosts").write_text("198.51.100.10 site.test\n", encoding="utf-8")
    bin_dir = tmp / "host-bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "docker").write_text(DOCKER, encoding="utf-8")
    (bin_dir / "docker").chmod(0o755)
    containers = tmp / "containers"
    containers.mkdir(exist_ok=True)
    (containers / f"{net.container_name}.pid").write_text(str(net.container_pid), encoding="utf-8")
    for s in slots.host_slots(host_workers):  # the slot's folder, as its bootstrap made it
        (root / s.status_file.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
    for path, text in slots.host_files(host_workers).items():
        if path.startswith(slots.SLOT_ENV_DIR):
            (root / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
            (root / path.lstrip("/")).write_text(text, encoding="utf-8")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OA_VM_")},
           "PATH": f"{bin_dir}:{os.environ['PATH']}", "OA_VM_ROOT": str(root),
           "OA_VM_WAA_URL": f"http://{net.guest_ip}:5000",
           "OA_VM_EGRESS_PROBE": SITE if mode != "none" else "",
           "FAKE_CONTAINERS": str(containers), **({"OA_VM_SLOT": slot} if slot else {}),
           # your own host: the mode is in each slot's settings only (the image build reads none)
           **({"OA_VM_SLOT": "w0"} if own_host else {"OA_VM_EGRESS": mode})}
    # The host resolves the allow-list's names: its own /etc/hosts, bound in a private mount
    # namespace so that the machine's file is never touched.
    script = f'mount --bind {root}/etc/hosts /etc/hosts && exec bash {ship}/egress.sh {command}'
    return subprocess.run(["ip", "netns", "exec", net.host, "unshare", "--mount", "sh", "-c",
                           script], capture_output=True, text=True, env=env, timeout=180,
                          check=False)


EVERYTHING = (*FORBIDDEN, SITE, SITE_OTHER_PORT, UNLISTED)


def test_without_a_policy_the_guest_reaches_everything(net: Topology) -> None:
    """Today's host: the guest reaches the metadata service, the host, another worker (so the
    blocked results below are the rules' doing, not a broken rehearsal)."""
    assert net.reachable(*EVERYTHING) == set(EVERYTHING)


@pytest.mark.parametrize("mode", ["none", "allowlist", "web", "open"])
def test_each_mode_blocks_the_forbidden_and_opens_only_what_it_allows(
    net: Topology, tmp_path: Path, mode: str
) -> None:
    done = egress(net, tmp_path, "apply", mode,
                  allowlist="site.test:80\n" if mode == "allowlist" else "")
    assert done.returncode == 0, done.stderr
    assert net.reachable(*EVERYTHING) == REACHED[mode]
    proof = egress(net, tmp_path, "prove", mode)
    assert proof.returncode == 0, proof.stderr
    status = (tmp_path / "root" / "var" / "lib" / "oa-vm" / "status").read_text()
    assert "step=egress" in status and "state=running" in status


def test_the_boundary_holds_while_the_container_restarts(net: Topology, tmp_path: Path) -> None:
    """A restarted container has a new namespace without the guest's table: the host's table
    still keeps the metadata service, the host and the other workers out of reach."""
    assert egress(net, tmp_path, "apply", "none").returncode == 0
    in_ns(net.ctr, "nft", "delete", "table", "inet", "oa_vm_egress")
    reached = net.reachable(*EVERYTHING)
    assert reached & {IMDS, OTHER_WORKER, HOST_SSH, HOST_SSH_UPLINK, HOST_SCORING} == set()
    assert egress(net, tmp_path, "refresh", "none").returncode == 0
    assert net.reachable(*EVERYTHING) == set()


def test_a_failed_proof_marks_the_worker_failed_in_one_line(net: Topology,
                                                            tmp_path: Path) -> None:
    assert egress(net, tmp_path, "apply", "none").returncode == 0
    for ns in (net.ctr, net.host):
        in_ns(ns, "nft", "delete", "table", "inet", "oa_vm_egress")
    proof = egress(net, tmp_path, "prove", "none")
    assert proof.returncode == 1
    status = dict(line.split("=", 1) for line in
                  (tmp_path / "root" / "var/lib/oa-vm/status").read_text().splitlines())
    assert status["state"] == "failed" and status["step"] == "egress"
    assert IMDS in status["message"] and "must block" in status["message"]
    assert "\n" not in status["message"]


@pytest.fixture()
def slot_net(tmp_path: Path) -> Iterator[Topology]:
    """The rehearsal for worker w1 of a host with two (its guest at 172.30.1.2)."""
    bin_dir = tmp_path / "guest-bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    topo = Topology(tmp_path, index=1)
    try:
        topo.up()
        yield topo
    finally:
        topo.down()


def test_a_slots_proof_checks_its_own_containers_services(slot_net: Topology,
                                                          tmp_path: Path) -> None:
    """Worker w1's container sits at 172.30.1.1 on dockur's bridge, not 172.30.0.1: with its
    guest's table gone, its screen is open to the guest, and the proof must say so."""
    service = f"{slot_net.gateway}:8006"
    assert egress(slot_net, tmp_path, "apply", "none", slot="w1", host_workers=2).returncode == 0
    assert slot_net.reachable(service, IMDS) == set()
    in_ns(slot_net.ctr, "nft", "delete", "table", "inet", "oa_vm_egress")
    assert slot_net.reachable(service, IMDS) == {service}
    proof = egress(slot_net, tmp_path, "prove", "none", slot="w1", host_workers=2)
    assert proof.returncode == 1, proof.stdout + proof.stderr
    status = (tmp_path / "root" / "var/lib/oa-vm/workers/w1/status").read_text()
    assert "state=failed" in status and service in status, status


def test_the_hosts_timer_refreshes_every_slots_guest_table(slot_net: Topology,
                                                          tmp_path: Path) -> None:
    """oa-vm-egress.timer runs 'egress.sh refresh' once for the host, naming no slot: a slot's
    restarted container (a new namespace without its guest's table) gets it back too."""
    service = f"{slot_net.gateway}:8006"
    assert egress(slot_net, tmp_path, "apply", "none", slot="w1", host_workers=2).returncode == 0
    in_ns(slot_net.ctr, "nft", "delete", "table", "inet", "oa_vm_egress")
    assert slot_net.reachable(service) == {service}
    done = egress(slot_net, tmp_path, "refresh", "none", host_workers=2)
    assert done.returncode == 0, done.stdout + done.stderr
    assert slot_net.reachable(service, *EVERYTHING) == set()


@pytest.fixture()
def own_net(tmp_path: Path) -> Iterator[Topology]:
    """The rehearsal on your own host: worker w0's container has the MAC the pool gives it,
    and the user's own container shares ``docker0`` with it."""
    bin_dir = tmp_path / "guest-bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    topo = Topology(tmp_path, mac=own_host.container_mac(slots.slot(0)))
    try:
        topo.up()
        yield topo
    finally:
        topo.down()


@pytest.mark.parametrize("mode", ["none", "allowlist", "web", "open"])
def test_on_your_own_host_only_the_pools_container_is_filtered(
    own_net: Topology, tmp_path: Path, mode: str
) -> None:
    """The guest gets its mode; the user's own container on the same docker0 reaches what it
    reached before: the metadata service, a private address, the host's own addresses."""
    user = own_net.reachable(*EVERYTHING, ns=own_net.user)
    assert user == set(EVERYTHING)
    done = egress(own_net, tmp_path, "apply", mode, own_host=True,
                  allowlist="site.test:80\n" if mode == "allowlist" else "")
    assert done.returncode == 0, done.stderr
    assert own_net.reachable(*EVERYTHING) == REACHED[mode]
    assert own_net.reachable(*EVERYTHING, ns=own_net.user) == user
    proof = egress(own_net, tmp_path, "prove", mode, own_host=True)
    assert proof.returncode == 0, proof.stdout + proof.stderr


def release(net: Topology, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The shipped ``host_pool.sh`` in the host's namespace, as cleanup sends it (Docker's
    daemon and systemd played: nothing of this machine is asked)."""
    bin_dir = tmp / "host-bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "systemctl").write_text("#!/bin/bash\nexit 0\n", encoding="utf-8")
    (bin_dir / "systemctl").chmod(0o755)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OA_VM_")},
           "PATH": f"{bin_dir}:{os.environ['PATH']}", "OA_VM_ROOT": str(tmp / "root"),
           "FAKE_CONTAINERS": str(tmp / "containers")}
    script = (units.WORKER_DIR / own_host.HOST_POOL_SCRIPT).read_text(encoding="utf-8")
    return subprocess.run(["ip", "netns", "exec", net.host, "bash", "-c", script,
                           "host_pool.sh", *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)


def test_on_your_own_host_the_release_removes_the_pools_rules_and_only_its_own(
    own_net: Topology, tmp_path: Path
) -> None:
    """The host's table holds while the container restarts (its MAC stays); another pool's
    release touches nothing; the pool's own release leaves no rule of it on the host, and the
    user's container still reaches everything."""
    hosts = {IMDS, OTHER_WORKER, HOST_SSH, HOST_SSH_UPLINK, HOST_SCORING}
    assert release(own_net, tmp_path, "claim", "lab").returncode == 0
    assert egress(own_net, tmp_path, "apply", "none", own_host=True).returncode == 0
    in_ns(own_net.ctr, "nft", "delete", "table", "inet", "oa_vm_egress")  # restarted
    assert own_net.reachable(*EVERYTHING) & hosts == set()
    other = release(own_net, tmp_path, "release", "other-pool")
    assert other.returncode == 3, other.stdout + other.stderr
    assert own_net.reachable(*EVERYTHING) & hosts == set()
    done = release(own_net, tmp_path, "release", "lab")
    assert done.returncode == 0, done.stderr
    assert "removed: nftables table inet oa_vm_egress" in done.stdout.splitlines()
    left = sh("ip", "netns", "exec", own_net.host, "nft", "list", "ruleset").stdout
    assert "oa_vm" not in left and "02:6f:61:76:6d" not in left, left
    assert own_net.reachable(*EVERYTHING, ns=own_net.user) == set(EVERYTHING)


def test_a_container_the_hosts_table_would_not_hold_fails_the_egress_step(
    own_net: Topology, tmp_path: Path
) -> None:
    """A container whose MAC is not the slot's (the engine ignored it), or that is not on
    docker0 (another engine's bridge), would pass the host's table untouched, and the proof,
    which the guest's table alone passes: the apply fails in one line instead."""
    status = tmp_path / "root" / "var/lib/oa-vm/status"
    in_ns(own_net.ctr, "ip", "link", "set", "eth0", "address", "02:42:ac:11:00:02")
    done = egress(own_net, tmp_path, "apply", "none", own_host=True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "state=failed" in status.read_text() and "not on docker0 with MAC 02:6f:61:76:6d:00" in (
        status.read_text())
    in_ns(own_net.ctr, "ip", "link", "set", "eth0", "address", own_net.mac)
    in_ns(own_net.host, "ip", "link", "set", "vc", "nomaster")
    assert egress(own_net, tmp_path, "apply", "none", own_host=True).returncode == 1
    in_ns(own_net.host, "ip", "link", "set", "vc", "master", "docker0")
    done = egress(own_net, tmp_path, "apply", "none", own_host=True)
    assert done.returncode == 0, done.stdout + done.stderr
