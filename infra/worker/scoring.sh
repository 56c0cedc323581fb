#!/bin/bash
# Starts or stops oa-vm's scoring server inside the WAA container (oa-vm-scoring.service).
#
# 'docker exec' does not stop the process inside the container when systemd stops the exec, so
# the server writes a pidfile and stop (also run before every start) kills it explicitly.
set -euo pipefail

container="winarena"
pidfile="/run/oa-vm-scoring.pid"

stop() {
  docker exec "$container" sh -c "test -f $pidfile && kill \"\$(cat $pidfile)\" || true" || true
}

case "${1:-}" in
  start)
    stop
    exec docker exec "$container" python3 /oa-vm/scoring_server.py \
      --host 127.0.0.1 --port 5050 --pidfile "$pidfile"
    ;;
  stop)
    stop
    ;;
  *)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
