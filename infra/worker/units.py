"""The worker host's layout, and the one systemd unit that depends on the pool (the expiry timer).

Layout on the host:

- ``/opt/oa-vm/``: the shipped files: ``bootstrap.sh`` and ``lib.sh`` (bring the host up),
  ``scoring.sh``, the scoring server, its rules, the relay, and ``waa-image/Dockerfile``; mounted
  read-only into the WAA container at ``/oa-vm``.
- ``/var/lib/oa-vm/status``: what ``bootstrap.sh`` is doing or where it failed (``pool-wait``
  reads it).
- ``/var/lib/oa-vm/image-info`` (image builder): ``waa_image=`` and ``base_image=``, the digests
  of ``windowsarena/winarena`` and ``dockurr/windows`` the image was built from, and ``built=``;
  the same lines are the ready marker ``oa-vm-image.ready`` on the storage volume.
- ``/var/lib/oa-vm/qmp/`` (0700): QEMU's QMP socket ``qmp.sock``, mounted in the container at
  ``/run/oa-vm-qmp`` (dockur's ``QMP`` variable); no TCP port carries QMP.
- ``/var/lib/oa-vm/storage``: the storage volume (a data disk made from the prepared image), with
  the Windows disk and the saved worker image on it. Never Azure's ``/mnt``, a temporary disk
  wiped on every deallocation.
- units (static files in ``infra/worker/systemd/``): ``oa-vm-bootstrap.service`` runs
  ``bootstrap.sh`` once per boot; ``oa-vm-scoring.service`` runs the scoring server inside the
  container on its loopback :5050; ``oa-vm-bridge.service`` relays the host's 127.0.0.1:5051 to
  it.
- ``oa-vm-egress.timer``: every minute ``egress.sh refresh`` puts the guest's egress rules back in
  a restarted container's namespace and refreshes the allow-list's addresses (the host's own
  table, which keeps the metadata service, the host and the other workers out of reach, outlives
  any container: docs/security.md).
- ``oa-vm-spot-watch.service`` (AWS spot workers only): runs ``spot_watch.sh``, which polls the
  instance metadata (IMDSv2) for a spot interruption notice and marks the worker ``draining`` in
  the status file, so the controller gives it no new task.
- ``oa-vm-spot-watch-azure.service`` (Azure Spot workers only): the same for Azure, with
  ``spot_watch_azure.sh`` polling Scheduled Events for a ``Preempt`` (eviction) of this VM. Two
  scripts rather than one with both: AWS's user data has little room to spare.
- ``oa-vm-expiry.timer`` (AWS only): powers the host off at the pool's expiry; the instance's
  shutdown behaviour ``terminate`` then ends it. It backs up the cloud-side schedule that
  terminates the instance even when the guest hangs. Azure has no such timer: a power-off from
  the guest would stop the VM without deallocating it (still billing), so the DevTest Labs
  schedule alone ends Azure workers. Cloud-init starts it for the expiry the instance was
  created with. It has no ``[Install]`` section: at every later boot ``oa-vm-expiry-arm.service``
  (``expiry_arm.sh``) starts it, after setting it to the pool's current expiry, read from the
  instance's ``oa-vm:expires-at`` tag in the instance metadata (a stopped host's old time never
  fires before that); a running host's timer follows a moved expiry over SSH
  (:func:`rearm_command`).
"""

from __future__ import annotations

import base64
import shlex
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

CONTAINER = "winarena"
BOOTSTRAP_UNIT = "oa-vm-bootstrap"
"""The one-worker host's bootstrap unit (a host with slots runs one per slot:
:attr:`infra.worker.slots.WorkerSlot.bootstrap`)."""
SHIP_DIR = "/opt/oa-vm"
CONTAINER_SHIP_DIR = "/oa-vm"
STATE_DIR = "/var/lib/oa-vm"
STATUS_FILE = f"{STATE_DIR}/status"
IMAGE_INFO_FILE = f"{STATE_DIR}/image-info"
STORAGE_DIR = f"{STATE_DIR}/storage"
SCORING_PORT_IN_CONTAINER = 5050
SCORING_PORT_ON_HOST = 5051
WAA_PORT = 5000
GUEST_IP = "172.30.0.2"
"""The Windows guest's address inside the container: dockur's default (``qemu/src/network.sh``),
pinned with ``VM_NET_IP``. ``lib.sh``'s ``OA_VM_GUEST_IP``, the image recipe's ``GUEST_IP`` and
the scoring server's default hold the same value (checked by the tests, against dockur too)."""
QMP_DIR = f"{STATE_DIR}/qmp"
"""Host folder (0700) holding QEMU's QMP unix socket, mounted at :data:`QMP_MOUNT` in the
container; ``lib.sh``'s ``OA_VM_QMP_DIR``. No TCP port carries QMP."""
QMP_SOCKET = f"{QMP_DIR}/qmp.sock"
QMP_MOUNT = "/run/oa-vm-qmp"
UNIT_DIR = "/etc/systemd/system"

WORKER_DIR = Path(__file__).resolve().parent
SCRIPTS = ("lib.sh", "bootstrap.sh", "scoring.sh", "reset.sh", "egress.sh", "waa_entry.sh")
"""Shell files shipped to ``/opt/oa-vm`` (all pass shellcheck in CI)."""
STATIC_UNITS = (
    "oa-vm-bootstrap.service", "oa-vm-scoring.service", "oa-vm-bridge.service",
    "oa-vm-egress.service", "oa-vm-egress.timer",
)
LATE_FILES = ("scoring_server.py", "scoring_rules.py", "relay.py", "qmp_snapshot.py")
"""Shipped by ``pool-wait`` over SSH, not in the cloud-init: AWS caps user data at 16 KiB, and the
scorer and the clean reset's QMP client are needed only once a pool's guest is up (an image
builder runs neither; the boot's snapshot check comes after the ``files`` step). ``bootstrap.sh``
waits for them in the ``files`` step; :func:`infra.worker.cloud_init.late_payload` packs them."""
DELIVERY_DIR = f"{STATE_DIR}/delivery"
"""Where ``pool-wait`` unpacks :data:`LATE_FILES` (whole: a folder renamed into place)."""
ISO_FILE = f"{STATE_DIR}/iso/custom.iso"
"""A user's own Windows ISO on an image builder's OS disk (``image-create --iso PATH``, uploaded
over SSH by :mod:`oa_vm.clouds.iso_delivery`), bound into the container as
:data:`ISO_IN_CONTAINER`. On the OS disk, not the storage volume: it never reaches the snapshot,
and it leaves with the builder."""
ISO_IN_CONTAINER = "/custom.iso"
"""Where dockur looks for a user's ISO first (``windows/src/install.sh``, ``detectCustom``:
``findFile "custom.iso"`` under ``/``; its readme binds ``./example.iso:/custom.iso``)."""
DOCKERFILE = "waa-image/Dockerfile"
EGRESS_ALLOWLIST = "egress-allowlist.txt"
"""The allow-list of egress mode ``allowlist`` (by default every host WAA's setup steps name)."""
SPOT_WATCH_SCRIPT = "spot_watch.sh"
"""Shipped to AWS spot workers only (with :data:`SPOT_WATCH_UNIT`)."""
SPOT_WATCH_UNIT = "oa-vm-spot-watch.service"
AZURE_SPOT_WATCH_SCRIPT = "spot_watch_azure.sh"
"""Shipped to Azure Spot workers only (with :data:`AZURE_SPOT_WATCH_UNIT`)."""
AZURE_SPOT_WATCH_UNIT = "oa-vm-spot-watch-azure.service"
EXPIRY_ARM_SCRIPT = "expiry_arm.sh"
"""Shipped to AWS hosts only (with :data:`EXPIRY_ARM_UNIT`): sets the power-off timer from the
instance's expiry tag at every boot."""
EXPIRY_ARM_UNIT = "oa-vm-expiry-arm.service"


def read(name: str) -> str:
    """A shipped file of this package, by its path relative to ``infra/worker``."""
    if name in (*STATIC_UNITS, SPOT_WATCH_UNIT, AZURE_SPOT_WATCH_UNIT, EXPIRY_ARM_UNIT):
        return (WORKER_DIR / "systemd" / name).read_text(encoding="utf-8")
    return (WORKER_DIR / name).read_text(encoding="utf-8")


def container_stop_s() -> tuple[int, int]:
    """The WAA container's stop timeout (docker's ``--stop-timeout``: Windows' shutdown) and
    the margin what stops it waits beyond it, in seconds: ``lib.sh``'s
    ``OA_VM_STOP_TIMEOUT_S`` and ``OA_VM_DOCKER_STOP_MARGIN_S``, the one place for both."""
    import re

    text = read("lib.sh")
    found = [re.search(rf"^{name}=([0-9]+)$", text, re.MULTILINE)
             for name in ("OA_VM_STOP_TIMEOUT_S", "OA_VM_DOCKER_STOP_MARGIN_S")]
    if found[0] is None or found[1] is None:
        raise RuntimeError("lib.sh sets no OA_VM_STOP_TIMEOUT_S or OA_VM_DOCKER_STOP_MARGIN_S")
    return int(found[0].group(1)), int(found[1].group(1))


def expiry_calendar(expires_at: datetime) -> str:
    """A systemd ``OnCalendar`` value for one instant, in UTC (``2026-03-01 18:30:00 UTC``)."""
    return expires_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def expiry_units(expires_at: datetime, purpose: str, expired: str,
                 command: str, *, at_boot: bool = True) -> dict[str, str]:
    """``{unit path: text}``: ``oa-vm-expiry.timer``, firing once at ``expires_at`` (``purpose``
    says what for), and ``oa-vm-expiry.service``, running ``command`` (``expired`` says why).
    ``at_boot``: the timer can be enabled, so systemd starts it at boot; False when something
    else starts it (an AWS host's ``oa-vm-expiry-arm.service``)."""
    when = expiry_calendar(expires_at)
    install = "\n[Install]\nWantedBy=timers.target\n" if at_boot else ""
    timer = f"""[Unit]
Description=oa-vm: {purpose} ({when})

[Timer]
OnCalendar={when}
Persistent=true
AccuracySec=1s
{install}"""
    service = f"""[Unit]
Description=oa-vm: {expired}

[Service]
Type=oneshot
ExecStart={command}
"""
    return {f"{UNIT_DIR}/oa-vm-expiry.timer": timer, f"{UNIT_DIR}/oa-vm-expiry.service": service}


EXPIRY_TIMER = "oa-vm-expiry.timer"
BECOME_ROOT = "S=; [ \"$(id -u)\" = 0 ] || S='sudo -n'; R=\"${OA_VM_ROOT:-}\"; "
"""The start of every command a host runs over SSH as root: ``$S`` becomes root (nothing when
logged in as root, else ``sudo -n``: never a password prompt) and ``$R`` is the host's root
(empty on a real host; a rehearsal's private root)."""


def rearm_command(files: Mapping[str, str], *, enable: bool = True) -> str:
    """Shell, after :data:`BECOME_ROOT`: write the expiry units ``files`` (``{unit path: text}``,
    from :func:`expiry_units`) under the host's root, then restart the timer, so it fires at the
    new time; ``enable``: enable it too, so it fires after a reboot (an AWS host's boot unit
    starts it instead). What a running host whose timer must follow a moved expiry runs (own
    hosts and AWS hosts alike)."""
    writes = "; ".join(
        f"printf %s {base64.b64encode(text.encode('utf-8')).decode('ascii')} | base64 -d | "
        f"$S tee \"$R\"{shlex.quote(path)} >/dev/null"
        for path, text in sorted(files.items())
    )
    enabled = f"$S systemctl enable {EXPIRY_TIMER}; " if enable else ""
    return f"{writes}; $S systemctl daemon-reload; {enabled}$S systemctl restart {EXPIRY_TIMER}"
