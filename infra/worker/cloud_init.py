"""Render a worker host's cloud-init document from the pool settings (a pure function).

The document installs Docker and socat, frees ports 53/80, ships the scoring server, its rules and
the bridge relay to ``/opt/oa-vm``, installs the systemd units of :mod:`infra.worker.units`,
starts the WAA container with the Windows disk on the OS disk, and arms the expiry timer.

AWS caps user data at 16 KiB, so the shipped Python files travel gzip-compressed
(``encoding: gz+b64``); :data:`MAX_USER_DATA` is checked by the tests.
"""

from __future__ import annotations

import base64
import gzip
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from infra.settings import PoolSettings
from infra.tags import format_expiry
from infra.worker import units

MAX_USER_DATA = 16 * 1024
_HERE = Path(__file__).resolve().parent
_INFRA = _HERE.parent


@dataclass(frozen=True)
class WorkerFiles:
    """The Python sources shipped onto the host (read from this package by default)."""

    scoring_server: str
    scoring_rules: str
    relay: str

    @classmethod
    def from_package(cls) -> WorkerFiles:
        """The files as installed beside this module."""
        return cls(
            scoring_server=(_HERE / "scoring_server.py").read_text(encoding="utf-8"),
            scoring_rules=(_INFRA / "scoring_rules.py").read_text(encoding="utf-8"),
            relay=(_HERE / "relay.py").read_text(encoding="utf-8"),
        )


def _gz_b64(text: str) -> str:
    # mtime=0 keeps the output identical for identical input: plans and user data stay stable.
    return base64.b64encode(gzip.compress(text.encode("utf-8"), mtime=0)).decode("ascii")


class _Literal(str):
    """A string dumped in YAML's literal block style (readable units in the document)."""


def _literal_representer(dumper: Any, value: _Literal) -> Any:
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(value), style="|")


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Literal, _literal_representer)


def _file(path: str, content: str, permissions: str = "0644") -> dict[str, Any]:
    return {"path": path, "permissions": permissions, "owner": "root:root",
            "content": _Literal(content)}


def _packed(path: str, content: str, permissions: str = "0644") -> dict[str, Any]:
    return {"path": path, "permissions": permissions, "owner": "root:root",
            "encoding": "gz+b64", "content": _gz_b64(content)}


def cloud_config(settings: PoolSettings, files: WorkerFiles | None = None) -> dict[str, Any]:
    """The cloud-config as a mapping (what :func:`render` serializes)."""
    files = files or WorkerFiles.from_package()
    ship = units.SHIP_DIR
    timer, expiry_service = units.expiry_units(settings.expires_at)
    unit_dir = "/etc/systemd/system"
    worker_env = (
        f"OA_VM_POOL={settings.name}\n"
        f"OA_VM_EXPIRES_AT={format_expiry(settings.expires_at)}\n"
    )
    return {
        "package_update": True,
        "packages": ["docker.io", "socat", "python3"],
        "write_files": [
            _file("/etc/oa-vm/worker.env", worker_env),
            _packed(f"{ship}/scoring_server.py", files.scoring_server),
            _packed(f"{ship}/scoring_rules.py", files.scoring_rules),
            _packed(f"{ship}/relay.py", files.relay),
            _file(f"{ship}/free-ports.sh", units.free_ports_script(), "0755"),
            _file(
                f"{ship}/start-waa.sh",
                units.start_waa_script(
                    settings.waa_image,
                    settings.windows_version,
                    settings.ram_size,
                    settings.cpu_cores,
                    settings.disk_size,
                ),
                "0755",
            ),
            _file(f"{unit_dir}/oa-vm-scoring.service", units.scoring_unit()),
            _file(f"{unit_dir}/oa-vm-bridge.service", units.bridge_unit()),
            _file(f"{unit_dir}/oa-vm-expiry.timer", timer),
            _file(f"{unit_dir}/oa-vm-expiry.service", expiry_service),
        ],
        # The expiry timer is armed before anything slow (package installs are already done by
        # then, but the image pull and first Windows boot take many minutes): a host whose
        # setup hangs still ends on time.
        "runcmd": [
            ["systemctl", "daemon-reload"],
            ["systemctl", "enable", "--now", "oa-vm-expiry.timer"],
            [f"{ship}/free-ports.sh"],
            ["systemctl", "enable", "--now", "docker"],
            [f"{ship}/start-waa.sh"],
            ["systemctl", "enable", "--now", "oa-vm-scoring.service", "oa-vm-bridge.service"],
        ],
    }


def render(settings: PoolSettings, files: WorkerFiles | None = None) -> str:
    """The worker's cloud-init user data: ``#cloud-config`` followed by YAML."""
    body = yaml.dump(
        cloud_config(settings, files), Dumper=_Dumper, sort_keys=False, width=100
    )
    return "#cloud-config\n" + str(body)
