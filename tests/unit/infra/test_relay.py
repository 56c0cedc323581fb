"""The scorer's relay (``infra/worker/relay.py``) keeps a per-read timeout: a real loopback
server that accepts and then stalls ends the relay, it never holds the bridge for ever."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

RELAY = Path(__file__).resolve().parents[3] / "infra" / "worker" / "relay.py"


def test_a_server_that_stalls_ends_the_relay_after_its_read_timeout() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    accepted: list[socket.socket] = []
    got_request = threading.Event()

    def serve() -> None:  # accepts, reads the request, then says nothing (a stalled server)
        conn, _ = listener.accept()
        accepted.append(conn)
        conn.settimeout(120)
        if conn.recv(100):
            got_request.set()

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        proc = subprocess.Popen(  # fixed argv, no shell; stdin kept open: the request never ends
            [sys.executable, str(RELAY), str(port), "127.0.0.1", "1.5"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        assert proc.stdin is not None
        proc.stdin.write(b"GET / HTTP/1.1\r\n")
        proc.stdin.flush()
        # generous: the bound is 1.5 s, a busy machine may take far longer to start Python
        _, err = proc.communicate(timeout=120)
        assert got_request.is_set()
        assert proc.returncode == 1
        assert b"no data from 127.0.0.1" in err and b"giving up" in err
    finally:
        for conn in accepted:
            conn.close()
        listener.close()


def test_an_unusable_read_timeout_is_refused() -> None:
    for bad in ("nan", "0", "-1", "inf", "soon"):
        done = subprocess.run([sys.executable, str(RELAY), "1", "127.0.0.1", bad],
                              capture_output=True, timeout=120, check=False)
        assert done.returncode == 2 and b"usage" in done.stderr
