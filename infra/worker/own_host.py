"""What a pool adds to one of the user's own hosts (``--cloud ssh``) beside the worker files:
the claim on the host, the image cache that outlives pools, and the expiry timer the host runs.

- ``/var/lib/oa-vm/pool``: the pool that holds the host (``host_pool.sh claim``); a plan refuses
  a host whose marker names another pool (``host_probe.sh`` reads it).
- ``/var/lib/oa-vm/image-cache``: the prepared worker image, kept by ``host_pool.sh release``
  for later pools unless ``--purge``. The first pool on a host without one builds it there with
  ``oa-vm-image-build.service``: the cloud image builder's ``bootstrap.sh build``, its storage
  the cache folder itself, its status in ``/var/lib/oa-vm/build-status``
  (:func:`build_unit`).
- ``oa-vm-expiry.timer`` / ``oa-vm-expiry.service``: at the pool's expiry the host itself runs
  ``host_pool.sh release POOL``, so a pool whose controlling machine is gone stops on time. Never
  a power-off (the cloud hosts' timer powers off): the host is the user's own server.
- with ``--egress``: the egress tables (``egress.sh``, as on a cloud host), whose host table on
  ``docker0`` filters only the frames of the pool's containers, by the MAC address each slot's
  container is given (:func:`container_mac`): the user's own containers on ``docker0`` pass
  untouched. ``host_pool.sh release`` deletes the table (the claim keeps one pool per host, so
  one name serves).
"""

from __future__ import annotations

from datetime import datetime

from infra.worker import units
from infra.worker.slots import WorkerSlot

HOST_POOL_SCRIPT = "host_pool.sh"
SEED_SCRIPT = "seed_storage.sh"
"""Fills a worker's storage folder from the image cache (``bootstrap.sh`` runs it on own
hosts in place of mounting a volume)."""
MARKER_FILE = f"{units.STATE_DIR}/pool"
IMAGE_CACHE_DIR = f"{units.STATE_DIR}/image-cache"
BUILD_UNIT = "oa-vm-image-build.service"
BUILD_STATUS = f"{units.STATE_DIR}/build-status"
MAC_PREFIX = "02:6f:61:76:6d"
"""The MAC address of slot ``i``'s container is this and ``:<i>``: locally administered, and
never one Docker picks itself (``02:42:...``)."""


def build_unit(iso_bytes: int = 0, iso_timeout_s: int = 0) -> str:
    """:data:`BUILD_UNIT`, started by a create (never at boot); its container is slot 0's,
    which ``host_pool.sh release`` removes. ``iso_bytes``: the size of the user's ISO that the
    build waits for (``bootstrap.sh``'s ``await_iso``), up to ``iso_timeout_s``."""
    iso = (f"Environment=OA_VM_ISO_BYTES={iso_bytes} OA_VM_ISO_TIMEOUT_S={iso_timeout_s}\n"
           if iso_bytes else "")
    return f"""[Unit]
Description=oa-vm: build this host's prepared Windows image into {IMAGE_CACHE_DIR}
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
EnvironmentFile=/etc/oa-vm/worker.env
Environment=OA_VM_SLOT_STORAGE={IMAGE_CACHE_DIR} OA_VM_SLOT_STATUS={BUILD_STATUS}
{iso}ExecStart={units.SHIP_DIR}/bootstrap.sh build
TimeoutStartSec=infinity
"""


def container_mac(s: WorkerSlot) -> str:
    """The MAC address ``bootstrap.sh`` gives slot ``s``'s container (``OA_VM_SLOT_MAC``),
    which Docker keeps across restarts; the pool's host egress table names these."""
    return f"{MAC_PREFIX}:{s.index:02x}"


def release_command(pool: str, *, purge: bool = False) -> str:
    """The command that removes what ``pool`` added to a host (what cleanup and expiry run)."""
    return f"{units.SHIP_DIR}/{HOST_POOL_SCRIPT} release {pool}" + (" --purge" if purge else "")


def expiry_units(pool: str, expires_at: datetime) -> dict[str, str]:
    """``{unit path: text}``: the timer and the service that release ``pool`` at its expiry."""
    return units.expiry_units(
        expires_at, f"release this host from pool {pool} at its expiry",
        f"pool {pool} expired; remove its workers from this host (the host stays up)",
        release_command(pool),
    )
