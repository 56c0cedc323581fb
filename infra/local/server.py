"""HTTP plumbing shared by the two servers of a simulated worker (stdlib only).

Each server is a ``ThreadingHTTPServer`` with a route table. One thread per worker waits on both
listening sockets at once (a selector, no polling), and each connection gets its own daemon
thread, at most ``max_connections`` of them per worker (:mod:`infra.local.access`), so an idle
worker costs one sleeping thread and 200 workers fit in one process.

Every request passes the worker's :class:`~infra.local.access.Guard` before anything else: the
secret prefix of its path, then the size of its body. A new connection holds no slot (and no
thread) until its request line has shown the secret: the accepting thread reads that line itself
(non-blocking, with the others), so connections without the secret, silent ones and HTTP/0.9
requests are answered and closed there and cannot fill the worker's slots. Once admitted, each
request has one deadline for the whole of its head and body (``read_timeout``), not a timeout
per read that a client dripping a byte at a time would renew for ever.

Routes are registered without the prefix (``app.route("GET", "/probe", ...)``), so a module
adding endpoints never sees it.
"""

from __future__ import annotations

import contextlib
import email.parser
import email.policy
import io
import json
import logging
import selectors
import socket
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from infra.local import cancel
from infra.local.access import FENCE_HEADER, Guard
from infra.local.faults import DRIBBLE_PAUSE_S, Action, FaultGate

log = logging.getLogger("infra.local")



class HttpError(Exception):
    """An error answer: ``{"status": "error", "message": ...}`` with an HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Request:
    """One parsed HTTP request."""

    method: str
    path: str
    query: dict[str, list[str]]
    content_type: str
    body: bytes

    def json(self) -> dict[str, Any]:
        """The body as a JSON object.

        Raises:
            HttpError: 400 when the body is not a JSON object.
        """
        try:
            data = json.loads(self.body or b"{}")
        except (ValueError, UnicodeDecodeError):
            raise HttpError(400, "the request body is not valid JSON") from None
        if not isinstance(data, dict):
            raise HttpError(400, "the request body must be a JSON object")
        return data

    def form(self) -> dict[str, str | bytes]:
        """Fields of a urlencoded or multipart form (file parts as bytes).

        Raises:
            HttpError: 400 for a form that cannot be read.
        """
        if self.content_type.startswith("multipart/form-data"):
            header = f"Content-Type: {self.content_type}\r\n\r\n".encode("latin-1")
            message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                header + self.body
            )
            fields: dict[str, str | bytes] = {}
            for part in message.iter_parts():
                name = part.get_param("name", header="content-disposition")
                payload = part.get_payload(decode=True)
                if isinstance(name, str) and isinstance(payload, bytes):
                    is_file = part.get_filename() is not None
                    fields[name] = payload if is_file else payload.decode("utf-8", "replace")
            return fields
        try:
            pairs = parse_qs(self.body.decode("utf-8"), keep_blank_values=True)
        except UnicodeDecodeError:
            raise HttpError(400, "the form is not valid UTF-8") from None
        return {key: values[-1] for key, values in pairs.items()}


@dataclass
class Response:
    """An answer: status, content type, body bytes."""

    status: int
    body: bytes
    content_type: str = "application/json"

    @classmethod
    def json(cls, data: Any, status: int = 200) -> Response:
        """A JSON answer."""
        return cls(status, json.dumps(data).encode("utf-8"))

    @classmethod
    def error(cls, message: str, status: int) -> Response:
        """WAA's error answer: ``{"status": "error", "message": ...}``."""
        return cls.json({"status": "error", "message": message}, status)

    @classmethod
    def text(cls, text: str, status: int = 200) -> Response:
        """A plain-text answer."""
        return cls(status, text.encode("utf-8"), "text/plain; charset=utf-8")


Route = Callable[[Request], Response]


@dataclass
class App:
    """Routes of one server: exact ``(method, path)`` pairs and ``GET`` path prefixes."""

    name: str
    gate: FaultGate
    release: threading.Event
    routes: dict[tuple[str, str], Route] = field(default_factory=dict)
    prefixes: dict[str, Route] = field(default_factory=dict)

    def route(self, method: str, path: str, handler: Route) -> None:
        """Register a handler; a path ending in ``/`` matches every path below it (GET only)."""
        if path.endswith("/") and path != "/":
            self.prefixes[path] = handler
        else:
            self.routes[(method, path)] = handler

    def dispatch(self, request: Request) -> Response:
        """Find the handler and turn its exceptions into WAA's error answers."""
        handler = self.routes.get((request.method, request.path))
        if handler is None and request.method == "GET":
            for prefix, candidate in self.prefixes.items():
                if request.path.startswith(prefix) and len(request.path) > len(prefix):
                    handler = candidate
        if handler is None:
            known = {p for _, p in self.routes}
            if request.path in known:
                raise HttpError(405, f"{request.method} is not allowed on {request.path}")
            raise HttpError(404, f"no such endpoint: {request.method} {request.path}")
        return handler(request)


class AppServer(ThreadingHTTPServer):
    """A threading HTTP server that answers through an :class:`App`, behind a :class:`Guard`.

    Connections are accepted by an :class:`Acceptor`, which takes one of the guard's slots for
    each; the slot is given back when the connection's thread ends.
    """

    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], app: App, guard: Guard) -> None:
        self.app = app
        self.guard = guard
        # what the acceptor read of each admitted connection (its request line at least)
        self.already_read: dict[socket.socket, bytes] = {}
        super().__init__(address, _Handler)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.guard.close()

    @property
    def port(self) -> int:
        """The bound port (useful when asked for port 0)."""
        return int(self.server_address[1])


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: AppServer
    server_version = "oa-vm-local-worker"
    # Headers and body go out in separate writes; with Nagle's algorithm on, the body waits for
    # the client's delayed ACK (about 40 ms per answer on Linux loopback).
    disable_nagle_algorithm = True

    def setup(self) -> None:
        super().setup()
        # Read through the deadline: what the acceptor read first, then the socket, each read
        # waiting only for what is left of this request's read_timeout (handle_one_request).
        self._deadline = time.monotonic() + self.server.guard.limits.read_timeout
        first = self.server.already_read.pop(self.connection, b"")
        raw = _DeadlineReader(self.connection, first, lambda: self._deadline)
        self.rfile = io.BufferedReader(raw, 65536)

    def handle_one_request(self) -> None:
        # one deadline for the whole request, head and body: the wait for the next request on
        # a kept-alive connection starts a new one
        self._deadline = time.monotonic() + self.server.guard.limits.read_timeout
        super().handle_one_request()

    def log_message(self, format: str, *args: Any) -> None:
        if not log.isEnabledFor(logging.DEBUG):
            return
        # Request lines (quoted by http.server's own messages) carry the secret.
        text = self.server.guard.capability.redact(format % args)
        log.debug("%s %s %s", self.server.app.name, self.address_string(), text)

    def handle_expect_100(self) -> bool:
        # A client that asks before sending its body learns of a refusal without sending it.
        admitted = self._admit()
        if isinstance(admitted, Response):
            self._send(admitted, close=True)
            return False
        return super().handle_expect_100()

    def _admit(self) -> tuple[str, int] | Response:
        """``(path below the secret prefix, body length)``, or the refusal to send.

        Nothing of the body has been read at this point; every refusal closes the connection.
        """
        guard = self.server.guard
        path = guard.capability.strip(urlsplit(self.path).path)
        if path is None:
            return Response.error("forbidden", 403)
        if "Transfer-Encoding" in self.headers:
            message = "send the body with a Content-Length (no Transfer-Encoding)"
            return Response.error(message, 411)
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            return Response.error("bad Content-Length", 400)
        if length > guard.limits.max_body:
            message = (f"request body of {length} bytes is over this worker's limit of "
                       f"{guard.limits.max_body} bytes (--max-body-mb)")
            return Response.error(message, 413)
        return path, length

    def _handle(self) -> None:
        app = self.server.app
        admitted = self._admit()
        if isinstance(admitted, Response):
            self._send(admitted, close=True)
            return
        path, length = admitted
        refused = self.server.guard.fence(self.headers.get(FENCE_HEADER))
        if refused is not None:
            self._send(Response.error(refused, 409), close=True)
            return
        action = app.gate.admit()
        if action is Action.HANG:
            # Hold the connection open without a word until the worker stops.
            app.release.wait()
            self.close_connection = True
            return
        body = self.rfile.read(length) if length else b""
        if action is Action.ERROR:
            # The server itself failing (as a web server's own error page does), not an
            # endpoint answering: WAA's JSON error body on /execute_windows means the agent's
            # code raised, so an injected fault must not look like one.
            message = f"injected fault (error-rate={app.gate.faults.error_rate:g})"
            self._send(Response.text(f"Internal Server Error: {message}", 500))
            return
        request = Request(
            method=self.command,
            path=path.rstrip("/") or "/",
            query=parse_qs(urlsplit(self.path).query),
            content_type=self.headers.get("Content-Type", ""),
            body=body,
        )
        try:
            # an action played for this request stops once the caller closes the connection
            with cancel.watching(self.connection):
                response = app.dispatch(request)
        except HttpError as exc:
            response = Response.error(exc.message, exc.status)
        except Exception as exc:  # WAA answers any failure with a 500
            log.error("%s %s failed:\n%s", app.name, request.path, traceback.format_exc())
            response = Response.error(str(exc), 500)
        self._send(response, dribble=action is Action.DRIBBLE)

    def _send(self, response: Response, *, close: bool = False, dribble: bool = False) -> None:
        try:
            self.send_response(response.status)
            self.send_header("Content-Type", response.content_type)
            self.send_header("Content-Length", str(len(response.body)))
            if close or dribble:  # an unread body must not be taken for the next request
                self.send_header("Connection", "close")
            self.end_headers()
            if not dribble:
                self.wfile.write(response.body)
                return
            self.wfile.flush()
            # the dribble-after fault: a byte at a time until the client gives up (or the
            # worker stops)
            for index in range(len(response.body)):
                if self.server.app.release.wait(DRIBBLE_PAUSE_S):
                    break
                self.wfile.write(response.body[index:index + 1])
                self.wfile.flush()
            self.close_connection = True
        except OSError:
            self.close_connection = True  # the client went away; nothing to tell it

    do_GET = do_POST = do_PUT = do_DELETE = _handle


def _raw_error(status: int, message: str, extra_header: str = "") -> bytes:
    """A whole error answer that closes the connection, for the accepting thread to send."""
    body = json.dumps({"status": "error", "message": message}).encode()
    reason = {400: "Bad Request", 403: "Forbidden", 414: "URI Too Long",
              503: "Service Unavailable"}[status]
    head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n{extra_header}Connection: close\r\n\r\n")
    return head.encode("latin-1") + body


_BUSY = _raw_error(503, "too many connections to this worker; retry later", "Retry-After: 1\r\n")
HEAD_LIMIT = 8192
"""Bytes of a request line the acceptor reads before it refuses the connection (414)."""
MAX_PENDING = 256
"""Connections waiting for their request line per worker; past it the oldest is closed."""


@dataclass
class _Pending:
    """A connection accepted, not yet admitted: what it sent so far and until when it may."""

    conn: socket.socket
    address: Any
    server: AppServer
    deadline: float
    data: bytes = b""


class Acceptor:
    """One thread that accepts connections for several servers (a selector, no polling).

    It also reads each new connection's request line (non-blocking) and admits it (a slot, a
    thread) only when the line is HTTP/1.x and its path carries the secret; every other
    connection is answered and closed from this thread (:meth:`_screen`).
    """

    def __init__(self, servers: list[AppServer], name: str) -> None:
        self._servers = servers
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._stopping = False
        self._pending: dict[socket.socket, _Pending] = {}
        for server in servers:
            server.socket.setblocking(False)
            self._selector.register(server.socket, selectors.EVENT_READ, server)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._thread = threading.Thread(target=self._loop, name=f"accept-{name}", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stopping:
            wait = None
            if self._pending:
                nearest = min(p.deadline for p in self._pending.values())
                wait = max(0.0, nearest - time.monotonic())
            for key, _ in self._selector.select(wait):
                if key.data is None or self._stopping:
                    return
                if isinstance(key.data, _Pending):
                    self._read_head(key.data)
                else:
                    self._accept(key.data)
            self._expire()

    def _accept(self, server: AppServer) -> None:
        try:
            conn, address = server.socket.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            log.exception("accept failed on %s", server.app.name)
            return
        conn.setblocking(False)
        if len(self._pending) >= MAX_PENDING:  # a flood of silent connections: oldest goes
            oldest = min(self._pending.values(), key=lambda p: p.deadline)
            self._drop(oldest)
        pending = _Pending(conn, address, server,
                           time.monotonic() + server.guard.limits.read_timeout)
        self._pending[conn] = pending
        self._selector.register(conn, selectors.EVENT_READ, pending)

    def _read_head(self, pending: _Pending) -> None:
        try:
            chunk = pending.conn.recv(HEAD_LIMIT)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._drop(pending)
            return
        pending.data += chunk
        self._screen(pending)

    def _screen(self, pending: _Pending) -> None:
        """Admit, refuse or keep waiting for a connection from what it sent so far."""
        line, found, _ = pending.data.partition(b"\n")
        if not found:
            if len(pending.data) >= HEAD_LIMIT:
                self._refuse(pending, 414, "request line too long")
            return
        words = line.decode("latin-1").split()
        if len(words) != 3 or not words[2].startswith("HTTP/1."):
            # HTTP/0.9 (no version) or not HTTP: never given a slot
            self._refuse(pending, 400, "send an HTTP/1.x request")
            return
        guard = pending.server.guard
        if guard.capability.strip(urlsplit(words[1]).path) is None:
            self._refuse(pending, 403, "forbidden")
            return
        self._forget(pending)
        if not guard.try_open():
            _answer_and_close(pending.conn, _BUSY)
            return
        conn, server = pending.conn, pending.server
        conn.setblocking(True)
        server.already_read[conn] = pending.data
        try:
            server.process_request(conn, pending.address)
        except Exception:  # one bad connection must not stop the worker
            log.exception("could not start a request thread")
            server.already_read.pop(conn, None)
            guard.close()
            server.shutdown_request(conn)

    def _expire(self) -> None:
        now = time.monotonic()
        for pending in [p for p in self._pending.values() if p.deadline <= now]:
            self._drop(pending)

    def _forget(self, pending: _Pending) -> None:
        self._pending.pop(pending.conn, None)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(pending.conn)

    def _drop(self, pending: _Pending) -> None:
        self._forget(pending)
        with contextlib.suppress(OSError):
            pending.conn.close()

    def _refuse(self, pending: _Pending, status: int, message: str) -> None:
        """Answer an error and close, from this thread (:func:`_answer_and_close`)."""
        self._forget(pending)
        _answer_and_close(pending.conn, _raw_error(status, message))

    def stop(self) -> None:
        """Stop accepting, close the listening sockets (freeing the ports)."""
        self._stopping = True
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        self._thread.join(timeout=5)
        for pending in list(self._pending.values()):
            self._drop(pending)
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()
        for server in self._servers:
            server.server_close()


class _DeadlineReader(io.RawIOBase):
    """A connection's bytes for the request handler: ``first`` (what the acceptor read), then
    the socket, each read waiting at most until ``deadline()`` (then ``TimeoutError``, which
    ``http.server`` answers by closing the connection)."""

    def __init__(self, conn: socket.socket, first: bytes,
                 deadline: Callable[[], float]) -> None:
        super().__init__()
        self._conn = conn
        self._first = first
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._first:
            n = min(len(view), len(self._first))
            view[:n] = self._first[:n]
            self._first = self._first[n:]
            return n
        left = self._deadline() - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request was not complete within the read timeout")
        self._conn.settimeout(left)
        return self._conn.recv_into(view)


def _answer_and_close(conn: socket.socket, answer: bytes) -> None:
    """Send a refusal (such as 503 to a connection over the limit) and close the connection,
    from the accepting thread.

    The write cannot block (a fresh connection's send buffer is empty, and the socket is
    non-blocking), so a flood of connections costs no thread and never stalls accepting.
    """
    with contextlib.suppress(OSError):
        conn.setblocking(False)
        conn.send(answer)
    with contextlib.suppress(OSError):
        conn.close()
