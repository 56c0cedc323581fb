#!/bin/bash
# Clean resets: [--slot NAME] take TOKEN | restore | check (docs/providers.md; kept short:
# AWS user data). --slot: one worker of a host with several (infra/worker/slots.py).
# Exit 3: this worker cannot take snapshots at all (no monitor, or QEMU names a blocker).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# --slot NAME: one worker of a host with several (its own QMP socket, snapshot tag and record).
[ "${1:-}" != --slot ] || { export OA_VM_SLOT="${2:-}"; shift 2; }
# shellcheck source=infra/worker/lib.sh
. "$here/lib.sh"

tag="$OA_VM_SNAPSHOT_TAG"
probe_url="${OA_VM_RESET_PROBE_URL:-http://127.0.0.1:$OA_VM_WAA_HOST_PORT/probe}"
clock_url="${OA_VM_RESET_CLOCK_URL:-http://127.0.0.1:$OA_VM_WAA_HOST_PORT/execute}"
wait_s="${OA_VM_RESET_WAIT_S:-300}"

usage() {
  echo "usage: reset.sh take TOKEN | restore | check" >&2
  exit 2
}

helper() {
  python3 "$here/qmp_snapshot.py" "$OA_VM_QMP_SOCKET" "$OA_VM_QMP_DIR/../clean-snapshot.json" "$@"
}

wait_waa() {
  local start="${EPOCHREALTIME/./}" now
  until curl -fsS --max-time 5 "$probe_url" >/dev/null 2>&1; do
    now="${EPOCHREALTIME/./}"
    if (((now - start) / 1000000 >= wait_s)); then
      printf '{"ok": false, "error": "WAA not up %ss after the restore"}\n' "$wait_s"
      exit 1
    fi
    sleep 0.2
  done
  now="${EPOCHREALTIME/./}"
  printf '%d.%06d' $(((now - start) / 1000000)) $(((now - start) % 1000000))
}

[ $# -ge 1 ] || usage
if [ ! -S "$OA_VM_QMP_SOCKET" ]; then
  printf '{"ok": false, "error": "no QEMU monitor at %s: cannot restore snapshots"}\n' \
    "$OA_VM_QMP_SOCKET"
  exit 3
fi
case "$1" in
  take)
    [ $# -eq 2 ] || usage
    mkdir -p "$OA_VM_STATE_DIR"
    helper save "$tag" "$2"
    ;;
  restore)
    [ $# -eq 1 ] || usage
    answer="$(helper load "$tag")" || { echo "$answer"; exit 1; }
    waited="$(wait_waa)" || { echo "$waited"; exit 1; }  # a deadline, reported either way
    # the guest's clock is the snapshot's: set it from the host's before any task reads it
    clock="$(helper clock "$clock_url")" || { echo "$clock"; exit 1; }
    echo "${answer%\}}, \"wait_s\": $waited, ${clock#\{\"ok\": true, }"
    ;;
  check)
    [ $# -eq 1 ] || usage
    helper check
    ;;
  *)
    usage
    ;;
esac
