"""The lean keep-alive transport against real HTTP/1.1 servers on loopback."""

from __future__ import annotations

import json
import os
import resource
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.support.http_servers import LoopbackHttp, RefusingPort, SilentServer
from tests.support.waiting import wait_until
from waa_client import WaaClient
from waa_client.errors import WorkerTimeoutError, WorkerUnreachableError
from waa_client.scoring import ScoringClient
from waa_client.transport import LeanSession


class Echo:
    """An HTTP/1.1 server answering every request with what it received, as JSON.

    ``close_after_one`` makes it drop each connection after one answer without saying so
    (no ``Connection: close``), as a server timing out an idle keep-alive connection does.
    """

    def __init__(self, *, close_after_one: bool = False) -> None:
        self.peers: list[int] = []
        self.closed = 0
        """Connections this server has closed (their sockets shut down)."""
        echo = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                echo.peers.append(self.client_address[1])
                data = json.dumps({
                    "method": self.command, "path": self.path,
                    "type": self.headers.get("Content-Type"), "body": body.decode(),
                }).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                if close_after_one:
                    self.close_connection = True

            do_GET = _answer
            do_POST = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            def shutdown_request(self, request: Any) -> None:
                super().shutdown_request(request)
                echo.closed += 1

        self._served = LoopbackHttp(Handler, Server)
        self.url = self._served.url

    def close(self) -> None:
        self._served.close()


@pytest.fixture
def echo() -> Iterator[Echo]:
    server = Echo()
    yield server
    server.close()


def test_bodies_and_query_arrive_as_sent(echo: Echo) -> None:
    session = LeanSession()
    try:
        got = session.request("GET", f"{echo.url}/tasks", timeout=(5, 5),
                              params={"index": "local all"}).json()
        assert (got["method"], got["path"]) == ("GET", "/tasks?index=local+all")
        got = session.request("POST", f"{echo.url}/evaluate", timeout=(5, 5),
                              json={"task": {"id": "é"}}).json()
        assert got["type"] == "application/json"
        assert json.loads(got["body"]) == {"task": {"id": "é"}}
        got = session.request("POST", f"{echo.url}/file", timeout=(5, 5),
                              data={"file_path": "C:\\a b.txt"}).json()
        assert got["type"] == "application/x-www-form-urlencoded"
        assert got["body"] == "file_path=C%3A%5Ca+b.txt"
        empty = session.request("POST", f"{echo.url}/setup/close_all", timeout=(5, 5))
        assert empty.status_code == 200 and empty.json()["body"] == ""
        assert empty.url == f"{echo.url}/setup/close_all" and empty.request.method == "POST"
    finally:
        session.close()


def test_one_connection_is_kept_alive(echo: Echo) -> None:
    with ScoringClient(echo.url) as client:
        for _ in range(5):
            client.probe()
    assert len(echo.peers) == 5 and len(set(echo.peers)) == 1


def test_connections_are_kept_alive_past_a_thousand_descriptors(echo: Echo) -> None:
    # A controller with hundreds of workers holds more than FD_SETSIZE (1024) descriptors;
    # a connection numbered above it must be reused like any other (select() refuses it).
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200 and (hard == resource.RLIM_INFINITY or hard >= 1200):
        resource.setrlimit(resource.RLIMIT_NOFILE, (1200, hard))
    elif soft < 1200:
        pytest.skip("this process may not open 1,200 files")
    filler: list[int] = []
    try:
        while not filler or filler[-1] < 1030:
            filler.append(os.open(os.devnull, os.O_RDONLY))
        with ScoringClient(echo.url) as client:
            for _ in range(5):
                client.probe()
            sock = client._session._idle[("127.0.0.1", int(echo.url.rsplit(":", 1)[1]))][0].sock
            assert sock is not None and sock.fileno() > 1024
    finally:
        for fd in filler:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert len(echo.peers) == 5 and len(set(echo.peers)) == 1


def test_a_connection_the_server_dropped_is_not_reused() -> None:
    server = Echo(close_after_one=True)
    try:
        with ScoringClient(server.url, retries=0) as client:
            for done in range(1, 4):
                client.probe()
                # once the server has closed the connection (on loopback its end is then ours
                # to read), the next call must see it and reconnect (a close racing a new
                # request fails it, as with requests; idempotent calls are retried by the
                # client's policy)
                wait_until(lambda done=done: server.closed >= done, "the server's close")
        assert len(server.peers) == 3 and len(set(server.peers)) == 3
    finally:
        server.close()


def test_failures_map_to_the_clients_errors() -> None:
    with RefusingPort() as refusing:
        with pytest.raises(WorkerUnreachableError, match="refused") as refused:
            WaaClient(f"http://127.0.0.1:{refusing.port}", retries=0).probe()
        assert not isinstance(refused.value, WorkerTimeoutError)
    with SilentServer() as silent, pytest.raises(WorkerTimeoutError, match="no answer within"):
        WaaClient(f"http://127.0.0.1:{silent.port}", retries=0, read_timeout=0.5).probe()


class RawServer:
    """A loopback server answering each request with scripted raw bytes (what a real server
    may send that the simple ones above never do: chunked bodies, interim answers, HTTP/1.0).

    Each script entry is ``(raw answer, close the connection after it)``; answers are sent in
    small pieces so the client has to put them together from several reads.
    """

    def __init__(self, script: list[tuple[bytes, bool]]) -> None:
        self.script = list(script)
        self.requests: list[bytes] = []
        self.connections = 0
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while self.script:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                buffer = b""
                while self.script:
                    while b"\r\n\r\n" not in buffer:
                        data = conn.recv(65536)
                        if not data:
                            break
                        buffer += data
                    if b"\r\n\r\n" not in buffer:
                        break
                    head, _, buffer = buffer.partition(b"\r\n\r\n")
                    length = 0
                    for line in head.split(b"\r\n")[1:]:
                        name, _, value = line.partition(b":")
                        if name.strip().lower() == b"content-length":
                            length = int(value)
                    while len(buffer) < length:
                        buffer += conn.recv(65536)
                    self.requests.append(head + b"\r\n\r\n" + buffer[:length])
                    buffer = buffer[length:]
                    answer, close = self.script.pop(0)
                    for start in range(0, len(answer), 7):
                        conn.sendall(answer[start:start + 7])
                    if close:
                        break

    def close(self) -> None:
        self._sock.close()
        self._thread.join(timeout=10)


@pytest.mark.parametrize(
    ("answer", "body", "kept"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\n\r\nhello", b"hello", True),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
         b"3;ext=1\r\nhel\r\n2\r\nlo\r\n0\r\nTrailer: x\r\n\r\n", b"hello", True),
        (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
         b"ok", True),
        (b"HTTP/1.1 204 No Content\r\n\r\n", b"", True),
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", b"ok", False),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", b"ok", False),
        (b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", b"ok",
         True),
    ],
    ids=["length", "chunked", "interim", "no-content", "close", "http10", "http10-keep-alive"],
)
def test_answers_are_read_whole_and_connections_kept_only_when_they_may_be(
    answer: bytes, body: bytes, kept: bool
) -> None:
    second = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext"
    server = RawServer([(answer, not kept), (second, True)])
    session = LeanSession()
    try:
        got = session.request("POST", f"{server.url}/x", timeout=(5, 5), json={"a": 1})
        assert (got.content, got.status_code) == (body, int(answer.split(b" ")[1]) if
                                                  b"100 Continue" not in answer else 200)
        if kept:
            assert got.headers.get("x-a") == ("1" if b"X-A" in answer else None)
        assert session.request("GET", f"{server.url}/y", timeout=(5, 5)).content == b"next"
    finally:
        session.close()
        server.close()
    assert server.connections == (1 if kept else 2)
    first, then = server.requests
    assert first.startswith(b"POST /x HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"\r\nContent-Type: application/json\r\nContent-Length: 8\r\n\r\n{\"a\": 1}" in first
    assert then.startswith(b"GET /y HTTP/1.1\r\n") and b"Content-Length" not in then


def test_a_body_delimited_by_the_close_is_read_to_the_end() -> None:
    big = bytes(range(256)) * 2000
    server = RawServer([(b"HTTP/1.0 200 OK\r\n\r\n" + big, True)])
    try:
        session = LeanSession()
        assert session.request("GET", f"{server.url}/big", timeout=(5, 5)).content == big
        session.close()
    finally:
        server.close()


@pytest.mark.parametrize(
    ("answer", "cause"),
    [
        (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "not an HTTP/1.x status line"),
        (b"HTTP/1.1 2xx OK\r\n\r\n", "bad status code"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "after 5 of 10 body bytes"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad chunk size"),
        (b"", "closed the connection without answering"),
    ],
    ids=["not-http", "bad-status", "cut-body", "bad-chunk", "nothing"],
)
def test_what_is_not_a_whole_http_answer_is_an_unreachable_worker(
    answer: bytes, cause: str
) -> None:
    server = RawServer([(answer, True)])
    try:
        with ScoringClient(server.url, retries=0) as client, pytest.raises(
            WorkerUnreachableError, match=cause
        ) as info:
            client.probe()
        assert not isinstance(info.value, WorkerTimeoutError)
    finally:
        server.close()


def test_each_url_is_parsed_once_however_many_workers_it_talks_to(
    echo: Echo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # urlsplit keeps the parts of 128 URLs; a pool of hundreds of workers uses more (a port and
    # a capability each, several paths), and each request parsed its URL again
    from waa_client import transport

    parsed: list[str] = []

    def counting(url: str, *args: Any, **kwargs: Any) -> Any:
        parsed.append(url)
        return real(url, *args, **kwargs)

    real = transport.urlsplit
    monkeypatch.setattr(transport, "urlsplit", counting)
    urls = [f"{echo.url}/cap-{os.urandom(8).hex()}/obs" for _ in range(150)]
    session = LeanSession()
    try:
        for _ in range(2):
            for url in urls:
                got = session.request("GET", url, timeout=(5, 5), params={"n": "1"})
                assert got.json()["path"] == url.removeprefix(echo.url) + "?n=1"
                assert got.url == url + "?n=1"
    finally:
        session.close()
    assert len(parsed) == len(urls)


class DribblingServer:
    """A loopback server that answers every request with ``head``, then its body one byte at
    a time, ``pause`` seconds apart (slow-loris: never silent long enough for a read timeout)."""

    def __init__(self, head: bytes, body: bytes, pause: float) -> None:
        self.head, self.body, self.pause = head, body, pause
        self._stop = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self._sock.accept()
        except OSError:
            return
        with conn:
            try:
                conn.recv(65536)
                conn.sendall(self.head)
                for byte in self.body:
                    if self._stop.wait(self.pause):
                        return
                    conn.sendall(bytes([byte]))
            except OSError:
                return  # the client gave up and closed: what the test wants

    def close(self) -> None:
        self._stop.set()
        self._sock.close()
        self._thread.join(timeout=10)


def test_a_worker_dribbling_its_answer_byte_by_byte_times_out_within_the_read_timeout() -> None:
    # 400 bytes 0.1 s apart: each read gets a byte well within the 1 s read timeout, so only a
    # deadline on the whole answer ends the call (before it, the call took the 40 s the server
    # chose, and a slower server held the attempt for as long as it liked)
    body = b"x" * 400
    server = DribblingServer(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: 400\r\n\r\n", body, 0.1)
    try:
        with WaaClient(server.url, retries=0, read_timeout=1.0) as client, pytest.raises(
            WorkerTimeoutError, match="no answer within 1s"
        ) as info:
            client.probe()
        assert info.value.is_infrastructure  # the task is retried elsewhere
    finally:
        server.close()


@pytest.mark.parametrize(
    "head",
    [b"HTTP/1.1 200 OK\r\nContent-Length: 10000000000000\r\n\r\n",
     b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffff\r\n"],
    ids=["content-length", "chunk"],
)
def test_an_answer_announcing_a_huge_body_is_refused_before_it_is_read(head: bytes) -> None:
    server = DribblingServer(head, b"", 0.1)
    try:
        with WaaClient(server.url, retries=0, read_timeout=30.0) as client, pytest.raises(
            WorkerUnreachableError, match="above the 256 MB a worker's answer may be"
        ) as info:
            client.probe()
        assert info.value.is_infrastructure and not isinstance(info.value, WorkerTimeoutError)
    finally:
        server.close()
