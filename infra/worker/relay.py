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


def relay(port: int, host: str = "127.0.0.1", timeout: float = 300.0) -> int:
    """Copy bytes both ways until the server closes; returns a process exit code."""
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as exc:
        sys.stderr.write(f"relay: cannot reach {host}:{port}: {exc}\n")
        return 1
    threading.Thread(target=_pump_in, args=(sock,), daemon=True).start()
    writer = sys.stdout.buffer
    try:
        while True:
            data = sock.recv(CHUNK)
            if not data:
                break
            writer.write(data)
            writer.flush()
    except OSError as exc:
        sys.stderr.write(f"relay: {exc}\n")
        return 1
    finally:
        sock.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """``relay.py PORT [HOST]``."""
    args = sys.argv[1:] if argv is None else argv
    if not args or not args[0].isdigit():
        sys.stderr.write("usage: relay.py PORT [HOST]\n")
        return 2
    return relay(int(args[0]), args[1] if len(args) > 1 else "127.0.0.1")


if __name__ == "__main__":
    sys.exit(main())
