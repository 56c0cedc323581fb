"""A local pool registered as reached over SSH, through a real OpenSSH server on loopback.

This is the path every cloud pool takes: the workers' ports are only reachable through tunnels.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import requests

from oa_vm import api
from tests.support.cli import BIN, run_cli
from tests.support.output_lines import OutputLines
from tests.support.pools import READY_TIMEOUT
from tests.support.sshd import SshServer, ipv6_loopback, sshd  # noqa: F401 - pytest fixture
from tests.support.waiting import WAIT_LIMIT_S, wait_gone, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.sshd]

WAA_PROBE = {"status": "Probe successful", "message": "Service is operational"}


@pytest.fixture
def ssh_pool(sshd: SshServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:  # noqa: F811
    """A 2-worker local pool whose workers are reached through ``sshd``; removed afterwards."""
    home = tmp_path / "home"
    monkeypatch.setenv("OA_VM_HOME", str(home))
    created = run_cli(
        "oa-vm", "pool-create", "--cloud", "local", "--workers", "2", "--name", "viassh",
        "--ssh-via", f"{sshd.user}@{sshd.host}:{sshd.port}", "--ssh-key", str(sshd.client_key),
        "-y", home=home,
    )
    assert created.returncode == 0, created.stderr
    yield home
    run_cli("oa-vm", "pool-cleanup", "--name", "viassh", "-y", home=home)


def test_wait_and_status_go_through_the_tunnel(ssh_pool: Path) -> None:
    waited = run_cli("oa-vm", "pool-wait", "--name", "viassh", "--timeout", READY_TIMEOUT,
                     home=ssh_pool)
    assert waited.returncode == 0, waited.stderr
    assert "waa probe" in waited.stdout or "ready" in waited.stdout
    status = json.loads(run_cli("oa-vm", "pool-status", "--name", "viassh", "--json",
                                home=ssh_pool).stdout)
    assert [w["reached_via"] for w in status["workers"]] == ["ssh", "ssh"]
    assert all(w["state"] == "ready" for w in status["workers"])
    # The host key was remembered on first contact.
    known = (ssh_pool / "pools" / "viassh" / "known_hosts").read_text()
    assert "ssh-ed25519" in known

    with api.connect("viassh", connect_timeout=5, read_timeout=10) as workers:
        assert len(workers) == 2
        for worker in workers:
            assert worker.waa.probe() == WAA_PROBE
            assert worker.scoring.probe()["status"] == "ok"
            # Clients speak to the tunnel's local port, not to the worker's own.
            direct = next(w for w in status["workers"] if w["name"] == worker.name)
            assert worker.waa_url != direct["waa_url"]


def _probes(url: str) -> bool:
    try:
        return bool(requests.get(url + "/probe", timeout=5).json() == WAA_PROBE)
    except (requests.RequestException, ValueError):
        return False


def test_pool_tunnel_command(ssh_pool: Path, sshd: SshServer) -> None:  # noqa: F811
    assert run_cli("oa-vm", "pool-wait", "--name", "viassh", "--timeout", READY_TIMEOUT,
                   home=ssh_pool).returncode == 0
    errors = ssh_pool / "pool-tunnel.err"
    with errors.open("w") as err:
        proc = subprocess.Popen(
            [str(BIN / "oa-vm"), "pool-tunnel", "--name", "viassh", "--worker", "worker-1"],
            stdout=subprocess.PIPE, stderr=err, text=True,
            env={**os.environ, "OA_VM_HOME": str(ssh_pool)}, stdin=subprocess.DEVNULL,
        )
    try:
        output = OutputLines(proc)
        out = output.wait_for("Ctrl-C")
        assert "Tunnels open" in out, out
        assert "ssh -N -L" in out
        # the local URLs the command prints carry the pool's secret: they are for use
        urls = re.findall(r"http://127\.0\.0\.1:\d+/cap-[0-9a-f]{40}", out)
        assert len(urls) == 2, out
        waa_url = urls[0]
        wait_until(lambda: _probes(waa_url), "the tunnel to answer", interval=0.3)

        assert sshd.drop_connections() >= 1  # the SSH connection dies under the tunnel
        wait_until(lambda: _probes(waa_url), "the tunnel to come back after the drop",
                   interval=0.3)

        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=WAIT_LIMIT_S) == 0, output.finish() + errors.read_text()
        # Nothing of this pool answers there any more (the freed port may already belong to a
        # worker of another test, which refuses this pool's secret).
        try:
            left_open = requests.get(waa_url + "/probe", timeout=5).status_code == 200
        except requests.RequestException:
            left_open = False
        assert not left_open, "local port left open"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_the_printed_ssh_command_opens_the_tunnel_as_printed(ssh_pool: Path,
                                                               tmp_path: Path) -> None:
    # pool-tunnel's "Equivalent ssh commands", pasted in a terminal of a user whose own
    # known_hosts does not know the host: before, they left out the pool's known_hosts and
    # failed on first use ("Host key verification failed").
    assert run_cli("oa-vm", "pool-wait", "--name", "viassh", "--timeout", READY_TIMEOUT,
                   home=ssh_pool).returncode == 0
    proc = subprocess.Popen(
        [str(BIN / "oa-vm"), "pool-tunnel", "--name", "viassh", "--worker", "worker-1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "OA_VM_HOME": str(ssh_pool)}, stdin=subprocess.DEVNULL,
    )
    try:
        output = OutputLines(proc)
        out = output.wait_for("Ctrl-C")
        printed = [line.strip().removeprefix("worker-1: ") for line in out.splitlines()
                   if line.strip().startswith("worker-1: ssh ")]
        assert len(printed) == 1, out
        urls = re.findall(r"http://127\.0\.0\.1:\d+/cap-[0-9a-f]{40}", out)
        assert len(urls) == 2, out
        proc.send_signal(signal.SIGINT)  # its ports are free again for the pasted command
        assert proc.wait(timeout=WAIT_LIMIT_S) == 0, output.finish()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert not _probes(urls[0])
    home = tmp_path / "empty-home"
    home.mkdir()
    pasted = subprocess.Popen(["bash", "-c", printed[0]], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env={"PATH": os.environ["PATH"], "HOME": str(home)},
                              start_new_session=True)
    try:
        wait_until(lambda: _probes(urls[0]) or pasted.poll() is not None,
                   "the pasted command to forward", interval=0.3)
        assert pasted.poll() is None, pasted.communicate(timeout=WAIT_LIMIT_S)[0]
        assert _probes(urls[0])
    finally:
        if pasted.poll() is None:
            os.killpg(pasted.pid, signal.SIGTERM)
        pasted.communicate(timeout=WAIT_LIMIT_S)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP], ids=["sigterm", "sighup"])
def test_pool_tunnel_stopped_by_a_signal_closes_its_tunnels(
    ssh_pool: Path, stop: signal.Signals
) -> None:
    # `kill PID` (a service manager, a script) or a closed terminal ends pool-tunnel as Ctrl-C
    # does. Before, the command died at once and its `ssh -M` processes kept forwarding the
    # pool's ports, orphaned, until the host closed the connection.
    assert run_cli("oa-vm", "pool-wait", "--name", "viassh", "--timeout", READY_TIMEOUT,
                   home=ssh_pool).returncode == 0
    proc = subprocess.Popen(
        [str(BIN / "oa-vm"), "pool-tunnel", "--name", "viassh"], stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, env={**os.environ, "OA_VM_HOME": str(ssh_pool)},
        stdin=subprocess.DEVNULL,
    )
    try:
        output = OutputLines(proc)
        out = output.wait_for("Ctrl-C")
        urls = re.findall(r"http://127\.0\.0\.1:\d+/cap-[0-9a-f]{40}", out)
        assert len(urls) == 4, out
        wait_until(lambda: _probes(urls[0]), "the tunnel to answer", interval=0.3)
        # the forwarding processes the command started (none with the paramiko backend)
        forwarders = [child.pid for child in psutil.Process(proc.pid).children(recursive=True)]
        assert forwarders or not shutil.which("ssh"), "no ssh -M process to watch"
        proc.send_signal(stop)
        assert proc.wait(timeout=WAIT_LIMIT_S) == 0, output.finish()
        assert "Tunnels closed." in output.finish()
        for pid in forwarders:
            wait_gone(pid)
        assert not any(_probes(url) for url in urls[::2]), "a local port still forwards"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_sweep_through_tunnels(ssh_pool: Path) -> None:
    assert run_cli("oa-vm", "pool-wait", "--name", "viassh", "--timeout", READY_TIMEOUT,
                   home=ssh_pool).returncode == 0
    result = run_cli(
        "openadapt-evals", "run", "--pool", "viassh", "--tasks", "local_small", "--agent",
        "oracle", "--results-dir", str(ssh_pool / "results"), "--run-name", "over-ssh", "--json",
        home=ssh_pool, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads((ssh_pool / "results" / "over-ssh" / "summary.json").read_text())
    assert summary["attempts"] >= 1
    assert summary["successes"] == summary["attempts"]


def test_bad_ssh_input(tmp_path: Path) -> None:
    home = tmp_path / "home"
    missing = run_cli("oa-vm", "pool-create", "--cloud", "local", "--ssh-via", "root@127.0.0.1:22",
                      "-y", home=home)
    assert "--ssh-key" in missing.assert_one_line_error()
    # --ssh-via is read as --host is (one parser), its port required
    for via, words in (("nohost", "use user@host:port"), ("root@127.0.0.1", "use user@host:port"),
                       ("root@-oProxyCommand=x:22", "use user@host:port"),
                       ("root@::1:22", "write an IPv6 address in brackets")):
        bad = run_cli("oa-vm", "pool-create", "--cloud", "local", "--ssh-via", via, "--ssh-key",
                      "k", "-y", home=home)
        assert f"--ssh-via {via!r}: " in bad.assert_one_line_error() and words in bad.stderr
        assert bad.returncode == 2


def test_bad_key_files_are_refused_before_anything_is_written(
    sshd: SshServer, tmp_path: Path  # noqa: F811
) -> None:
    home = tmp_path / "home"
    via = f"{sshd.user}@{sshd.host}:{sshd.port}"
    missing = run_cli("oa-vm", "pool-create", "--cloud", "local", "--ssh-via", via,
                      "--ssh-key", str(tmp_path / "nope"), "-y", home=home)
    assert "does not exist" in missing.assert_one_line_error()
    loose = tmp_path / "loose_key"
    loose.write_bytes(sshd.client_key.read_bytes())
    loose.chmod(0o644)
    wide = run_cli("oa-vm", "pool-create", "--cloud", "local", "--ssh-via", via,
                   "--ssh-key", str(loose), "-y", home=home)
    assert "chmod 600" in wide.assert_one_line_error()
    garbage = tmp_path / "garbage_key"
    garbage.write_text("not a key\n")
    garbage.chmod(0o600)
    bad = run_cli("oa-vm", "pool-create", "--cloud", "local", "--ssh-via", via,
                  "--ssh-key", str(garbage), "-y", home=home)
    assert "key" in bad.assert_one_line_error()
    assert not list(home.rglob("pool.json"))


def test_unreachable_ssh_port_is_one_line(ssh_pool: Path, sshd: SshServer) -> None:  # noqa: F811
    sshd.stop()
    tunnel = run_cli("oa-vm", "pool-tunnel", "--name", "viassh", home=ssh_pool, timeout=120)
    line = tunnel.assert_one_line_error()
    assert str(sshd.port) in line
    waited = run_cli("oa-vm", "pool-wait", "--name", "viassh", "--timeout", "5s",
                     home=ssh_pool, timeout=120)
    line = waited.assert_one_line_error()
    assert "stuck at ssh tunnel" in line


@pytest.mark.skipif(ipv6_loopback() is not None, reason=str(ipv6_loopback()))
def test_a_pool_reached_over_ipv6_runs_its_tasks(tmp_path: Path) -> None:
    # --ssh-via user@[::1]:PORT (an IPv6 address in brackets, as ssh and URLs write one beside
    # a port): refused before ("IPv6 addresses are not supported").
    server = SshServer(tmp_path / "sshd6", listen="::1")
    server.start()
    home = tmp_path / "home"
    try:
        via = f"{server.user}@[::1]:{server.port}"
        created = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "1",
                          "--name", "v6", "--ssh-via", via, "--ssh-key", str(server.client_key),
                          "-y", home=home)
        assert created.returncode == 0, created.stderr
        waited = run_cli("oa-vm", "pool-wait", "--name", "v6", "--timeout", READY_TIMEOUT,
                         home=home)
        assert waited.returncode == 0, waited.stderr
        status = json.loads(run_cli("oa-vm", "pool-status", "--name", "v6", "--json",
                                    home=home).stdout)
        assert [w["reached_via"] for w in status["workers"]] == ["ssh"]
        assert f"[::1]:{server.port}" in (home / "pools" / "v6" / "known_hosts").read_text()
        ran = run_cli("openadapt-evals", "run", "--pool", "v6", "--tasks", "local_small",
                      "--agent", "oracle", "--results-dir", str(tmp_path / "results"),
                      "--run-name", "v6", home=home, timeout=300)
        assert ran.returncode == 0, ran.stderr
        summary = json.loads((tmp_path / "results" / "v6" / "summary.json").read_text())
        assert summary["attempts"] >= 1 and summary["successes"] == summary["attempts"]
    finally:
        run_cli("oa-vm", "pool-cleanup", "--name", "v6", "-y", home=home)
        server.stop()
