#!/bin/bash
# Shared by the worker scripts (sourced, never run on its own).
#
# Every path starts with OA_VM_ROOT, empty on a real host; a rehearsal sets it to a temporary
# folder and puts stand-ins for docker, systemctl, curl and the disk tools on PATH.

# The names below are used by the scripts that source this file.
# shellcheck disable=SC2034
OA_VM_ROOT="${OA_VM_ROOT:-}"
OA_VM_STATE_DIR="$OA_VM_ROOT/var/lib/oa-vm"
# A host with several workers: OA_VM_SLOT names this worker's slot, whose settings file
# (rendered by infra/worker/slots.py, the one rule for them) gives it its own container, status
# file, storage folder, QMP folder, guest address, ports and snapshot tag. Without a slot every
# value below is the one-worker host's.
OA_VM_SLOT="${OA_VM_SLOT:-}"
if [ -n "$OA_VM_SLOT" ]; then
  case "$OA_VM_SLOT" in
    *[!a-z0-9-]*) echo "oa-vm: bad worker slot name '$OA_VM_SLOT'" >&2; exit 2 ;;
  esac
  if [ ! -f "$OA_VM_ROOT/etc/oa-vm/workers/$OA_VM_SLOT.env" ]; then
    echo "oa-vm: no settings for worker slot $OA_VM_SLOT (/etc/oa-vm/workers/$OA_VM_SLOT.env)" >&2
    exit 2
  fi
  # shellcheck source=/dev/null
  . "$OA_VM_ROOT/etc/oa-vm/workers/$OA_VM_SLOT.env"
fi
# A slot with its own storage volume (a cloud host: one per slot) looks only for that one.
OA_VM_STORAGE_DEVICES="${OA_VM_SLOT_STORAGE_DEVICES:-${OA_VM_STORAGE_DEVICES:-}}"
OA_VM_STATUS_FILE="$OA_VM_ROOT${OA_VM_SLOT_STATUS:-/var/lib/oa-vm/status}"
OA_VM_IMAGE_INFO="$OA_VM_STATE_DIR/image-info"
OA_VM_ENV_FILE="$OA_VM_ROOT/etc/oa-vm/worker.env"
OA_VM_STORAGE="$OA_VM_ROOT${OA_VM_SLOT_STORAGE:-/var/lib/oa-vm/storage}"
OA_VM_CONTAINER="${OA_VM_SLOT_CONTAINER:-winarena}"
OA_VM_LOCAL_IMAGE="oa-vm/waa:local"
OA_VM_IMAGE_TAR="oa-vm-waa-image.tar"
OA_VM_READY_MARKER="oa-vm-image.ready"
# units.ISO_FILE
OA_VM_ISO_FILE="$OA_VM_STATE_DIR/iso/custom.iso"
# The Windows guest's address inside the container: dockur's own default (qemu/src/network.sh
# derives 172.30.0.2 from docker's default bridge), pinned with VM_NET_IP so dockur never rotates
# to another subnet. The image recipe, the scoring server and the tests use this same value.
OA_VM_GUEST_IP="${OA_VM_SLOT_GUEST_IP:-172.30.0.2}"
# The container's own address on dockur's bridge, the guest's gateway: dockur gives it the
# guest's /24 with .1 (qemu/src/network.sh, configureNAT: gateway="${ip%.*}.1"); its services
# (the screen on 8006, the DNS forwarder) listen there.
OA_VM_GUEST_GATEWAY="${OA_VM_GUEST_IP%.*}.1"
# QEMU's QMP: a unix socket in a host folder only root can open (never a TCP port the guest
# could reach); mounted into the container at OA_VM_QMP_MOUNT (dockur's QMP variable).
OA_VM_QMP_DIR="$OA_VM_ROOT${OA_VM_SLOT_QMP_DIR:-/var/lib/oa-vm/qmp}"
OA_VM_QMP_SOCKET="$OA_VM_QMP_DIR/qmp.sock"
OA_VM_QMP_MOUNT="/run/oa-vm-qmp"
# The guest's CPU, for dockur's proc.sh (CPU_MODEL, CPU_FLAGS): dockur's own KVM default,
# host with migratable=no plus +invtsc, exposes an invariant TSC, and under KVM an invariant TSC
# without a fixed tsc-frequency registers a migration blocker: snapshot-save then refuses every
# clean reset. CPU_MODEL=host keeps the host's migratable features; -invtsc wins over dockur's
# +invtsc (QEMU applies '-' features last); -vmx,-svm: nested virtualization registers one where
# the kernel keeps no nested state. Rules: tests/unit/infra/test_cpu_flags.py.
OA_VM_CPU_MODEL="host"
OA_VM_CPU_FLAGS="-invtsc,-vmx,-svm"
# dockur's Hyper-V enlightenments for Windows (proc.sh, HV=Y) are hv_passthrough, for which QEMU
# registers a migration blocker too ("'hv-passthrough' CPU flag prevents migration, use explicit
# set of hv-* flags instead", kvm.c, hyperv_init_vcpu). The worker passes HV=N and this explicit
# set, none of which registers one, where the host's KVM emulates Hyper-V (kvm_hyperv): a kernel
# without it (CONFIG_KVM_HYPERV unset) gives the guest none either way, and QEMU fails to start
# with some of them there.
OA_VM_HV_FLAGS="hv-relaxed,hv-vapic,hv-spinlocks=0x1fff,hv-vpindex,hv-runtime,hv-synic,hv-stimer,hv-stimer-direct,hv-time,hv-frequencies,hv-reset,hv-tlbflush,hv-ipi"
# The guest disk (and the clean snapshot's RAM image stored in it) through the host's page
# cache (dockur's DISK_CACHE; it then uses threaded I/O): a restore after the first reads the
# guest's RAM from memory, not from the volume (8 GB at gp3's 125 MiB/s is 66 s; see
# docs/performance.md). The worker's disk is thrown away with the worker, so the writes a
# host crash could lose do not matter.
OA_VM_DISK_CACHE="writeback"
# How long the WAA container gets to stop (docker's --stop-timeout): waa_entry.sh passes the
# SIGTERM of 'docker stop' (a pause, a host shutting down) to dockur, which shuts Windows down by
# ACPI and waits for QEMU; docker's SIGKILL after it leaves a dirty Windows disk. The one place
# for the number: the container's stop timeout and docker.service's (below) derive from it.
OA_VM_STOP_TIMEOUT_S=120
# On a host shutdown or reboot systemd stops docker.service, whose daemon stops each container
# within its stop timeout (dockerd adds 5 s of its own). Debian's and Ubuntu's docker.service set
# no TimeoutStopSec, so systemd's default (DefaultTimeoutStopSec, 90 s) would kill dockerd first:
# the drop-in below gives it the container's stop timeout and this margin.
OA_VM_DOCKER_STOP_MARGIN_S=60
OA_VM_DOCKER_DROPIN="$OA_VM_ROOT/etc/systemd/system/docker.service.d/oa-vm-stop-timeout.conf"
# WAA's Python 3.9 with its packages, copied into the worker image from windowsarena/winarena.
OA_VM_WAA_PYTHON="/usr/local/bin/python3.9"
# Where the tools reach the scoring server on the host (oa-vm-bridge.service).
OA_VM_SCORING_HOST_PORT="${OA_VM_SCORING_HOST_PORT:-${OA_VM_SLOT_SCORING_PORT:-5051}}"
# Where the host reaches WAA's server and the screen (127.0.0.1 only), and the clean snapshot's tag.
OA_VM_WAA_HOST_PORT="${OA_VM_SLOT_WAA_PORT:-5000}"
OA_VM_VNC_HOST_PORT="${OA_VM_SLOT_VNC_PORT:-8006}"
OA_VM_SNAPSHOT_TAG="${OA_VM_SLOT_SNAPSHOT_TAG:-oa-vm-clean}"
# The slot's own scoring and bridge units (infra/worker/slots.py): oa-vm-scoring-w1.service...
OA_VM_UNIT_SUFFIX="${OA_VM_SLOT:+-$OA_VM_SLOT}"
# What WAA's entry_setup.sh prints once Windows answered its own /probe: evidence that Windows
# answered even when the host's polls fell between its first answer and its shutdown.
OA_VM_WAA_READY_LINE="VM is up and running, and the Windows Arena Server is ready to use!"
# The instance metadata service (both clouds; a rehearsal points OA_VM_IMDS_URL at a loopback
# stand-in). Every call is bounded and bypasses any proxy: a metadata service that hangs must
# not hang the caller.
OA_VM_IMDS="${OA_VM_IMDS_URL:-http://169.254.169.254}"
OA_VM_IMDS_CURL=(-sS --noproxy '*' --connect-timeout 2 --max-time 5)
OA_VM_STEP="start"
OA_VM_STEP_STARTED=""

now_utc() {
  date -u +%Y-%m-%dT%H:%M:%SZ
}

# status_field KEY VALUE: one KEY=VALUE line of the status file. Every writer of the file goes
# through here: VALUE's line breaks and other control characters become spaces, so no value
# (a docker log line, a metadata service's answer) can end its line early or add a key.
status_field() {
  printf '%s=%s\n' "$1" "$(printf '%s' "$2" | tr '\000-\037\177' ' ')"
}

# imds_token: an AWS IMDSv2 session token on stdout, or nothing (and status 1).
imds_token() {
  curl "${OA_VM_IMDS_CURL[@]}" -f -X PUT -H "X-aws-ec2-metadata-token-ttl-seconds: 300" \
    "$OA_VM_IMDS/latest/api/token"
}

# publish_host_status FILE: FILE (then removed) becomes every worker's status on this host, each
# replaced in one rename: a notice about the host (a spot eviction) is every worker's on it (a
# host with several workers keeps one status file per slot, infra/worker/slots.py).
publish_host_status() {
  local f
  for f in "$OA_VM_STATE_DIR"/status "$OA_VM_STATE_DIR"/workers/*/status; do
    [ -d "${f%/status}" ] || continue
    cp "$1" "$f.$$" && mv -f "$f.$$" "$f"
  done
  rm -f "$1"
}

# write_status STATE STEP MESSAGE: replace the status file in one rename, so that
# 'oa-vm pool-wait' (reading it over SSH) never sees half of it.
write_status() {
  mkdir -p "$OA_VM_STATE_DIR"
  local tmp="$OA_VM_STATUS_FILE.tmp.$$"
  {
    status_field state "$1"
    status_field step "$2"
    status_field message "$3"
    status_field started "${OA_VM_STEP_STARTED:-$(now_utc)}"
    status_field updated "$(now_utc)"
  } >"$tmp"
  # OA_VM_STATUS_EXTRA: more key=value lines (the clean snapshot's check at boot), one a line
  if [ -n "${OA_VM_STATUS_EXTRA:-}" ]; then printf '%s\n' "$OA_VM_STATUS_EXTRA" >>"$tmp"; fi
  mv -f "$tmp" "$OA_VM_STATUS_FILE"
}

# step NAME MESSAGE: a new step begins.
step() {
  OA_VM_STEP="$1"
  OA_VM_STEP_STARTED="$(now_utc)"
  write_status running "$1" "$2"
  echo "oa-vm: $1: $2"
}

# fail MESSAGE: the current step failed; the status file names it, and the script stops.
fail() {
  write_status failed "$OA_VM_STEP" "$1"
  echo "oa-vm: $OA_VM_STEP failed: $1" >&2
  exit 1
}

# kvm_hyperv: this host's KVM emulates Hyper-V (KVM_CHECK_EXTENSION with KVM_CAP_HYPERV, 44, on
# /dev/kvm answers above 0).
kvm_hyperv() {
  python3 -c 'import fcntl, os, sys
sys.exit(fcntl.ioctl(os.open(sys.argv[1], os.O_RDWR), 0xAE03, 44) <= 0)' "$OA_VM_ROOT/dev/kvm" 2>/dev/null
}

# dockur_cpu_env: the container's variables for dockur's proc.sh (the guest's CPU), one
# NAME=VALUE a line; bootstrap.sh passes each with -e.
dockur_cpu_env() {
  local flags="$OA_VM_CPU_FLAGS"
  if kvm_hyperv; then flags="$flags,$OA_VM_HV_FLAGS"; fi
  printf '%s\n' "CPU_MODEL=$OA_VM_CPU_MODEL" "CPU_FLAGS=$flags" "HV=N"
}

# write_docker_dropin: docker.service's drop-in giving systemd's stop of docker more time than
# the container's own stop (OA_VM_STOP_TIMEOUT_S and OA_VM_DOCKER_STOP_MARGIN_S), written in one
# rename (the slots' bootstraps of one host may write it at once); a daemon-reload makes systemd
# read it, docker running or not.
write_docker_dropin() {
  local dir tmp
  dir="$(dirname "$OA_VM_DOCKER_DROPIN")"
  mkdir -p "$dir"
  tmp="$(mktemp "$dir/.oa-vm-stop-timeout.XXXXXX")" || return 1
  if {
    echo "# oa-vm: Windows' shutdown in the WAA container takes up to its stop timeout"
    echo "[Service]"
    echo "TimeoutStopSec=$((OA_VM_STOP_TIMEOUT_S + OA_VM_DOCKER_STOP_MARGIN_S))"
  } >"$tmp" && chmod 0644 "$tmp" && mv -f "$tmp" "$OA_VM_DOCKER_DROPIN"; then
    return 0
  fi
  rm -f "$tmp"
  return 1
}

# dockerx ARGS...: docker as root or through the docker group, else with sudo (never prompting).
dockerx() {
  if [ "$(id -u)" = 0 ] || id -nG 2>/dev/null | tr ' ' '\n' | grep -qx docker; then
    docker "$@"
  else
    sudo -n docker "$@"
  fi
}

# last_log: the container's last log line (dockur prints the Windows install's progress there).
last_log() {
  dockerx logs --tail 1 "$OA_VM_CONTAINER" 2>&1 | tail -n 1 | cut -c1-200
}

# install_complete DIR: DIR (the storage volume) holds a finished Windows install in dockur's own
# terms (windows/src/install.sh, hasCompletedInstall): the boot marker windows.boot, which
# dockur writes once Windows booted from its disk (power.sh, markWindowsBooted), and a data disk
# (data.qcow2 or data.img) whose first 100 KiB are not all zero (qemu/src/utils.sh, hasData).
# Those 100 KiB are the VIRTUAL disk's: a qcow2 file always starts with its own header, so its
# guest blocks are read through qemu-img, as hasData does. Where hasData assumes data when it
# cannot read a disk (it must not replace a user's disk), a build must not publish one: here an
# unreadable disk is not a finished install.
install_complete() {
  local dir="$1" disk head rc
  [ -f "$dir/windows.boot" ] || return 1
  for disk in "$dir/data.qcow2" "$dir/data.img"; do
    [ -s "$disk" ] || continue
    if [ "${disk##*.}" = qcow2 ]; then
      head="$(mktemp)" || return 1
      if ! qemu-img dd -f qcow2 -O raw bs=102400 count=1 "if=$disk" "of=$head" >/dev/null 2>&1; then
        rm -f "$head"
        continue
      fi
    else
      head="$disk"
    fi
    rc=0
    cmp -s -n 102400 "$head" /dev/zero || rc=$?
    [ "$head" = "$disk" ] || rm -f "$head"
    [ "$rc" = 1 ] && return 0
  done
  return 1
}

# network_fallback_line: the first line of the container's log where dockur says it fell back
# from its NAT network (tap device, guest at OA_VM_GUEST_IP) to user-mode networking (passt or
# slirp, qemu/src/network.sh): the guest is then not at OA_VM_GUEST_IP, and WAA, the scorer and
# the resets would fail hours later. Prints nothing and returns 1 when there is none.
OA_VM_NET_FALLBACK='falling back to user-mode networking|falling back to slirp networking|because user-mode networking is active'
network_fallback_line() {
  dockerx logs "$OA_VM_CONTAINER" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' |
    grep -m 1 -E "$OA_VM_NET_FALLBACK" | cut -c1-200 | grep .
}

# download_failure_line: the first line of the container's log where dockur says its download of
# Windows from Microsoft failed (windows/src/mido.sh; install.sh then exits 68): WAA's entry.sh
# would wait for a guest that never comes. Prints nothing and returns 1 when there is none.
OA_VM_DOWNLOAD_FAILED='ERROR: (Failed to download|Microsoft blocked|Microsoft servers|Microsoft server provided|Request to .* servers failed|Evaluation Center download page|No download in the)'
download_failure_line() {
  dockerx logs "$OA_VM_CONTAINER" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' |
    grep -m 1 -E "$OA_VM_DOWNLOAD_FAILED" | cut -c1-200 | grep .
}

# dockur_error_line: dockur's last error line in the container's log, from 'ERROR: ' on (its
# 'error' prefix is '❯ ERROR: ', qemu/src/utils.sh); nothing and status 1 when there is none.
dockur_error_line() {
  dockerx logs "$OA_VM_CONTAINER" 2>&1 | sed -n 's/\x1b\[[0-9;]*m//g; s/^❯ \(ERROR: .*\)/\1/p' |
    tail -n 1 | cut -c1-200 | grep .
}

# downloading_line: the container log's last line of dockur's own (its 'info' prefix, '❯ ')
# when that line says a download is under way ('Downloading ...', windows/src/mido.sh
# downloadFile); prints nothing and returns 1 when dockur has moved on or said nothing yet.
downloading_line() {
  dockerx logs "$OA_VM_CONTAINER" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | grep -E '^❯ ' | tail -n 1 |
    grep -E '^❯ Downloading ' | cut -c1-200 | grep .
}

# storage_bytes: the bytes the storage volume holds (dockur downloads into it), for telling a
# download that makes progress from one whose bytes stopped arriving.
storage_bytes() {
  du -sb "$OA_VM_STORAGE" 2>/dev/null | cut -f1
}

# load_env: the worker's settings, written by cloud-init.
load_env() {
  if [ -f "$OA_VM_ENV_FILE" ]; then
    set -a
    # shellcheck source=/dev/null
    . "$OA_VM_ENV_FILE"
    set +a
  fi
}
