"""A rehearsal of an AWS host's boot: ``oa-vm-expiry-arm.service`` sets the power-off timer to
the pool's current expiry, read from the instance's ``oa-vm:expires-at`` tag, with no client
involved (a ``pool-resume --no-wait``, a start from the console).

The host is a private root holding every file of the AWS program's real user data, as
cloud-init writes them; the unit's own ``ExecStart`` runs under it with the real ``curl``
against a loopback HTTP stand-in for the instance metadata service (IMDSv2: a token from a PUT,
tag reads without it refused), and only ``systemctl`` is a stand-in (it records its calls).
"""

from __future__ import annotations

import base64
import gzip
import shlex
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]

from infra.aws import user_data_base64
from infra.tags import EXPIRES_AT
from infra.worker import units
from infra.worker.cloud_init import poweroff_units
from tests.support.host_standins import calls, standin_env, write_standins
from tests.support.http_servers import LoopbackHttp, SilentServer
from tests.support.pool_programs import make_settings

pytestmark = pytest.mark.integration

TIMER = f"{units.UNIT_DIR}/{units.EXPIRY_TIMER}"
SERVICE = f"{units.UNIT_DIR}/oa-vm-expiry.service"
TOKEN = "AQAEAFakeBootToken=="
TAG_PATH = f"/latest/meta-data/tags/instance/{EXPIRES_AT}"
RESUMED = datetime(2026, 3, 2, 9, 15, tzinfo=UTC)
"""The expiry a resume gave the pool (the tag's), later than the creation's in the user data."""


class Imds:
    """IMDSv2 on a loopback port: ``PUT /latest/api/token`` (with a TTL header) gives a token;
    a tag read without it answers 401, a tag not in ``tags`` 404. ``seen`` keeps each request
    (method, path, token header)."""

    def __init__(self, tags: dict[str, str]) -> None:
        self.seen: list[tuple[str, str, str]] = []
        imds = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self, status: int, body: str = "") -> None:
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_PUT(self) -> None:
                imds.seen.append(("PUT", self.path, ""))
                ttl = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds")
                if self.path != "/latest/api/token" or not ttl:
                    self._reply(400)
                else:
                    self._reply(200, TOKEN)

            def do_GET(self) -> None:
                token = self.headers.get("X-aws-ec2-metadata-token") or ""
                imds.seen.append(("GET", self.path, token))
                key = self.path.removeprefix("/latest/meta-data/tags/instance/")
                if token != TOKEN:
                    self._reply(401)
                elif key in tags:
                    self._reply(200, tags[key])
                else:
                    self._reply(404)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.served = LoopbackHttp(Handler)
        self.url = self.served.url


@pytest.fixture
def imds_with() -> Iterator[Any]:
    made: list[Imds] = []

    def start(tags: dict[str, str]) -> Imds:
        made.append(Imds(tags))
        return made[-1]

    yield start
    for imds in made:
        imds.served.close()


CREATED = datetime(2099, 3, 1, 18, 30, 5, tzinfo=UTC)
"""The creation's expiry in the user data: later than any clock this runs on."""


def cloud_init_host(root: Path, created: datetime = CREATED) -> dict[str, str]:
    """Write every file of an AWS worker's real user data (created with expiry ``created``)
    under ``root``, as cloud-init does; returns ``{path: content}``."""
    settings = make_settings("aws", expires_at=created)
    text = gzip.decompress(base64.b64decode(user_data_base64(settings)))
    files = {f["path"]: f["content"] for f in yaml.safe_load(text)["write_files"]}
    for path, content in files.items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        target.chmod(0o755 if path.endswith(".sh") else 0o644)
    return files


def boot(tmp_path: Path, imds_url: str,
         created: datetime = CREATED) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The arm unit's ``ExecStart`` (as written in the unit file) run under the host's root."""
    root = tmp_path / "host"
    written = cloud_init_host(root, created)
    unit = written[f"{units.UNIT_DIR}/{units.EXPIRY_ARM_UNIT}"]
    start = next(line for line in unit.splitlines() if line.startswith("ExecStart="))
    command = shlex.split(start.removeprefix("ExecStart="))
    command[0] = str(root / command[0].lstrip("/"))
    env = standin_env(write_standins(tmp_path / "bin", only=("systemctl",)), tmp_path / "fake",
                      OA_VM_ROOT=str(root), OA_VM_IMDS_URL=imds_url)
    # bounded by the script's own timeouts (three tries of two bounded calls, and two pauses)
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180,
                          check=False)
    return done, root


def _text(root: Path, path: str) -> str:
    return (root / path.lstrip("/")).read_text(encoding="utf-8")


def _expected_calls() -> list[str]:
    return ["systemctl daemon-reload", f"systemctl restart {units.EXPIRY_TIMER}"]


def test_the_timer_is_set_to_the_tags_expiry_with_the_units_an_ssh_rearm_writes(
    tmp_path: Path, imds_with: Any
) -> None:
    imds = imds_with({EXPIRES_AT: "2026-03-02T09:15:00Z", "oa-vm:pool": "waa-eval"})
    done, root = boot(tmp_path, imds.url)
    assert done.returncode == 0, done.stderr
    expected = poweroff_units(RESUMED)
    assert _text(root, TIMER) == expected[TIMER]
    assert _text(root, SERVICE) == expected[SERVICE]
    assert "2026-03-02 09:15:00 UTC" in done.stdout
    # started for this boot (it is never enabled: nothing else starts it at boot)
    assert calls(tmp_path / "fake") == _expected_calls()
    assert "[Install]" not in _text(root, TIMER)
    # IMDSv2: a token first, then the tag read with it
    assert imds.seen == [("PUT", "/latest/api/token", ""), ("GET", TAG_PATH, TOKEN)]


@pytest.mark.parametrize("tags", [
    {},  # no such tag (or tags not in the metadata)
    {EXPIRES_AT: "tomorrow"},  # not a time as the program writes it
    {EXPIRES_AT: "2026-03-02 09:15:00"},
    {EXPIRES_AT: "2026-02-30T09:15:00Z"},  # the form, but no such day: systemd would refuse it
    {EXPIRES_AT: "2026-03-02T29:15:00Z"},
])
def test_a_tag_that_gives_no_time_keeps_cloud_inits_expiry(
    tmp_path: Path, imds_with: Any, tags: dict[str, str]
) -> None:
    imds = imds_with(tags)
    done, root = boot(tmp_path, imds.url)
    assert done.returncode == 0, done.stderr
    created = poweroff_units(CREATED)
    assert _text(root, TIMER) == created[TIMER]  # byte for byte what cloud-init wrote
    assert "the power-off timer keeps 2099-03-01 18:30:05 UTC" in done.stderr
    assert calls(tmp_path / "fake") == _expected_calls()  # still started: never none
    assert all(token == TOKEN for method, _, token in imds.seen if method == "GET")


def test_a_metadata_service_that_does_not_answer_keeps_cloud_inits_expiry(
    tmp_path: Path
) -> None:
    with SilentServer() as silent:
        done, root = boot(tmp_path, silent.url)
        tried = silent.accepted
    assert done.returncode == 0, done.stderr
    assert tried == 3  # each try's token request timed out; no tag read without a token
    created = poweroff_units(CREATED)
    assert _text(root, TIMER) == created[TIMER]
    assert "no answer" in done.stderr and "keeps 2099-03-01 18:30:05 UTC" in done.stderr
    assert calls(tmp_path / "fake") == _expected_calls()


def test_a_kept_time_that_has_passed_is_not_started_when_the_tag_gives_none(
    tmp_path: Path, imds_with: Any
) -> None:
    # A host booting past the time it kept was resumed to a later expiry (the cloud's schedule
    # ends stopped hosts at theirs): starting the timer would power it off at once.
    imds = imds_with({})
    done, root = boot(tmp_path, imds.url, created=datetime(2001, 3, 1, 18, 30, 5, tzinfo=UTC))
    assert done.returncode == 0, done.stderr
    assert "2001-03-01 18:30:05 UTC) has passed: the power-off timer is left stopped" in (
        " ".join(done.stderr.split()))
    assert calls(tmp_path / "fake") == []
