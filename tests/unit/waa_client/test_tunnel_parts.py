"""Pure parts of the tunnels: the ssh command, key file checks, known_hosts pinning."""

from __future__ import annotations

import stat
from pathlib import Path

import paramiko
import pytest

from waa_client import HostKeyMismatchError, KeyFileError, SshUnreachableError
from waa_client.ssh import (
    KnownHosts,
    PoolTunnels,
    TunnelTarget,
    fingerprint,
    host_entry,
    load_private_key,
    ssh_command,
)


def write_ed25519(path: Path, mode: int = 0o600) -> Path:
    """An unencrypted OpenSSH ed25519 private key, generated in-process."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )
    path.write_bytes(pem)
    path.chmod(mode)
    return path


def test_ssh_command_is_the_equivalent_tunnel() -> None:
    target = TunnelTarget("w1", "203.0.113.7", 22, "ubuntu", Path("keys/pool"))
    assert ssh_command(target, 5001, 5051, Path("pool/known_hosts")) == [
        "ssh", "-N",
        "-L", "127.0.0.1:5001:127.0.0.1:5000",
        "-L", "127.0.0.1:5051:127.0.0.1:5051",
        "-F", "/dev/null", "-i", "keys/pool", "-p", "22",
        "-o", "IdentitiesOnly=yes", "-o", "IdentityAgent=none", "-o", "BatchMode=yes",
        "-o", "UserKnownHostsFile=pool/known_hosts", "-o", "GlobalKnownHostsFile=/dev/null",
        "-o", "StrictHostKeyChecking=accept-new", "-o", "UpdateHostKeys=no",
        "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=15",
        "-o", "ServerAliveCountMax=3", "-o", "ExitOnForwardFailure=yes",
        "-o", "LogLevel=ERROR",
        "ubuntu@203.0.113.7",
    ]


def test_ssh_command_carries_the_tunnels_own_options(tmp_path: Path) -> None:
    # one builder for both: the printed command and the tunnel's own ssh differ only in what
    # the tunnel's master adds (its control socket)
    from waa_client.ssh.openssh_tunnel import OpenSshTunnel

    target = TunnelTarget("w1", "h", 2222, "azureuser", Path("k"), remote_waa_port=5005)
    tunnel = OpenSshTunnel(target, tmp_path / "known_hosts", keepalive=7, connect_timeout=4)
    argv = tunnel.command()
    assert "127.0.0.1:0:127.0.0.1:5005" in argv  # ports (0, 0) until started
    assert argv[argv.index("-p") + 1] == "2222" and argv[-1] == "azureuser@h"
    assert f"UserKnownHostsFile={tmp_path / 'known_hosts'}" in argv
    assert "ConnectTimeout=4" in argv and "ServerAliveInterval=7" in argv


def test_key_loads(tmp_path: Path) -> None:
    key = load_private_key(write_ed25519(tmp_path / "key"))
    assert key.get_name() == "ssh-ed25519"


def test_missing_key(tmp_path: Path) -> None:
    with pytest.raises(KeyFileError, match="not found") as info:
        load_private_key(tmp_path / "nope")
    assert info.value.exit_code == 2 and info.value.path == tmp_path / "nope"


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604])
def test_key_readable_by_others_is_refused(tmp_path: Path, mode: int) -> None:
    path = write_ed25519(tmp_path / "key", mode)
    with pytest.raises(KeyFileError) as info:
        load_private_key(path)
    assert f"{mode:04o}" in str(info.value)
    assert f"chmod 600 {path}" in str(info.value)


def test_unreadable_key(tmp_path: Path) -> None:
    folder = tmp_path / "key"
    folder.mkdir()
    folder.chmod(0o700)
    with pytest.raises(KeyFileError, match="not a regular file"):
        load_private_key(folder)


def test_key_file_that_is_not_a_key(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_text("hello\n")
    path.chmod(0o600)
    with pytest.raises(KeyFileError, match="not a private key"):
        load_private_key(path)


def test_encrypted_key_is_refused(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    path = tmp_path / "key"
    path.write_bytes(Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
        serialization.BestAvailableEncryption(b"secret"),
    ))
    path.chmod(0o600)
    with pytest.raises(KeyFileError, match="passphrase"):
        load_private_key(path)


def _pkey(tmp_path: Path, name: str) -> paramiko.PKey:
    return paramiko.PKey.from_path(str(write_ed25519(tmp_path / name)))


def test_host_entry_follows_openssh() -> None:
    assert host_entry("10.0.0.4", 22) == "10.0.0.4"
    assert host_entry("127.0.0.1", 2222) == "[127.0.0.1]:2222"


def test_known_hosts_trust_on_first_use(tmp_path: Path) -> None:
    first, other = _pkey(tmp_path, "a"), _pkey(tmp_path, "b")
    known = KnownHosts(tmp_path / "pool" / "known_hosts")
    assert known.verify("127.0.0.1", 2222, first, worker="w1") is True
    assert known.verify("127.0.0.1", 2222, first, worker="w1") is False
    assert known.verify("127.0.0.1", 2223, other, worker="w2") is True  # another worker
    lines = (tmp_path / "pool" / "known_hosts").read_text().splitlines()
    assert lines == [f"[127.0.0.1]:2222 ssh-ed25519 {first.get_base64()}",
                     f"[127.0.0.1]:2223 ssh-ed25519 {other.get_base64()}"]
    assert stat.S_IMODE((tmp_path / "pool" / "known_hosts").stat().st_mode) == 0o600


def test_known_hosts_refuses_a_changed_key(tmp_path: Path) -> None:
    first, changed = _pkey(tmp_path, "a"), _pkey(tmp_path, "b")
    path = tmp_path / "known_hosts"
    KnownHosts(path).verify("127.0.0.1", 2222, first)
    before = path.read_text()
    with pytest.raises(HostKeyMismatchError) as info:
        KnownHosts(path).verify("127.0.0.1", 2222, changed, worker="w1")
    message = str(info.value)
    assert fingerprint(first) in message and fingerprint(changed) in message
    assert "ssh-keygen -R '[127.0.0.1]:2222'" in message
    assert info.value.offered_fingerprint == fingerprint(changed)
    assert path.read_text() == before, "a changed key is never written over the known one"


def test_the_health_loop_backs_off_doubling_up_to_its_cap(tmp_path: Path) -> None:
    pool = PoolTunnels([], tmp_path / "known_hosts", check_interval=2.0, backoff_max=30.0)
    assert [pool.retry_delay(n) for n in range(1, 6)] == [4.0, 8.0, 16.0, 30.0, 30.0]


class _DownTunnel:
    """A tunnel whose reconnects fail ``failures`` times, then succeed; records when it was
    asked (on the pool's clock)."""

    def __init__(self, clock: list[float], failures: int) -> None:
        self.clock = clock
        self.failures = failures
        self.asked: list[float] = []

    def ensure(self) -> None:
        self.asked.append(self.clock[0])
        if len(self.asked) <= self.failures:
            raise SshUnreachableError("SSH to worker w1: connection refused")

    def stop(self) -> None:
        """Nothing to close."""


def test_the_health_loop_tries_a_down_worker_on_the_backoff_schedule(tmp_path: Path) -> None:
    now = [0.0]
    pool = PoolTunnels([], tmp_path / "known_hosts", check_interval=2.0, backoff_max=30.0,
                       clock=lambda: now[0])
    down, up = _DownTunnel(now, failures=5), _DownTunnel(now, failures=0)
    pool.tunnels = {"w1": down, "w2": up}  # type: ignore[dict-item]
    while now[0] <= 120.0:  # one health pass per check interval, on the fake clock
        pool.check_once()
        if now[0] in down.asked[:5]:
            assert isinstance(pool.errors.get("w1"), SshUnreachableError)
        now[0] += 2.0
    # waits after each failure: 4, 8, 16, 30, 30 s; then the worker is checked every pass
    assert down.asked[:7] == [0.0, 4.0, 12.0, 28.0, 58.0, 88.0, 90.0]
    assert len(up.asked) == 61  # a healthy worker is never put off
    assert pool.errors == {}


def test_a_host_with_several_workers_goes_down_and_comes_back_as_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    now = [0.0]
    targets = [TunnelTarget(f"lab-w{i}", "127.0.0.1", 2222, "root", tmp_path / "key")
               for i in range(2)] + [TunnelTarget("other-w0", "127.0.0.1", 2223, "root",
                                                  tmp_path / "key")]
    pool = PoolTunnels(targets, tmp_path / "known_hosts", check_interval=2.0, backoff_max=8.0,
                       clock=lambda: now[0])
    first, second = _DownTunnel(now, failures=6), _DownTunnel(now, failures=0)
    other = _DownTunnel(now, failures=0)
    pool.tunnels = {"lab-w0": first, "lab-w1": second, "other-w0": other}  # type: ignore[dict-item]
    caplog.set_level("INFO", logger="waa_client.ssh")
    while now[0] <= 80.0:
        pool.check_once()
        now[0] += 2.0
    # the sibling was never tried while its host failed in the same pass
    assert second.asked and all(t not in first.asked[:6] for t in second.asked)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1, warnings
    assert "root@127.0.0.1:2222 (lab-w0, lab-w1) are down" in warnings[0]
    assert [r.getMessage() for r in caplog.records if r.levelname == "INFO"] == [
        "tunnels to root@127.0.0.1:2222 are back"]
    assert pool.errors == {} and len(other.asked) == 41
