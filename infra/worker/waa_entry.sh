#!/bin/bash
# PID 1 of the WAA container (run by bootstrap.sh as: waa_entry.sh ARGS, with ARGS for WAA's own
# /entry.sh, which this script runs unchanged).
#
# Why a wrapper: in prepare mode (an image build) WAA's entry.sh POSTs /shutdown, sleeps 180 s
# and ends; when PID 1 ends the kernel kills every process of the container, QEMU included. But
# dockur writes the storage's boot marker (windows.boot, power.sh: finish -> markWindowsBooted)
# only after QEMU has exited, and a Windows with pending updates takes longer than 180 s to power
# off: such a build would lose two hours' work. Here PID 1 outlives WAA's entry.sh and waits,
# with its own deadline, until dockur's runtime (its entry.sh and QEMU) has ended, then reads the
# storage in dockur's terms.
#
# Exit codes (prepare mode), which bootstrap.sh reads as the container's exit code:
#   0  QEMU exited and dockur marked the install as booted from its disk (windows.boot)
#   3  QEMU still ran OA_VM_POWEROFF_TIMEOUT_S seconds after WAA's entry.sh ended
#   4  QEMU exited but dockur wrote no windows.boot (Windows never booted from its disk)
# In any other mode this script is WAA's entry.sh itself (exec): a pool's container is WAA's.
set -uo pipefail

OA_VM_ENTRY_WAA="${OA_VM_ENTRY_WAA:-/entry.sh}"
OA_VM_ENTRY_STORAGE="${OA_VM_ENTRY_STORAGE:-/storage}"
OA_VM_ENTRY_POLL_S="${OA_VM_ENTRY_POLL_S:-2}"
# Windows installing pending updates before it powers off: 30 min after WAA's own 180 s.
OA_VM_POWEROFF_TIMEOUT_S="${OA_VM_POWEROFF_TIMEOUT_S:-1800}"
EXIT_POWEROFF_TIMEOUT=3
EXIT_NO_BOOT_MARKER=4

say() {
  echo "oa-vm entry: $*"
}

# dockur_running: a process of dockur's runtime is still alive in this container: its entry
# script (started by WAA's start_vm.sh as 'tini -s /run/entry.sh') or QEMU itself. Zombies have
# an empty command line and do not count.
dockur_running() {
  local cmdline line
  for cmdline in /proc/[0-9]*/cmdline; do
    line="$(tr '\0' ' ' <"$cmdline" 2>/dev/null)" || continue
    case "$line" in
      *" /run/entry.sh"* | /run/entry.sh* | qemu-system-* | */qemu-system-*) return 0 ;;
    esac
  done
  return 1
}

# WAA's scripts and client name the guest at the address the image was built for
# (waa-image/Dockerfile's GUEST_IP, kept as OA_VM_IMAGE_GUEST_IP); a worker in a slot above 0 of
# a host with several workers (infra/worker/slots.py) has its guest at its slot's address
# (VM_NET_IP): they are pointed at it before WAA's entry runs. Whole addresses only (\b): the
# baked one inside a longer address (172.30.0.21) stays.
b="${OA_VM_IMAGE_GUEST_IP:-172.30.0.2}"
if [ "${VM_NET_IP:-$b}" != "$b" ]; then
  # shellcheck disable=SC2086  # a list of paths, split on purpose
  grep -rlF "$b" ${OA_VM_ENTRY_WAA_FILES:-/entry.sh /entry_setup.sh /start_client.sh /client} | xargs -r sed -i "s/\\b${b//./\\.}\\b/$VM_NET_IP/g"
fi

prepare=false
args=("$@")
while [ "$#" -gt 0 ]; do
  case "$1" in
    --prepare-image)
      prepare="${2:-false}"
      shift 2 || shift
      ;;
    *) shift ;;
  esac
done

if [ "$prepare" != true ]; then
  exec "$OA_VM_ENTRY_WAA" "${args[@]}"
fi

code=0
"$OA_VM_ENTRY_WAA" "${args[@]}" || code=$?
say "WAA's entry.sh ended (code $code); waiting up to ${OA_VM_POWEROFF_TIMEOUT_S}s for QEMU to exit"
deadline=$(($(date +%s) + OA_VM_POWEROFF_TIMEOUT_S))
while dockur_running; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    say "Windows did not power off within ${OA_VM_POWEROFF_TIMEOUT_S}s after WAA's entry.sh ended; QEMU still runs, dockur wrote no windows.boot"
    exit "$EXIT_POWEROFF_TIMEOUT"
  fi
  sleep "$OA_VM_ENTRY_POLL_S"
done
if [ ! -f "$OA_VM_ENTRY_STORAGE/windows.boot" ]; then
  say "QEMU exited, but dockur wrote no windows.boot: Windows never booted from its disk"
  exit "$EXIT_NO_BOOT_MARKER"
fi
say "QEMU exited and dockur marked the install booted (windows.boot)"
exit 0
