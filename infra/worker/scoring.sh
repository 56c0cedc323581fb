#!/bin/bash
# Starts or stops oa-vm's scoring server inside the WAA container (oa-vm-scoring.service).
#
# 'docker exec' does not stop the process inside the container when systemd stops the exec, so
# the server writes a pidfile and stop (also run before every start) kills it explicitly. The
# server runs on WAA's own Python 3.9 (copied into the image with WAA's packages: the image's
# own python3 is dockur's, without them) and talks to the guest at dockur's pinned address.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=infra/worker/lib.sh
. "$here/lib.sh"

container="$OA_VM_CONTAINER"
pidfile="/run/oa-vm-scoring.pid"

stop() {
  docker exec "$container" sh -c "test -f $pidfile && kill \"\$(cat $pidfile)\" || true" || true
}

case "${1:-}" in
  start)
    stop
    exec docker exec "$container" "$OA_VM_WAA_PYTHON" /oa-vm/scoring_server.py \
      --host 127.0.0.1 --port 5050 --vm-ip "$OA_VM_GUEST_IP" --pidfile "$pidfile"
    ;;
  stop)
    stop
    ;;
  *)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
