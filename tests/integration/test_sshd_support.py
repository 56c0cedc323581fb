"""The test sshd moves to another port when the one it picked is taken before it binds it."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.support.sshd import SshServer, require_sshd

pytestmark = [pytest.mark.integration, pytest.mark.sshd]


@pytest.fixture
def taken_port() -> socket.socket:
    require_sshd()
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    return holder


def test_a_picked_port_taken_meanwhile_is_replaced(tmp_path: Path,
                                                   taken_port: socket.socket) -> None:
    with taken_port:
        server = SshServer(tmp_path / "sshd")
        taken = taken_port.getsockname()[1]
        server.port = taken  # as if another process took the picked port before sshd bound it
        server._write_config()
        server.start()
        try:
            assert server.port != taken
            with socket.create_connection((server.host, server.port), timeout=10) as conn:
                assert conn.recv(64).startswith(b"SSH-2.0-")
        finally:
            server.stop()


def test_a_port_the_caller_chose_is_kept_and_a_clash_is_reported(
    tmp_path: Path, taken_port: socket.socket
) -> None:
    with taken_port:
        taken = taken_port.getsockname()[1]
        server = SshServer(tmp_path / "sshd", port=taken)
        with pytest.raises(RuntimeError, match=f"port {taken} is taken"):
            server.start()
        assert server.port == taken and server.pid is None
