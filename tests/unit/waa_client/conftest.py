"""Fixtures of the waa_client unit tests: no real sleeps between retries, loopback servers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.http_servers import RefusingPort, ScriptedServer, SilentServer
from waa_client.http import no_retry_waits


@pytest.fixture(autouse=True)
def _zero_retry_waits() -> Iterator[None]:
    """Retries still happen (and are counted), but without waiting."""
    with no_retry_waits():
        yield


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """A scripted HTTP server on 127.0.0.1 (script it with ``server.set(path, replies)``)."""
    with ScriptedServer() as scripted:
        yield scripted


@pytest.fixture
def refusing() -> Iterator[RefusingPort]:
    """A loopback port that refuses connections."""
    with RefusingPort() as port:
        yield port


@pytest.fixture
def silent() -> Iterator[SilentServer]:
    """A loopback server that accepts connections and never answers."""
    with SilentServer() as hung:
        yield hung
