"""What a pool does on one of the user's hosts, as shell command lines (pure builders).

Each function returns one command line that the host's login shell runs over SSH (through
:class:`oa_vm.reach.host_status.RemoteRunner`). Every command becomes root the way the probe said it
can (logged in as root, or ``sudo -n``: never a password prompt), and every path starts with
``OA_VM_ROOT`` (empty on a real host; a rehearsal host's private root).

- :func:`install_command`: claim the host (``host_pool.sh claim``: refused, exit 3, when
  another pool holds it), install what is missing of docker, socat and qemu-utils, write the
  worker files, the settings, each slot's units and the expiry timer, then start the expiry
  timer and either each slot's bootstrap (the one cloud workers run: :func:`start_command`) or,
  on a host whose image cache holds no prepared image, the image build
  (:data:`infra.worker.own_host.BUILD_UNIT`), which the provider follows;
- :func:`release_command`: ``host_pool.sh release`` (what cleanup and the host's own expiry
  timer run);
- :func:`containers_command`: stop, start or restart the workers' containers (pause, resume,
  repair);
- :func:`expiry_command`: the expiry units rewritten for a new expiry and the timer restarted
  (pause, resume, ``pool-extend``).
"""

from __future__ import annotations

import base64
import gzip
import io
import shlex
import tarfile
from collections.abc import Iterable, Mapping
from datetime import datetime

from infra.settings import (
    DEFAULT_CPU_CORES,
    DEFAULT_DISK_SIZE,
    DEFAULT_RAM_SIZE,
    DEFAULT_WINDOWS_VERSION,
)
from infra.tags import format_expiry
from infra.worker import own_host, slots, units
from infra.worker.slots import WorkerSlot

PACKAGES = (("docker", "docker.io"), ("socat", "socat"), ("qemu-img", "qemu-utils"),
            ("curl", "curl"), ("python3", "python3"))
"""(command, Debian package): what the workers need and a create installs when missing (a
Debian host installed without its standard tools lacks curl and python3, which the bootstrap's
probes, the clean resets and the guest's egress proof run)."""
EGRESS_PACKAGE = ("/usr/sbin/nft", "nftables")
"""What a pool with ``--egress`` needs too (``egress.sh`` loads its tables with ``nft``; by its
path: a login user's PATH may lack ``/usr/sbin``)."""
ROOT = '"${OA_VM_ROOT:-}"'
BECOME_ROOT = units.BECOME_ROOT
CLAIMED_ELSEWHERE = 3
"""``host_pool.sh``'s exit status when another pool holds the host."""


def worker_env(pool: str, user: str, expires_at: datetime) -> str:
    """``/etc/oa-vm/worker.env`` on an own host: the bootstrap's settings (as
    :func:`infra.worker.cloud_init.worker_env` writes them for a cloud host), with the
    storage filled from the host's image cache instead of a volume."""
    values = {
        "OA_VM_POOL": pool,
        "OA_VM_MODE": "pool",
        "OA_VM_EXPIRES_AT": format_expiry(expires_at),
        "OA_VM_SIZE": "this host",
        "OA_VM_SIZE_HINT": "a host with KVM (enable virtualization in the BIOS)",
        "OA_VM_SSH_USER": user,
        "OA_VM_IMAGE_CACHE": own_host.IMAGE_CACHE_DIR,
        "VERSION": DEFAULT_WINDOWS_VERSION,
        "RAM_SIZE": DEFAULT_RAM_SIZE,
        "CPU_CORES": str(DEFAULT_CPU_CORES),
        "DISK_SIZE": DEFAULT_DISK_SIZE,
    }
    return "".join(f"{key}={shlex.quote(value)}\n" for key, value in values.items())


def host_files(pool: str, user: str, expires_at: datetime, per_host: int,
               build: str = "", egress: str | None = None, allowlist: str = "") -> dict[str, str]:
    """Every file a create writes on a host, by absolute path: the worker files under
    ``/opt/oa-vm``, ``worker.env``, each slot's settings and units, the expiry timer, and
    ``build``, the image build's unit (:func:`infra.worker.own_host.build_unit`), if given.
    ``egress``: the pool's egress mode (``allowlist``'s entries in ``allowlist``), with its
    tables keyed on the slots' containers and the refresh timer; each slot's settings name the
    mode and its container's MAC address. Without it no table is loaded, as before; the image
    build's container, which reads no slot's settings, runs without either."""
    from infra.worker.cloud_init import WorkerFiles, egress_tables, ship_text

    files = {f"{units.SHIP_DIR}/{name}": text
             for name, text in WorkerFiles.from_package().files.items()}
    for script in (own_host.HOST_POOL_SCRIPT, own_host.SEED_SCRIPT):
        files[f"{units.SHIP_DIR}/{script}"] = ship_text(units.read(script))
    files["/etc/oa-vm/worker.env"] = worker_env(pool, user, expires_at)
    files.update(slots.host_files(per_host))
    if egress:
        chosen = slots.host_slots(per_host)
        tables = egress_tables(egress, allowlist, [own_host.container_mac(s) for s in chosen])
        files.update({f"{units.SHIP_DIR}/{name}": text for name, text in tables.items()})
        files.update({f"{units.UNIT_DIR}/{unit}": units.read(unit)
                      for unit in ("oa-vm-egress.service", "oa-vm-egress.timer")})
        for s in chosen:
            files[s.env_file] += (f"OA_VM_EGRESS={egress}\n"
                                  f"OA_VM_SLOT_MAC={own_host.container_mac(s)}\n")
    files.update(own_host.expiry_units(pool, expires_at))
    if build:
        files[f"{units.UNIT_DIR}/{own_host.BUILD_UNIT}"] = build
    return files


def payload(files: Mapping[str, str]) -> str:
    """``files`` as a gzipped tar, base64, of file entries only (no directory entry: unpacked
    at ``/``, the tar must never change the mode of ``/etc`` or ``/opt``)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for path, text in sorted(files.items()):
            data = text.encode("utf-8")
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size = len(data)
            info.mode = 0o755 if path.endswith(".sh") else 0o644
            tar.addfile(info, io.BytesIO(data))
    return base64.b64encode(gzip.compress(buffer.getvalue(), mtime=0)).decode("ascii")


def _host_pool(*args: str) -> str:
    """``host_pool.sh ARGS`` sent as text (it is self-contained), as root."""
    script = units.read(own_host.HOST_POOL_SCRIPT)
    return "$S bash -c " + " ".join(shlex.quote(a) for a in (script, "host_pool.sh", *args))


def _unpack(files: Mapping[str, str]) -> str:
    """Write ``files`` (by absolute path) under the host's root, as root."""
    return f"printf %s '{payload(files)}' | base64 -d | $S tar -xzf - --no-same-owner -C \"$R/\""


def install_command(pool: str, user: str, expires_at: datetime, per_host: int,
                    build: str = "", egress: str | None = None, allowlist: str = "") -> str:
    """The command that puts ``per_host`` workers of ``pool`` on a host (see the module
    docstring); with ``build`` (the build's unit) it starts the image build instead of the
    workers; ``egress``, ``allowlist``: as :func:`host_files` takes them (nftables is then
    installed too). Exit 3: another pool holds the host, nothing changed."""
    needed = (*PACKAGES, *([EGRESS_PACKAGE] if egress else []))
    missing = "; ".join(f"command -v {cmd} >/dev/null 2>&1 || need=\"$need {package}\""
                        for cmd, package in needed)
    return (
        f"set -e; {BECOME_ROOT}"
        f"{_host_pool('claim', pool)}; "
        f"need=; {missing}; "
        'if [ -n "$need" ]; then $S apt-get update -q >/dev/null && '
        "$S env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "
        "$need >/dev/null || { echo \"could not install$need\"; exit 4; }; fi; "
        f"{_unpack(host_files(pool, user, expires_at, per_host, build, egress, allowlist))}; "
        "$S systemctl daemon-reload; "
        "$S systemctl enable --now oa-vm-expiry.timer; "
        + (f"$S systemctl start --no-block {own_host.BUILD_UNIT}; " if build
           else start_command(per_host) + "; ")
        + "echo installed"
    )


def start_command(per_host: int) -> str:
    """Enable and start each slot's bootstrap (after :data:`BECOME_ROOT`)."""
    slot_units = " ".join(f"{s.bootstrap}.service" for s in slots.host_slots(per_host))
    return (f'for u in {slot_units}; do $S systemctl enable "$u"; '
            '$S systemctl start --no-block "$u"; done')



def expiry_command(pool: str, expires_at: datetime) -> str:
    """The command that moves the expiry timer of ``pool``'s host to ``expires_at``. Exit 3:
    the host is not ``pool``'s (released, or another pool's): nothing is written."""
    marker = shlex.quote(own_host.MARKER_FILE)
    return (
        f"set -e; {BECOME_ROOT}"
        f'[ "$(head -n 1 "$R"{marker} 2>/dev/null)" = {shlex.quote(pool)} ] || '
        f"{{ echo 'this host is not in pool {pool}'; exit {CLAIMED_ELSEWHERE}; }}; "
        + units.rearm_command(own_host.expiry_units(pool, expires_at))
    )


def release_command(pool: str, *, purge: bool = False) -> str:
    """``host_pool.sh release POOL [--purge]``, as root; prints ``removed: ...`` and
    ``kept: ...`` lines. Exit 3: another pool holds the host (nothing touched)."""
    return BECOME_ROOT + _host_pool("release", pool, *(["--purge"] if purge else []))


def containers_command(action: str, chosen: Iterable[WorkerSlot]) -> str:
    """Pause (``stop``), resume (``start``) or repair (``restart``) the workers in ``chosen``.

    ``stop`` stops the scoring units and the container (the disk stays); ``start`` starts
    them again; ``restart`` runs the slot's bootstrap again, which replaces the container from
    the same storage and reports in the slot's status file as at create.
    """
    chosen = list(chosen)
    if action == "stop":
        # one docker stop for every container: docker stops them at once, so the host's
        # pause takes one container's stop timeout (Windows' shutdown), not one per worker
        scoring = " ".join(f"oa-vm-scoring-{s.name}.service oa-vm-bridge-{s.name}.service"
                           for s in chosen)
        names = " ".join(s.container for s in chosen)
        return (f"set -e; {BECOME_ROOT}$S systemctl stop {scoring}; "
                f"$S docker stop {names} >/dev/null")
    steps: list[str] = []
    for s in chosen:
        scoring = f"oa-vm-scoring-{s.name}.service oa-vm-bridge-{s.name}.service"
        if action == "start":
            steps.append(f"$S docker start {s.container} >/dev/null; $S systemctl start {scoring}")
        elif action == "restart":
            steps.append(f"$S systemctl restart --no-block {s.bootstrap}.service")
        else:
            raise ValueError(f"unknown action {action!r}")
    return "set -e; " + BECOME_ROOT + "; ".join(steps)


def containers_status_command(chosen: Iterable[WorkerSlot]) -> str:
    """One ``CONTAINER=STATUS`` line per slot in ``chosen`` (docker's ``Up 3 minutes``,
    ``Exited (1) ...``, or nothing after ``=`` when the container is gone)."""
    lines = [f"printf '%s=' {s.container}; $S docker ps -a --filter 'name=^{s.container}$' "
             "--format '{{.Status}}' | head -n 1 | tr -d '\\n'; echo" for s in chosen]
    return BECOME_ROOT + "; ".join(lines)
