"""Each guarantee stated in ``docs/tunnels.md`` that used to survive a code change unnoticed:
keepalives, no SSH agent, reconnect backoff, ``allow_partial``, and new local ports when the old
ones are taken. Real OpenSSH server on loopback, real simulated worker behind it."""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import sshd as sshd_support
from tests.support.http_servers import BlackHolePort, RefusingPort
from tests.support.sshd import SshServer, generate_key
from tests.support.waiting import wait_until
from tests.support.worker_proc import running_worker
from waa_client import SshAuthenticationError, SshUnreachableError, WaaClient
from waa_client.ssh import OpenSshTunnel, PoolTunnels, TunnelTarget, WorkerTunnel

pytestmark = [pytest.mark.integration, pytest.mark.sshd]
sshd = sshd_support.sshd


@pytest.fixture
def ports(tmp_path: Path) -> Iterator[tuple[int, int, str]]:
    """A simulated worker's (WAA, scoring) ports and the secret prefix of its paths."""
    with running_worker(tmp_path) as process:
        described = process.workers[0]
        yield described["waa_port"], described["scoring_port"], process.base_path


def _target(sshd: SshServer, ports: tuple[int, int, str], name: str = "w1",
            key: Path | None = None) -> TunnelTarget:
    return TunnelTarget(
        name=name, ssh_host=sshd.host, ssh_port=sshd.port, ssh_user=sshd.user,
        key_path=key or sshd.client_key, remote_waa_port=ports[0], remote_scoring_port=ports[1],
        base_path=ports[2],
    )


def test_the_transport_sends_keepalives(
    sshd: SshServer, ports: tuple[int, int, str], tmp_path: Path
) -> None:
    tunnel = WorkerTunnel(_target(sshd, ports), tmp_path / "known_hosts", keepalive=7.0)
    tunnel.start()
    try:
        transport = tunnel._forwarder.transport if tunnel._forwarder else None
        assert transport is not None
        # paramiko keeps the interval in its packetizer; 0 means no keepalives
        interval = getattr(transport.packetizer, "_Packetizer__keepalive_interval")  # noqa: B009
        assert interval == 7
    finally:
        tunnel.stop()


class _AgentSocket:
    """A unix socket standing where SSH_AUTH_SOCK points; counts who connects."""

    def __init__(self, path: Path) -> None:
        self.connections = 0
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(str(path))
        self._sock.listen(8)
        self._sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()


def test_an_ssh_agent_is_never_asked(
    sshd: SshServer, ports: tuple[int, int, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = _AgentSocket(tmp_path / "agent.sock")
    monkeypatch.setenv("SSH_AUTH_SOCK", str(tmp_path / "agent.sock"))
    try:
        good = WorkerTunnel(_target(sshd, ports), tmp_path / "known_hosts")
        good.start()
        good.stop()
        stranger = generate_key(tmp_path / "stranger")
        refused = WorkerTunnel(_target(sshd, ports, key=stranger), tmp_path / "known_hosts")
        with pytest.raises(SshAuthenticationError):
            refused.start()  # an agent, if asked, would be the fallback here
    finally:
        agent.close()
    assert agent.connections == 0


def test_reconnects_back_off_exponentially_up_to_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []
    real_sleep = time.sleep
    this_thread = threading.current_thread()

    def record(seconds: float) -> None:
        # time.sleep is global: other threads (earlier tests' leftovers) and other code of this
        # thread (subprocess's wait loop, when ssh-keygen is slow to exit) sleep for real
        caller = sys._getframe(1).f_globals.get("__name__")
        if threading.current_thread() is this_thread and caller == "waa_client.retry":
            waits.append(seconds)
        else:
            real_sleep(seconds)

    monkeypatch.setattr("waa_client.retry.time.sleep", record)
    key = generate_key(tmp_path / "key")
    with RefusingPort() as refusing:
        target = TunnelTarget("w1", "127.0.0.1", refusing.port, "u", key)
        tunnel = WorkerTunnel(target, tmp_path / "known_hosts", connect_timeout=2.0,
                              reconnect_attempts=5, backoff_max=3.0)
        with pytest.raises(SshUnreachableError):
            tunnel.ensure()
    assert waits == [0.5, 1.0, 2.0, 3.0]


def test_allow_partial_keeps_the_good_tunnels(
    sshd: SshServer, ports: tuple[int, int, str], tmp_path: Path
) -> None:
    with RefusingPort() as refusing:
        bad = TunnelTarget("bad", "127.0.0.1", refusing.port, sshd.user, sshd.client_key)
        targets = [_target(sshd, ports, "good"), bad]
        with pytest.raises(SshUnreachableError):
            PoolTunnels(targets, tmp_path / "known_hosts", connect_timeout=2.0).start()
        with PoolTunnels(targets, tmp_path / "known_hosts", connect_timeout=2.0,
                         allow_partial=True) as pool:
            assert set(pool.errors) == {"bad"}
            with WaaClient(pool["good"].local_waa_url) as waa:
                assert waa.probe()["status"] == "Probe successful"


def test_new_local_ports_when_the_old_ones_are_taken(
    sshd: SshServer, ports: tuple[int, int, str], tmp_path: Path
) -> None:
    tunnel = WorkerTunnel(_target(sshd, ports), tmp_path / "known_hosts")
    tunnel.start()
    old = tunnel.local_ports
    tunnel.stop()
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", old[0]))
    squatter.listen(1)
    try:
        tunnel.start()
        try:
            assert tunnel.local_ports[0] != old[0]
            with WaaClient(tunnel.local_waa_url) as waa:
                assert waa.probe()["status"] == "Probe successful"
        finally:
            tunnel.stop()
    finally:
        squatter.close()


@pytest.mark.parametrize("backend", ["paramiko", "openssh"])
def test_pool_tunnels_pass_their_keepalive_on(
    sshd: SshServer, ports: tuple[int, int, str], tmp_path: Path, backend: str
) -> None:
    with PoolTunnels([_target(sshd, ports)], tmp_path / "known_hosts", keepalive=7.0,
                     connect_timeout=3.0, backend=backend) as pool:
        tunnel = pool["w1"]
        assert tunnel.connect_timeout == 3.0
        if backend == "paramiko":
            forwarder = getattr(tunnel, "_forwarder", None)
            transport = forwarder.transport if forwarder else None
            assert transport is not None
            interval = getattr(transport.packetizer, "_Packetizer__keepalive_interval")  # noqa: B009
            assert interval == 7
        else:
            # What the running ssh master was started with, read from the process itself.
            master = getattr(tunnel, "_master", None)
            assert master is not None and master._proc is not None
            argv = Path(f"/proc/{master._proc.pid}/cmdline").read_bytes().split(b"\0")
            assert b"ServerAliveInterval=7" in argv and b"ConnectTimeout=3" in argv


def test_a_refused_login_leaves_no_thread_and_no_port(
    sshd: SshServer, ports: tuple[int, int, str], tmp_path: Path
) -> None:
    before = {t.ident for t in threading.enumerate()}
    stranger = generate_key(tmp_path / "stranger")
    tunnel = WorkerTunnel(_target(sshd, ports, key=stranger), tmp_path / "known_hosts")
    with pytest.raises(SshAuthenticationError):
        tunnel.start()

    def started() -> list[str]:
        return [t.name for t in threading.enumerate() if t.ident not in before and t.is_alive()]

    wait_until(lambda: not started(), lambda: f"the threads {started()} to end")


def test_each_reconnect_is_counted(
    sshd: SshServer, ports: tuple[int, int, str], tmp_path: Path
) -> None:
    tunnel = WorkerTunnel(_target(sshd, ports), tmp_path / "known_hosts", keepalive=1.0)
    tunnel.start()
    try:
        for expected in (1, 2):
            assert sshd.drop_connections() >= 1
            wait_until(lambda: not tunnel.is_active(), "the drop to be noticed")
            tunnel.ensure()
            assert tunnel.reconnects == expected
    finally:
        tunnel.stop()


@pytest.mark.parametrize("tunnel_class", [WorkerTunnel, OpenSshTunnel])
def test_a_black_holed_host_fails_at_the_connect_timeout(
    tmp_path: Path, tunnel_class: type[WorkerTunnel] | type[OpenSshTunnel]
) -> None:
    # Without its connect timeout a start would wait for the OS's SYN retries (about two
    # minutes); with connect_timeout=2 it gives up long before the 60 s this test allows.
    key = generate_key(tmp_path / "key")
    with BlackHolePort() as hole:
        target = TunnelTarget(name="w1", ssh_host="127.0.0.1", ssh_port=hole.port,
                              ssh_user="nobody", key_path=key, remote_waa_port=5000,
                              remote_scoring_port=5051)
        tunnel = tunnel_class(target, tmp_path / "known_hosts", connect_timeout=2.0,
                              reconnect_attempts=1)
        outcome: list[BaseException | None] = []

        def start() -> None:
            try:
                tunnel.start()
                outcome.append(None)
            except BaseException as exc:  # handed to the test thread
                outcome.append(exc)

        thread = threading.Thread(target=start, daemon=True)
        thread.start()
        thread.join(timeout=60)
        try:
            assert not thread.is_alive(), "start() still waiting: the connect timeout is gone"
            assert outcome and isinstance(outcome[0], SshUnreachableError), outcome
        finally:
            tunnel.stop()
