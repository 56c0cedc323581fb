"""A lean HTTP/1.1 keep-alive transport for the worker clients, on plain sockets.

A sweep's controller sends three to four requests per agent step to every worker, and at
hundreds of workers it is CPU-bound. ``requests`` spends about 0.5 ms of CPU per call on
machinery these clients never use (hooks, cookie jars, adapters, redirect handling, proxy and
netrc lookups, urllib3's pool bookkeeping), and ``http.client`` still parses every answer's
headers with the ``email`` package (a feed parser and a policy object per answer, about a
third of a small call's CPU). :class:`LeanSession` sends the requests the clients make (GET
and POST, a JSON, form or empty body, query parameters) on pooled keep-alive sockets, writes
each request in one ``sendall``, reads the status line and headers itself and the body
straight into one buffer, and returns ordinary :class:`requests.Response` objects, so the
clients' status handling and JSON parsing are unchanged.

What it reads of HTTP/1.1 (RFC 9112): a status line, header fields (no obsolete line
folding), a body delimited by ``Content-Length``, by ``Transfer-Encoding: chunked`` or by the
server closing the connection; interim 1xx answers are skipped; no body after 204, 304 or a
HEAD request. A connection is kept for the next request unless the server said
``Connection: close`` (HTTP/1.0: unless it said ``keep-alive``) or the body ran to the close.

Why not urllib3 or httpcore (measured): ``bench/transport.py`` sends the calls a task makes
to one local simulated worker on loopback through this transport, a ``urllib3.PoolManager``
(urllib3 2.8), an ``httpcore.ConnectionPool`` (httpcore 1.0.9 on h11) and a
``requests.Session`` (2.34), all with the same timeouts and no retries, in one run (2 cores,
load average 14; medians of 5 rounds of 200 calls each; two runs). CPU per call, and its
ratio to ours:

=============  ============  ===================  ===================  ===================
call           ours          urllib3              httpcore             requests
=============  ============  ===================  ===================  ===================
/probe         52 / 46 us    206 / 240 (4.0/5.2)  202 / 210 (3.9/4.6)  444 / 447 (8.6/9.7)
/screenshot    59 / 60 us    211 / 243 (3.6/4.1)  209 / 220 (3.5/3.7)  457 / 472 (7.7/7.9)
/execute       64 / 62 us    237 / 292 (3.7/4.7)  222 / 233 (3.5/3.8)  460 / 489 (7.2/7.9)
=============  ============  ===================  ===================  ===================

Either library costs the controller 3.5 to 5 times this transport's CPU per call (urllib3 sends
on ``http.client``, whose header parsing goes through the ``email`` package; httpcore parses
with h11 in pure Python, through its pool and stream objects), and the controller is CPU-bound
at hundreds of workers (``docs/performance.md``), so this module stays; wall time per call is
1.7 to 3.7 times ours through either. Run the benchmark again before changing this module.

The read timeout bounds the whole answer, not each read of it: a server that sends a byte now
and then (slow-loris) is timed out as a silent one is. A body above :data:`MAX_BODY` is refused
before it is read.

Failures are raised as the ``requests`` exceptions the clients already map
(``ConnectTimeout``, ``ReadTimeout``, ``ConnectionError``), each carrying the socket error that
names the cause. A pooled connection the server has closed is noticed before it is reused (the
socket reads as ready while no request is outstanding), never by sending a request twice.
"""

from __future__ import annotations

import json as jsonlib
import select
import socket
import threading
import time
from functools import lru_cache
from typing import Any
from urllib.parse import urlencode, urlsplit

import requests
from requests.structures import CaseInsensitiveDict

_POOL_MAX = 4  # idle connections kept per host; a client is mostly used by one thread
_PLACES_KEPT = 8192  # URLs whose parts are kept: a few per worker, for thousands of workers
_READY_OR_GONE = select.POLLIN | select.POLLPRI | select.POLLERR | select.POLLHUP | select.POLLNVAL
_RECV = 8192  # the status line and headers; a larger first read cost memory, not CPU saved
_MAX_HEAD = 65536  # status line and headers; a server sending more is not a worker
_MAX_CHUNK_LINE = 4096
MAX_BODY = 256 * 1024 * 1024
"""Bytes of one answer's body: a worker's largest answers (a 4K screenshot in base64, an
accessibility tree of a busy desktop) are a few MB. A server announcing more, or sending more,
is not a worker: refused before anything that size is allocated (a stray or hostile
``Content-Length: 10000000000000`` used to end the controller with a MemoryError)."""


class ProtocolError(ConnectionError):
    """The answer is not HTTP/1.x as this transport reads it (mapped to a connection error)."""


class _Connection:
    """One keep-alive socket and the bytes read past the last answer."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock: socket.socket | None = sock
        self.buffer = bytearray()
        # the answer being read must be whole by then (time.monotonic()), None between answers
        self.deadline: float | None = None
        self.budget = 0.0

    def close(self) -> None:
        sock, self.sock = self.sock, None
        if sock is not None:
            sock.close()

    # -- reading -----------------------------------------------------------------------------

    def _arm(self) -> None:
        """Give the socket's next read what is left of the answer's deadline: a server that
        sends a byte now and then (slow-loris) still ends the call in time, as a silent one
        does (one ``ioctl`` per read, next to the read's own system call).

        Raises:
            TimeoutError: the deadline has passed.
        """
        if self.deadline is None:
            return
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no whole answer within {self.budget:g} s")
        assert self.sock is not None
        self.sock.settimeout(left)

    def _fill(self) -> bool:
        """Read what is there into the buffer; False at the end of the stream."""
        assert self.sock is not None
        self._arm()
        data = self.sock.recv(_RECV)
        if not data:
            return False
        self.buffer += data
        return True

    def read_head(self) -> bytes:
        """The status line and header fields, up to the blank line (which is consumed)."""
        start = 0
        while True:
            end = self.buffer.find(b"\r\n\r\n", start)
            if end >= 0:
                head = bytes(self.buffer[:end])
                del self.buffer[:end + 4]
                return head
            if len(self.buffer) > _MAX_HEAD:
                raise ProtocolError("the answer's headers are longer than 64 KB")
            start = max(0, len(self.buffer) - 3)
            if not self._fill():
                if self.buffer:
                    raise ProtocolError("the connection closed in the middle of the answer")
                raise ConnectionResetError("the server closed the connection without answering")

    def read_exactly(self, size: int) -> bytes:
        """``size`` body bytes (the buffered ones first, then straight from the socket)."""
        assert self.sock is not None
        _check_size(size)
        if len(self.buffer) >= size:
            data = bytes(self.buffer[:size])
            del self.buffer[:size]
            return data
        # Filled in place as the pieces arrive (a tunnel delivers a screenshot in dozens), then
        # copied once into the bytes the caller gets.
        body = bytearray(size)
        with memoryview(body) as view:
            have = len(self.buffer)
            view[:have] = self.buffer
            self.buffer.clear()
            while have < size:
                self._arm()
                got = self.sock.recv_into(view[have:])
                if not got:
                    raise ProtocolError(
                        f"the connection closed after {have} of {size} body bytes"
                    )
                have += got
        return bytes(body)

    def read_line(self) -> bytes:
        """One CRLF-terminated line (without the CRLF), for chunked bodies."""
        while True:
            end = self.buffer.find(b"\r\n")
            if end >= 0:
                line = bytes(self.buffer[:end])
                del self.buffer[:end + 2]
                return line
            if len(self.buffer) > _MAX_CHUNK_LINE:
                raise ProtocolError("a chunk header line is too long")
            if not self._fill():
                raise ProtocolError("the connection closed in the middle of a chunked body")

    def read_chunked(self) -> bytes:
        """A ``Transfer-Encoding: chunked`` body (trailer fields are read and dropped)."""
        parts: list[bytes] = []
        total = 0
        while True:
            line = self.read_line()
            size = _number(line.split(b";", 1)[0].strip(), 16)
            if size < 0:
                raise ProtocolError(f"bad chunk size line {line[:40]!r}")
            if size == 0:
                while self.read_line():
                    pass
                return b"".join(parts)
            total += size
            _check_size(total)
            parts.append(self.read_exactly(size))
            if self.read_exactly(2) != b"\r\n":
                raise ProtocolError("a chunk does not end with CRLF")

    def read_to_close(self) -> bytes:
        """A body delimited by the server closing the connection."""
        while self._fill():
            _check_size(len(self.buffer))
        data = bytes(self.buffer)
        self.buffer.clear()
        return data


def _check_size(size: int) -> None:
    """Refuse a body above :data:`MAX_BODY` (announced or received so far)."""
    if size > MAX_BODY:
        raise ProtocolError(f"the answer's body is {size} bytes or more, above the "
                            f"{MAX_BODY // (1024 * 1024)} MB a worker's answer may be")


def _number(text: bytes, base: int) -> int:
    """A non-negative number written in ``base`` digits only, else -1 (raised by the caller as
    a :class:`ProtocolError` of its own, so the error names the field, not ``int()``)."""
    digits = b"0123456789abcdefABCDEF" if base == 16 else b"0123456789"
    if not text or text.strip(digits):
        return -1
    return int(text, base)


class _Answer:
    """What :func:`_read_answer` returns: status, reason, headers, body, and whether the
    connection can carry the next request."""

    __slots__ = ("status", "reason", "headers", "body", "reusable")

    def __init__(self, status: int, reason: str, headers: list[tuple[str, str]], body: bytes,
                 reusable: bool) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
        self.reusable = reusable


def _parse_head(head: bytes) -> tuple[str, int, str, list[tuple[str, str]]]:
    """``(version, status, reason, headers)`` of a status line and its header fields."""
    text = head.decode("iso-8859-1")
    lines = text.split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
        raise ProtocolError(f"not an HTTP/1.x status line: {lines[0][:60]!r}")
    status = _number(parts[1].encode("ascii", "replace"), 10)
    if not 100 <= status <= 999:
        raise ProtocolError(f"bad status code in {lines[0][:60]!r}")
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name or name[0] in " \t":
            raise ProtocolError(f"bad header line {line[:60]!r}")
        headers.append((name, value.strip(" \t")))
    return parts[0], status, parts[2].strip() if len(parts) > 2 else "", headers


def _read_answer(conn: _Connection, method: str) -> _Answer:
    while True:
        version, status, reason, headers = _parse_head(conn.read_head())
        if 100 <= status < 200 and status != 101:
            continue  # an interim answer (100 Continue...): the real one follows
        break
    fields: dict[str, str] = {}
    for name, value in headers:
        key = name.lower()
        fields[key] = f"{fields[key]}, {value}" if key in fields else value
    tokens = {t.strip().lower() for t in fields.get("connection", "").split(",")}
    # HTTP/1.1 keeps the connection unless told otherwise; HTTP/1.0 only when told to
    reusable = "keep-alive" in tokens if version == "HTTP/1.0" else "close" not in tokens
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        body = b""
    elif "chunked" in fields.get("transfer-encoding", "").lower():
        body = conn.read_chunked()
    elif "content-length" in fields:
        length = _number(fields["content-length"].strip().encode("ascii", "replace"), 10)
        if length < 0:
            raise ProtocolError(f"bad Content-Length {fields['content-length'][:40]!r}")
        body = conn.read_exactly(length)
    else:
        body = conn.read_to_close()
        reusable = False
    if conn.buffer:
        reusable = False  # bytes nobody asked for: the stream cannot be trusted any more
    return _Answer(status, reason, headers, body, reusable)


@lru_cache(maxsize=_PLACES_KEPT)
def _place(url: str) -> tuple[str, int, str, str, str] | None:
    """``(host, port, path?query, authority, http://netloc)`` of an ``http`` URL, None for
    another scheme.

    Parsed once per URL: ``urlsplit`` keeps the parts of the last 128 URLs only, fewer than a
    pool of twenty workers already uses (each worker has its own port and capability, and a
    step calls several paths), so every request parsed its URL again (2 to 3 us of the
    controller's CPU, about 5 % of a call through this transport; 1.7 % of the controller's
    instructions per step at 20 workers, ``bench/instructions.py``).

    Raises:
        ValueError: the URL's port is not a number (not kept: raised at every call).
    """
    parts = urlsplit(url)
    if parts.scheme != "http":
        return None
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return (parts.hostname or "", parts.port or 80, target, parts.netloc.rpartition("@")[2],
            f"http://{parts.netloc}")


class LeanSession:
    """The subset of :class:`requests.Session` the worker clients use, on plain sockets.

    ``request`` takes ``params``, ``json`` and ``data`` (a dict, form-encoded); other keyword
    arguments, and ``https`` URLs, go through a real ``requests.Session`` instead.
    """

    def __init__(self) -> None:
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._lock = threading.Lock()
        self._fallback: requests.Session | None = None

    def _requests(self) -> requests.Session:
        if self._fallback is None:
            session = requests.Session()
            session.trust_env = False
            self._fallback = session
        return self._fallback

    def close(self) -> None:
        """Close every pooled connection."""
        with self._lock:
            pools, self._idle = self._idle, {}
        for conns in pools.values():
            for conn in conns:
                conn.close()
        if self._fallback is not None:
            self._fallback.close()

    # -- connections -------------------------------------------------------------------------

    def _take(self, host: str, port: int, connect_timeout: float) -> _Connection:
        with self._lock:
            idle = self._idle.get((host, port), [])
            while idle:
                conn = idle.pop()
                if conn.sock is not None and not _dropped(conn.sock):
                    return conn
                conn.close()
        try:
            sock = socket.create_connection((host, port), timeout=connect_timeout)
        except TimeoutError as e:
            raise requests.exceptions.ConnectTimeout(e) from e
        except OSError as e:
            raise requests.exceptions.ConnectionError(e) from e
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return _Connection(sock)

    def _give_back(self, host: str, port: int, conn: _Connection) -> None:
        with self._lock:
            idle = self._idle.setdefault((host, port), [])
            if len(idle) < _POOL_MAX:
                idle.append(conn)
                return
        conn.close()

    # -- requests ----------------------------------------------------------------------------

    def request(
        self, method: str, url: str, *, timeout: tuple[float, float], **kwargs: Any
    ) -> requests.Response:
        """Send one request and return the whole answer as a :class:`requests.Response`.

        Raises:
            requests.exceptions.ConnectTimeout: no connection within ``timeout[0]``.
            requests.exceptions.ReadTimeout: no (complete) answer within ``timeout[1]``.
            requests.exceptions.ConnectionError: refused, reset, closed mid-answer, or an
                answer that is not HTTP/1.x.
        """
        place = _place(url)
        if place is None or set(kwargs) - {"params", "json", "data", "headers"}:
            return self._requests().request(method, url, timeout=timeout, **kwargs)
        host, port, target, authority, origin = place
        params = kwargs.get("params")
        if params:
            target += ("&" if "?" in target else "?") + urlencode(params, doseq=True)
        head = f"{method} {target} HTTP/1.1\r\nHost: {authority}\r\n" \
            "Accept: */*\r\nAccept-Encoding: identity\r\n"
        for name, value in (kwargs.get("headers") or {}).items():
            if any(c in f"{name}{value}" for c in "\r\n\0"):
                raise requests.exceptions.InvalidHeader(f"header {name!r} holds a line break")
            head += f"{name}: {value}\r\n"
        body: bytes | None = None
        if kwargs.get("json") is not None:
            body = jsonlib.dumps(kwargs["json"]).encode("utf-8")
            head += "Content-Type: application/json\r\n"
        elif kwargs.get("data") is not None:
            body = urlencode(kwargs["data"], doseq=True).encode("utf-8")
            head += "Content-Type: application/x-www-form-urlencoded\r\n"
        elif method in ("POST", "PUT", "PATCH"):
            body = b""
        if body is not None:
            head += f"Content-Length: {len(body)}\r\n"
        message = (head + "\r\n").encode("iso-8859-1") + (body or b"")
        conn = self._take(host, port, timeout[0])
        try:
            assert conn.sock is not None
            conn.sock.settimeout(timeout[1])
            conn.sock.sendall(message)
            # the read timeout bounds the whole answer, not each piece of it
            conn.deadline, conn.budget = time.monotonic() + timeout[1], timeout[1]
            answer = _read_answer(conn, method)
            conn.deadline = None
        except TimeoutError as e:
            conn.close()
            raise requests.exceptions.ReadTimeout(e) from e
        except OSError as e:  # ProtocolError included (a ConnectionError)
            conn.close()
            raise requests.exceptions.ConnectionError(e) from e
        if answer.reusable:
            self._give_back(host, port, conn)
        else:
            conn.close()
        return _response(method, origin + target, answer)


def _dropped(sock: socket.socket) -> bool:
    """True if an idle keep-alive socket was closed by the server (or has stray bytes).

    ``poll``, not ``select``: a controller with hundreds of workers holds more than
    ``FD_SETSIZE`` (1024) descriptors, and ``select`` refuses any numbered above it, which made
    every connection on such a descriptor look dropped and be opened again for each request.
    """
    try:
        poller = select.poll()
        poller.register(sock, _READY_OR_GONE)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True


def _response(method: str, url: str, answer: _Answer) -> requests.Response:
    response = requests.Response()
    response.status_code = answer.status
    response.reason = answer.reason
    response.headers = CaseInsensitiveDict(answer.headers)
    response._content = answer.body  # what requests itself fills after reading the body
    response.url = url
    content_type = response.headers.get("Content-Type", "")
    # JSON is UTF-8 (RFC 8259); without a charset requests would guess with chardet per call
    response.encoding = "utf-8" if "json" in content_type or "text" in content_type else None
    prepared = requests.PreparedRequest()
    prepared.method = method
    prepared.url = url
    response.request = prepared
    return response
