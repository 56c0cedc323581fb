#!/bin/bash
# Arms this host's power-off timer at the pool's current expiry; run by oa-vm-expiry-arm.service
# at every boot (AWS). Nothing else starts the timer at boot: it has no [Install] section.
#
# The pool's program moves the instance's tag oa-vm:expires-at with the pool's expiry (create,
# pool-extend, pause, resume), and the instance reads its own tags from the instance metadata
# (IMDSv2; the instance has instance_metadata_tags enabled). A host that boots after its expiry
# moved (pool-resume, with or without --no-wait; a start from the console) so powers off at
# the pool's expiry with no client involved. When the tag cannot be read (no answer, no such
# tag, not a time) the timer keeps the time it has (cloud-init's, or the last one set over
# SSH), unless that time has passed (below).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=infra/worker/lib.sh
. "$here/lib.sh"

timer="$OA_VM_ROOT/etc/systemd/system/oa-vm-expiry.timer"
tag="oa-vm:expires-at"

# read_expiry: the tag's value on stdout, or status 1.
read_expiry() {
  local token
  token="$(imds_token)" && [ -n "$token" ] &&
    curl "${OA_VM_IMDS_CURL[@]}" -f -H "X-aws-ec2-metadata-token: $token" \
      "$OA_VM_IMDS/latest/meta-data/tags/instance/$tag"
}

when=""
for try in 1 2 3; do
  when="$(read_expiry)" && break
  when=""
  if [ "$try" != 3 ]; then sleep 2; fi
done
# Only a real time written as infra/tags.py writes it (2026-03-01T18:30:00Z) reaches the unit
# file: a time systemd refused would leave no timer at all.
calendar=""
case "$when" in
  [0-9][0-9][0-9][0-9]-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-5][0-9]Z)
    calendar="$(date -u -d "$when" '+%Y-%m-%d %H:%M:%S UTC' 2>/dev/null)" || calendar=""
    ;;
esac
case "$calendar" in
  "${when:0:10} ${when:11:8} UTC")
    # The time in the unit cloud-init wrote (infra/worker/units.py, expiry_units), in its
    # OnCalendar and in its description: the same text an SSH re-arm writes for that time.
    sed -i -e "s/^OnCalendar=.*/OnCalendar=$calendar/" \
      -e "s/([0-9-]* [0-9:]* UTC)\$/($calendar)/" "$timer" || exit 1
    echo "oa-vm: expiry: the power-off timer is set for $calendar (tag $tag)"
    ;;
  *)
    kept="$(sed -n 's/^OnCalendar=//p' "$timer")"
    # A time kept that has passed is not the pool's: a stopped pool's hosts past it would have
    # been ended by the cloud's schedule, so this host was resumed with a later expiry its tag
    # could not tell. Starting the timer would end it at once; the schedule ends it instead.
    if [ "$(date -u -d "$kept" +%s 2>/dev/null || echo 0)" -le "$(date -u +%s)" ]; then
      echo "oa-vm: expiry: no time read from tag $tag (${when:-no answer}), and the time" \
        "kept ($kept) has passed: the power-off timer is left stopped; the cloud's" \
        "schedule ends the pool at its expiry" >&2
      exit 0
    fi
    echo "oa-vm: expiry: no time read from tag $tag (${when:-no answer});" \
      "the power-off timer keeps $kept" >&2
    ;;
esac
systemctl daemon-reload && systemctl restart oa-vm-expiry.timer
