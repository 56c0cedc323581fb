"""Stand-ins for the model APIs, which tests cannot reach: loopback HTTP servers answering in
the HTTP shape of Anthropic's Messages API (``POST /v1/messages``, computer-use tool) and OpenAI's
Responses API (``POST /v1/responses``, ``computer_use_preview``), from a script.

The "model" is a fixed list of replies, one per model call: a tool action (``{"action":
"left_click", "coordinate": [x, y]}`` for Anthropic, ``{"type": "click", "x": .., "y": ..}`` for
OpenAI) or ``{"final": "..."}`` for a final answer. Every request is kept (path, headers, JSON) so
a test can check what the agent sent: its key, its screenshots' sizes, its tool results. The
first ``rate_limited`` calls are answered 429 with ``retry-after: 0`` (or ``retry_after``); with
``delay_s`` every answer is held that long (an API that hangs), or until the fake is closed.
"""

from __future__ import annotations

import base64
import io
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.http_servers import Closable, LoopbackHttp

TOKENS_IN = 1200
TOKENS_OUT = 60


@dataclass
class Seen:
    """One request the fake received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class FakeModelApis(Closable):
    """Both fakes on one loopback server (``url`` is the base URL for either SDK)."""

    anthropic_script: list[dict[str, Any]] = field(default_factory=list)
    openai_script: list[dict[str, Any]] = field(default_factory=list)
    rate_limited: int = 0
    failures: list[int] = field(default_factory=list)
    """Statuses to answer first, one request each, with the API's error body (then the
    script); each says ``retry-after: 0``, so a retry waits no time."""
    failure_headers: dict[str, str] = field(default_factory=dict)
    """Headers sent with each of those failures as well (``x-should-retry``...)."""
    retry_after: str = "0"
    """The ``retry-after`` of the ``rate_limited`` answers (seconds)."""
    delay_s: float = 0.0
    """How long each answer is held after its request came (the close sends it at once)."""
    requests: list[Seen] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._turns: dict[str, int] = {}
        self._closing = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, reply, extra = fake._answer(self.path, headers, body)
                if fake.delay_s:
                    fake._closing.wait(fake.delay_s)
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in extra.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._served = LoopbackHttp(Handler)
        self.url = self._served.url

    def _answer(
        self, path: str, headers: dict[str, str], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self._lock:
            self.requests.append(Seen(path, headers, body))
            if self.failures:
                status = self.failures.pop(0)
                error = {"type": "error", "error": {"type": "api_error",
                                                    "message": f"failure {status}"}}
                return status, error, {"retry-after": "0", **self.failure_headers}
            if self.rate_limited > 0:
                self.rate_limited -= 1
                error = {"type": "error", "error": {"type": "rate_limit_error",
                                                    "message": "slow down"}}
                return 429, error, {"retry-after": self.retry_after}
            if path.endswith("/v1/messages"):
                return 200, self._anthropic(body), {}
            if path.endswith("/v1/responses"):
                return 200, self._openai(body), {}
            return 404, {"error": {"message": f"no route {path}"}}, {}

    def _anthropic(self, body: dict[str, Any]) -> dict[str, Any]:
        turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        step = self.anthropic_script[min(turn, len(self.anthropic_script) - 1)]
        if "final" in step:
            content: list[dict[str, Any]] = [{"type": "text", "text": step["final"]}]
            stop = "end_turn"
        else:
            content = [{"type": "text", "text": "Next step."},
                       {"type": "tool_use", "id": f"toolu_{turn:03d}", "name": "computer",
                        "input": step}]
            stop = "tool_use"
        return {"id": f"msg_{turn:03d}", "type": "message", "role": "assistant",
                "model": body.get("model"), "content": content, "stop_reason": stop,
                "stop_sequence": None,
                "usage": {"input_tokens": TOKENS_IN, "output_tokens": TOKENS_OUT}}

    def _openai(self, body: dict[str, Any]) -> dict[str, Any]:
        previous = body.get("previous_response_id")
        turn = 0 if previous is None else self._turns[previous] + 1
        response_id = f"resp_{turn:03d}"
        self._turns[response_id] = turn
        step = self.openai_script[min(turn, len(self.openai_script) - 1)]
        if "final" in step:
            output: list[dict[str, Any]] = [{
                "type": "message", "id": f"msg_{turn:03d}", "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": step["final"], "annotations": []}]}]
        else:
            output = [{"type": "computer_call", "id": f"cu_{turn:03d}",
                       "call_id": f"call_{turn:03d}", "action": step,
                       "pending_safety_checks": [], "status": "completed"}]
        return {"id": response_id, "object": "response", "created_at": 1_700_000_000,
                "status": "completed", "model": body.get("model"), "output": output,
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": body.get("tools", []),
                "usage": {"input_tokens": TOKENS_IN, "output_tokens": TOKENS_OUT,
                          "total_tokens": TOKENS_IN + TOKENS_OUT,
                          "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens_details": {"reasoning_tokens": 0}}}

    def images(self, path_end: str) -> list[tuple[int, int]]:
        """Sizes of every screenshot sent to one API, in order."""
        from PIL import Image

        sizes = []
        for seen in self.requests:
            if not seen.path.endswith(path_end):
                continue
            for data in _image_payloads(seen.body):
                with Image.open(io.BytesIO(base64.b64decode(data))) as image:
                    sizes.append(image.size)
        return sizes

    def close(self) -> None:
        """Stop the server (a held answer goes now: no handler outlives it)."""
        self._closing.set()
        self._served.close()


def _image_payloads(node: Any) -> list[str]:
    """Base64 payloads of every image block in a request body (both APIs' shapes)."""
    found: list[str] = []
    if isinstance(node, dict):
        source = node.get("source")
        if node.get("type") == "image" and isinstance(source, dict):
            found.append(str(source.get("data")))
        url = node.get("image_url")
        if node.get("type") == "input_image" and isinstance(url, str):
            found.append(url.split(",", 1)[1])
        for value in node.values():
            if isinstance(value, dict | list):
                found.extend(_image_payloads(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(_image_payloads(item))
    return found
