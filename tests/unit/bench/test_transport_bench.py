"""The transport benchmark measures every client on every call, checks each answer, and
connects to loopback only."""

from __future__ import annotations

import json

import pytest

from bench import transport
from bench.harness import BenchInputError
from tests.support.http_servers import Reply, ScriptedServer

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40


def _worker() -> ScriptedServer:
    return ScriptedServer({
        "/secret/probe": Reply.json({"status": "Probe successful"}),
        "/secret/screenshot": Reply(200, PNG, "image/png"),
        "/secret/execute": Reply.json({"status": "success", "output": "", "error": "",
                                       "returncode": 0}),
    })


def test_every_client_is_measured_on_every_call_in_one_run() -> None:
    with _worker() as server:
        figures = transport.measure(f"{server.url}/secret", rounds=2, calls=3)
        # per round and client: one warm-up call and three timed ones of each kind
        assert server.hits["/secret/probe"] == 2 * len(transport.CLIENTS) * 4
        sent = [json.loads(body) for path, body in server.bodies if path == "/secret/execute"]
    assert sent and all(body == transport.EXECUTE for body in sent)
    assert figures["screenshot_bytes"] == len(PNG)
    for call in transport.CALLS:
        assert set(figures[call]) == set(transport.CLIENTS)
        assert figures[call]["lean"]["cpu_ratio_to_lean"] == 1.0
        assert all(f["cpu_us"] > 0 and f["wall_us"] > 0 for f in figures[call].values())


def test_an_answer_that_is_not_200_stops_the_benchmark() -> None:
    with _worker() as server:
        server.set("/secret/execute", Reply.json({"error": "no"}, status=500))
        with pytest.raises(RuntimeError, match="answered 500"):
            transport.measure(f"{server.url}/secret", rounds=1, calls=2)


def test_only_loopback_is_measured() -> None:
    with pytest.raises(BenchInputError, match="not on loopback"):
        transport.measure("http://192.0.2.10:5000", rounds=1, calls=1)
    with pytest.raises(BenchInputError, match="not on loopback"):
        transport.measure("http://worker.example:5000", rounds=1, calls=1)
