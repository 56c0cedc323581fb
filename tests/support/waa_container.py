"""WAA's real container, rehearsed without Docker, QEMU or Windows.

``bootstrap.sh`` runs for real; WAA's real ``entry.sh`` and ``entry_setup.sh`` (from
``../shared/waa/upstream``) run as PID 1 of their own PID namespace with the same arguments
``docker run`` passes; dockur's real shell functions (from ``../shared/dockur/upstream``) decide
between installing and booting Windows from the storage folder. What cannot run here is played:

- **Docker's daemon**: a ``docker`` stand-in (:data:`DOCKER`). ``docker build`` runs the shipped
  recipe (``infra/worker/waa-image/Dockerfile``) step by step into a folder: ``ARG``/``ENV``,
  ``COPY --from=waa`` out of WAA's upstream files laid out as ``windowsarena/winarena`` holds
  them, and ``RUN`` steps as Docker runs them (one ``/bin/sh -c``, the stage's own ``ARG``s) in a
  chroot of that folder; the steps that need the network or WAA's installed packages
  (:data:`SKIPPED_RUN`) and WAA's Python (absent here) are recorded as skipped in
  ``build.json``. ``docker run -d`` starts the entry command as PID 1 of a new PID and
  mount namespace (``unshare --fork --pid --mount-proc``) chrooted into that folder, with the
  volumes bound where ``-v`` says and the ``-e`` variables set; ``stop`` sends SIGTERM to that
  PID 1 alone and SIGKILL to all after the stop timeout (``--stop-timeout``, as Docker does);
  ``inspect``, ``logs``, ``rm``, ``save`` and ``load`` answer from the container's state folder.
- **dockur's runtime, QEMU and Windows**: the image's ``tini`` (:data:`DOCKUR_RUNTIME`), which
  dockur's entry point is started with. It loads dockur's own functions from the image's
  ``/run`` (``utils.sh``, ``define.sh``, ``install.sh``), asks dockur's ``needsInstall``, and on an
  install writes the storage state with dockur's own ``writeState``/``createMarker`` (the
  ``windows.base`` and ``windows.boot`` markers) and a data disk, then starts the guest. A stop
  signal it receives is handled as dockur's trap does (``power.sh``, ``enableTrap`` ->
  ``gracefulShutdown``): the guest gets the ACPI power button, and the runtime ends with the
  signal's code once the guest is off.
- **the Windows guest**: :data:`GUEST`, which behaves like WAA's ``server/main.py``: ``GET
  /probe`` answers 200, ``POST /shutdown`` answers 200 and the guest powers off 2 s later (WAA
  runs ``shutdown /s /t 2``); it listens on the guest address and on ``127.0.0.1:5000`` (Docker's
  ``-p`` publish). The rehearsal runs in a private network namespace whose only interface is its
  own loopback, holding the guest address: nothing leaves the machine.
- **time**: the image's ``sleep`` shortens WAA's ``sleep 180`` after ``/shutdown`` to 4 s (any
  sleep of 60 s or more); WAA's 5 s probe interval stays real.

Outcomes (environment of the ``docker`` stand-in, copied into the container's
``/etc/oa-rehearsal.env``): ``FAKE_GUEST=normal|never`` (``never``: Windows never answers);
``FAKE_GUEST_DELAY_S`` (the guest answers only after this many seconds); ``FAKE_GUEST_WINDOW_S``
(it powers off at the latest this many seconds after its first answer); ``FAKE_GUEST_POWEROFF_S``
(seconds from ``/shutdown`` to power-off, 2 by default: pending updates take longer);
``FAKE_INSTALL=complete|no-boot-marker`` (``no-boot-marker``: Windows never booted from its disk,
so dockur writes no ``windows.boot``, which it writes only after QEMU has exited, as its
``power.sh`` does); ``FAKE_NETWORK=fallback`` (dockur's NAT setup fails even with
``/dev/net/tun``, and it falls back to user-mode networking; without the device it always does);
``FAKE_DOCKUR_EXIT=N`` (dockur prints its error and exits N before QEMU starts).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from tests.support import procs

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
WAA_CONTAINER_SRC = SHARED / "waa" / "upstream" / "src" / "win-arena-container"
DOCKUR = SHARED / "dockur" / "upstream"
GUEST_IP = "172.30.0.2"

SKIPPED_RUN = ("apt-get", "python3.9")
"""``RUN`` steps containing these need the network or WAA's Python packages: not run here (the
import check is rehearsed by ``tests/unit/infra/test_waa_image.py`` with this machine's Python)."""

DOCKER = r'''#!__PYTHON__
"""docker stand-in: see tests/support/waa_container.py."""
import glob, hashlib, json, os, shlex, shutil, signal, subprocess, sys, time
from pathlib import Path

STATE = Path(os.environ["FAKE_STATE"]) / "docker"
STATE.mkdir(parents=True, exist_ok=True)
WAA_ROOTFS = Path(os.environ["FAKE_WAA_ROOTFS"])
BASE_ROOTFS = Path(os.environ["FAKE_BASE_ROOTFS"])
IMAGE = STATE / "image"
CTR = STATE / "container"
with open(Path(os.environ["FAKE_STATE"]) / "calls.log", "a") as log:
    log.write("docker " + " ".join(sys.argv[1:]) + "\n")

def die(msg, code=1):
    sys.stderr.write(msg + "\n"); sys.exit(code)

def chroot_sh(root, command, env, shell="/bin/bash"):
    """Run `command` with `shell` in a chroot of `root` over this machine's /usr and /etc."""
    script = NAMESPACE_SETUP + "\nexec chroot \"$ROOTFS\" /usr/bin/env -i " + " ".join(
        shlex.quote(f"{k}={v}") for k, v in env.items()) + f" {shell} -c " + shlex.quote(command)
    return ["unshare", "--fork", "--pid", "--mount-proc", "--kill-child",
            "bash", "-c", script]

NAMESPACE_SETUP = r"""set -e
PATH=/usr/sbin:/usr/bin:/sbin:/bin
mkdir -p "$ROOTFS"
mount -t tmpfs tmpfs "$ROOTFS"
cd "$ROOTFS"
ln -s usr/bin bin; ln -s usr/lib lib; ln -s usr/lib64 lib64; ln -s usr/sbin sbin
mkdir -p usr etc proc dev tmp run
(cd "$IMAGE" && tar -c --exclude=./usr .) | tar -x
mount -t overlay overlay -o "lowerdir=$IMAGE/usr:/usr" usr
mount --bind /etc etc
mount -t proc proc proc
mount --rbind /dev dev
for bind in $BINDS; do
  src="${bind%%=*}"; rest="${bind#*=}"; dst="${rest%%:*}"
  if [ -d "$src" ]; then
    mkdir -p "$ROOTFS$dst"
  else
    mkdir -p "$(dirname "$ROOTFS$dst")"; touch "$ROOTFS$dst"
  fi
  mount --bind "$src" "$ROOTFS$dst"
  case "$rest" in *:ro) mount -o remount,bind,ro "$ROOTFS$dst" ;; esac
done
"""

def image_env():
    return json.loads((IMAGE / ".env.json").read_text()) if (IMAGE / ".env.json").exists() else {}

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

def build(args):
    tag, build_args, context = None, {}, None
    it = iter(args)
    for a in it:
        if a == "-t": tag = next(it)
        elif a == "--build-arg":
            k, _, v = next(it).partition("="); build_args[k] = v
        else: context = Path(a)
    text = (context / "Dockerfile").read_text()
    lines, buf = [], ""
    for raw in text.splitlines():
        if not buf and (not raw.strip() or raw.lstrip().startswith("#")):
            continue
        if raw.rstrip().endswith("\\"):
            buf += raw.rstrip()[:-1] + " "; continue
        lines.append((buf + raw).strip()); buf = ""
    # An ARG before the first FROM is seen by FROM lines only; a stage sees the ARGs it declares
    # (one without a value takes that global one's), as Docker scopes them.
    global_args, args_seen, env, stage, steps = {}, {}, {}, None, []
    def expand(s, scope):
        for k, v in sorted(scope.items(), key=lambda kv: -len(kv[0])):
            s = s.replace("${" + k + "}", v).replace("$" + k, v)
        return s
    shutil.rmtree(IMAGE, ignore_errors=True)
    for line in lines:
        word, _, rest = line.partition(" ")
        if word == "ARG":
            k, has, v = rest.partition("=")
            scope = global_args if stage is None else args_seen
            scope[k] = build_args.get(k, v if has else global_args.get(k, ""))
        elif word == "FROM":
            name = expand(rest.split()[0], global_args)
            args_seen = {}
            stage = rest.split()[-1] if " AS " in rest else "final"
            steps.append({"step": line, "from": name})
            if stage == "final":
                shutil.copytree(BASE_ROOTFS, IMAGE, symlinks=True)
        elif stage != "final":
            die(f"docker stand-in: unexpected step in stage {stage}: {line}")
        elif word == "COPY":
            parts = rest.split()
            assert parts[0] == "--from=waa", line
            *sources, dest = parts[1:]
            copied = []
            for source in sources:
                matches = sorted(glob.glob(str(WAA_ROOTFS) + source))
                if not matches and source.startswith("/usr/local/"):
                    steps.append({"step": line,
                                  "skipped": f"{source}: WAA's Python is not on this machine"})
                    continue
                if not matches: die(f"COPY failed: {source} not found in the WAA image")
                for m in matches:
                    target = IMAGE / dest.lstrip("/")
                    if dest.endswith("/"):
                        target = target / Path(m).name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    if Path(m).is_dir(): shutil.copytree(m, target, dirs_exist_ok=True)
                    else: shutil.copy2(m, target)
                    copied.append(m[len(str(WAA_ROOTFS)):])
            if copied: steps.append({"step": line, "copied": copied})
        elif word == "RUN":
            if any(s in rest for s in __SKIPPED_RUN__):
                steps.append({"step": line, "skipped": "needs the network or WAA's packages"})
                continue
            # One '/bin/sh -c STEP' whose status is the step's, as Docker runs it; the shell
            # expands the stage's ARGs and ENVs from its environment.
            command = "/bin/sh -c " + shlex.quote(rest) + " || exit $?"
            out = STATE / "build-out"
            shutil.rmtree(out, ignore_errors=True); out.mkdir()
            # The step runs in a chroot of the image; its top-level files come back as a tar.
            save = ("\ntar -C / -c --exclude=./usr --exclude=./proc --exclude=./dev --exclude=./etc"
                    " --exclude=./tmp --exclude=./bin --exclude=./lib --exclude=./lib64"
                    " --exclude=./sbin --exclude=./run/oa-out . > /run/oa-out/out.tar")
            done = subprocess.run(
                chroot_sh(STATE / "build-root", command + save,
                          {"PATH": DEFAULT_PATH, **env, **args_seen}, shell="/bin/sh"),
                env={**os.environ, "ROOTFS": str(STATE / "build-root"), "IMAGE": str(IMAGE),
                     "BINDS": f"{out}=/run/oa-out"},
                capture_output=True, text=True, timeout=120, check=False)
            if done.returncode != 0:
                die(f"The command '/bin/sh -c {rest}' returned a non-zero code: "
                    f"{done.returncode}\n{done.stdout}{done.stderr}")
            subprocess.run(["tar", "-C", str(IMAGE), "-x", "-f", str(out / "out.tar")], check=True)
            steps.append({"step": line, "ran": True})
        elif word == "ENV":
            for pair in shlex.split(rest):
                k, _, v = pair.partition("=")
                env[k] = expand(v, {**args_seen, **env})
            steps.append({"step": line, "env": True})
        else:
            die(f"docker stand-in: unsupported step {word}")
    (IMAGE / ".env.json").write_text(json.dumps(env))
    record = {"tag": tag, "args": build_args, "steps": steps}
    (STATE / "build.json").write_text(json.dumps(record, indent=1))

def running():
    pid_file = CTR / "pid"
    if not pid_file.exists(): return False
    return not (CTR / "rc").exists()

def started(pid):
    try: stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError: return None
    return stat.rsplit(") ", 1)[1].split()[19]

def ours(pid):
    """The container's process group still (tests/support/procs.py's rule): its number runs no
    other process now, one the system gave it to once the group had ended."""
    start_file = CTR / "pid.start"
    start = start_file.read_text().strip() if start_file.exists() else ""
    now = started(pid)
    return not (now is not None and start and now != start)

def run(args):
    it = iter(args)
    binds, env, entrypoint, rest, devices = [], {}, None, [], []
    stop_timeout = "10"  # Docker's default
    for a in it:
        if a in ("-d",): continue
        if a == "--stop-timeout": stop_timeout = next(it); continue
        if a in ("--name", "--restart", "--cap-add", "-p"): next(it); continue
        if a.startswith("--device="): devices.append(a.partition("=")[2]); continue
        if a == "--device": die("docker stand-in: write --device=PATH")
        if a == "-v":
            src, _, dst = next(it).partition(":"); binds.append(f"{src}={dst}")
        elif a == "-e":
            k, _, v = next(it).partition("="); env[k] = v
        elif a == "--entrypoint": entrypoint = next(it)
        else:
            rest = [a, *it]; break
    image, *command = rest
    if running(): die("Conflict. The container name \"/winarena\" is already in use")
    shutil.rmtree(CTR, ignore_errors=True); CTR.mkdir(parents=True)
    fake = {k: v for k, v in os.environ.items()
            if k.startswith("FAKE_GUEST") or k in ("FAKE_INSTALL", "FAKE_NETWORK",
                                                   "FAKE_DOCKUR_EXIT")}
    fake["FAKE_DEVICES"] = " ".join(devices)
    (CTR / "rehearsal.env").write_text("".join(f"{k}={shlex.quote(v)}\n" for k, v in fake.items()))
    full_env = {"PATH": DEFAULT_PATH, **image_env(), **env}
    argv = " ".join(shlex.quote(p) for p in [entrypoint, *command])
    (CTR / "command").write_text(argv)
    (CTR / "stop-timeout").write_text(stop_timeout)
    binds.append(f"{CTR / 'rehearsal.env'}=/run/oa-rehearsal.env:ro")
    log = open(CTR / "log", "w")
    script = chroot_sh(CTR / "rootfs", "exec " + argv, full_env)
    # The wrapper records the exit code of the namespace's PID 1 (docker inspect's ExitCode).
    record_rc = 'rc=0; "$@" || rc=$?; echo "$rc" > ' + shlex.quote(str(CTR / "rc"))
    wrapper = ["bash", "-c", record_rc, "run", *script]
    proc = subprocess.Popen(wrapper, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            env={**os.environ, "ROOTFS": str(CTR / "rootfs"),
                                 "IMAGE": str(IMAGE), "BINDS": " ".join(binds)})
    (CTR / "pid").write_text(str(proc.pid))
    (CTR / "pid.start").write_text(started(proc.pid) or "")
    print("c0ffee")

def stop():
    """docker rm -f: the container's processes (its own process group) end with SIGKILL."""
    pid_file = CTR / "pid"
    if pid_file.exists() and running():
        pid = int(pid_file.read_text())
        if ours(pid):
            try: os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError: pass
            for _ in range(200):
                try: os.kill(pid, 0)
                except ProcessLookupError: break
                if not ours(pid): break
                time.sleep(0.05)
        if not (CTR / "rc").exists(): (CTR / "rc").write_text("137\n")

def children(pid):
    found = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try: fields = Path(stat).read_text().rsplit(")", 1)[1].split()
        except OSError: continue
        if int(fields[1]) == pid: found.append(int(stat.split("/")[2]))
    return found

def graceful_stop(args):
    """docker stop [-t N]: SIGTERM to the container's PID 1 alone (its PID namespace's init,
    under unshare under the wrapper), then SIGKILL for all after the stop timeout."""
    timeout = float(args[args.index("-t") + 1] if "-t" in args
                    else (CTR / "stop-timeout").read_text())
    if running() and ours(int((CTR / "pid").read_text())):
        unshare = children(int((CTR / "pid").read_text()))
        inits = [i for u in unshare for i in children(u)]
        for init in inits:
            os.kill(init, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while running() and time.monotonic() < deadline:
            time.sleep(0.1)
    stop()
    print("winarena")

cmd, *args = sys.argv[1:] or [""]
if cmd == "info": print("Server Version: 27.0 (rehearsal)")
elif cmd == "pull": pass
elif cmd == "image":
    name = args[-1]
    print(name.split(":")[0] + "@sha256:" + hashlib.sha256(name.encode()).hexdigest())
elif cmd == "build": build(args)
elif cmd == "run": run(args)
elif cmd == "inspect":
    if not (CTR / "pid").exists(): die("Error: No such object: winarena")
    print("true 0" if running() else "false " + (CTR / "rc").read_text().strip())
elif cmd == "logs":
    text = (CTR / "log").read_text(errors="replace") if (CTR / "log").exists() else ""
    if "--tail" in args:
        n = int(args[args.index("--tail") + 1]); text = "\n".join(text.splitlines()[-n:])
    print(text)
elif cmd == "stop": graceful_stop(args)
elif cmd == "rm":
    if "-f" in args: stop()
    elif running(): die("Error: cannot remove a running container")
elif cmd == "save":
    out = Path(args[args.index("-o") + 1]); out.write_text(json.dumps({"image": str(IMAGE)}))
elif cmd == "load":
    src = Path(args[args.index("-i") + 1])
    if not src.exists(): die(f"open {src}: no such file or directory")
else: die(f"docker stand-in: unsupported command {cmd}", 2)
'''

DOCKUR_RUNTIME = r'''#!/bin/bash
# The image's tini, started by WAA's start_vm.sh as 'tini -s /run/entry.sh': dockur's runtime
# (its network, QEMU and Windows) cannot run here. dockur's own functions from the image's /run
# decide between installing and booting; QEMU and Windows are played (see waa_container.py).
set -Eeuo pipefail
[ "${1:-}" = -s ] && shift
if [ "${1:-}" != /run/entry.sh ]; then echo "tini stand-in: unexpected command: $*" >&2; exit 2; fi
set -a; . /run/oa-rehearsal.env; set +a
echo "rehearsal: PID 1 is $(tr '\0' ' ' </proc/1/cmdline)"
export STORAGE=/storage APP=Windows PLATFORM=x64 BOOT_MODE=windows PROCESS=windows
export FOOTER1="" FOOTER2="" TEMPLATE=/dev/null LANGUAGE="${LANGUAGE:-en}" DEBUG=""
cd /run
. ./utils.sh
# FAKE_DOCKUR_EXIT=N: dockur refuses to start within a second, its own error line first, as its
# checks do (init.sh, checkKvm: exit 88).
if [ -n "${FAKE_DOCKUR_EXIT:-}" ]; then
  error "KVM acceleration is not available (rehearsal), the machine would run 10 times slower."
  exit "$FAKE_DOCKUR_EXIT"
fi
. ./define.sh
# install.sh ends by calling startWindows (downloads, unattended setup): its functions only.
# shellcheck source=/dev/null
. <(sed '/^startWindows$/d' ./install.sh)
parseVersion
parseLanguage
detectCustom
# What dockur installs from when the build brought the user's own ISO (startWindows downloads
# only when hasImage "$ISO" fails): its path and checksum, for the test to compare.
if isCustomImage && hasImage "$ISO"; then
  sum="$(sha256sum <"$ISO" | cut -d' ' -f1)"
  echo "rehearsal: dockur installs from $ISO without a download, sha256 $sum"
fi
# dockur's NAT network (qemu/src/network.sh) makes a tap device, which needs /dev/net/tun from
# 'docker run'; when that fails it warns (its own warn from utils.sh) and falls back to
# user-mode networking. FAKE_NETWORK=fallback: it fails with the device too.
if [[ " ${FAKE_DEVICES:-} " != *" /dev/net/tun "* ]] || [ "${FAKE_NETWORK:-nat}" = fallback ]; then
  warn "failed to setup NAT networking, falling back to user-mode networking!"
fi
installing=0
if needsInstall; then
  installing=1
  echo "rehearsal: dockur decides: install Windows $VERSION"
  setBoot
  writeState "base" "$(basename "$BOOT")"
  writeState "ver" "rehearsal"
  # Windows writes its partitions at the start of the data disk, in dockur's DISK_FMT.
  { printf 'EFI PART'; head -c 200000 /dev/urandom; } > "$STORAGE/data.img"
  if [ "${DISK_FMT:-raw}" = qcow2 ]; then
    qemu-img convert -f raw -O qcow2 "$STORAGE/data.img" "$STORAGE/data.qcow2"
    rm -f "$STORAGE/data.img"
  fi
else
  echo "rehearsal: dockur decides: boot the installed Windows"
fi
echo "rehearsal: QEMU runs with QMP ${QMP:-(none)} and guest address ${VM_NET_IP:-(unpinned)}"
if [ "${FAKE_GUEST:-normal}" = never ]; then
  exec sleep infinity
fi
# A stop signal (from tini, which passes on what it receives): dockur's trap (power.sh,
# enableTrap -> gracefulShutdown) presses the ACPI power button, waits for QEMU to exit, and
# ends with the signal's code (finish "$code").
reason=0
guest=""
acpi_shutdown() {
  reason=$((128 + $(kill -l "$1")))
  echo "❯ Received $1 signal, sending ACPI shutdown signal..."
  [ -z "$guest" ] || kill -TERM "$guest" 2>/dev/null || true
}
trap 'acpi_shutdown SIGTERM' TERM
trap 'acpi_shutdown SIGINT' INT
python3 /usr/share/oa-rehearsal/guest.py "${VM_NET_IP:?}" &
guest=$!
while kill -0 "$guest" 2>/dev/null; do wait "$guest" || true; done
# QEMU has exited: dockur's finish (power.sh) now runs markWindowsBooted, which writes the boot
# marker once the firmware booted Windows from its disk; only then "Shutdown completed".
if [ "$installing" = 1 ] && [ "${FAKE_INSTALL:-complete}" = complete ]; then
  createMarker "boot"
fi
echo "❯ Shutdown completed!"
exit "$reason"
'''

GUEST = r'''"""The Windows guest as WAA's server/main.py answers.

GET /probe: 200; POST /shutdown: 200, then off 2 s later (WAA runs 'shutdown /s /t 2').
"""
import json, os, signal, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

address = sys.argv[1]
delay = float(os.environ.get("FAKE_GUEST_DELAY_S") or 0)
window = float(os.environ.get("FAKE_GUEST_WINDOW_S") or 0)
off = threading.Event()
first = []

def power_off_in(seconds):
    threading.Timer(seconds, off.set).start()

class Guest(BaseHTTPRequestHandler):
    def _send(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        if self.path != "/probe":
            self.send_error(404); return
        if not first:
            first.append(time.monotonic())
            if window: power_off_in(window)
        self._send({"status": "Probe successful", "message": "Service is operational"})
    def do_POST(self):
        if self.path != "/shutdown":
            self.send_error(404); return
        self._send({"status": "success", "message": "Shutdown initiated"})
        seconds = float(os.environ.get("FAKE_GUEST_POWEROFF_S") or 2)
        print(f"guest: /shutdown, powering off in {seconds:g} s", flush=True)
        power_off_in(seconds)
    def log_message(self, *args):
        pass

# The ACPI power button (dockur's system_powerdown, played as SIGTERM): Windows shuts down.
signal.signal(signal.SIGTERM, lambda *_: (print("guest: ACPI power button, shutting down",
                                                 flush=True),
                                           power_off_in(float(os.environ.get(
                                               "FAKE_GUEST_POWEROFF_S") or 2))))
time.sleep(delay)
servers = [ThreadingHTTPServer((host, 5000), Guest) for host in (address, "127.0.0.1")]
for server in servers:
    threading.Thread(target=server.serve_forever, daemon=True).start()
print(f"guest: Windows answers on {address}:5000", flush=True)
off.wait()
for server in servers:
    server.shutdown(); server.server_close()
print("guest: powered off", flush=True)
'''

SLEEP = r'''#!/bin/bash
# Time compression: WAA's 'sleep 180' after /shutdown lasts 4 s here (the guest is off 2 s after
# /shutdown); shorter sleeps are real.
if [ "$#" = 1 ] && [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 60 ]; then exec /usr/bin/sleep 4; fi
exec /usr/bin/sleep "$@"
'''


def unshare_works() -> str | None:
    """``None`` when PID, mount and network namespaces (and overlay mounts) work here, else why
    not (the rehearsal then skips with that reason)."""
    if os.geteuid() != 0:
        return "the container rehearsal needs root (unshare --pid --mount --net)"
    for tool in ("unshare", "ip", "chroot", "curl", "tar"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    probe = ('set -e; d="$(mktemp -d)"; mkdir "$d/l" "$d/m"; '
             'mount -t overlay overlay -o "lowerdir=$d/l:/usr" "$d/m"; ip link set lo up; '
             f'ip addr add {GUEST_IP}/32 dev lo; test "$$" = 1')
    done = subprocess.run(["unshare", "--fork", "--pid", "--mount-proc", "--net", "bash", "-c",
                           probe], capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        return f"unshare --fork --pid --mount-proc --net does not work here: {done.stderr.strip()}"
    return None


def waa_rootfs(folder: Path) -> Path:
    """WAA's upstream files where ``windowsarena/winarena`` holds them (its Dockerfile-WinArena:
    ``/client``, ``/oem``, ``/entry.sh``, ``/entry_setup.sh``, ``/start_client.sh``,
    ``/start_vm.sh``); WAA's Python (``/usr/local``) is not on this machine."""
    folder.mkdir(parents=True)
    shutil.copytree(WAA_CONTAINER_SRC / "client", folder / "client")
    shutil.copytree(WAA_CONTAINER_SRC / "vm" / "setup", folder / "oem")
    for name in ("entry.sh", "entry_setup.sh", "start_client.sh", "start_vm.sh"):
        shutil.copy2(WAA_CONTAINER_SRC / name, folder / name)
    return folder


def base_rootfs(folder: Path) -> Path:
    """``dockurr/windows`` as far as the rehearsal needs it: dockur's real scripts in ``/run``
    (qemux/qemu's ``src`` with dockur/windows' ``src`` over it, as their Dockerfiles copy them),
    ``/etc/version``, and the stand-ins for its runtime (``/usr/bin/tini``), the guest and time."""
    run = folder / "run"
    run.mkdir(parents=True)
    for src in (DOCKUR / "qemu" / "src", DOCKUR / "windows" / "src"):
        for path in src.iterdir():
            shutil.copy2(path, run / path.name)
    (folder / "usr" / "bin").mkdir(parents=True)
    (folder / "usr" / "local" / "bin").mkdir(parents=True)
    (folder / "usr" / "share" / "oa-rehearsal").mkdir(parents=True)
    for path, body in ((folder / "usr/bin/tini", DOCKUR_RUNTIME),
                       (folder / "usr/local/bin/sleep", SLEEP),
                       (folder / "usr/share/oa-rehearsal/guest.py", GUEST)):
        path.write_text(body, encoding="utf-8")
        path.chmod(0o755)
    return folder


def write_docker(bin_dir: Path) -> Path:
    """The ``docker`` stand-in into ``bin_dir``; returns its path."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / "docker"
    body = DOCKER.replace("__PYTHON__", sys.executable)
    path.write_text(body.replace("__SKIPPED_RUN__", repr(SKIPPED_RUN)), encoding="utf-8")
    path.chmod(0o755)
    return path


def stop_container(state_dir: Path) -> None:
    """Stop the rehearsal's container if it still runs (its process group, started by the
    stand-in)."""
    docker = state_dir / "docker" / "container"
    pid_file, rc_file = docker / "pid", docker / "rc"
    if pid_file.exists() and not rc_file.exists():
        procs.signal_group(pid_file, signal.SIGKILL)
