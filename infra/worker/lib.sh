#!/bin/bash
# Shared by the worker scripts (sourced, never run on its own).
#
# Every path starts with OA_VM_ROOT, empty on a real host; a rehearsal sets it to a temporary
# folder and puts stand-ins for docker, systemctl, curl and the disk tools on PATH.

# The names below are used by the scripts that source this file.
# shellcheck disable=SC2034
OA_VM_ROOT="${OA_VM_ROOT:-}"
OA_VM_STATE_DIR="$OA_VM_ROOT/var/lib/oa-vm"
OA_VM_STATUS_FILE="$OA_VM_STATE_DIR/status"
OA_VM_IMAGE_INFO="$OA_VM_STATE_DIR/image-info"
OA_VM_ENV_FILE="$OA_VM_ROOT/etc/oa-vm/worker.env"
OA_VM_STORAGE="$OA_VM_STATE_DIR/storage"
OA_VM_CONTAINER="winarena"
OA_VM_LOCAL_IMAGE="oa-vm/waa:local"
OA_VM_IMAGE_TAR="oa-vm-waa-image.tar"
OA_VM_READY_MARKER="oa-vm-image.ready"
OA_VM_STEP="start"
OA_VM_STEP_STARTED=""

now_utc() {
  date -u +%Y-%m-%dT%H:%M:%SZ
}

# write_status STATE STEP MESSAGE: replace the status file in one rename, so that
# 'oa-vm pool-wait' (reading it over SSH) never sees half of it.
write_status() {
  mkdir -p "$OA_VM_STATE_DIR"
  local tmp="$OA_VM_STATUS_FILE.tmp.$$"
  local message="${3//$'\n'/ }"
  printf 'state=%s\nstep=%s\nmessage=%s\nstarted=%s\nupdated=%s\n' \
    "$1" "$2" "$message" "${OA_VM_STEP_STARTED:-$(now_utc)}" "$(now_utc)" >"$tmp"
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

# load_env: the worker's settings, written by cloud-init.
load_env() {
  if [ -f "$OA_VM_ENV_FILE" ]; then
    set -a
    # shellcheck source=/dev/null
    . "$OA_VM_ENV_FILE"
    set +a
  fi
}
