"""Relay stdin/stdout to a TCP port: the far end of the 5050 -> 5051 bridge.

The WAA container forwards the ports that reach it to the Windows guest (its NET_ADMIN NAT
rules), so the host cannot simply connect to the container's 5050. Instead the host's bridge
(socat listening on 127.0.0.1:5051) starts ``docker exec -i <container> python3 relay.py 5050``
per connection; this relay joins that exec's stdin/stdout to the scoring server on the
container's own loopback, which the NAT rules never touch. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading

CHUNK = 65536


def _pump_in(sock: socket.socket) -> None:
    """stdin -> socket, then half-close so the server sees the end of the request."""
    try:
        while True:
            data = os.read(sys.stdin.fileno(), CHUNK)
            if not data:
                break
            sock.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)


READ_TIMEOUT_S = 300.0
"""The longest the relay waits for one read from the server (a stalled scoring server ends
the relay, and with it the host's socat child, instead of holding them for ever)."""


def relay(port: int, host: str = "127.0.0.1", timeout: float = READ_TIMEOUT_S) -> int:
    """Copy bytes both ways until the server closes; returns a process exit code.

    ``timeout`` bounds the connect and every read and write on the socket: a server that
    accepts and then says nothing ends the relay with exit code 1 after ``timeout`` seconds.
    """
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as exc:
        sys.stderr.write(f"relay: cannot reach {host}:{port}: {exc}\n")
        return 1
    # said again, not left to create_connection: the per-read bound is this module's promise
    sock.settimeout(timeout)
    threading.Thread(target=_pump_in, args=(sock,), daemon=True).start()
    writer = sys.stdout.buffer
    try:
        while True:
            data = sock.recv(CHUNK)
            if not data:
                break
            writer.write(data)
            writer.flush()
    except TimeoutError:
        sys.stderr.write(f"relay: no data from {host}:{port} for {timeout:g} s; giving up\n")
        return 1
    except OSError as exc:
        sys.stderr.write(f"relay: {exc}\n")
        return 1
    finally:
        sock.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """``relay.py PORT [HOST [READ_TIMEOUT_S]]``."""
    args = sys.argv[1:] if argv is None else argv
    try:
        timeout = float(args[2]) if len(args) > 2 else READ_TIMEOUT_S
    except ValueError:
        timeout = -1.0
    if not args or not args[0].isdigit() or not 0 < timeout < float("inf"):
        sys.stderr.write("usage: relay.py PORT [HOST [READ_TIMEOUT_S]]\n")
        return 2
    return relay(int(args[0]), args[1] if len(args) > 1 else "127.0.0.1", timeout)


if __name__ == "__main__":
    sys.exit(main())
