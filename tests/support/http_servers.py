"""Tiny real servers on 127.0.0.1 for error-mapping tests of HTTP clients.

- :class:`RefusingPort`: a port that refuses connections (bound, never listening, so no other
  process can take it during the test).
- :class:`SilentServer`: accepts TCP connections and never answers.
- :class:`ScriptedServer`: a real HTTP server answering each path with a scripted sequence of
  responses (status, body, content type) and counting the requests it received, e.g. a 500
  carrying a message, a body that is not JSON, 503 twice then 200, an answer held longer than
  the client waits (a hung worker).
- :class:`LoopbackHttp`: any request handler served on a free loopback port in a thread (what
  the servers above and the tests' own fake services run on).

Each is a context manager; leaving it closes its sockets and joins its threads.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

PNG_1PX = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082"
)


class Closable:
    """A context manager whose exit calls :meth:`close`."""

    def close(self) -> None:
        """Release what it holds."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class RefusingPort(Closable):
    """A loopback port where every connection is refused."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._sock.close()


class BlackHolePort(Closable):
    """A loopback port whose connection attempts go unanswered (a black-holed address).

    A listener that never accepts, with its accept queue filled by connections held here: the
    kernel then drops further SYNs, so a new ``connect`` waits (for the caller's timeout, or the
    OS's SYN retries, about two minutes) as it would towards an address that drops packets.
    """

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(0)
        self.port: int = self._sock.getsockname()[1]
        self._held: list[socket.socket] = []
        for _ in range(4):  # more than a backlog of 0 can queue
            held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            held.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                held.connect(("127.0.0.1", self.port))
            self._held.append(held)

    def close(self) -> None:
        for held in self._held:
            held.close()
        self._sock.close()


class SilentServer(Closable):
    """Accepts connections and never sends a byte (a hung worker)."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.2)
        self.port: int = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.accepted = 0
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="silent-server", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            self._held.append(conn)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        for conn in self._held:
            conn.close()
        self._sock.close()


class LoopbackHttp(Closable):
    """``handler`` served by a real HTTP server (``server_class``, threading) on a free port of
    127.0.0.1, in a thread; closing it stops the server, closes its socket, joins the thread."""

    def __init__(self, handler: type[BaseHTTPRequestHandler],
                 server_class: type[ThreadingHTTPServer] = ThreadingHTTPServer) -> None:
        self.httpd = server_class(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.port: int = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join()


@dataclass
class Reply:
    """One scripted HTTP answer, sent ``delay_s`` after the request came (or at the close)."""

    status: int = 200
    body: bytes = b"{}"
    content_type: str = "application/json"
    delay_s: float = 0.0

    @classmethod
    def json(cls, data: Any, status: int = 200) -> Reply:
        """A JSON answer."""
        return cls(status, json.dumps(data).encode(), "application/json")


class ScriptedServer(Closable):
    """An HTTP server answering each ``path`` with its scripted replies, in order.

    The last reply of a script repeats. Unscripted paths answer 404 with a JSON message.
    ``hits`` counts requests per path (query strings dropped); ``bodies`` keeps request bodies.
    A ``HEAD`` (a liveness probe) answers 200 with no body and is counted in ``heads`` only.

    Args:
        routes: ``path -> reply or list of replies``.
    """

    def __init__(self, routes: dict[str, Reply | list[Reply]] | None = None) -> None:
        self.routes: dict[str, list[Reply]] = {}
        for path, replies in (routes or {}).items():
            self.set(path, replies)
        self.hits: Counter[str] = Counter()
        self.heads: Counter[str] = Counter()
        self.bodies: list[tuple[str, bytes]] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                path = self.path.split("?", 1)[0]
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                reply = server._next(path, body)
                if reply.delay_s:
                    server._closing.wait(reply.delay_s)
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            do_GET = _answer
            do_POST = _answer

            def do_HEAD(self) -> None:
                with server._lock:
                    server.heads[self.path.split("?", 1)[0]] += 1
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output quiet

        self._served = LoopbackHttp(Handler)
        self.port: int = self._served.port
        self.url = self._served.url

    def set(self, path: str, replies: Reply | list[Reply]) -> None:
        """Script (or re-script) a path."""
        self.routes[path] = list(replies) if isinstance(replies, list) else [replies]

    def _next(self, path: str, body: bytes) -> Reply:
        with self._lock:
            self.hits[path] += 1
            self.bodies.append((path, body))
            script = self.routes.get(path)
            if not script:
                return Reply.json({"status": "error", "message": f"no route {path}"}, 404)
            return script.pop(0) if len(script) > 1 else script[0]

    def close(self) -> None:
        self._closing.set()  # a held answer goes now: no handler outlives the server
        self._served.close()
