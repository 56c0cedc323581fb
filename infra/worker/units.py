"""systemd units and scripts for a worker host, as pure text builders.

Layout on the host:

- ``/opt/oa-vm/``: the shipped files (scoring server, rules, relay, scripts); mounted read-only
  into the WAA container at ``/oa-vm``.
- ``/var/lib/oa-vm/storage``: the WAA storage volume (the Windows disk). It is on the OS disk on
  purpose: Azure's ``/mnt`` is a temporary disk wiped on every deallocation.
- ``oa-vm-scoring.service``: the scoring server inside the container on its loopback :5050.
- ``oa-vm-bridge.service``: socat on the host's 127.0.0.1:5051, one ``docker exec`` relay per
  connection to the container's 5050 (see ``relay.py`` for why not a plain port mapping).
- ``oa-vm-expiry.timer``: powers the host off at the pool's expiry. On AWS the instance's
  shutdown behaviour is ``terminate``, so this ends the instance; ``Persistent=true`` fires at boot
  if the instant passed while the host was down.
"""

from __future__ import annotations

import shlex
from datetime import UTC, datetime

CONTAINER = "winarena"
SHIP_DIR = "/opt/oa-vm"
CONTAINER_SHIP_DIR = "/oa-vm"
STORAGE_DIR = "/var/lib/oa-vm/storage"
SCORING_PORT_IN_CONTAINER = 5050
SCORING_PORT_ON_HOST = 5051
WAA_PORT = 5000
PIDFILE_IN_CONTAINER = "/run/oa-vm-scoring.pid"


def expiry_calendar(expires_at: datetime) -> str:
    """A systemd ``OnCalendar`` value for one instant, in UTC (``2026-03-01 18:30:00 UTC``)."""
    return expires_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def scoring_unit() -> str:
    """``oa-vm-scoring.service``: WAA's checker served from inside the container.

    ``docker exec`` does not stop the process inside the container when systemd stops it, hence
    the pidfile and the explicit kill before start and at stop. (``$$`` is systemd's escape
    for a literal ``$``.)
    """
    kill = (
        f"/usr/bin/docker exec {CONTAINER} sh -c "
        f"'test -f {PIDFILE_IN_CONTAINER} && kill $$(cat {PIDFILE_IN_CONTAINER}) || true'"
    )
    return f"""[Unit]
Description=oa-vm scoring server (WAA's own checker, inside the WAA container)
After=docker.service oa-vm-waa.service
Requires=docker.service

[Service]
Restart=always
RestartSec=5
ExecStartPre=-{kill}
ExecStart=/usr/bin/docker exec {CONTAINER} python3 {CONTAINER_SHIP_DIR}/scoring_server.py \\
  --host 127.0.0.1 --port {SCORING_PORT_IN_CONTAINER} --pidfile {PIDFILE_IN_CONTAINER}
ExecStop=-{kill}

[Install]
WantedBy=multi-user.target
"""


def bridge_unit() -> str:
    """``oa-vm-bridge.service``: host 127.0.0.1:5051 -> the container's 5050."""
    relay = (
        f"EXEC:/usr/bin/docker exec -i {CONTAINER} python3 {CONTAINER_SHIP_DIR}/relay.py "
        f"{SCORING_PORT_IN_CONTAINER}"
    )
    return f"""[Unit]
Description=oa-vm bridge: 127.0.0.1:{SCORING_PORT_ON_HOST} to the scoring server in the container
After=docker.service oa-vm-scoring.service
Requires=docker.service

[Service]
Restart=always
RestartSec=2
ExecStart=/usr/bin/socat TCP-LISTEN:{SCORING_PORT_ON_HOST},bind=127.0.0.1,reuseaddr,fork "{relay}"

[Install]
WantedBy=multi-user.target
"""


def expiry_units(expires_at: datetime) -> tuple[str, str]:
    """``(oa-vm-expiry.timer, oa-vm-expiry.service)``: power off at ``expires_at``."""
    timer = f"""[Unit]
Description=oa-vm: power this worker off at the pool's expiry ({expiry_calendar(expires_at)})

[Timer]
OnCalendar={expiry_calendar(expires_at)}
Persistent=true
AccuracySec=1s

[Install]
WantedBy=timers.target
"""
    service = """[Unit]
Description=oa-vm: the pool expired, power off (AWS terminates, Azure deallocates by schedule)

[Service]
Type=oneshot
ExecStart=/usr/bin/systemctl poweroff
"""
    return timer, service


def start_waa_script(
    image: str, windows_version: str, ram_size: str, cpu_cores: int, disk_size: str
) -> str:
    """``start-waa.sh``: run the WAA container as WAA_PROTOCOL section 1 describes.

    The first boot prepares the Windows disk (``--prepare-image true``, the image downloads the
    evaluation ISO named by ``VERSION``); later boots reuse the disk kept in the storage folder.
    Ports are published on loopback only: users come through SSH tunnels, never the internet.
    """
    q = shlex.quote
    return f"""#!/bin/bash
# Started by cloud-init (and safe to run again): (re)creates the WAA container.
set -euo pipefail
if [ ! -e /dev/kvm ]; then
  echo "oa-vm: /dev/kvm is missing: this size has no nested virtualization" >&2
  exit 1
fi
mkdir -p {STORAGE_DIR}
prepare=false
if ! ls {STORAGE_DIR}/*.img >/dev/null 2>&1 && ! ls {STORAGE_DIR}/*.qcow2 >/dev/null 2>&1; then
  prepare=true
fi
docker rm -f {CONTAINER} >/dev/null 2>&1 || true
docker pull {q(image)}
docker run -d --name {CONTAINER} --restart unless-stopped \\
  --device=/dev/kvm --cap-add NET_ADMIN \\
  -p 127.0.0.1:{WAA_PORT}:{WAA_PORT} -p 127.0.0.1:8006:8006 -p 127.0.0.1:7200:7200 \\
  -v {STORAGE_DIR}:/storage \\
  -v {SHIP_DIR}:{CONTAINER_SHIP_DIR}:ro \\
  -e VERSION={q(windows_version)} -e RAM_SIZE={q(ram_size)} \\
  -e CPU_CORES={cpu_cores} -e DISK_SIZE={q(disk_size)} \\
  --entrypoint /bin/bash {q(image)} \\
  -c "./entry.sh --prepare-image $prepare --start-client false"
"""


def free_ports_script() -> str:
    """``free-ports.sh``: release host ports 53 and 80 (WAA_PROTOCOL section 1, pitfalls).

    systemd-resolved keeps resolving (its stub listener is turned off and resolv.conf points at
    the real servers); web and DNS servers some images ship are stopped and disabled.
    """
    return """#!/bin/bash
set -uo pipefail
mkdir -p /etc/systemd/resolved.conf.d
printf '[Resolve]\\nDNSStubListener=no\\n' > /etc/systemd/resolved.conf.d/oa-vm.conf
ln -sf /run/systemd/resolve/resolv.conf /etc/resolv.conf
systemctl restart systemd-resolved || true
for unit in nginx apache2 named bind9 dnsmasq; do
  if systemctl list-unit-files "$unit.service" >/dev/null 2>&1; then
    systemctl disable --now "$unit.service" >/dev/null 2>&1 || true
  fi
done
"""
