#!/bin/bash
# The guest's egress policy on a worker host (docs/security.md), run as root:
#
#   egress.sh apply    the host's table on the container bridge (never the metadata service, the
#                      host's own addresses, private ranges) and the guest's table in the
#                      container's network namespace (the pool's mode); both replaced whole,
#                      once the container is seen on that bridge (on_bridge)
#   egress.sh refresh  apply again if the container's table is missing (a restarted container has
#                      a new namespace) or the mode is allowlist (names may resolve anew)
#   egress.sh prove    from the guest's side (WAA's /execute runs egress_probe.py in Windows'
#                      Python): forbidden destinations must fail, an allowed one must answer
#
# The tables (egress-host.nft, egress-guest.nft) are rendered for the pool's mode by
# infra/egress_rules.py when its cloud-init is made (on the user's own host: by the create, the
# host's table naming the pool's containers' MACs); here they are loaded and their sets
# filled with what only the host knows: its own addresses, its resolvers, and the allow-list's
# names (egress-allowlist.txt, "host port" a line) resolved with the host's resolver.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=infra/worker/lib.sh
. "$here/lib.sh"
load_env

mode="${OA_VM_EGRESS:-web}"
waa_url="${OA_VM_WAA_URL:-http://127.0.0.1:$OA_VM_WAA_HOST_PORT}"
table="inet oa_vm_egress"
# A failure names this step in the status file (pool-wait reads it): a worker whose boundary is
# not in place or not proved is not ready.
OA_VM_STEP=egress

# host_addresses: this host's own IPv4 addresses.
host_addresses() {
  ip -4 -o addr show 2>/dev/null | awk '{split($4, a, "/"); print a[1]}'
}

# resolvers: the DNS servers the container's DNS forwarder asks.
resolvers() {
  local file
  for file in "$OA_VM_ROOT/run/systemd/resolve/resolv.conf" "$OA_VM_ROOT/etc/resolv.conf"; do
    if [ -r "$file" ]; then
      awk '$1 == "nameserver" && $2 !~ /^127\./ && $2 ~ /^[0-9.]+$/ {print $2}' "$file"
      return 0
    fi
  done
}

container_pid() {
  local pid
  pid="$(dockerx inspect -f '{{.State.Pid}}' "$OA_VM_CONTAINER" 2>/dev/null)" || return 1
  [ -n "$pid" ] && [ "$pid" != 0 ] && echo "$pid"
}

# in_container COMMAND...: run in the WAA container's network namespace.
in_container() {
  nsenter --target "$pid" --net "$@"
}

# on_bridge: the container's eth0 hangs on docker0, the bridge the host's table filters, with
# the MAC that table names on the user's own host (OA_VM_SLOT_MAC): else that table would hold
# nothing of it (another engine's bridge, a MAC the engine did not set), and the proof, which
# the guest's table alone passes, would not tell.
on_bridge() {
  local link ports
  link="$(in_container ip -o link show eth0)" || return 1
  ports="$(ip -o link show master docker0 2>/dev/null)" || return 1
  # (no pipe into grep -q: under pipefail, ip's SIGPIPE would fail a match now and then)
  [[ "$link" =~ ^[0-9]+:\ eth0@if([0-9]+): ]] &&
    [[ $'\n'"$ports" == *$'\n'"${BASH_REMATCH[1]}: "* ]] &&
    { [ -z "${OA_VM_SLOT_MAC:-}" ] || [[ "$link" == *" link/ether $OA_VM_SLOT_MAC "* ]]; }
}

apply() {
  local addr host port
  nft -f "$here/egress-host.nft" || fail "nft refused the host's egress rules"
  while read -r addr; do
    nft add element "$table" denied "{ $addr }" || fail "nft refused the host address $addr"
  done < <(host_addresses)
  while read -r addr; do
    nft add element "$table" resolvers "{ $addr }" || fail "nft refused the resolver $addr"
  done < <(resolvers)
  pid="$(container_pid)" || fail "the WAA container is not running: no namespace to guard"
  on_bridge || fail "the WAA container's eth0 is not on docker0${OA_VM_SLOT_MAC:+ with MAC $OA_VM_SLOT_MAC}: the host's egress rules would not hold it (is the engine Docker?)"
  in_container nft -f "$here/egress-guest.nft" ||
    fail "nft refused the guest's egress rules in the container's namespace"
  if [ "$mode" = allowlist ]; then
    while read -r host port; do
      [ -n "$host" ] || continue
      while read -r addr; do
        in_container nft add element "$table" allowed "{ $addr . $port }" ||
          fail "nft refused the allow-list's $host ($addr)"
      done < <(getent ahostsv4 "$host" | awk '{print $1}' | sort -u)
    done <"$here/egress-allowlist.txt"
  fi
}

# refresh: one timer for the host (oa-vm-egress.timer): with no slot named, every slot of a host
# with several workers (one settings file each, infra/worker/slots.py) is refreshed in turn.
refresh() {
  local env rc=0
  if [ -z "$OA_VM_SLOT" ] && compgen -G "$OA_VM_ROOT/etc/oa-vm/workers/*.env" >/dev/null; then
    for env in "$OA_VM_ROOT"/etc/oa-vm/workers/*.env; do
      env="${env##*/}"
      OA_VM_SLOT="${env%.env}" "$BASH" "${BASH_SOURCE[0]}" refresh || rc=1
    done
    return "$rc"
  fi
  pid="$(container_pid)" || return 0
  if ! in_container nft list table "$table" >/dev/null 2>&1 || [ "$mode" = allowlist ]; then
    apply
  fi
}

# targets: the proof's options. Forbidden: the metadata service, this host's sshd on each of its
# addresses, the container's own services; allowed: one destination of the mode's.
targets() {
  local addr reach=""
  echo --blocked 169.254.169.254:80 --blocked "$OA_VM_GUEST_GATEWAY:8006"
  while read -r addr; do
    case "$addr" in 127.*) ;; *) echo --blocked "$addr:22" ;; esac
  done < <(host_addresses)
  case "$mode" in
    web | open) reach="${OA_VM_EGRESS_PROBE:-www.msftconnecttest.com:80}" ;;
    allowlist) reach="${OA_VM_EGRESS_PROBE:-$(awk 'NF == 2 {print $1 ":" $2; exit}' \
      "$here/egress-allowlist.txt")}" ;;
  esac
  [ -z "$reach" ] || echo --reached "$reach"
}

prove() {
  local -a opts
  local answer line
  step egress "proving the guest's egress policy ($mode) from the guest's side"
  mapfile -t opts < <(targets | tr ' ' '\n')
  answer="$(python3 "$here/egress_probe.py" body "${opts[@]}" |
    curl -sS --max-time 120 -H 'Content-Type: application/json' --data-binary @- \
      "$waa_url/execute" 2>&1)" || fail "the guest's /execute did not answer: ${answer:0:200}"
  if ! line="$(printf '%s' "$answer" | python3 "$here/egress_probe.py" judge "${opts[@]}")"; then
    fail "egress proof failed ($mode): $line"
  fi
  echo "oa-vm: egress proof ($mode): $line"
}

case "${1:-}" in
  apply) apply ;;
  refresh) refresh ;;
  prove) prove ;;
  *)
    echo "usage: $0 apply|refresh|prove" >&2
    exit 2
    ;;
esac
