"""Whether an SSH server answers (:func:`waa_client.ssh.probe_ssh`), against loopback servers:
one that sends a banner (after other lines, as RFC 4253 allows), one that accepts and says
nothing (a frozen server, or a path that drops packets), one that closes at once, and a port
that refuses."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator

import pytest

from waa_client.errors import SshUnreachableError
from waa_client.ssh import probe_ssh


@pytest.fixture
def server() -> Iterator[Callable[[bytes | None], int]]:
    """Loopback listeners that send ``greeting`` to each connection (None: nothing, held
    open until the test ends; b"": closed at once)."""
    done = threading.Event()
    sockets: list[socket.socket] = []
    threads: list[threading.Thread] = []

    def start(greeting: bytes | None) -> int:
        listener = socket.create_server(("127.0.0.1", 0))
        sockets.append(listener)

        def serve() -> None:
            conn, _ = listener.accept()
            with conn:
                if greeting is None:
                    done.wait(30)
                    return
                conn.sendall(greeting)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        threads.append(thread)
        return int(listener.getsockname()[1])

    yield start
    done.set()
    for thread in threads:
        thread.join(timeout=30)
    for sock in sockets:
        sock.close()


def test_a_server_that_sends_its_banner_answers(server: Callable[[bytes | None], int]) -> None:
    port = server(b"a line before the banner\r\nSSH-2.0-OpenSSH_9.6\r\n")
    probe_ssh("127.0.0.1", port, timeout=30)


def test_a_server_that_accepts_and_says_nothing_does_not_answer(
    server: Callable[[bytes | None], int],
) -> None:
    port = server(None)
    with pytest.raises(SshUnreachableError, match=r"no SSH handshake within 0\.5s") as caught:
        probe_ssh("127.0.0.1", port, timeout=0.5, worker="w0")
    assert f"127.0.0.1:{port}" in str(caught.value) and "w0" in str(caught.value)


def test_a_server_that_closes_at_once_does_not_answer(
    server: Callable[[bytes | None], int],
) -> None:
    port = server(b"")
    with pytest.raises(SshUnreachableError, match="closed before the banner"):
        probe_ssh("127.0.0.1", port, timeout=30)


def test_a_refused_port_does_not_answer(refused_port: Callable[[], int]) -> None:
    port = refused_port()
    with pytest.raises(SshUnreachableError, match="refused"):
        probe_ssh("127.0.0.1", port, timeout=30)
