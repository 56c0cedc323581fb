"""The caller's public CIDR, asked of a loopback echo server (never the internet)."""

from __future__ import annotations

import pytest

from oa_vm.clouds import netdetect
from tests.support.http_servers import RefusingPort, Reply, ScriptedServer


@pytest.mark.parametrize(
    ("body", "content_type", "cidr"),
    [
        (b"203.0.113.7\n", "text/plain", "203.0.113.7/32"),
        (b'{"ip": "2001:db8::5"}', "application/json", "2001:db8::5/128"),
    ],
)
def test_detects_from_the_echo_url(
    monkeypatch: pytest.MonkeyPatch, body: bytes, content_type: str, cidr: str
) -> None:
    with ScriptedServer({"/ip": Reply(200, body, content_type)}) as server:
        monkeypatch.setenv(netdetect.ECHO_URL_ENV, f"{server.url}/ip")
        assert netdetect.detect_cidr() == cidr
        assert server.hits["/ip"] == 1


@pytest.mark.parametrize("body", [b"<html>hello</html>", b"127.0.0.1", b""])
def test_nonsense_answers_tell_to_pass_allow_cidr(
    monkeypatch: pytest.MonkeyPatch, body: bytes
) -> None:
    with ScriptedServer({"/ip": Reply(200, body, "text/plain")}) as server:
        monkeypatch.setenv(netdetect.ECHO_URL_ENV, f"{server.url}/ip")
        with pytest.raises(netdetect.CidrDetectionError, match="--allow-cidr"):
            netdetect.detect_cidr()


def test_unreachable_echo_service_tells_to_pass_allow_cidr(monkeypatch: pytest.MonkeyPatch) -> None:
    with RefusingPort() as port:
        monkeypatch.setenv(netdetect.ECHO_URL_ENV, f"http://127.0.0.1:{port.port}/")
        with pytest.raises(netdetect.CidrDetectionError) as info:
            netdetect.detect_cidr()
    assert "--allow-cidr <your-ip>/32" in str(info.value) and "\n" not in str(info.value)
