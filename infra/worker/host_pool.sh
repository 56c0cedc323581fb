#!/bin/bash
# A pool's hold on one of the user's own hosts (--cloud ssh); run as root (through sudo).
#
#   host_pool.sh claim POOL            mark this host as POOL's; exit 3 if another pool holds it
#   host_pool.sh release POOL [--purge]
#                                      remove what POOL added: its containers, its oa-vm-* units
#                                      and drop-ins, its egress table, /opt/oa-vm, /etc/oa-vm and /var/lib/oa-vm,
#                                      except the image cache (/var/lib/oa-vm/image-cache) unless
#                                      --purge; exit 3 if another pool holds the host (nothing is
#                                      touched)
#
# 'release' is what pool-cleanup runs, and what the expiry timer the host runs itself does at the
# pool's expiry: never a power-off, the host is the user's. It prints one 'removed: ...' line per
# thing removed and 'kept: ...' for the image cache. The host's own software stays.
#
# Self-contained (it sources nothing): cleanup sends it over SSH as text, so a second cleanup
# still runs once /opt/oa-vm is gone. Every path starts with OA_VM_ROOT, empty on a real host.
set -euo pipefail

OA_VM_ROOT="${OA_VM_ROOT:-}"
OA_VM_STATE_DIR="$OA_VM_ROOT/var/lib/oa-vm"
marker="$OA_VM_STATE_DIR/pool"
cache="$OA_VM_STATE_DIR/image-cache"
units_dir="$OA_VM_ROOT/etc/systemd/system"
egress_table="inet oa_vm_egress"

usage() {
  echo "usage: host_pool.sh claim POOL | release POOL [--purge]" >&2
  exit 2
}

holder() {
  if [ -f "$marker" ]; then head -n 1 "$marker"; fi
}

refuse_other() {
  local held
  held="$(holder)"
  if [ -n "$held" ] && [ "$held" != "$1" ]; then
    echo "this host serves pool $held, not $1" >&2
    exit 3
  fi
}

claim() {
  refuse_other "$1"
  mkdir -p "$OA_VM_STATE_DIR"
  printf '%s\n' "$1" >"$marker.tmp"
  mv -f "$marker.tmp" "$marker"
}

# pool_containers: every worker's container, from the slots' settings files (slots.py).
pool_containers() {
  local env
  for env in "$OA_VM_ROOT"/etc/oa-vm/workers/*.env; do
    [ -f "$env" ] || continue
    # shellcheck source=/dev/null
    (set +u; . "$env"; echo "${OA_VM_SLOT_CONTAINER:-}")
  done
}

release() {
  local pool="$1" purge="${2:-}" name unit entry
  refuse_other "$pool"
  for name in $(pool_containers | sort -u); do
    [ -n "$name" ] || continue
    if docker rm -f "$name" >/dev/null 2>&1; then echo "removed: container $name"; fi
  done
  for unit in "$units_dir"/oa-vm-*; do
    [ -e "$unit" ] || continue
    systemctl disable --now "$(basename "$unit")" >/dev/null 2>&1 || true
    rm -f "$unit"
    echo "removed: unit $(basename "$unit")"
  done
  # The drop-ins the bootstrap gave the host's units (lib.sh's write_docker_dropin); the
  # host's own drop-ins stay.
  for unit in "$units_dir"/*.d/oa-vm-*.conf; do
    [ -e "$unit" ] || continue
    rm -f "$unit"
    rmdir "$(dirname "$unit")" 2>/dev/null || true
    echo "removed: drop-in ${unit#"$units_dir"/}"
  done
  systemctl daemon-reload >/dev/null 2>&1 || true
  # The egress table (own_host.py): one name, since the claim keeps one pool per host.
  if command -v nft >/dev/null 2>&1 && nft list table "$egress_table" >/dev/null 2>&1 &&
    nft delete table "$egress_table"; then
    echo "removed: nftables table $egress_table"
  fi
  for entry in "$OA_VM_ROOT/etc/oa-vm" "$OA_VM_ROOT/opt/oa-vm"; do
    if [ -e "$entry" ]; then rm -rf "$entry"; echo "removed: ${entry#"$OA_VM_ROOT"}"; fi
  done
  if [ -d "$OA_VM_STATE_DIR" ]; then
    for entry in "$OA_VM_STATE_DIR"/* "$OA_VM_STATE_DIR"/.[!.]*; do
      [ -e "$entry" ] || continue
      if [ "$entry" = "$cache" ] && [ "$purge" != --purge ]; then
        echo "kept: ${cache#"$OA_VM_ROOT"} (the image cache; --purge removes it)"
        continue
      fi
      rm -rf "$entry"
      echo "removed: ${entry#"$OA_VM_ROOT"}"
    done
    rmdir "$OA_VM_STATE_DIR" 2>/dev/null || true
  fi
}

[ $# -ge 2 ] || usage
case "$2" in *[!A-Za-z0-9._-]*|"") echo "bad pool name '$2'" >&2; exit 2 ;; esac
case "$1" in
  claim) claim "$2" ;;
  release)
    [ $# -le 3 ] || usage
    [ $# -lt 3 ] || [ "$3" = --purge ] || usage
    release "$2" "${3:-}" ;;
  *) usage ;;
esac
