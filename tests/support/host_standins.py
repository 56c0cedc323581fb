"""Stand-ins for what a worker host has and a test machine lacks: docker, systemctl, curl (and the
Windows guest behind it), sudo, cloud-init and the disk tools.

They are small bash scripts written into a folder that goes first on ``PATH``. Each records its
call (``name args...``, one line) in ``calls.log`` and plays an outcome chosen by environment
variables, so the shipped scripts run for real under bash and the test asserts what they did:

- ``FAKE_PULL_FAIL=1``: ``docker pull`` fails as Docker Hub's refusal does; ``FAKE_LOAD_FAIL=1``:
  ``docker load`` fails (the saved image missing from the volume);
- ``FAKE_PROBE_AFTER=N``: the guest answers ``/probe`` from the N-th poll on (``never``: never);
- ``FAKE_EXIT_AFTER=N`` / ``FAKE_EXIT_CODE=C``: the container stops after N state checks with
  exit code C (``docker inspect`` then says ``false C``);
- ``FAKE_GUEST_WAA=http://127.0.0.1:PORT``: ``curl`` of the guest's WAA server
  (``127.0.0.1:5000``) goes to that real server instead (e.g. ``reset.sh``'s wait after a load);
- ``sudo`` runs an absolute command from under ``OA_VM_ROOT`` when the test shipped it there
  (``write_shipped(OA_VM_ROOT/opt/oa-vm)``: ``sudo -n /opt/oa-vm/reset.sh``);
- ``FAKE_UID=1000``: ``id`` reports an unprivileged user outside the ``docker`` group, so docker
  must be reached through ``sudo -n``; ``FAKE_NO_SUDO=1``: ``sudo`` is missing;
- ``FAKE_DOCKER_DENIED=1``: docker refuses the caller (permission denied on the socket) unless
  it runs through sudo;
- ``FAKE_WAA_LOG``: lines of WAA's own in the container's whole log (``docker logs`` without
  ``--tail``), e.g. entry_setup.sh's "VM is up and running" once its probe was answered;
- ``FAKE_SYSTEMCTL_FAIL=WORD``: a ``systemctl`` call naming WORD fails; ``FAKE_SCORER_CMD``: a
  command that ``systemctl enable --now oa-vm-scoring.service`` starts in the background;
  ``FAKE_SCORER=never``: the scoring server never answers on the bridge (127.0.0.1:5051);
  ``FAKE_JOURNAL``: the units' last journal line (unless a scorer started by
  ``FAKE_SCORER_CMD`` wrote one);
- ``FAKE_BLKID=formatted``: the volume holds a filesystem (default: none, exit 2);
  ``FAKE_MOUNTED=1``: it is mounted already; ``FAKE_ROOT_SOURCE``: what ``findmnt`` says holds
  ``/`` (default ``/dev/xvda1``);
- ``FAKE_CONTAINER_STATUS``: what ``docker ps --format {{.Status}}`` prints (default: ``Up 3
  minutes``, ``Exited ...`` for a container ``docker stop`` stopped, nothing for one removed
  since this host's first ``docker run``); ``FAKE_LOG``: the container's last log line;
- ``FAKE_SYSTEMD=run``: ``systemctl start|restart oa-vm-bootstrap*.service`` (and
  ``oa-vm-image-build.service``) runs the unit's ``ExecStart`` with its ``Environment`` from the
  unit file under ``OA_VM_ROOT``, in the background (its output in
  ``FAKE_STATE/<unit>.log``), and stopping it (``stop``, ``restart``, ``disable --now``) ends
  its processes; ``apt-get`` succeeds and installs nothing;
- ``FAKE_INSTALL=complete``: an image build's ``docker run`` leaves a finished Windows install
  in the folder bound at ``/storage`` (dockur's ``windows.base``, ``windows.boot`` and a data
  disk) and its container exited, as WAA's prepare mode ends;
- ``FAKE_IMDS``: the instance metadata service (IMDSv2) behind ``curl``: ``none`` (no spot
  notice: 404), ``notice`` (an interruption notice, ``FAKE_IMDS_ACTION`` at ``FAKE_IMDS_TIME``),
  ``error`` (500) or ``down`` (unreachable: curl times out).

Nothing here talks to a network or a real daemon.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

from tests.support.sshd import SshServer, require_sshd

_COMMON = """#!/bin/bash
# Outcomes may also come from a file the test rewrites between passes (over SSH, the session's
# environment is fixed by the server).
if [ -f "${FAKE_STATE:?}/env" ]; then set -a; . "$FAKE_STATE/env"; set +a; fi
log="$FAKE_STATE/calls.log"
printf '%s\\n' "$(basename "$0") $*" >> "$log"
started() {  # started PID: when process PID started (clock ticks since boot)
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  # shellcheck disable=SC2086
  set -- $stat
  echo "${20}"
}
# signal_group SIG PIDFILE: signal the process group PIDFILE names, unless its number runs
# another process now (tests/support/procs.py: a group that ended frees its number, and the
# system gives it to a new process, often another test's group leader)
signal_group() {
  local pid start now
  pid="$(cat "$2" 2>/dev/null)" || return 0
  start="$(cat "$2.start" 2>/dev/null)" || start=""
  if now="$(started "$pid")" && [ -n "$start" ] && [ "$now" != "$start" ]; then return 0; fi
  kill "-$1" -- "-$pid" 2>/dev/null || true
}
count() {  # count NAME: bump and print a per-name counter
  local f="$FAKE_STATE/count.$1" n=0
  [ -f "$f" ] && n="$(cat "$f")"
  n=$((n + 1)); echo "$n" > "$f"; echo "$n"
}
"""

# The instance metadata service (IMDSv2) as curl meets it: a PUT for a token, then reads that
# must carry it (401 otherwise, as the real service answers). Calls without both timeouts fail.
_IMDS = r"""
imds() {
  local method=GET out="" fmt="" token="" url="" timeouts=0
  while [ $# -gt 0 ]; do
    case "$1" in
      -X) method="$2"; shift ;;
      -o) out="$2"; shift ;;
      -w) fmt="$2"; shift ;;
      -H) case "$2" in X-aws-ec2-metadata-token:*) token="${2#*: }" ;; esac; shift ;;
      --connect-timeout|--max-time) timeouts=$((timeouts + 1)); shift ;;
      http*) url="$1" ;;
    esac
    shift
  done
  if [ "$timeouts" -lt 2 ]; then echo "curl stand-in: IMDS call without timeouts" >&2; exit 90; fi
  if [ "${FAKE_IMDS:-none}" = down ]; then
    echo "curl: (28) Connection timed out after 2001 milliseconds" >&2; exit 28
  fi
  local code=200 body=""
  case "$method $url" in
    "PUT "*/latest/api/token) body="AQAEAFakeToken==" ;;
    "GET "*/latest/meta-data/spot/instance-action)
      if [ "$token" != "AQAEAFakeToken==" ]; then code=401
      elif [ "${FAKE_IMDS:-none}" = notice ]; then
        body="{\"action\": \"${FAKE_IMDS_ACTION:-terminate}\", "
        body+="\"time\": \"${FAKE_IMDS_TIME:-2026-11-30T22:02:00Z}\"}"
      elif [ "${FAKE_IMDS:-none}" = error ]; then code=500
      else code=404; fi ;;
    *) code=404 ;;
  esac
  if [ -n "$out" ]; then printf '%s' "$body" > "$out"; else printf '%s' "$body"; fi
  [ -n "$fmt" ] && printf '%s' "$code"
  if [ -z "$fmt" ] && [ "$code" != 200 ]; then exit 22; fi  # -f: an HTTP error fails
  return 0
}
"""

_SCRIPTS = {
    "docker": r"""
if [ -n "${FAKE_DOCKER_DENIED:-}" ] && [ -z "${FAKE_VIA_SUDO:-}" ]; then
  echo "permission denied while trying to connect to the Docker daemon socket" >&2
  exit 1
fi
case "$1" in
  info) echo "Server Version: 27.0" ;;
  pull)
    if [ -n "${FAKE_PULL_FAIL:-}" ]; then
      echo "Error response from daemon: pull access denied for $2" >&2; exit 1
    fi ;;
  image)
    if [ -n "${FAKE_NO_DIGEST:-}" ]; then  # an image docker knows by no registry digest
      echo 'template: :1:2: executing "" at <index .RepoDigests 0>: error calling index:' \
        'index out of range: 0' >&2; exit 1
    fi
    a=0123abcd; b=4567ef01
    case "${!#}" in
      *winarena*) echo "windowsarena/winarena@sha256:$a$a$a$a$a$a$a$a" ;;
      *) echo "dockurr/windows@sha256:$b$b$b$b$b$b$b$b" ;;
    esac ;;
  load)
    if [ -n "${FAKE_LOAD_FAIL:-}" ]; then
      echo "open $3: no such file or directory" >&2; exit 1
    fi ;;
  build|save) ;;
  # Each container's state in FAKE_STATE/containers/NAME (up or exited), for the workers of a
  # host with several: run and start make it up, stop makes it exited, rm removes it.
  # FAKE_INSTALL=complete: a build's run (--prepare-image true) leaves in the folder bound at
  # /storage what dockur leaves once Windows installed, booted and shut down, and exits.
  run)
    name=""; prev=""; storage=""
    for a in "$@"; do
      [ "$prev" = --name ] && name="$a"
      [ "$prev" = -v ] && [ "${a%:/storage}" != "$a" ] && storage="${a%:/storage}"
      prev="$a"
    done
    mkdir -p "$FAKE_STATE/containers"
    state=up
    if [ "${FAKE_INSTALL:-}" = complete ] && [[ " $* " == *" --prepare-image true "* ]]; then
      echo "win11x64-enterprise-eval.iso" >"$storage/windows.base"
      touch "$storage/windows.boot"
      { printf 'EFI PART'; head -c 200000 /dev/zero; } >"$storage/data.img"
      state=exited
    fi
    if [ -n "$name" ]; then echo "$state" >"$FAKE_STATE/containers/$name"; fi
    echo "c0ffee" ;;
  start|restart)
    mkdir -p "$FAKE_STATE/containers"
    for n in "${@:2}"; do echo up >"$FAKE_STATE/containers/$n"; done ;;
  stop)
    for n in "${@:2}"; do
      if [ -f "$FAKE_STATE/containers/$n" ]; then echo exited >"$FAKE_STATE/containers/$n"; fi
    done ;;
  rm) for n in "${@:2}"; do [ "$n" = -f ] || rm -f "$FAKE_STATE/containers/$n"; done ;;
  inspect)
    n="$(count inspect)"
    if [ -n "${FAKE_EXIT_AFTER:-}" ] && [ "$n" -gt "$FAKE_EXIT_AFTER" ]; then
      echo "false ${FAKE_EXIT_CODE:-1}"
    elif [ "$(cat "$FAKE_STATE/containers/${!#}" 2>/dev/null)" = exited ]; then
      echo "false 0"
    else
      echo "true 0"
    fi ;;
  logs)
    # The whole log (no --tail) holds WAA's own lines too.
    if [ "$2" != --tail ] && [ -n "${FAKE_WAA_LOG:-}" ]; then printf '%s\n' "$FAKE_WAA_LOG"; fi
    echo "${FAKE_LOG:-Windows is being installed: 42%}" ;;
  ps)
    # Only the exact arguments pool-wait must send: a quoting mistake prints nothing useful.
    # A container this host's docker run made and that is gone since (docker rm, or the test
    # killing the host) prints nothing, as docker does; on a host where no docker run has
    # happened (a test writing the status file by hand) every container plays up.
    if [[ "$*" =~ ^"ps -a --filter name=^"([a-z0-9-]+)"$ --format {{.Status}}"$ ]]; then
      known="$FAKE_STATE/containers/${BASH_REMATCH[1]}"
      if [ -z "${FAKE_CONTAINER_STATUS:-}" ] && [ -d "$FAKE_STATE/containers" ] &&
        [ ! -f "$known" ]; then
        :
      elif [ -n "${FAKE_CONTAINER_STATUS:-}" ] || [ ! -f "$known" ]; then
        echo "${FAKE_CONTAINER_STATUS:-Up 3 minutes}"
      elif [ "$(cat "$known")" = up ]; then echo "Up 3 minutes"
      else echo "Exited (0) 2 seconds ago"; fi
    else
      echo "unexpected docker ps arguments: $*" >&2; exit 2
    fi ;;
  *) echo "docker stand-in: unknown command $1" >&2; exit 2 ;;
esac
""",
    "sudo": r"""
if [ -n "${FAKE_NO_SUDO:-}" ]; then echo "sudo: command not found" >&2; exit 127; fi
if [ "$1" != "-n" ]; then echo "sudo: a password is required" >&2; exit 1; fi
shift
# A rehearsal host's shipped files live under OA_VM_ROOT (lib.sh's root of every path): an
# absolute command found there (/opt/oa-vm/reset.sh) runs from there.
if [ -n "${OA_VM_ROOT:-}" ] && [[ "$1" == /* ]] && [ -x "$OA_VM_ROOT$1" ]; then
  set -- "$OA_VM_ROOT$1" "${@:2}"
fi
FAKE_VIA_SUDO=1 exec "$@"
""",
    "id": r"""
if [ -z "${FAKE_UID:-}" ]; then exec /usr/bin/id "$@"; fi
case "$1" in -u) echo "$FAKE_UID" ;; -nG) echo "ubuntu adm" ;; *) echo "uid=$FAKE_UID" ;; esac
""",
    "systemctl": r"""
# FAKE_SYSTEMCTL_FAIL=WORD: a call naming WORD (e.g. oa-vm-scoring) fails as systemd says.
if [ -n "${FAKE_SYSTEMCTL_FAIL:-}" ] && [[ " $* " == *"$FAKE_SYSTEMCTL_FAIL"* ]]; then
  echo "Job for $FAKE_SYSTEMCTL_FAIL.service failed because the control process exited" \
    "with error code." >&2
  exit 1
fi
# FAKE_SCORER_CMD: what starting the scoring units runs (in the background, its pid recorded).
if [ "$1 $2" = "enable --now" ] && [[ " $* " == *" oa-vm-scoring.service "* ]] &&
  [ -n "${FAKE_SCORER_CMD:-}" ]; then
  setsid bash -c "$FAKE_SCORER_CMD" >"$FAKE_STATE/scorer.log" 2>&1 </dev/null &
  echo "$!" >"$FAKE_STATE/scorer.pid"
  started "$!" >"$FAKE_STATE/scorer.pid.start" || true
fi
# Stopping (or restarting) a unit started as below ends its processes first, as systemd would.
if [ "$1" = stop ] || [ "$1" = restart ] || [ "$1 $2" = "disable --now" ]; then
  for unit in "${@:2}"; do
    [ -f "$FAKE_STATE/$unit.pid" ] || continue
    signal_group TERM "$FAKE_STATE/$unit.pid"
    rm -f "$FAKE_STATE/$unit.pid" "$FAKE_STATE/$unit.pid.start"
  done
fi
# FAKE_SYSTEMD=run: starting (or restarting) a worker's bootstrap unit runs what the unit file
# under OA_VM_ROOT says (its Environment= and ExecStart=), in the background, as systemd would
# (its process group's leader in FAKE_STATE/<unit>.pid).
if [ "${FAKE_SYSTEMD:-}" = run ] && { [ "$1" = start ] || [ "$1" = restart ]; }; then
  for unit in "${@:2}"; do
    case "$unit" in oa-vm-bootstrap*.service | oa-vm-image-build.service) ;; *) continue ;; esac
    file="${OA_VM_ROOT:-}/etc/systemd/system/$unit"
    [ -f "$file" ] || { echo "Unit $unit not found." >&2; exit 5; }
    envs="$(sed -n 's/^Environment=//p' "$file")"
    exec_start="$(sed -n 's/^ExecStart=//p' "$file")"
    # shellcheck disable=SC2086
    (setsid env $envs "${OA_VM_ROOT:-}"$exec_start >>"$FAKE_STATE/$unit.log" 2>&1 </dev/null &
     echo "$!" >"$FAKE_STATE/$unit.pid"
     started "$!" >"$FAKE_STATE/$unit.pid.start" || true)
  done
fi
exit 0
""",
    # Packages cannot be installed here: the call is recorded and succeeds.
    "apt-get": "exit 0\n",
    "journalctl": r"""
# The units' journal: what a scorer started through FAKE_SCORER_CMD wrote, else FAKE_JOURNAL.
if [ -s "$FAKE_STATE/scorer.log" ]; then tail -n 1 "$FAKE_STATE/scorer.log"; exit 0; fi
default="scoring: cannot import WAA's evaluators (No module named 'cv2')"
echo "${FAKE_JOURNAL:-$default}"
""",
    "curl": r"""
case "$*" in
  *169.254.169.254*) imds "$@"; exit $? ;;
esac
# FAKE_GUEST_WAA: the guest's WAA server (127.0.0.1:5000 on a worker host) is a real one there.
if [ -n "${FAKE_GUEST_WAA:-}" ] && [[ "$*" == *127.0.0.1:5000/* ]]; then
  exec /usr/bin/curl "${@//http:\/\/127.0.0.1:5000/$FAKE_GUEST_WAA}"
fi
case "$*" in
  *127.0.0.1:5051/*)  # the scoring server through the bridge
    if [ "${FAKE_SCORER:-answers}" = answers ]; then echo '{"status": "ok"}'; exit 0; fi
    echo "curl: (7) Failed to connect to 127.0.0.1 port 5051" >&2; exit 7 ;;
esac
n="$(count probe)"
after="${FAKE_PROBE_AFTER:-never}"
if [ "$after" != never ] && [ "$n" -ge "$after" ]; then
  echo '{"status": "Probe successful"}'; exit 0
fi
echo "curl: (7) Failed to connect to 127.0.0.1 port 5000" >&2
exit 7
""",
    "cloud-init": r"""
echo "status: ${FAKE_CLOUD_INIT:-done}"
""",
    "mount": "exit 0\n",
    "umount": "exit 0\n",
    "mountpoint": r"""
[ -n "${FAKE_MOUNTED:-}" ] && exit 0
exit 1
""",
    # blkid exits 2 when it finds no filesystem on the device.
    "blkid": r"""
if [ "${FAKE_BLKID:-unformatted}" = formatted ]; then
  echo "${!#}: LABEL=\"oa-vm-storage\" TYPE=\"ext4\""; exit 0
fi
exit 2
""",
    # The root filesystem's source (bootstrap.sh must never take the root disk for the storage).
    "findmnt": r"""
echo "${FAKE_ROOT_SOURCE:-/dev/xvda1}"
""",
    "mkfs.ext4": "exit 0\n",
}


def write_shipped(folder: Path) -> Path:
    """``/opt/oa-vm`` as cloud-init writes it (the shipped form of every file, executable
    scripts), into ``folder``; returns it."""
    from infra.worker.cloud_init import WorkerFiles

    for name, content in WorkerFiles.from_package().files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        path.chmod(0o755 if name.endswith(".sh") else 0o644)
    return folder


def write_standins(bin_dir: Path, only: tuple[str, ...] | None = None) -> Path:
    """Write the stand-ins (all, or ``only`` these) into ``bin_dir``; returns it."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, body in _SCRIPTS.items():
        if only is not None and name not in only:
            continue
        path = bin_dir / name
        extra = _IMDS if name == "curl" else ""
        path.write_text(_COMMON + extra + body, encoding="utf-8")
        path.chmod(0o755)
    return bin_dir


def standin_env(bin_dir: Path, state_dir: Path, **fake: str) -> dict[str, str]:
    """An environment with the stand-ins first on PATH and ``FAKE_*`` outcomes set."""
    state_dir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_", "OA_VM_"))}
    env["PATH"] = f"{bin_dir}:/usr/bin:/bin"
    env["FAKE_STATE"] = str(state_dir)
    env.update(fake)
    return env


def set_outcomes(state_dir: Path, **fake: str) -> None:
    """Replace the outcomes the stand-ins read from ``state_dir/env`` (for SSH sessions)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    lines = "".join(f"{key}='{value}'\n" for key, value in fake.items())
    (state_dir / "env").write_text(lines, encoding="utf-8")


def calls(state_dir: Path) -> list[str]:
    """The stand-ins' calls so far, one ``name args`` string each."""
    log = state_dir / "calls.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


class HostSshServer(SshServer):
    """The test SSH server as a worker host: its sessions' PATH starts with the stand-ins, and
    ``env`` (e.g. ``OA_VM_STATE_DIR``, where this host's status file lives) is set for them."""

    def __init__(self, root: Path, bin_dir: Path, fake_state: Path, *,
                 listen: str = "127.0.0.1", **env: str) -> None:
        self.bin_dir, self.fake_state, self.env = bin_dir, fake_state, env
        super().__init__(root, listen=listen)

    def session_env(self) -> dict[str, str]:
        """The stand-ins first on PATH, their state folder, and ``env``."""
        return {**super().session_env(), "PATH": f"{self.bin_dir}:/usr/bin:/bin",
                "FAKE_STATE": str(self.fake_state), **self.env}


@contextlib.contextmanager
def running_host(folder: Path, *, only: tuple[str, ...] | None = None,
                 listen: str = "127.0.0.1", **env: str) -> Iterator[HostSshServer]:
    """A started :class:`HostSshServer` under ``folder`` (its sshd in ``sshd/``, listening on
    ``listen``, the stand-ins, all or ``only`` these, in ``bin/``, their state in ``fake/``),
    its sessions given ``env``;
    stopped with its connections afterwards. Skips the test where OpenSSH's server is missing."""
    require_sshd()
    fake = folder / "fake"
    fake.mkdir(parents=True, exist_ok=True)
    server = HostSshServer(folder / "sshd", write_standins(folder / "bin", only=only), fake,
                           listen=listen, **env)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def lib_value(name: str) -> str:
    """The value the shipped ``lib.sh`` gives the variable ``name`` (sourced by bash, as the
    host's scripts source it)."""
    from infra.worker.units import WORKER_DIR

    done = subprocess.run(  # fixed script; the name is passed as an argument
        ["bash", "-c", '. "$0"; printf %s "${!1}"', str(WORKER_DIR / "lib.sh"), name],
        capture_output=True, text=True, timeout=30, check=True,
        env={"PATH": "/usr/bin:/bin", "OA_VM_ROOT": "/nonexistent"})
    return done.stdout


def setup_dropins(root: Path) -> dict[str, str]:
    """The systemd drop-ins the host's setup writes (``lib.sh``'s ``write_docker_dropin``, run
    under ``root`` as ``OA_VM_ROOT``, as ``bootstrap.sh`` runs it), by their path under
    ``/etc/systemd/system`` (``docker.service.d/oa-vm-stop-timeout.conf``)."""
    from infra.worker.units import WORKER_DIR

    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["bash", "-c", '. "$0"; write_docker_dropin', str(WORKER_DIR / "lib.sh")],
                   capture_output=True, text=True, timeout=30, check=True,
                   env={"PATH": "/usr/bin:/bin", "OA_VM_ROOT": str(root)})
    units = root / "etc" / "systemd" / "system"
    return {str(path.relative_to(units)): path.read_text(encoding="utf-8")
            for path in sorted(units.glob("*.d/*.conf"))}
