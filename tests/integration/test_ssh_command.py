"""The one SSH command runner (:class:`waa_client.ssh.SshCommandRunner`) against a real OpenSSH
server on loopback: output and exit status, trust on first use then a changed host key refused,
a refused key and a closed port named as such, and the host status read through it."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from oa_vm.model.state import SshEndpoint
from oa_vm.reach.host_status import ParamikoRunner, RemoteUnreachableError
from tests.support import sshd as sshd_support
from tests.support.sshd import SshServer, generate_key
from waa_client.errors import HostKeyMismatchError, SshAuthenticationError, SshUnreachableError
from waa_client.ssh import SshCommandRunner

sshd = sshd_support.sshd


def test_a_command_returns_its_output_and_status(sshd: SshServer, tmp_path: Path) -> None:
    runner = SshCommandRunner(tmp_path / "known_hosts")
    done = runner.run(sshd.host, sshd.port, sshd.user, sshd.client_key,
                      "echo out; echo err >&2; exit 3", 30.0, worker="w0")
    assert done.status == 3
    assert done.output.splitlines() == ["out", "err"]
    assert (tmp_path / "known_hosts").read_text().strip()  # remembered on first contact


def test_a_changed_host_key_is_refused(sshd: SshServer, tmp_path: Path) -> None:
    runner = SshCommandRunner(tmp_path / "known_hosts")
    assert runner.run(sshd.host, sshd.port, sshd.user, sshd.client_key, "true", 30.0).status == 0
    sshd.restart(new_host_key=True)
    with pytest.raises(HostKeyMismatchError, match="changed"):
        runner.run(sshd.host, sshd.port, sshd.user, sshd.client_key, "true", 30.0, worker="w0")


def test_a_refused_key_and_a_closed_port_say_so(
    sshd: SshServer, tmp_path: Path, refused_port: Callable[[], int]
) -> None:
    other = generate_key(tmp_path / "other_key")
    os.chmod(other, 0o600)
    runner = SshCommandRunner(tmp_path / "known_hosts")
    with pytest.raises(SshAuthenticationError, match=f"SSH to worker w0 at .*{sshd.port}.*"
                                                     "refused with key"):
        runner.run(sshd.host, sshd.port, sshd.user, other, "true", 30.0, worker="w0")
    port = refused_port()
    with pytest.raises(SshUnreachableError, match=f"SSH to 127.0.0.1:{port}: "):
        runner.run("127.0.0.1", port, sshd.user, sshd.client_key, "true", 30.0)


def test_the_host_status_runner_maps_ssh_failures_to_unreachable(
    sshd: SshServer, tmp_path: Path, refused_port: Callable[[], int]
) -> None:
    runner = ParamikoRunner(tmp_path / "known_hosts")
    endpoint = SshEndpoint(host=sshd.host, port=sshd.port, user=sshd.user,
                           key_path=str(sshd.client_key))
    assert runner.run(endpoint, "printf state=done", 30.0).output == "state=done"
    closed = SshEndpoint(host="127.0.0.1", port=refused_port(), user=sshd.user,
                         key_path=str(sshd.client_key))
    with pytest.raises(RemoteUnreachableError, match="check the worker is running"):
        runner.run(closed, "true", 30.0)


def test_an_image_build_stops_at_once_on_a_refused_key(sshd: SshServer, tmp_path: Path) -> None:
    """Following a builder: a refused key ends the follow on its first pass (no sleep, no
    deadline), in the SSH error's own words; a host not up yet would be polled again."""
    from oa_vm.clouds.pulumi.wait import follow_status
    from oa_vm.errors import ProvisioningError

    other = generate_key(tmp_path / "other_key")
    endpoint = SshEndpoint(host=sshd.host, port=sshd.port, user=sshd.user, key_path=str(other))

    def no_sleep(seconds: float) -> None:
        raise AssertionError("polled again: a refused key cannot get better by waiting")

    with pytest.raises(ProvisioningError, match="builder-1: .*refused with key"):
        follow_status(endpoint, tmp_path / "known_hosts", name="builder-1", timeout_s=3600.0,
                      progress=lambda line: None, sleep=no_sleep)
