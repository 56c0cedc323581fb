#!/bin/bash
# Watches for an AWS spot interruption notice; run by oa-vm-spot-watch.service on spot workers.
#
#   spot_watch.sh        poll every OA_VM_SPOT_POLL_S seconds (default 5), for ever
#   spot_watch.sh once   one poll (the rehearsal runs this)
#
# AWS announces a spot interruption about two minutes ahead in the instance metadata
# (IMDSv2: a PUT for a session token, then GET /latest/meta-data/spot/instance-action, which
# answers 404 until there is a notice, then {"action": "terminate|stop|hibernate", "time": ...}).
# On a notice the host's status file (the one 'oa-vm pool-wait' and 'pool-status' read over SSH)
# says state=draining, with the action and its time, so the controller gives the worker no new
# task while its current one finishes. Nothing else is touched: the container keeps running.
# An unreachable or failing metadata service never marks the worker draining.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=infra/worker/lib.sh
. "$here/lib.sh"

poll_s="${OA_VM_SPOT_POLL_S:-5}"

# json_field NAME: the string value of "NAME" in the JSON document on stdin (a flat object).
json_field() {
  tr -d '\n' | sed -n "s/.*\"$1\"[[:space:]]*:[[:space:]]*\"\([^\"]*\)\".*/\1/p"
}

# write_draining ACTION TIME: every worker's status file on this host says
# draining (publish_host_status: the notice is the host's).
write_draining() {
  mkdir -p "$OA_VM_STATE_DIR"
  local tmp="$OA_VM_STATE_DIR/notice.tmp.$$"
  {
    status_field state draining
    status_field step spot-interruption
    status_field message "AWS spot interruption notice: $1 at $2; no new task"
    status_field action "$1"
    status_field action_time "$2"
    status_field started "$(now_utc)"
    status_field updated "$(now_utc)"
  } >"$tmp"
  publish_host_status "$tmp"
}

# check_once: 0 after a poll that went through (notice or not), 1 when the metadata service
# could not be asked (nothing is written then).
check_once() {
  local token body code action when
  if ! token="$(imds_token)" || [ -z "$token" ]; then
    echo "oa-vm: spot-watch: the instance metadata service gave no token" >&2
    return 1
  fi
  body="$(mktemp)"
  code="$(curl "${OA_VM_IMDS_CURL[@]}" -o "$body" -w '%{http_code}' \
    -H "X-aws-ec2-metadata-token: $token" "$OA_VM_IMDS/latest/meta-data/spot/instance-action")" ||
    code="failed"
  case "$code" in
    404)
      rm -f "$body"
      return 0
      ;;
    200) ;;
    *)
      rm -f "$body"
      echo "oa-vm: spot-watch: instance-action answered ${code:-nothing}" >&2
      return 1
      ;;
  esac
  action="$(json_field action <"$body")"
  when="$(json_field time <"$body")"
  rm -f "$body"
  if [ -z "$action" ]; then
    echo "oa-vm: spot-watch: instance-action without an action" >&2
    return 1
  fi
  # Written again only when it changed (the bootstrap may have rewritten the file meanwhile).
  if ! grep -qx "action_time=$when" "$OA_VM_STATUS_FILE" 2>/dev/null ||
    ! grep -qx 'state=draining' "$OA_VM_STATUS_FILE" 2>/dev/null; then
    write_draining "$action" "${when:-unknown}"
    echo "oa-vm: spot-watch: interruption notice ($action at ${when:-unknown}); draining"
  fi
  return 0
}

if [ "${1:-}" = once ]; then
  check_once
  exit $?
fi
while :; do
  check_once || true
  sleep "$poll_s"
done
