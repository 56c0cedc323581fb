"""Secrets stay out of everything the project stores or prints, not only out of URLs."""

from __future__ import annotations

import json
import secrets
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from oa_vm.redact import redact_text, register_secret
from tests.support.cli import run_cli

TASK = "c499b229-110c-5fc8-9895-f2f879ac1512-WOS"


@pytest.fixture
def echoing_agent() -> Iterator[str]:
    """An agent server that answers 401 with the Authorization header it got, in three forms."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            got = self.headers.get("Authorization", "")
            token = got.removeprefix("Bearer ")
            body = json.dumps({"error": f"rejected {got}", "token": token,
                               "detail": f"the key '{token}' is unknown"}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/act"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def test_a_token_echoed_by_the_agent_server_is_stored_and_printed_nowhere(
    pooled: Path, tmp_path: Path, echoing_agent: str
) -> None:
    token = "tok-" + secrets.token_hex(12)  # no well-known shape: only its use can find it
    results = tmp_path / "results"
    ran = run_cli("openadapt-evals", "run", "--pool", "p", "--agent", "http", "--agent-url",
                  echoing_agent, "--tasks", TASK, "--run-name", "s", "--results-dir",
                  str(results), home=pooled, env={"OA_EVALS_AGENT_TOKEN": token})
    assert ran.returncode != 0  # every task ended error/agent
    execution = json.loads((results / "s" / "tasks" / TASK / "execution.json").read_text())
    assert execution["error_type"] == "agent"
    assert "401" in execution["error_message"]
    viewed = run_cli("openadapt-evals", "view", "s", "--results-dir", str(results), home=pooled)
    assert viewed.returncode == 0, viewed.stderr
    written = b"".join(p.read_bytes() for p in (results / "s").rglob("*") if p.is_file())
    conn = sqlite3.connect(results / "s" / "queue.sqlite")
    dumped = "\n".join(conn.iterdump())
    conn.close()
    assert token.encode() not in written
    assert token not in dumped
    assert token not in ran.stdout + ran.stderr


def test_credentials_in_the_agent_url_never_silently_replace_the_token(
    pooled: Path, tmp_path: Path, echoing_agent: str
) -> None:
    url = echoing_agent.replace("http://", "http://alice:hunter2@")
    line = run_cli("openadapt-evals", "run", "--pool", "p", "--agent", "http", "--agent-url",
                   url, "--tasks", TASK, "--run-name", "u", "--results-dir",
                   str(tmp_path / "results"), home=pooled,
                   env={"OA_EVALS_AGENT_TOKEN": "tok-abcdef123456"}).assert_one_line_error()
    assert "OA_EVALS_AGENT_TOKEN" in line and "hunter2" not in line
    assert not (tmp_path / "results" / "u").exists()


@pytest.mark.parametrize(("text", "kept"), [
    ("HTTP 401: Authorization: Bearer abc123XYZ789", "HTTP 401: Authorization: Bearer "),
    ('{"error": "invalid", "api_key": "zzz9999aaa"}', '{"error": "invalid", "api_key": "'),
    ("key sk-ant-abcdefghijklmnopqrstuvwxyz rejected", "key "),
    ("AWS said AKIAABCDEFGHIJKLMNOP is unknown", "AWS said "),
    ("password=hunter22&user=x", "password="),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaA\n-----END OPENSSH PRIVATE KEY-----", ""),
])
def test_redact_text_masks_credentials_in_free_text(text: str, kept: str) -> None:
    masked = redact_text(text)
    assert masked.startswith(kept) and "***" in masked
    for secret in ("abc123XYZ789", "zzz9999aaa", "sk-ant", "AKIAABCD", "hunter22", "b3BlbnNzaA"):
        assert secret not in masked


@pytest.mark.parametrize("text", [
    "tokens_in: 1234 max_tokens=500", "the token was rejected", "Basic authentication failed",
])
def test_redact_text_leaves_ordinary_words(text: str) -> None:
    assert redact_text(text) == text


def test_a_registered_secret_is_masked_in_any_form_of_text() -> None:
    register_secret("plain-looking-value-42")
    assert redact_text("server said: plain-looking-value-42!") == "server said: ***!"
