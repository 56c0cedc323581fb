"""SSH tunnels against a real OpenSSH server, with a real simulated worker behind it."""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import psutil
import pytest

from tests.support import sshd as sshd_support
from tests.support.http_servers import RefusingPort, SilentServer
from tests.support.sshd import SshServer, generate_key
from tests.support.waiting import wait_until
from tests.support.worker_proc import WorkerProcess
from waa_client import (
    Catalog,
    HostKeyMismatchError,
    KeyFileError,
    ScoringClient,
    SshAuthenticationError,
    SshUnreachableError,
    WaaClient,
)
from waa_client.ssh import ForwardingTunnel, PoolTunnels, TunnelTarget, make_tunnel, ssh_binary

pytestmark = [
    pytest.mark.integration,
    pytest.mark.sshd,
    # one simulated worker process holding a two-task suite written by the test
    pytest.mark.worker(tasks=lambda folder: _write_suite(folder / "suite")),
]
sshd = sshd_support.sshd  # the real-sshd fixture, shared with other test modules

T = TypeVar("T")
SUITE_INDEX = {"notepad": ["tunnel-aaa-WOS", "tunnel-bbb-WOS"]}


def _write_suite(folder: Path) -> Path:
    for task_id in SUITE_INDEX["notepad"]:
        path = folder / "examples" / "notepad" / f"{task_id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({
            "id": task_id, "instruction": f"Task {task_id}", "config": [],
            "evaluator": {"func": "infeasible"},
        }))
    (folder / "local_all.json").write_text(json.dumps(SUITE_INDEX))
    return folder


def _target(sshd: SshServer, worker: WorkerProcess, name: str = "w1",
            key: Path | None = None) -> TunnelTarget:
    return TunnelTarget(
        name=name, ssh_host=sshd.host, ssh_port=sshd.port, ssh_user=sshd.user,
        key_path=key or sshd.client_key,
        remote_waa_port=worker.workers[0]["waa_port"],
        remote_scoring_port=worker.workers[0]["scoring_port"],
        base_path=worker.base_path,
    )


@pytest.fixture(params=["openssh", "paramiko"])
def backend(request: pytest.FixtureRequest) -> str:
    """Every tunnel test runs with both backends: ssh child processes and paramiko."""
    if request.param == "openssh" and ssh_binary() is None:
        pytest.skip("no ssh client installed (Debian package openssh-client)")
    return str(request.param)


@pytest.fixture
def tunnel(
    sshd: SshServer, worker: WorkerProcess, tmp_path: Path, backend: str
) -> Iterator[ForwardingTunnel]:
    opened = make_tunnel(_target(sshd, worker), tmp_path / "pool" / "known_hosts",
                         backend=backend, keepalive=1.0, connect_timeout=5.0)
    opened.start()
    try:
        yield opened
    finally:
        opened.stop()


def _listened_on_here(port: int) -> bool:
    """Whether this process still listens on ``port``.

    Not "is the port closed": once freed, the kernel may hand the port at once to a test running
    beside this one. The ssh children are checked apart (none may outlive the tunnels).
    """
    return any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
               for c in psutil.Process().net_connections(kind="tcp"))


def _answer(call: Callable[[], T], what: str) -> T:
    """What ``call`` returns once it stops failing (a tunnel being reopened under it)."""
    errors: list[Exception] = []

    def once() -> T | None:
        try:
            return call()
        except Exception as exc:  # any failure means "not yet"
            errors.append(exc)
            return None

    return wait_until(once, lambda: f"{what} (last error: {errors[-1] if errors else None!r})")


def test_clients_work_through_the_tunnel(tunnel: ForwardingTunnel, sshd: SshServer) -> None:
    with WaaClient(tunnel.local_waa_url) as waa, ScoringClient(tunnel.local_scoring_url) as scoring:
        assert waa.probe()["status"] == "Probe successful"
        assert waa.screenshot().startswith(b"\x89PNG\r\n\x1a\n")
        assert scoring.probe()["status"] == "ok"
        assert scoring.tasks() == SUITE_INDEX
        catalog = Catalog.from_scoring(scoring)
        refs = catalog.select("all", live=False)
        assert [r.task_id for r in refs] == SUITE_INDEX["notepad"]
        assert all(r.infeasible for r in refs)
    assert tunnel.is_healthy()
    known = (tunnel.known_hosts.path).read_text()
    assert known.split()[:2] == [f"[127.0.0.1]:{sshd.port}", "ssh-ed25519"]
    assert known.split()[2] == sshd.host_public_key_line().split()[1]


def test_reconnects_after_the_connection_is_killed(
    tunnel: ForwardingTunnel, sshd: SshServer
) -> None:
    urls = (tunnel.local_waa_url, tunnel.local_scoring_url)
    assert sshd.drop_connections() >= 1
    # Keepalives (1 s) make the client notice; until then the transport may still look alive.
    wait_until(lambda: not tunnel.is_active(), "the tunnel to notice the drop")
    tunnel.ensure()
    assert tunnel.is_healthy()
    assert (tunnel.local_waa_url, tunnel.local_scoring_url) == urls, "URLs stay valid"
    assert tunnel.reconnects == 1
    with WaaClient(tunnel.local_waa_url) as waa:
        assert waa.probe()["status"] == "Probe successful"


def test_pool_health_loop_reconnects_by_itself(
    sshd: SshServer, worker: WorkerProcess, tmp_path: Path, backend: str
) -> None:
    targets = [_target(sshd, worker, "w1"), _target(sshd, worker, "w2")]
    with PoolTunnels(targets, tmp_path / "known_hosts", keepalive=1.0, connect_timeout=5.0,
                     check_interval=0.2, backoff_max=1.0, backend=backend) as pool:
        urls = pool.urls()
        # paramiko: a connection per worker; openssh: one per host, shared by both workers
        assert sshd.drop_connections() >= (2 if backend == "paramiko" else 1)
        for name in ("w1", "w2"):
            with WaaClient(urls[name][0], connect_timeout=2.0, read_timeout=5.0) as waa:
                # Retries ride over the gap; the loop, not this test, reopens the tunnel.
                assert _answer(waa.probe, f"{name}'s probe") == {
                    "status": "Probe successful", "message": "Service is operational"}
        assert pool.urls() == urls
        assert all(t.reconnects >= 1 for t in pool)


def test_pool_tunnels_leave_no_thread_and_no_port(
    sshd: SshServer, worker: WorkerProcess, tmp_path: Path, backend: str
) -> None:
    before = {t.ident for t in threading.enumerate()}
    children = {c.pid for c in psutil.Process().children()}
    targets = [_target(sshd, worker, "w1"), _target(sshd, worker, "w2")]
    with PoolTunnels(targets, tmp_path / "known_hosts", check_interval=0.2,
                     backend=backend) as pool:
        ports = [port for t in pool for port in t.local_ports]
        # Keep HTTP connections open through the tunnels while they are closed under them.
        waa = WaaClient(pool["w1"].local_waa_url)
        scoring = ScoringClient(pool["w2"].local_scoring_url)
        waa.probe()
        scoring.probe()
        assert len(threading.enumerate()) > len(before)
    leftover = [t.name for t in threading.enumerate() if t.ident not in before]
    assert leftover == []
    ssh_left = [c.cmdline() for c in psutil.Process().children() if c.pid not in children]
    assert ssh_left == [], "no ssh process outlives the tunnels"
    assert not any(_listened_on_here(port) for port in ports), ports
    waa.close()
    scoring.close()


def test_changed_host_key_is_refused(
    tunnel: ForwardingTunnel, sshd: SshServer
) -> None:
    known_before = tunnel.known_hosts.path.read_text()
    tunnel.stop()
    sshd.restart(new_host_key=True)
    with pytest.raises(HostKeyMismatchError) as info:
        tunnel.start()
    assert "changed" in str(info.value) and "ssh-keygen -R" in str(info.value)
    assert not info.value.is_infrastructure
    assert tunnel.known_hosts.path.read_text() == known_before
    with pytest.raises(HostKeyMismatchError):
        tunnel.ensure()  # never retried into acceptance


def test_unreachable_ssh_port(
    worker: WorkerProcess, tmp_path: Path, sshd: SshServer, backend: str
) -> None:
    with RefusingPort() as refusing:
        target = TunnelTarget("w1", "127.0.0.1", refusing.port, sshd.user, sshd.client_key)
        with pytest.raises(SshUnreachableError) as info:
            make_tunnel(target, tmp_path / "known_hosts", backend=backend,
                        connect_timeout=2.0).start()
    assert info.value.is_infrastructure
    assert "refused" in str(info.value).lower()


def test_port_that_is_not_ssh(
    worker: WorkerProcess, tmp_path: Path, sshd: SshServer, backend: str
) -> None:
    with SilentServer() as silent:
        target = TunnelTarget("w1", "127.0.0.1", silent.port, sshd.user, sshd.client_key)
        with pytest.raises(SshUnreachableError, match="handshake"):
            make_tunnel(target, tmp_path / "known_hosts", backend=backend,
                        connect_timeout=1.0).start()


def test_key_not_authorized(
    sshd: SshServer, worker: WorkerProcess, tmp_path: Path, backend: str
) -> None:
    stranger = generate_key(tmp_path / "stranger")
    target = _target(sshd, worker, key=stranger)
    with pytest.raises(SshAuthenticationError, match="refused"):
        make_tunnel(target, tmp_path / "known_hosts", backend=backend,
                    connect_timeout=5.0).start()


def test_bad_key_files(
    sshd: SshServer, worker: WorkerProcess, tmp_path: Path, backend: str
) -> None:
    known = tmp_path / "known_hosts"
    with pytest.raises(KeyFileError, match="not found"):
        make_tunnel(_target(sshd, worker, key=tmp_path / "missing"), known,
                    backend=backend).start()
    open_key = tmp_path / "open_key"
    open_key.write_bytes(sshd.client_key.read_bytes())
    os.chmod(open_key, 0o644)
    with pytest.raises(KeyFileError, match="chmod 600"):
        make_tunnel(_target(sshd, worker, key=open_key), known, backend=backend).start()
    assert not known.exists(), "nothing was contacted"


def test_openssh_forward_takes_new_ports_when_its_own_are_taken(
    sshd: SshServer, worker: WorkerProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if ssh_binary() is None:
        pytest.skip("no ssh client installed (Debian package openssh-client)")
    from waa_client.ssh import openssh_tunnel

    opened = make_tunnel(_target(sshd, worker), tmp_path / "pool" / "known_hosts",
                         backend="openssh", keepalive=1.0, connect_timeout=5.0)
    opened.start()
    kept = opened.local_ports
    opened.stop()
    with socket.socket() as squatter:  # another program took the tunnel's port meanwhile
        squatter.bind(("127.0.0.1", kept[0]))
        squatter.listen()
        opened.start()  # ssh refuses the kept ports; the retry takes new free ones
        try:
            assert opened.local_ports[0] != kept[0]
            with WaaClient(opened.local_waa_url) as waa:
                assert waa.probe()["status"] == "Probe successful"
        finally:
            opened.stop()
        # every port it is offered is taken: FORWARD_ATTEMPTS refusals, then one clear error
        offered: list[int] = []

        def taken_port() -> int:
            offered.append(kept[0])
            return kept[0]

        monkeypatch.setattr(openssh_tunnel, "_free_port", taken_port)
        fresh = make_tunnel(_target(sshd, worker, name="w2"), tmp_path / "pool" / "known_hosts",
                            backend="openssh", keepalive=1.0, connect_timeout=5.0)
        with pytest.raises(SshUnreachableError, match="could not forward local ports"):
            fresh.start()
        # three tries: two ports for the first, two new ones after each refusal
        assert openssh_tunnel.FORWARD_ATTEMPTS == 3
        assert len(offered) == 8
        assert not fresh.is_active()
