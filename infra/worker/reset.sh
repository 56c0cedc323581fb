#!/bin/bash
# Clean resets of this worker's VM: a snapshot of the whole machine (memory and disk), taken once
# after Windows and WAA's server answer, loaded again before each task.
#
#   reset.sh take TOKEN   replace the clean snapshot with the machine as it is now; TOKEN is the
#                         fingerprint the caller just wrote into the guest (kept beside it)
#   reset.sh restore      load the clean snapshot, then wait for WAA's server to answer; prints
#                         the TOKEN recorded at take time, to compare with what the guest says
#   reset.sh check        exit 0 when this worker can take and restore snapshots, 3 when not
#
# Run as root (sudo -n over the pool's SSH path): QEMU's monitor is a unix socket in a 0700
# folder the container's QEMU listens on; no TCP port, so the guest cannot reach it. Each
# command prints one JSON line ({"ok": true, ...} or {"ok": false, "error": ...}).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=infra/worker/lib.sh
. "$here/lib.sh"

# The same names and defaults as lib.sh's (which may define them already).
OA_VM_QMP_DIR="${OA_VM_QMP_DIR:-$OA_VM_STATE_DIR/qmp}"
OA_VM_QMP_SOCKET="${OA_VM_QMP_SOCKET:-$OA_VM_QMP_DIR/qmp.sock}"
tag="oa-vm-clean"
record="$OA_VM_STATE_DIR/clean-snapshot.json"
# WAA's server as the host sees it (published on 127.0.0.1:5000 by bootstrap.sh).
probe_url="${OA_VM_RESET_PROBE_URL:-http://127.0.0.1:5000/probe}"
wait_s="${OA_VM_RESET_WAIT_S:-300}"

helper() {
  python3 "$here/qmp_snapshot.py" --socket "$OA_VM_QMP_SOCKET" --record "$record" "$@"
}

usage() {
  echo "usage: reset.sh take TOKEN | restore | check" >&2
  exit 2
}

no_monitor() {
  printf '{"ok": false, "error": "no QEMU monitor socket at %s: this worker cannot restore snapshots"}\n' \
    "$OA_VM_QMP_SOCKET"
  exit 3
}

[ $# -ge 1 ] || usage
[ -S "$OA_VM_QMP_SOCKET" ] || no_monitor
case "$1" in
  take)
    [ $# -eq 2 ] || usage
    mkdir -p "$OA_VM_STATE_DIR"
    helper save "$tag" --token "$2"
    ;;
  restore)
    [ $# -eq 1 ] || usage
    helper load "$tag" --wait-url "$probe_url" --wait-s "$wait_s"
    ;;
  check)
    [ $# -eq 1 ] || usage
    helper info
    ;;
  *)
    usage
    ;;
esac
