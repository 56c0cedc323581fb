"""A worker host's status protocol and how it is read over SSH, for waiting and for draining.

A cloud worker's host reports what it is doing in files under ``/var/lib/oa-vm``
(:mod:`infra.worker.units`): ``status`` (``key=value`` lines written by ``bootstrap.sh``, and by
the spot watchers on a notice: ``state=draining``), ``image-info`` (an image builder's digests).
This module holds the commands that read them (:class:`RemoteCommands`, data, expanded by the
host's shell), the parsers of what they print, and the runner interface (:class:`RemoteRunner`)
with its implementation over the project's one SSH command runner
(:class:`waa_client.ssh.SshCommandRunner`). ``pool-wait`` (:mod:`oa_vm.clouds.pulumi.wait`)
and the drain checks (:mod:`oa_vm.reach.drain`) both read the host through here; an image
build reads WAA's index files out of the builder's WAA image here too
(:func:`task_indexes_command`).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Protocol

from infra.worker import units
from oa_vm.model.state import SshEndpoint

if TYPE_CHECKING:  # paramiko loads only when a command runs: the drain checks import this
    from infra.worker.slots import WorkerSlot
    from waa_client.errors import TunnelError
    from waa_client.ssh import CommandResult

COMMAND_TIMEOUT_S = 20.0
"""Seconds a status command may go without output."""


def _on_host(path: str) -> str:
    """``path`` (under the host's state folder) as the host's shell expands it: a real host
    leaves ``OA_VM_STATE_DIR`` unset; a rehearsal host (the tests' SSH server) sets it to where
    its bootstrap writes."""
    relative = path.removeprefix(units.STATE_DIR)
    return f'"${{OA_VM_STATE_DIR:-{units.STATE_DIR}}}{relative}"'


STATUS_FILE = _on_host(units.STATUS_FILE)
IMAGE_INFO_FILE = _on_host(units.IMAGE_INFO_FILE)
CONTAINER = units.CONTAINER
SECTION = "--- oa-vm:"


WAA_TASKS_DIR = "/client/evaluation_examples_windows"
"""WAA's task folder in its image (WAA's Dockerfile copies its client to ``/client``), which the
workers' scoring servers serve."""
INDEX_MAX_BYTES = 256 * 1024
"""The most read of one index file out of an image (WAA's are a few KB)."""
INDEX_MAX_FILES = 32
"""The most index files read out of an image (WAA's has three); an image with more has none
recorded, as one whose index files cannot be read."""
MAIN_INDEX = "test_all"
"""The index file a worker's scoring server serves first, and WAA's runner's default
(``--json-name``): an image without it has none recorded."""
INDEX_NAME = r"[A-Za-z0-9_.-]{1,100}"
"""What an index file's name (without ``.json``) may be: as the workers' scoring servers
take it (``infra/worker/scoring_server.py``)."""
_DOCKER = "D=docker; docker info >/dev/null 2>&1 || D='sudo -n docker'; "
"""docker reached directly if the user may, else through sudo -n (never prompting)."""


def _docker_probe_script(status_file: str, container: str) -> str:
    """One remote shell command printing the status file, the container's status and its last
    log line, in sections."""
    return (
        f"cat {status_file} 2>/dev/null; "
        f"echo '{SECTION}container'; {_DOCKER}"
        f"$D ps -a --filter 'name=^{container}$' --format '{{{{.Status}}}}' 2>&1; "
        f"echo '{SECTION}log'; "
        f"$D logs --tail 1 {container} 2>&1 | tail -n 1"
    )


@dataclass(frozen=True)
class RemoteCommands:
    """The shell commands run on a worker host to follow its boot.

    Attributes:
        cloud_init: prints cloud-init's status.
        status_file: where ``bootstrap.sh`` writes its status.
        image_info_file: where an image builder writes what it built from.
    """

    cloud_init: str = "cloud-init status"
    status_file: str = STATUS_FILE
    image_info_file: str = IMAGE_INFO_FILE
    container: str = CONTAINER
    """The worker's container (each worker of a host with several has its own)."""
    unit: str = units.BOOTSTRAP_UNIT
    """The worker's bootstrap unit (a host with slots runs one per slot), whose journal holds
    what the bootstrap did."""

    @property
    def host(self) -> str:
        """The status file, the container's status and its last log line, in one command."""
        return _docker_probe_script(self.status_file, self.container)

    @classmethod
    def for_worker(cls, remote_waa_port: int, per_host: int = 1) -> RemoteCommands:
        """The commands following one worker of a host with ``per_host`` workers: its slot's
        status file, container and bootstrap unit (:mod:`infra.worker.slots`, found by the WAA
        port its record keeps); a one-worker host's are the static ones."""
        from infra.worker.slots import slot_by_waa_port

        found = slot_by_waa_port(remote_waa_port)
        if found is None or (per_host < 2 and found.index == 0):
            return cls()
        return cls(status_file=_on_host(found.status_file), container=found.container,
                   unit=found.bootstrap)


@dataclass(frozen=True)
class HostReport:
    """What one pass of :attr:`RemoteCommands.host` found.

    Attributes:
        status: the bootstrap's status (``state``, ``step``, ``message``, ...); empty when the
            bootstrap has not started.
        container: the container's status line (``Up 3 minutes``, ``Exited (1) ...``) or
            docker's error.
        last_log: the container's last log line.
    """

    status: dict[str, str]
    container: str
    last_log: str


def parse_status(text: str) -> dict[str, str]:
    """``key=value`` lines of the status file as a dict (other lines ignored)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip().isidentifier():
            out[key.strip()] = value.strip()
    return out


def _sections(output: str, first: str) -> dict[str, list[str]]:
    """The lines of each :data:`SECTION` of ``output``; those before any, under ``first``."""
    sections: dict[str, list[str]] = {first: []}
    current = first
    for line in output.splitlines():
        if line.startswith(SECTION):
            current = line[len(SECTION):].strip()
            sections[current] = []
        else:
            sections.setdefault(current, []).append(line)
    return sections


def parse_host_report(output: str) -> HostReport:
    """Split :attr:`RemoteCommands.host`'s output into its sections."""
    sections = _sections(output, "status")
    container = "\n".join(sections.get("container", [])).strip()
    log_lines = [line for line in sections.get("log", []) if line.strip()]
    return HostReport(
        status=parse_status("\n".join(sections["status"])),
        container=container,
        last_log=log_lines[-1].strip()[:200] if log_lines else "",
    )


def task_indexes_command(image: str) -> str:
    """One remote shell command printing every index file (``<name>.json`` at the top of
    :data:`WAA_TASKS_DIR`, as the workers' scoring servers serve them) out of ``image`` as the
    host's Docker holds it, each in a section of its name, cut at :data:`INDEX_MAX_BYTES`, at
    most one more than :data:`INDEX_MAX_FILES` of them (in name order): copied out of a
    container created for it (never started) and removed after. Names are read from the
    folder's archive (task files under ``examples/`` are not index files)."""
    folder = PurePosixPath(WAA_TASKS_DIR).name
    names = (f"$D cp \"$c:{WAA_TASKS_DIR}\" - 2>/dev/null | tar -tf - 2>/dev/null | "
             f"grep -E '^{folder}/{INDEX_NAME}\\.json$' | sed 's|^{folder}/||; s|\\.json$||' | "
             f"sort | head -n {INDEX_MAX_FILES + 1}")
    return (f"{_DOCKER}c=\"$($D create {shlex.quote(image)} none)\" || exit 1; "
            f"for n in $({names}); do echo \"{SECTION}$n\"; "
            f"$D cp \"$c:{WAA_TASKS_DIR}/$n.json\" - 2>/dev/null | tar -xOf - | "
            f"head -c {INDEX_MAX_BYTES}; echo; done; "
            '$D rm -f "$c" >/dev/null 2>&1; true')


def parse_task_indexes(output: str) -> dict[str, dict[str, list[str]]]:
    """The index files :func:`task_indexes_command` printed, each checked, by name.

    Raises:
        ValueError: what the command said when it printed none (Docker's error), no
            :data:`MAIN_INDEX`, more than :data:`INDEX_MAX_FILES`, or the first that is cut,
            not JSON or not an index.
    """
    import json
    import re

    from waa_client.catalog import index_from_json
    from waa_client.errors import CatalogError

    sections = _sections(output, "")
    said = [line for line in sections.pop("", []) if line.strip()]
    if not sections:
        raise ValueError(said[-1].strip()[:200] if said else "nothing printed")
    if len(sections) > INDEX_MAX_FILES:
        raise ValueError(f"{WAA_TASKS_DIR} holds more than {INDEX_MAX_FILES} index files")
    if MAIN_INDEX not in sections:
        raise ValueError(f"{MAIN_INDEX}.json is missing from the image")
    found = {}
    for name in sorted(sections, key=lambda n: (n != MAIN_INDEX, n)):
        if not re.fullmatch(INDEX_NAME, name):
            raise ValueError(f"{name!r} is not an index file's name")
        text = "\n".join(sections[name]).strip()
        try:
            found[name] = index_from_json(json.loads(text), f"{name}.json")
        except json.JSONDecodeError:
            raise ValueError(f"{name}.json is not JSON, or cut at {INDEX_MAX_BYTES} bytes"
                             ) from None
        except CatalogError as exc:
            raise ValueError(str(exc)) from exc
    return found


def delivery_command(payload: str) -> str:
    """One remote shell command that unpacks ``payload`` (the scorer's files,
    :func:`infra.worker.cloud_init.late_payload`) into the host's delivery folder, whole: into a
    temporary folder first, then renamed, so the bootstrap never sees half of it. As root, or
    through sudo -n (never prompting)."""
    folder = _on_host(units.DELIVERY_DIR)
    return (
        f"S=; [ \"$(id -u)\" = 0 ] || S='sudo -n'; D={folder}; "
        '$S rm -rf "$D.tmp" && $S mkdir -p "$D.tmp" && '
        f"printf %s '{payload}' | base64 -d | $S tar -xzf - -C \"$D.tmp\" && "
        '$S rm -rf "$D" && $S mv "$D.tmp" "$D"'
    )


def iso_upload_command(size: int) -> str:
    """One remote shell command that stores its standard input as an image builder's ISO
    (:data:`units.ISO_FILE`, which the bootstrap waits for): into a part file beside it, renamed
    only at exactly ``size`` bytes, so the bootstrap never sees half of it. As root, or through
    sudo -n (never prompting)."""
    folder = _on_host(str(PurePosixPath(units.ISO_FILE).parent))
    name = PurePosixPath(units.ISO_FILE).name
    return (
        f"S=; [ \"$(id -u)\" = 0 ] || S='sudo -n'; D={folder}; F=\"$D/{name}\"; "
        '$S mkdir -p "$D" && $S rm -f "$F.part" && $S tee "$F.part" >/dev/null && '
        f'got="$($S stat -c %s "$F.part")" && {{ [ "$got" = {int(size)} ] || '
        f'{{ echo "received $got of {int(size)} bytes"; exit 3; }}; }} && '
        '$S mv -f "$F.part" "$F"'
    )


def logs_hint(ssh: SshEndpoint, commands: RemoteCommands | None = None) -> str:
    """How to read a worker's bootstrap and container logs by hand: the worker's own unit and
    container (``commands``; a one-worker host's by default), on its host's SSH port."""
    commands = commands or RemoteCommands()
    port = "" if ssh.port == 22 else f"-p {ssh.port} "
    return (
        f"read its logs with: ssh {port}-i {ssh.key_path} {ssh.user}@{ssh.host} "
        f"'sudo journalctl -u {commands.unit} --no-pager | tail -50; "
        f"sudo docker logs --tail 50 {commands.container}'"
    )


def describe_failure(report: HostReport, ssh: SshEndpoint,
                     commands: RemoteCommands | None = None) -> str:
    """One line for a failed bootstrap: the step, the script's message, how to read logs."""
    step = report.status.get("step", "?")
    message = report.status.get("message", "no message")
    return f"failed at {step}: {message}; {logs_hint(ssh, commands)}"


class RemoteUnreachableError(Exception):
    """SSH to the host failed; the message is the SSH error's own line
    (:mod:`waa_client.ssh.failures`).

    Attributes:
        final: waiting cannot help: the pool's key was refused, the host offered another host
            key than the one remembered, or the pool's key file is unusable. A host not up yet
            (connection refused, no handshake, session lost) is not final: poll it again.
    """

    def __init__(self, message: str, *, final: bool = False) -> None:
        super().__init__(message)
        self.final = final


def remote_error(exc: TunnelError) -> RemoteUnreachableError:
    """``exc`` (an SSH failure from :mod:`waa_client.ssh.failures`) as the host protocol's
    error, keeping whether it is worth another try: the one rule for every reader of a host
    (``pool-wait``, image builds, drains, resets). :attr:`WaaError.is_infrastructure` is that
    rule on the client's side: only an unreachable host is retryable."""
    return RemoteUnreachableError(str(exc), final=not exc.is_infrastructure)


class RemoteRunner(Protocol):
    """Runs one command on a worker host over SSH."""

    def run(self, ssh: SshEndpoint, command: str, timeout: float) -> CommandResult:
        """Run ``command``; raise :class:`RemoteUnreachableError` if SSH itself fails."""
        ...


class ParamikoRunner:
    """:class:`RemoteRunner` over :class:`waa_client.ssh.SshCommandRunner` with the pool's
    key and known_hosts (trust on first use, then a changed host key is refused)."""

    def __init__(self, known_hosts: Path) -> None:
        self.known_hosts = known_hosts

    def run(self, ssh: SshEndpoint, command: str, timeout: float) -> CommandResult:
        """Connect, check the host key, log in with the key, run ``command``."""
        from waa_client.errors import TunnelError
        from waa_client.ssh import SshCommandRunner

        try:
            return SshCommandRunner(self.known_hosts).run(
                ssh.host, ssh.port, ssh.user, ssh.key_path, command, timeout
            )
        except TunnelError as exc:
            raise remote_error(exc) from exc


def read_status_command(commands: RemoteCommands | None = None) -> str:
    """The command printing the host's status file (nothing when there is none)."""
    return f"cat {(commands or RemoteCommands()).status_file} 2>/dev/null || true"


def slot_commands(slot: WorkerSlot) -> RemoteCommands:
    """The commands following the worker in ``slot`` of a host (its own status file and
    container), whatever ports its record keeps; a host the user owns has no cloud-init, so its
    boot counts as done once SSH answers (the bootstrap's own status says the rest)."""
    return RemoteCommands(cloud_init="echo 'status: done'",
                          status_file=_on_host(slot.status_file), container=slot.container,
                          unit=slot.bootstrap)
