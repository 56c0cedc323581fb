#!/bin/bash
# PID 1 of the WAA container (run by bootstrap.sh as: waa_entry.sh ARGS, with ARGS for WAA's own
# /entry.sh, which this script runs unchanged as its child).
#
# Why a wrapper, in every mode: 'docker stop' (a pause, a host shutting down) sends SIGTERM to
# PID 1 alone, and dockur relies on it: its tini, PID 1 of its own image, passes the signal to
# dockur's entry.sh, whose trap (power.sh, enableTrap -> gracefulShutdown) sends Windows the
# ACPI power button and waits for QEMU to exit; hence docker's --stop-timeout (lib.sh's
# OA_VM_STOP_TIMEOUT_S, 120 s). Run by WAA, dockur's tini is a grandchild of WAA's entry.sh, a
# bash script that traps nothing; the kernel drops a signal PID 1 has no handler for: Windows would never be asked to shut down, only
# killed 120 s later. Here PID 1 traps SIGTERM (and SIGINT, SIGHUP, SIGQUIT), passes SIGTERM to
# dockur's tini, then waits for dockur's runtime to end (Docker's stop timeout bounds the wait).
#
# In prepare mode (an image build) WAA's entry.sh POSTs /shutdown, sleeps 180 s and ends; when
# PID 1 ends the kernel kills every process of the container, QEMU included. But dockur writes
# the storage's boot marker (windows.boot, power.sh: finish -> markWindowsBooted) only after
# QEMU has exited, and a Windows with pending updates takes longer than 180 s to power off: such
# a build would lose two hours' work. Here PID 1 outlives WAA's entry.sh and waits, with its own
# deadline, until dockur's runtime (its entry.sh and QEMU) has ended, then reads the storage in
# dockur's terms.
#
# Exit codes, which bootstrap.sh reads as the container's exit code:
#   0  (prepare mode) QEMU exited and dockur marked the install as booted from its disk
#   3  (prepare mode) QEMU still ran OA_VM_POWEROFF_TIMEOUT_S seconds after WAA's entry.sh ended
#   4  (prepare mode) QEMU exited but dockur wrote no windows.boot (never booted from its disk),
#      at once when dockur's runtime ended so while WAA's entry.sh still waits for Windows
#   5  (a pool) dockur's runtime ended while WAA's entry.sh kept the container alive
#   128+N  stopped by signal N, once dockur's runtime has ended
# Otherwise WAA's entry.sh's own exit code (a pool's container ends when WAA's does).
set -uo pipefail

OA_VM_ENTRY_WAA="${OA_VM_ENTRY_WAA:-/entry.sh}"
OA_VM_ENTRY_STORAGE="${OA_VM_ENTRY_STORAGE:-/storage}"
OA_VM_ENTRY_POLL_S="${OA_VM_ENTRY_POLL_S:-2}"
# Windows installing pending updates before it powers off: 30 min after WAA's own 180 s.
OA_VM_POWEROFF_TIMEOUT_S="${OA_VM_POWEROFF_TIMEOUT_S:-1800}"
# dockur's exit code, written by the image's /start_vm.sh once its runtime has ended: an end
# between two polls (dockur refusing to start takes a second) is seen too. Left from a
# container's earlier run (a restart keeps its files): removed.
OA_VM_ENTRY_DOCKUR_RC="${OA_VM_ENTRY_DOCKUR_RC:-/run/oa-vm-dockur.rc}"
rm -f "$OA_VM_ENTRY_DOCKUR_RC"
EXIT_POWEROFF_TIMEOUT=3
EXIT_NO_BOOT_MARKER=4
EXIT_WINDOWS_GONE=5

say() {
  echo "oa-vm entry: $*"
}

# dockur_pids [tini]: the processes of dockur's runtime (dockur_running's); with "tini", only
# tini's (started by start_vm.sh as 'tini -s /run/entry.sh'), which passes signals to its child.
dockur_pids() {
  local cmdline line pid
  for cmdline in /proc/[0-9]*/cmdline; do
    line="$(tr '\0' ' ' <"$cmdline" 2>/dev/null)" || continue
    pid="${cmdline#/proc/}"
    pid="${pid%/cmdline}"
    case "$line" in
      *tini*" /run/entry.sh"*) echo "$pid" ;;
      *" /run/entry.sh"* | /run/entry.sh* | qemu-system-* | */qemu-system-*)
        [ "${1:-}" = tini ] || echo "$pid"
        ;;
    esac
  done
}

# dockur_running: a process of dockur's runtime is still alive in this container: its entry
# script (started by WAA's start_vm.sh as 'tini -s /run/entry.sh') or QEMU itself. Zombies have
# an empty command line and do not count.
dockur_running() {
  [ -n "$(dockur_pids)" ]
}

# dockur_ended: dockur's runtime has ended (its exit code written, or once seen running, gone).
seen=""
dockur_ended() {
  [ ! -f "$OA_VM_ENTRY_DOCKUR_RC" ] || return 0
  if dockur_running; then seen=1; return 1; fi
  [ -n "$seen" ]
}

# pass_on SIGNAL: a stop signal for the container reaches dockur's runtime (tini, or dockur's
# entry.sh when no tini runs) as SIGTERM, the one its trap always handles (SIGINT only on a
# terminal), which shuts Windows down; PID 1 then waits for it to end.
stopped=""
# shellcheck disable=SC2329  # run by the traps below
pass_on() {
  local pid pids
  stopped="$1"
  pids="$(dockur_pids tini)"
  [ -n "$pids" ] || pids="$(dockur_pids)"
  say "received SIG$1: passing SIGTERM to dockur's runtime (${pids//$'\n'/ }) for Windows' ACPI shutdown"
  for pid in $pids; do kill -s TERM "$pid" 2>/dev/null || true; done
}
for sig in TERM INT HUP QUIT; do
  # shellcheck disable=SC2064  # the signal's name, fixed when the trap is set
  trap "pass_on $sig" "$sig"
done

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

# WAA's entry.sh as a child (not exec'd: PID 1 must keep the traps); 'wait' returns early when a
# trapped signal arrives. WAA's entry.sh waits for Windows for ever, whatever happens to it
# (entry_setup.sh polls /probe; a pool's then loops on 'sleep 60'): when dockur's runtime has
# ended (QEMU crashed, Windows shut itself down, dockur refused to start) PID 1 ends the
# container itself, non-zero: a pool's restart policy (bootstrap.sh: on-failure) boots Windows
# again instead of a container that runs without it, and a build fails at once unless dockur
# marked the install booted (Windows off after WAA's /shutdown: WAA's entry.sh ends soon).
"$OA_VM_ENTRY_WAA" "${args[@]}" &
waa=$!
code=0
while [ -z "$stopped" ] && kill -0 "$waa" 2>/dev/null; do
  if dockur_ended; then
    rc="$(cat "$OA_VM_ENTRY_DOCKUR_RC" 2>/dev/null)" || rc="?"
    if [ "$prepare" != true ]; then
      say "dockur's runtime ended (exit $rc) while the worker was in use: Windows is off; ending the container for its restart policy"
      exit "$EXIT_WINDOWS_GONE"
    fi
    if [ ! -f "$OA_VM_ENTRY_STORAGE/windows.boot" ]; then
      say "dockur's runtime ended (exit $rc) while WAA's entry.sh waits for Windows, and dockur wrote no windows.boot"
      exit "$EXIT_NO_BOOT_MARKER"
    fi
  fi
  sleep "$OA_VM_ENTRY_POLL_S" &
  wait "$!"
done
if ! kill -0 "$waa" 2>/dev/null && [ -z "$stopped" ]; then
  wait "$waa"
  code=$?
fi

# await_dockur: until dockur's runtime has ended; after a stop signal Docker's own stop timeout
# (SIGKILL) is the deadline, else OA_VM_POWEROFF_TIMEOUT_S (exit 3).
await_dockur() {
  local deadline=$(($(date +%s) + OA_VM_POWEROFF_TIMEOUT_S))
  while dockur_running; do
    if [ -z "$stopped" ] && [ "$(date +%s)" -ge "$deadline" ]; then
      say "Windows did not power off within ${OA_VM_POWEROFF_TIMEOUT_S}s after WAA's entry.sh ended; QEMU still runs, dockur wrote no windows.boot"
      exit "$EXIT_POWEROFF_TIMEOUT"
    fi
    sleep "$OA_VM_ENTRY_POLL_S"
  done
}

# exit_if_stopped: after a stop signal, once dockur's runtime has ended: exit 128+N.
exit_if_stopped() {
  [ -n "$stopped" ] || return 0
  await_dockur
  say "dockur's runtime ended after SIG$stopped"
  exit $((128 + $(kill -l "$stopped")))
}

exit_if_stopped
if [ "$prepare" != true ]; then
  exit "$code"
fi
say "WAA's entry.sh ended (code $code); waiting up to ${OA_VM_POWEROFF_TIMEOUT_S}s for QEMU to exit"
await_dockur
exit_if_stopped
if [ ! -f "$OA_VM_ENTRY_STORAGE/windows.boot" ]; then
  say "QEMU exited, but dockur wrote no windows.boot: Windows never booted from its disk"
  exit "$EXIT_NO_BOOT_MARKER"
fi
say "QEMU exited and dockur marked the install booted (windows.boot)"
exit 0
