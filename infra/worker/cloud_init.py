"""Render a worker host's cloud-init document from the pool settings (a pure function).

The document installs Docker and socat, writes the worker's settings to
``/etc/oa-vm/worker.env``, ships the shell scripts, the scoring server, its rules, the relay and
the worker image's Dockerfile to ``/opt/oa-vm``, installs the systemd units, arms the expiry
timer (AWS), and starts ``oa-vm-bootstrap.service`` without waiting for it: cloud-init ends in
seconds and the bootstrap's own status file (``/var/lib/oa-vm/status``) tells how the host is
doing, step by step, failures included. (cloud-init's ``runcmd`` status is that of its last
command, so a failing start script used to read as ``done``.)

AWS caps user data at 16 KiB, so the whole document is gzip-compressed by the programs (cloud-init
recognises gzip by its magic bytes, on both clouds). The shipped files are written as plain text:
gzip compresses them once, together, better than per-file ``gz+b64`` blobs that the outer gzip
cannot compress again. The Python files travel without their docstrings and comments
(:func:`ship_python`), the shell scripts and the Dockerfile without their comment lines
(:func:`ship_text`): the host only runs them, and the room they free keeps the document under
AWS's cap. :data:`MAX_USER_DATA` is checked by the tests.
"""

from __future__ import annotations

import ast
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import yaml

from infra import egress_rules, pyast
from infra.settings import PoolSettings
from infra.tags import format_expiry
from infra.worker import slots, units

MAX_USER_DATA = 16 * 1024
_HERE = units.WORKER_DIR
_INFRA = _HERE.parent


def ship_python(source: str) -> str:
    """``source`` as it travels to the host: the same program without docstrings, comments,
    attribute docstrings or the annotations of functions and their locals.

    ``ast.unparse`` writes the parsed program back, so what runs is what the tests ran; the
    result keeps the source's own syntax (the shipped files are checked against Python 3.9, the
    container's, in their shipped form too). Annotations are for mypy and the reader, and AWS's
    user data has 16 KiB; a class body keeps its own (a dataclass's fields are annotations).
    """
    tree = pyast.parse_module(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            node.returns = None
            every = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs,
                     node.args.vararg, node.args.kwarg]
            for arg in every:
                if arg is not None:
                    arg.annotation = None
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            kept: list[ast.stmt] = []
            for stmt in node.body:
                if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                        and isinstance(stmt.value.value, str)):
                    continue
                if (isinstance(stmt, ast.AnnAssign) and not isinstance(node, ast.ClassDef)
                        and stmt.value is not None and stmt.simple):
                    stmt = ast.copy_location(ast.Assign([stmt.target], stmt.value), stmt)
                kept.append(stmt)
            node.body = kept or [ast.Pass()]
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def ship_text(source: str) -> str:
    """A shell script or the Dockerfile as it travels to the host: without its comment lines and
    blank lines (the shebang stays). None of the shipped scripts holds a here-document or a
    multi-line string, where a line starting with ``#`` would be data; ``bash -n`` and the
    rehearsals run the shipped form."""
    lines = source.splitlines()
    kept = [line for i, line in enumerate(lines)
            if (i == 0 and line.startswith("#!")) or (line.strip() and
                                                     not line.lstrip().startswith("#"))]
    return "\n".join(kept) + "\n"


@dataclass(frozen=True)
class WorkerFiles:
    """The files shipped onto the host (read from this package by default), by destination
    name under ``/opt/oa-vm``."""

    files: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_package(cls) -> WorkerFiles:
        """The files as installed beside this module."""
        files = {name: ship_text(units.read(name)) for name in units.SCRIPTS}
        for name, folder in (("scoring_server.py", _HERE), ("scoring_rules.py", _INFRA),
                             ("relay.py", _HERE), ("qmp_snapshot.py", _HERE),
                             ("egress_probe.py", _HERE)):
            files[name] = ship_python((folder / name).read_text(encoding="utf-8"))
        files[units.DOCKERFILE] = ship_text(units.read(units.DOCKERFILE))
        return cls(files)


@dataclass(frozen=True)
class HostFacts:
    """What the bootstrap needs to know about the cloud it runs on.

    Attributes:
        ssh_user: the login user (pool-wait reaches docker as this user through sudo).
        storage_devices: where the storage volume may appear, in order (device names differ
            between Xen and Nitro on AWS; Azure names data disks by LUN).
        size_hint: sizes to suggest when ``/dev/kvm`` is missing.
        guest_poweroff: arm the guest-side expiry timer (AWS: power-off terminates; never on
            Azure, where it would stop the VM without deallocating it).
        spot_notices: on a spot pool, watch the instance metadata for interruption notices
            and mark the worker draining.
        spot_watch: the watcher's script and its unit: AWS's two-minute warning
            (``spot_watch.sh``) by default, Azure's Scheduled Events (``spot_watch_azure.sh``).
        slot_storage_devices: where slot ``i``'s own storage volume appears, on a host with
            several workers (each has its own volume made from the prepared image).
    """

    ssh_user: str
    storage_devices: tuple[str, ...]
    size_hint: str
    guest_poweroff: bool
    spot_notices: bool = False
    spot_watch: tuple[str, str] = (units.SPOT_WATCH_SCRIPT, units.SPOT_WATCH_UNIT)
    slot_storage_devices: Callable[[int], tuple[str, ...]] | None = None


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


def worker_env(settings: PoolSettings, facts: HostFacts) -> str:
    """``/etc/oa-vm/worker.env``: the bootstrap's settings (systemd ``EnvironmentFile`` syntax,
    which bash can also source: values are shell-quoted)."""
    q = shlex.quote
    values = {
        "OA_VM_POOL": settings.name,
        "OA_VM_MODE": settings.mode,
        "OA_VM_EXPIRES_AT": format_expiry(settings.expires_at),
        "OA_VM_SIZE": settings.size,
        "OA_VM_SIZE_HINT": facts.size_hint,
        "OA_VM_SSH_USER": facts.ssh_user,
        "OA_VM_STORAGE_DEVICES": " ".join(facts.storage_devices),
        "OA_VM_WAA_IMAGE": settings.waa_image,
        "OA_VM_BASE_IMAGE": settings.base_image,
        "VERSION": settings.windows_version,
        "RAM_SIZE": settings.ram_size,
        "CPU_CORES": str(settings.cpu_cores),
        "DISK_SIZE": settings.disk_size,
        "OA_VM_EGRESS": "open" if settings.mode == "build" else settings.egress,
    }
    if settings.iso_bytes:  # only then: every other host's user data stays as it was
        values["OA_VM_ISO_BYTES"] = str(settings.iso_bytes)
        values["OA_VM_ISO_TIMEOUT_S"] = str(settings.iso_timeout_s)
    return "".join(f"{key}={q(value)}\n" for key, value in values.items())


def late_payload(files: WorkerFiles | None = None) -> str:
    """:data:`units.LATE_FILES` in their shipped form as a gzipped tar, base64: what ``pool-wait``
    hands a host whose bootstrap waits in its ``files`` step (deterministic: the same bytes for
    the same files)."""
    import base64
    import gzip
    import io
    import tarfile

    files = files or WorkerFiles.from_package()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in units.LATE_FILES:
            data = files.files[name].encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return base64.b64encode(gzip.compress(buffer.getvalue(), mtime=0)).decode("ascii")


def egress_files(settings: PoolSettings) -> dict[str, str]:
    """The pool's egress tables and allow-list, by name under ``/opt/oa-vm`` (``egress.sh``
    loads them). An image builder's guest installs Windows and WAA's software from the internet:
    ``open`` (never the metadata service, the host or another worker, as in every mode)."""
    mode = "open" if settings.mode == "build" else settings.egress
    return egress_tables(mode, settings.egress_allowlist)


def egress_tables(mode: str, allowlist: str = "", members: Sequence[str] = ()) -> dict[str, str]:
    """:func:`egress_files` for ``mode`` and its allow-list (``host:port`` lines); ``members``:
    the MAC addresses of the pool's containers on a host that runs other containers too (the
    user's own host, :func:`infra.egress_rules.render`)."""
    files = {
        "egress-host.nft": egress_rules.render("host", mode, "docker0", members),
        "egress-guest.nft": egress_rules.render("guest", mode, "docker"),
    }
    if mode == "allowlist":
        entries = egress_rules.parse_allowlist(allowlist)
        files[units.EGRESS_ALLOWLIST] = "".join(f"{host} {port}\n" for host, port in entries)
    return files


def poweroff_units(expires_at: datetime) -> dict[str, str]:
    """``{unit path: text}``: a cloud host's power-off timer at ``expires_at`` and its service
    (AWS: shutdown behaviour ``terminate`` then ends the instance). What cloud-init writes at
    create, what a moved expiry re-arms over SSH (:func:`units.rearm_command`), and what
    ``expiry_arm.sh`` makes of it at boot for the instance's expiry tag. Never enabled: at
    boot only ``oa-vm-expiry-arm.service`` starts it, once it holds the current expiry."""
    return units.expiry_units(
        expires_at, "power this worker off at the pool's expiry",
        "the pool expired, power off (shutdown behaviour terminate ends the instance)",
        "/usr/bin/systemctl poweroff", at_boot=False,
    )


def cloud_config(
    settings: PoolSettings, facts: HostFacts, files: WorkerFiles | None = None
) -> dict[str, Any]:
    """The cloud-config as a mapping (what :func:`render` serializes)."""
    files = files or WorkerFiles.from_package()
    ship = units.SHIP_DIR
    write_files = [_file("/etc/oa-vm/worker.env", worker_env(settings, facts))]
    shipped = {name: text for name, text in files.files.items() if name not in units.LATE_FILES}
    shipped.update(egress_files(settings))
    for name, content in sorted(shipped.items()):
        mode = "0755" if name.endswith(".sh") else "0644"
        write_files.append(_file(f"{ship}/{name}", content, mode))
    for unit in units.STATIC_UNITS:
        write_files.append(_file(f"{units.UNIT_DIR}/{unit}", units.read(unit)))
    runcmd: list[list[str]] = [["systemctl", "daemon-reload"]]
    if settings.spot and facts.spot_notices:
        script, unit = facts.spot_watch
        write_files.append(_file(f"{ship}/{script}", ship_text(units.read(script)), "0755"))
        write_files.append(_file(f"{units.UNIT_DIR}/{unit}", units.read(unit)))
        # Watching from the first minute: a notice may come while the host is still booting.
        runcmd.append(["systemctl", "enable", "--now", unit])
    if facts.guest_poweroff:
        expiry = poweroff_units(settings.expires_at)
        write_files += [_file(path, text) for path, text in expiry.items()]
        write_files += [
            _file(f"{ship}/{units.EXPIRY_ARM_SCRIPT}",
                  ship_text(units.read(units.EXPIRY_ARM_SCRIPT)), "0755"),
            _file(f"{units.UNIT_DIR}/{units.EXPIRY_ARM_UNIT}", units.read(units.EXPIRY_ARM_UNIT)),
        ]
        # Armed before anything slow: a host whose setup hangs still powers off on time. Every
        # later boot, the arm unit starts it at the pool's expiry then (the instance's tag).
        runcmd += [["systemctl", "start", units.EXPIRY_TIMER],
                   ["systemctl", "enable", units.EXPIRY_ARM_UNIT]]
    bootstraps = ["oa-vm-bootstrap.service"]
    if settings.workers_per_host > 1:
        # Several workers: each slot's settings and units (infra/worker/slots.py, the one rule
        # for what each worker has of its own), and one bootstrap per slot.
        for path, content in slots.host_files(settings.workers_per_host,
                                              facts.slot_storage_devices).items():
            write_files.append(_file(path, content))
        bootstraps = [f"{s.bootstrap}.service" for s in slots.host_slots(settings.workers_per_host)]
    runcmd += [
        ["systemctl", "enable", *bootstraps],
        # --no-block: cloud-init finishes now; the bootstrap reports in its status file.
        ["systemctl", "start", "--no-block", *bootstraps],
    ]
    packages = ["docker.io", "socat", "python3", "curl", "nftables", "qemu-utils"]
    if settings.workers_per_host > 1:
        packages.append("nvme-cli")  # which EBS volume is whose: bootstrap.sh's ebs_named
    return {
        "package_update": True,
        "packages": packages,
        "write_files": write_files,
        "runcmd": runcmd,
    }


def render(settings: PoolSettings, facts: HostFacts, files: WorkerFiles | None = None) -> str:
    """The worker's cloud-init user data: ``#cloud-config`` followed by YAML."""
    body = yaml.dump(
        cloud_config(settings, facts, files), Dumper=_Dumper, sort_keys=False, width=100
    )
    return "#cloud-config\n" + str(body)
