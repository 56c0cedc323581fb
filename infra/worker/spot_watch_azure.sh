#!/bin/bash
# Watches for an Azure Spot eviction; run by oa-vm-spot-watch-azure.service on Azure Spot workers.
#
#   spot_watch_azure.sh        poll every OA_VM_SPOT_POLL_S seconds (default 5), for ever
#   spot_watch_azure.sh once   one poll (the rehearsal runs this)
#
# Azure announces a Spot eviction at least 30 s ahead through Scheduled Events, part of the
# instance metadata service: GET /metadata/scheduledevents?api-version=2020-07-01 with the header
# "Metadata: true" answers {"DocumentIncarnation": N, "Events": [...]}; an eviction is an event
# of EventType "Preempt" whose Resources name this VM (every VM of an availability set sees the
# others' events too), due at NotBefore. On one the status file says state=draining, as
# spot_watch.sh writes it on AWS, so the controller gives the worker no new task while its
# current one finishes. The event is never acknowledged: that would only bring the eviction
# forward. An unreachable or failing metadata service never marks the worker draining.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=infra/worker/lib.sh
. "$here/lib.sh"

poll_s="${OA_VM_SPOT_POLL_S:-5}"
# The first request enables Scheduled Events for the VM and may take up to two minutes.
first_max_s="${OA_VM_SPOT_FIRST_MAX_S:-130}"
max_s=""
vm_name=""

# metadata PATH: GET the metadata service's PATH, bounded, never through a proxy.
metadata() {
  curl -sS -f --noproxy '*' --connect-timeout 2 --max-time "${max_s:-$first_max_s}" \
    -H "Metadata: true" "$OA_VM_IMDS$1"
}

# preempt_event VM: reads Scheduled Events' JSON on stdin and prints "NOT_BEFORE<TAB>EVENT_ID"
# of an eviction of VM (nothing if there is none); status 2 for a document without "Events".
preempt_event() {
  python3 -c '
import json, sys
try:
    events = json.load(sys.stdin)["Events"]
    assert isinstance(events, list)
except (ValueError, KeyError, TypeError, AssertionError):
    sys.exit(2)
for event in events:
    if (isinstance(event, dict) and event.get("EventType") == "Preempt"
            and sys.argv[1] in (event.get("Resources") or [])):
        print(event.get("NotBefore") or "", event.get("EventId") or "", sep="\t")
        break
' "$1"
}

# write_draining NOT_BEFORE EVENT_ID: every worker's status file on this host says
# draining (publish_host_status: the notice is the host's).
write_draining() {
  mkdir -p "$OA_VM_STATE_DIR"
  local tmp="$OA_VM_STATE_DIR/notice.tmp.$$"
  {
    status_field state draining
    status_field step spot-interruption
    status_field message "Azure Spot eviction notice: Preempt at $1; no new task"
    status_field action preempt
    status_field action_time "$1"
    status_field event_id "$2"
    status_field started "$(now_utc)"
    status_field updated "$(now_utc)"
  } >"$tmp"
  publish_host_status "$tmp"
}

# check_once: 0 after a poll that went through (eviction or not), 1 when the metadata service
# could not be asked or answered something else (nothing is written then).
check_once() {
  local body found when event
  if [ -z "$vm_name" ] &&
    ! vm_name="$(metadata "/metadata/instance/compute/name?api-version=2021-02-01&format=text")"; then
    vm_name=""
    echo "oa-vm: spot-watch: the instance metadata service gave no VM name" >&2
    return 1
  fi
  if ! body="$(metadata "/metadata/scheduledevents?api-version=2020-07-01")"; then
    echo "oa-vm: spot-watch: scheduled events could not be read" >&2
    return 1
  fi
  max_s=5 # answered once: Scheduled Events is enabled, later calls are quick
  if ! found="$(printf '%s' "$body" | preempt_event "$vm_name")"; then
    echo "oa-vm: spot-watch: scheduled events answered without an event list" >&2
    return 1
  fi
  [ -n "$found" ] || return 0
  when="${found%%$'\t'*}"
  event="${found#*$'\t'}"
  # Written again only when it changed (the bootstrap may have rewritten the file meanwhile).
  if ! grep -qx "event_id=$event" "$OA_VM_STATUS_FILE" 2>/dev/null ||
    ! grep -qx 'state=draining' "$OA_VM_STATUS_FILE" 2>/dev/null; then
    write_draining "${when:-unknown}" "$event"
    echo "oa-vm: spot-watch: eviction notice (Preempt at ${when:-unknown}); draining"
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
