"""The worker's cloud-init document, rendered and parsed back (a pure function)."""

from __future__ import annotations

import base64
import gzip
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

from infra.worker import cloud_init, units
from tests.support.pool_programs import make_settings

ROOT = Path(__file__).resolve().parents[3]


def _doc(**changes: Any) -> dict[str, Any]:
    text = cloud_init.render(make_settings("aws", **changes))
    assert text.startswith("#cloud-config\n")
    doc: dict[str, Any] = yaml.safe_load(text)
    return doc


def _files(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["path"]: f for f in doc["write_files"]}


def _content(entry: dict[str, Any]) -> str:
    if entry.get("encoding") == "gz+b64":
        return gzip.decompress(base64.b64decode(entry["content"])).decode("utf-8")
    return str(entry["content"])


def test_installs_docker_and_socat() -> None:
    doc = _doc()
    assert {"docker.io", "socat"} <= set(doc["packages"])
    assert ["systemctl", "enable", "--now", "docker"] in doc["runcmd"]


def test_ships_the_scoring_server_its_rules_and_the_relay_verbatim() -> None:
    files = _files(_doc())
    for shipped, source in [
        ("/opt/oa-vm/scoring_server.py", ROOT / "infra/worker/scoring_server.py"),
        ("/opt/oa-vm/scoring_rules.py", ROOT / "infra/scoring_rules.py"),
        ("/opt/oa-vm/relay.py", ROOT / "infra/worker/relay.py"),
    ]:
        assert _content(files[shipped]) == source.read_text(encoding="utf-8")


def test_waa_container_is_started_as_the_protocol_says() -> None:
    script = _content(_files(_doc(disk_size="80G"))["/opt/oa-vm/start-waa.sh"])
    for flag in ["--device=/dev/kvm", "--cap-add NET_ADMIN", "-e VERSION=11e", "-e RAM_SIZE=8G",
                 "-e CPU_CORES=4", "-e DISK_SIZE=80G", "-p 127.0.0.1:5000:5000",
                 "-p 127.0.0.1:8006:8006", "-p 127.0.0.1:7200:7200",
                 "-v /var/lib/oa-vm/storage:/storage", "-v /opt/oa-vm:/oa-vm:ro",
                 "windowsarena/winarena:latest"]:
        assert flag in script, flag
    assert "/mnt" not in script
    assert "/dev/kvm is missing" in script


def test_ports_53_and_80_are_freed() -> None:
    script = _content(_files(_doc())["/opt/oa-vm/free-ports.sh"])
    assert "DNSStubListener=no" in script
    assert "nginx" in script and "apache2" in script and "named" in script
    assert ["/opt/oa-vm/free-ports.sh"] in _doc()["runcmd"]


def test_scoring_server_and_bridge_units() -> None:
    files = _files(_doc())
    scoring = _content(files["/etc/systemd/system/oa-vm-scoring.service"])
    assert "docker exec winarena python3 /oa-vm/scoring_server.py" in scoring
    assert "--port 5050" in scoring and "Restart=always" in scoring
    assert "kill $$(cat /run/oa-vm-scoring.pid)" in scoring  # systemd's literal $
    bridge = _content(files["/etc/systemd/system/oa-vm-bridge.service"])
    assert "TCP-LISTEN:5051,bind=127.0.0.1" in bridge
    assert "docker exec -i winarena python3 /oa-vm/relay.py 5050" in bridge
    enable = ["systemctl", "enable", "--now", "oa-vm-scoring.service", "oa-vm-bridge.service"]
    assert enable in _doc()["runcmd"]


def test_expiry_timer_is_armed_first_and_at_the_expiry() -> None:
    doc = _doc()
    timer = _content(_files(doc)["/etc/systemd/system/oa-vm-expiry.timer"])
    assert "OnCalendar=2026-03-01 18:30:05 UTC" in timer and "Persistent=true" in timer
    service = _content(_files(doc)["/etc/systemd/system/oa-vm-expiry.service"])
    assert "ExecStart=/usr/bin/systemctl poweroff" in service
    steps = [" ".join(step) for step in doc["runcmd"]]
    assert steps.index("systemctl enable --now oa-vm-expiry.timer") < steps.index(
        "/opt/oa-vm/start-waa.sh"
    )


def test_rendering_is_deterministic() -> None:
    settings = make_settings("azure")
    assert cloud_init.render(settings) == cloud_init.render(settings)


def test_expiry_calendar_is_utc() -> None:
    from datetime import datetime

    local = datetime.fromisoformat("2026-06-01T01:00:00+02:00")
    assert units.expiry_calendar(local) == "2026-05-31 23:00:00 UTC"
