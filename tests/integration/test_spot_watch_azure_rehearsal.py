"""A rehearsal of Azure's spot watcher: ``infra/worker/spot_watch_azure.sh`` runs for real under
bash, with the real ``curl``, against a loopback stand-in of Azure's instance metadata service.

The stand-in speaks Scheduled Events' shape (``GET /metadata/scheduledevents?api-version=
2020-07-01`` answering ``{"DocumentIncarnation", "Events": [...]}``), names the VM at
``/metadata/instance/compute/name``, and refuses, as Azure does, a request without the header
``Metadata: true`` or with ``X-Forwarded-For``. A ``curl`` on ``PATH`` records each call's
arguments before running the real one, so the test sees that every call is bounded. Each
scenario starts from the status a finished bootstrap leaves, and asserts what the watcher leaves
in that file and what ``pool-wait`` makes of it (its real remote command, run by bash).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from infra.worker import cloud_init, units
from oa_vm.reach.host_status import parse_status
from tests.integration.test_spot_watch_rehearsal import READY, pool_wait_phase
from tests.support.http_servers import LoopbackHttp
from tests.support.pool_programs import make_settings
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
WORKER = ROOT / "infra" / "worker"
BASH = shutil.which("bash") or "/bin/bash"
CURL = shutil.which("curl")
VM = "spot-w0"
NOT_BEFORE = "Mon, 30 Nov 2026 22:02:31 GMT"
API = "api-version=2020-07-01"


def _event(event_type: str = "Preempt", resources: list[str] | None = None,
           event_id: str = "A123BC45-1234-5678-AB90-ABCDEF123456") -> dict[str, Any]:
    return {"EventId": event_id, "EventType": event_type, "ResourceType": "VirtualMachine",
            "Resources": [VM] if resources is None else resources, "EventStatus": "Scheduled",
            "NotBefore": NOT_BEFORE, "Description": "", "EventSource": "Platform",
            "DurationInSeconds": -1}


@dataclass
class Metadata:
    """What the stand-in answers, and the requests it saw."""

    events: list[dict[str, Any]] = field(default_factory=list)
    incarnation: int = 1
    mode: str = "ok"  # ok | error (500) | hang (answers after 10 s) | garbage (not JSON)
    seen: list[tuple[str, dict[str, str]]] = field(default_factory=list)


def _serve(meta: Metadata) -> LoopbackHttp:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, code: int, body: str, kind: str = "application/json") -> None:
            data = body.encode("utf-8")
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            meta.seen.append((self.path, dict(self.headers.items())))
            if self.headers.get("Metadata") != "true" or "X-Forwarded-For" in self.headers:
                self._send(400, '{"error": "Bad request. Required metadata header not specified"}')
                return
            path, query = urlsplit(self.path).path, urlsplit(self.path).query
            if path == "/metadata/instance/compute/name" and "format=text" in query:
                self._send(200, VM, "text/plain")
            elif path == "/metadata/scheduledevents" and query == API:
                if meta.mode == "hang":
                    time.sleep(10)
                if meta.mode == "error":
                    self._send(500, '{"error": "Internal server error"}')
                elif meta.mode == "garbage":
                    self._send(200, "<html>proxy login</html>", "text/html")
                else:
                    self._send(200, json.dumps({"DocumentIncarnation": meta.incarnation,
                                                "Events": meta.events}))
            else:
                self._send(404, '{"error": "Not found"}')

    return LoopbackHttp(Handler)


@pytest.fixture
def metadata() -> Iterator[tuple[Metadata, str]]:
    meta = Metadata()
    with _serve(meta) as served:
        yield meta, served.url


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """A host root whose bootstrap has finished, the shipped scripts, and a recording curl."""
    if CURL is None:
        pytest.skip("curl is not installed")
    status = tmp_path / "host/var/lib/oa-vm/status"
    status.parent.mkdir(parents=True)
    status.write_text(READY, encoding="utf-8")
    ship = tmp_path / "opt-oa-vm"
    ship.mkdir()
    for name in (units.AZURE_SPOT_WATCH_SCRIPT, "lib.sh"):
        shutil.copy2(WORKER / name, ship / name)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "curl"
    wrapper.write_text(f'#!/bin/bash\nprintf "%s\\n" "$*" >> "{tmp_path}/curl.log"\n'
                       f'exec {CURL} "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    return tmp_path


def watch_once(host: Path, url: str, **env: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    """One poll of the shipped watcher against the stand-in at ``url``."""
    full_env = {"PATH": f"{host / 'bin'}:/usr/bin:/bin", "OA_VM_ROOT": str(host / "host"),
                "OA_VM_IMDS_URL": url, "HOME": str(host),
                "http_proxy": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", **env}
    done = subprocess.run([BASH, str(host / "opt-oa-vm" / units.AZURE_SPOT_WATCH_SCRIPT), "once"],
                          env=full_env, capture_output=True, text=True, timeout=120, check=False)
    return done, host / "host/var/lib/oa-vm/status"


def curl_calls(host: Path) -> list[str]:
    log = host / "curl.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def test_no_eviction_leaves_the_status_alone(
    host: Path, metadata: tuple[Metadata, str]
) -> None:
    meta, url = metadata
    # Events about something else: a Freeze of this VM, an eviction of another VM.
    meta.events = [_event("Freeze"), _event(resources=["spot-w1"], event_id="other")]
    done, status = watch_once(host, url)
    assert done.returncode == 0, done.stderr
    assert status.read_text(encoding="utf-8") == READY
    paths = [path for path, _ in meta.seen]
    assert paths == ["/metadata/instance/compute/name?api-version=2021-02-01&format=text",
                     f"/metadata/scheduledevents?{API}"]
    assert all(headers.get("Metadata") == "true" for _, headers in meta.seen)
    calls = curl_calls(host)
    assert len(calls) == 2  # the proxy in the environment was bypassed (the stand-in saw both)
    assert all("--connect-timeout" in c and "--max-time" in c for c in calls), calls


def test_an_eviction_marks_the_worker_draining_with_its_time(
    host: Path, metadata: tuple[Metadata, str]
) -> None:
    meta, url = metadata
    meta.events = [_event("Freeze", event_id="f1"), _event()]
    done, status = watch_once(host, url)
    assert done.returncode == 0, done.stderr
    assert "eviction notice" in done.stdout
    got = parse_status(status.read_text(encoding="utf-8"))
    assert (got["state"], got["step"]) == ("draining", "spot-interruption")
    assert (got["action"], got["action_time"]) == ("preempt", NOT_BEFORE)
    assert got["event_id"] == "A123BC45-1234-5678-AB90-ABCDEF123456"
    assert f"Azure Spot eviction notice: Preempt at {NOT_BEFORE}" in got["message"]
    assert not list(status.parent.glob("status.tmp.*"))  # replaced in one rename

    phase, worker = pool_wait_phase(status)
    assert phase == "draining"
    assert "Azure Spot eviction notice" in (worker.detail or "")

    # Polling again with the same event writes nothing new.
    before = status.stat().st_mtime_ns, status.read_text(encoding="utf-8")
    meta.incarnation += 1
    again, _ = watch_once(host, url)
    assert again.returncode == 0 and again.stdout == ""
    assert (status.stat().st_mtime_ns, status.read_text(encoding="utf-8")) == before

    # A bootstrap still at work may rewrite the file: the next poll says draining again.
    status.write_text(READY, encoding="utf-8")
    again, _ = watch_once(host, url)
    assert again.returncode == 0
    assert parse_status(status.read_text(encoding="utf-8"))["state"] == "draining"


@pytest.mark.parametrize("mode", ["error", "garbage", "hang", "down"])
def test_a_failing_or_unreachable_metadata_service_never_marks_draining(
    host: Path, metadata: tuple[Metadata, str], mode: str, refused_port: Callable[[], int]
) -> None:
    meta, url = metadata
    meta.events = [_event()]  # even with an eviction pending, an unread answer says nothing
    if mode == "down":
        url = f"http://127.0.0.1:{refused_port()}"  # a loopback port nobody listens on
    else:
        meta.mode = mode
    # A short first-call bound, so that the hanging service is given up on quickly.
    done, status = watch_once(host, url, OA_VM_SPOT_FIRST_MAX_S="2")
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "spot-watch" in done.stderr
    assert status.read_text(encoding="utf-8") == READY
    assert pool_wait_phase(status)[0] != "draining"


def test_the_watcher_loop_notices_an_eviction_that_comes_later(
    host: Path, metadata: tuple[Metadata, str]
) -> None:
    meta, url = metadata
    env = {"PATH": f"{host / 'bin'}:/usr/bin:/bin", "OA_VM_ROOT": str(host / "host"),
           "OA_VM_IMDS_URL": url, "OA_VM_SPOT_POLL_S": "0.2", "HOME": str(host)}
    proc = subprocess.Popen([BASH, str(host / "opt-oa-vm" / units.AZURE_SPOT_WATCH_SCRIPT)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    status = host / "host/var/lib/oa-vm/status"
    try:
        wait_until(lambda: len([p for p, _ in meta.seen if "scheduledevents" in p]) >= 2,
                   "the watcher to poll twice")
        assert status.read_text(encoding="utf-8") == READY
        meta.events = [_event()]
        wait_until(lambda: parse_status(status.read_text(encoding="utf-8")).get("state")
                   == "draining", "the eviction to be noticed")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    calls = curl_calls(host)
    assert sum("compute/name" in c for c in calls) == 1  # the VM's name is asked once
    # the first call may wait for Scheduled Events to be enabled; later ones are short
    assert "--max-time 130" in calls[1] and all("--max-time 5" in c for c in calls[2:]), calls


def test_only_spot_workers_run_the_watcher_of_their_cloud() -> None:
    from infra import aws, azure

    def shipped(cloud: str, spot: bool, facts: cloud_init.HostFacts) -> tuple[set[str], str]:
        doc = cloud_init.cloud_config(make_settings(cloud, spot=spot), facts)
        return {f["path"] for f in doc["write_files"]}, str(doc["runcmd"])

    azure_unit = f"{units.UNIT_DIR}/{units.AZURE_SPOT_WATCH_UNIT}"
    files, runcmd = shipped("azure", True, azure.HOST_FACTS)
    assert azure_unit in files and f"{units.SHIP_DIR}/{units.AZURE_SPOT_WATCH_SCRIPT}" in files
    assert units.AZURE_SPOT_WATCH_UNIT in runcmd and units.SPOT_WATCH_UNIT + "'" not in runcmd
    files, runcmd = shipped("azure", False, azure.HOST_FACTS)
    assert not any("spot" in f for f in files) and "spot" not in runcmd
    files, _ = shipped("aws", True, aws.HOST_FACTS)
    assert azure_unit not in files
