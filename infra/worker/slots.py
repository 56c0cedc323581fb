"""Several workers on one host: each worker's slot and the files that give it its own resources.

A host with N workers runs N WAA containers. Each needs its own container name, status file,
storage folder (its Windows disk and the clean snapshot inside it), QMP folder and socket, guest
address, host ports (WAA's server, the screen, the scoring bridge) and snapshot tag. This module
is the one rule for them (a pure function of the slot's number); ``lib.sh`` reads a slot's
values from ``/etc/oa-vm/workers/<slot>.env`` when ``OA_VM_SLOT`` names it, and falls back to
the one-worker host's values otherwise. Slot 0 *is* the one-worker host's layout, so a host with
one worker is the same whatever path created it.

Rules:

- ports: slot ``i`` adds ``100 * i`` to the one-worker ports (5000, 8006, 5051): the three bases
  differ modulo 100, so no two ports of any two slots on a host are equal (up to
  :data:`MAX_SLOTS`, all below 65536 and above the ports the host's own services commonly use).
- guest address: ``172.30.<i>.2``, each guest in its own /24 (dockur's ``VM_NET_IP`` with its
  default mask); slot 0 keeps dockur's default ``172.30.0.2``. Open: the worker image bakes the
  address it was built for into WAA's scripts (``waa-image/Dockerfile``'s ``GUEST_IP``, kept
  in the image as ``OA_VM_IMAGE_GUEST_IP``); ``waa_entry.sh`` rewrites WAA's scripts to the
  slot's address (``VM_NET_IP``) when its container starts, before WAA's entry runs.
- folders: slot 0 keeps ``/var/lib/oa-vm/{storage,qmp,status}``; slot ``i`` has
  ``/var/lib/oa-vm/workers/w<i>/{storage,qmp,status}``.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from infra.settings import DEFAULT_CPU_CORES, DEFAULT_RAM_SIZE, MAX_WORKERS_PER_HOST
from infra.worker import units

MAX_SLOTS = MAX_WORKERS_PER_HOST
"""The most workers one host runs (a 192-core, 768 GiB machine holds about 24 of WAA's guests)."""
SLOT_ENV_DIR = "/etc/oa-vm/workers"
OVERHEAD_GIB = 1.0
"""Per worker, beside the guest's memory: QEMU itself, the container, the scoring server."""
HOST_RESERVE_GIB = 2.0
"""Kept for the host's own system and the container engine."""
PORT_STEP = 100
VNC_PORT = 8006


def guest_memory_gib(ram_size: str = DEFAULT_RAM_SIZE) -> float:
    """dockur's ``RAM_SIZE`` (``8G``, ``16384M``) in GiB.

    Raises:
        ValueError: not a number followed by G, M or T.
    """
    value, unit = ram_size[:-1], ram_size[-1:].upper()
    scale = {"G": 1.0, "M": 1 / 1024, "T": 1024.0}
    if unit not in scale or not value.replace(".", "", 1).isdigit():
        raise ValueError(f"RAM_SIZE {ram_size!r}: use a number and G or M, e.g. 8G")
    return float(value) * scale[unit]


def memory_per_worker_gib(ram_size: str = DEFAULT_RAM_SIZE) -> float:
    """A worker's share of its host's memory: the guest's and :data:`OVERHEAD_GIB`."""
    return guest_memory_gib(ram_size) + OVERHEAD_GIB


def memory_needed_gib(workers: int, ram_size: str = DEFAULT_RAM_SIZE) -> float:
    """What a host needs for ``workers`` workers, its own share included."""
    return workers * memory_per_worker_gib(ram_size) + HOST_RESERVE_GIB


def fit_by_memory(memory_gib: float, ram_size: str = DEFAULT_RAM_SIZE) -> int:
    """How many workers ``memory_gib`` holds (the one rule for own hosts and cloud sizes)."""
    return max(0, math.floor((memory_gib - HOST_RESERVE_GIB) / memory_per_worker_gib(ram_size)))


def fit_by_cpus(cpus: int, cpu_cores: int = DEFAULT_CPU_CORES) -> int:
    """How many workers ``cpus`` processors hold: one per guest core (``CPU_CORES`` each), since
    guests that share cores run WAA's tasks slower than their timeouts assume."""
    return cpus // cpu_cores if cpu_cores > 0 else 0


def workers_that_fit(cpus: int, memory_gib: float, ram_size: str = DEFAULT_RAM_SIZE,
                     cpu_cores: int = DEFAULT_CPU_CORES) -> int:
    """How many of WAA's workers a host with ``cpus`` and ``memory_gib`` holds."""
    return min(fit_by_cpus(cpus, cpu_cores), fit_by_memory(memory_gib, ram_size), MAX_SLOTS)


def hosts_needed(workers: int, per_host: int) -> int:
    """Hosts for ``workers`` workers at ``per_host`` each (the last may hold fewer)."""
    return math.ceil(workers / per_host)


@dataclass(frozen=True)
class WorkerSlot:
    """One worker's share of a host (paths are the host's, without ``OA_VM_ROOT``)."""

    index: int
    name: str
    container: str
    status_file: str
    storage_dir: str
    qmp_dir: str
    guest_ip: str
    waa_port: int
    vnc_port: int
    scoring_port: int
    snapshot_tag: str

    @property
    def qmp_socket(self) -> str:
        """QEMU's QMP socket on the host."""
        return f"{self.qmp_dir}/qmp.sock"

    @property
    def bootstrap(self) -> str:
        """The slot's bootstrap unit (``oa-vm-bootstrap-w1``): its journal is the worker's log."""
        return f"{units.BOOTSTRAP_UNIT}-{self.name}"

    @property
    def env_file(self) -> str:
        """Where the slot's settings live on the host (``lib.sh`` reads it)."""
        return f"{SLOT_ENV_DIR}/{self.name}.env"


def slot(index: int) -> WorkerSlot:
    """Slot ``index`` of a host (0 is the one-worker host's layout).

    Raises:
        ValueError: ``index`` outside ``0..MAX_SLOTS-1``.
    """
    if not 0 <= index < MAX_SLOTS:
        raise ValueError(f"a host runs at most {MAX_SLOTS} workers (slots 0-{MAX_SLOTS - 1}), "
                         f"not slot {index}")
    offset = PORT_STEP * index
    if index == 0:
        return WorkerSlot(
            index=0, name="w0", container=units.CONTAINER, status_file=units.STATUS_FILE,
            storage_dir=units.STORAGE_DIR, qmp_dir=units.QMP_DIR, guest_ip=units.GUEST_IP,
            waa_port=units.WAA_PORT, vnc_port=VNC_PORT, scoring_port=units.SCORING_PORT_ON_HOST,
            snapshot_tag="oa-vm-clean",
        )
    folder = f"{units.STATE_DIR}/workers/w{index}"
    return WorkerSlot(
        index=index, name=f"w{index}", container=f"{units.CONTAINER}-w{index}",
        status_file=f"{folder}/status", storage_dir=f"{folder}/storage", qmp_dir=f"{folder}/qmp",
        guest_ip=f"172.30.{index}.2", waa_port=units.WAA_PORT + offset,
        vnc_port=VNC_PORT + offset, scoring_port=units.SCORING_PORT_ON_HOST + offset,
        snapshot_tag=f"oa-vm-clean-w{index}",
    )


def slot_by_waa_port(port: int) -> WorkerSlot | None:
    """The slot whose WAA port on the host is ``port`` (how a worker's record, which keeps its
    ports, names its slot); None for a port of no slot."""
    index, rest = divmod(port - units.WAA_PORT, PORT_STEP)
    if rest or not 0 <= index < MAX_SLOTS:
        return None
    return slot(index)


def host_slots(workers: int) -> list[WorkerSlot]:
    """The slots of a host running ``workers`` workers."""
    return [slot(i) for i in range(workers)]


def host_workers(host: Mapping[str, str], names: Sequence[str]) -> list[dict[str, Any]]:
    """One host's workers as a pool program's ``workers`` output lists them.

    ``host`` is the machine's entry (``name``, ``public_ip``, ``instance_id``, ``ssh_user``);
    ``names`` its workers' names (:meth:`infra.settings.PoolSettings.slot_names`). With one
    worker the entry is the host's, unchanged; with several, one entry per slot, with the
    host's name (``host``), the slot's number and the slot's ports on the host (what the
    tunnels reach).
    """
    if len(names) == 1:
        return [dict(host)]
    return [{**host, "name": name, "host": host["name"], "slot": s.index,
             "waa_port": s.waa_port, "scoring_port": s.scoring_port}
            for name, s in zip(names, host_slots(len(names)), strict=True)]


def host_output(ip_and_id: Any, host: str, names: Sequence[str], ssh_user: str) -> Any:
    """:func:`host_workers` as a pool program's output, from Pulumi's ``Output.all(public_ip,
    instance_id)`` of host ``host`` (typed ``Any``: this module does not load Pulumi)."""
    return ip_and_id.apply(lambda v: host_workers(
        {"name": host, "public_ip": str(v[0]), "instance_id": str(v[1]), "ssh_user": ssh_user},
        names))


def slot_env(s: WorkerSlot, storage_devices: Sequence[str] = ()) -> str:
    """``/etc/oa-vm/workers/<slot>.env``: the values ``lib.sh`` takes for this slot (shell- and
    systemd-readable ``KEY=value`` lines). ``storage_devices``: where this slot's own storage
    volume appears (a cloud host has one per slot, each made from the prepared image); none:
    the host's ``OA_VM_STORAGE_DEVICES`` (a host whose slots are folders of one disk)."""
    values = {
        "OA_VM_SLOT_CONTAINER": s.container,
        "OA_VM_SLOT_STATUS": s.status_file,
        "OA_VM_SLOT_STORAGE": s.storage_dir,
        "OA_VM_SLOT_QMP_DIR": s.qmp_dir,
        "OA_VM_SLOT_GUEST_IP": s.guest_ip,
        "OA_VM_SLOT_WAA_PORT": str(s.waa_port),
        "OA_VM_SLOT_VNC_PORT": str(s.vnc_port),
        "OA_VM_SLOT_SCORING_PORT": str(s.scoring_port),
        "OA_VM_SLOT_SNAPSHOT_TAG": s.snapshot_tag,
    }
    if storage_devices:
        values["OA_VM_SLOT_STORAGE_DEVICES"] = " ".join(storage_devices)
    return "".join(f"{key}={shlex.quote(value)}\n" for key, value in values.items())


def bootstrap_unit(s: WorkerSlot) -> str:
    """``oa-vm-bootstrap-<slot>.service``: ``bootstrap.sh`` for this slot's worker."""
    return f"""[Unit]
Description=oa-vm: bring worker {s.name} of this host up (status in {s.status_file})
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
EnvironmentFile=/etc/oa-vm/worker.env
Environment=OA_VM_SLOT={s.name}
ExecStart={units.SHIP_DIR}/bootstrap.sh
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
"""


def scoring_unit(s: WorkerSlot) -> str:
    """``oa-vm-scoring-<slot>.service``: the scoring server inside this slot's container."""
    return f"""[Unit]
Description=oa-vm scoring server of worker {s.name} (inside container {s.container})
After=docker.service
Requires=docker.service

[Service]
Restart=always
RestartSec=5
Environment=OA_VM_SLOT={s.name}
ExecStart={units.SHIP_DIR}/scoring.sh start
ExecStop={units.SHIP_DIR}/scoring.sh stop

[Install]
WantedBy=multi-user.target
"""


def bridge_unit(s: WorkerSlot) -> str:
    """``oa-vm-bridge-<slot>.service``: the host's ``127.0.0.1:<scoring port>`` relayed to the
    scoring server in this slot's container."""
    return f"""[Unit]
Description=oa-vm bridge: 127.0.0.1:{s.scoring_port} to the scoring server of worker {s.name}
After=docker.service oa-vm-scoring-{s.name}.service
Requires=docker.service

[Service]
Restart=always
RestartSec=2
ExecStart=/usr/bin/socat TCP-LISTEN:{s.scoring_port},bind=127.0.0.1,reuseaddr,fork \
"EXEC:/usr/bin/docker exec -i {s.container} python3 {units.CONTAINER_SHIP_DIR}/relay.py \
{units.SCORING_PORT_IN_CONTAINER}"

[Install]
WantedBy=multi-user.target
"""


def host_files(workers: int,
               storage_devices: Callable[[int], Sequence[str]] | None = None) -> dict[str, str]:
    """Every file a host with ``workers`` workers gets for them, by path on the host: each
    slot's settings and its three units. (The one-worker host's static units serve slot 0 of a
    cloud host built before slots; a host with slots runs only these.) ``storage_devices``
    gives slot ``i``'s own storage volume's device names (a cloud host's)."""
    files: dict[str, str] = {}
    for s in host_slots(workers):
        files[s.env_file] = slot_env(s, storage_devices(s.index) if storage_devices else ())
        files[f"{units.UNIT_DIR}/{s.bootstrap}.service"] = bootstrap_unit(s)
        files[f"{units.UNIT_DIR}/oa-vm-scoring-{s.name}.service"] = scoring_unit(s)
        files[f"{units.UNIT_DIR}/oa-vm-bridge-{s.name}.service"] = bridge_unit(s)
    return files
