#!/bin/bash
# What a host the user names can take, read without changing anything (the plan of
# 'oa-vm pool-create --cloud ssh' runs it over SSH before anything is installed).
#
# Prints KEY=VALUE lines (oa_vm/clouds/hosts/probe.py parses them):
#   kvm=yes|no            /dev/kvm exists
#   cpus=N                processors listed in /proc/cpuinfo
#   mem_kib=N             MemTotal of /proc/meminfo
#   avail_kib=N           MemAvailable of /proc/meminfo
#   disk_free_kib=N       free space under /var/lib (where the workers' disks go)
#   engine=docker|podman| the container engine found, or empty
#   listening=P,P,...     TCP ports something listens on (from /proc/net/tcp and tcp6)
#   pool=NAME             the oa-vm pool this host already serves, or empty
#   privilege=root|sudo|none   how the bootstrap would become root
#   image_cache=yes|no    a prepared worker image is cached here from an earlier pool
#
# Every path starts with OA_VM_ROOT, empty on a real host; a rehearsal sets it to the host's
# private root.
set -u

root="${OA_VM_ROOT:-}"

if [ -e "$root/dev/kvm" ]; then echo "kvm=yes"; else echo "kvm=no"; fi
echo "cpus=$(grep -c '^processor' "$root/proc/cpuinfo" 2>/dev/null || echo 0)"
echo "mem_kib=$(awk '/^MemTotal:/ {print $2}' "$root/proc/meminfo" 2>/dev/null)"
echo "avail_kib=$(awk '/^MemAvailable:/ {print $2}' "$root/proc/meminfo" 2>/dev/null)"
disk_dir="$root/var/lib"
[ -d "$disk_dir" ] || disk_dir="$root/"
echo "disk_free_kib=$(df -Pk "$disk_dir" 2>/dev/null | awk 'NR == 2 {print $4}')"
engine=""
for candidate in docker podman; do
  if command -v "$candidate" >/dev/null 2>&1; then engine="$candidate"; break; fi
done
echo "engine=$engine"
# Listening sockets have state 0A; the local address is HEXIP:HEXPORT.
ports="$(cat "$root/proc/net/tcp" "$root/proc/net/tcp6" 2>/dev/null |
  awk '$4 == "0A" {split($2, a, ":"); print a[2]}' | sort -u |
  while read -r hex; do printf '%d,' "0x$hex"; done)"
echo "listening=${ports%,}"
pool=""
if [ -f "$root/var/lib/oa-vm/pool" ]; then
  pool="$(head -n 1 "$root/var/lib/oa-vm/pool" | tr -cd 'A-Za-z0-9._-')"
fi
echo "pool=$pool"
if [ "$(id -u)" = 0 ]; then
  echo "privilege=root"
elif sudo -n true >/dev/null 2>&1; then
  echo "privilege=sudo"
else
  echo "privilege=none"
fi
if [ -f "$root/var/lib/oa-vm/image-cache/oa-vm-image.ready" ]; then
  echo "image_cache=yes"
else
  echo "image_cache=no"
fi
