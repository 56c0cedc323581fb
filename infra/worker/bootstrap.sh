#!/bin/bash
# Brings a worker host up; run once per boot by oa-vm-bootstrap.service (as root).
#
#   bootstrap.sh pool    start WAA from the prepared Windows disk on the storage volume
#   bootstrap.sh build   build the worker image, install Windows once, let it shut down, and
#                        leave the storage volume ready to be snapshotted (an image builder)
#
# Each step rewrites the status file (/var/lib/oa-vm/status: state, step, message) that
# 'oa-vm pool-wait' reads over SSH; a failure names its step and exits non-zero, so a failing
# host never reads as done. Settings come from /etc/oa-vm/worker.env (see cloud_init.py).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=infra/worker/lib.sh
. "$here/lib.sh"
load_env

mode="${1:-${OA_VM_MODE:-pool}}"
poll_s="${OA_VM_POLL_S:-10}"
# Polls while waiting for Windows are quicker: in prepare mode WAA shuts Windows down seconds
# after its own first answer from /probe.
guest_poll_s="${OA_VM_GUEST_POLL_S:-1}"
waa_image="${OA_VM_WAA_IMAGE:-windowsarena/winarena:latest}"
base_image="${OA_VM_BASE_IMAGE:-dockurr/windows:latest}"
waa_digest="$waa_image"
base_digest="$base_image"

check_kvm() {
  step kvm "checking /dev/kvm"
  if [ ! -e "$OA_VM_ROOT/dev/kvm" ]; then
    fail "nested virtualization is not enabled on ${OA_VM_SIZE:-this size} (no /dev/kvm); use ${OA_VM_SIZE_HINT:-a size with nested virtualization}"
  fi
}

free_ports() {
  # A host the user owns (OA_VM_IMAGE_CACHE set, --cloud ssh) keeps its own services: the guest
  # lives in the container's network namespace, and nothing of the user's is stopped.
  [ -z "${OA_VM_IMAGE_CACHE:-}" ] || return 0
  step ports "freeing ports 53 and 80 for the Windows guest"
  mkdir -p "$OA_VM_ROOT/etc/systemd/resolved.conf.d"
  printf '[Resolve]\nDNSStubListener=no\n' >"$OA_VM_ROOT/etc/systemd/resolved.conf.d/oa-vm.conf"
  if [ -e "$OA_VM_ROOT/run/systemd/resolve/resolv.conf" ]; then
    ln -sf /run/systemd/resolve/resolv.conf "$OA_VM_ROOT/etc/resolv.conf"
  fi
  systemctl restart systemd-resolved || true
  local unit
  for unit in nginx apache2 named bind9 dnsmasq; do
    systemctl disable --now "$unit.service" >/dev/null 2>&1 || true
  done
}

start_docker() {
  step docker "starting docker"
  # before a shutdown can come: systemd must wait for Windows' own (lib.sh)
  write_docker_dropin || fail "could not write ${OA_VM_DOCKER_DROPIN#"$OA_VM_ROOT"}"
  systemctl daemon-reload || fail "systemctl daemon-reload failed (see: journalctl -b)"
  systemctl enable --now docker || fail "docker did not start (see: journalctl -u docker)"
  dockerx info >/dev/null 2>&1 || fail "docker does not answer (see: journalctl -u docker)"
}

# root_disk: the disk holding / (e.g. /dev/nvme0n1 for /dev/nvme0n1p1), never the storage.
root_disk() {
  local source
  source="$(findmnt -no SOURCE / 2>/dev/null || true)"
  source="$(readlink -f "$source" 2>/dev/null || echo "$source")"
  case "$source" in
    /dev/nvme*) echo "${source%p[0-9]*}" ;;
    *) echo "${source%%[0-9]*}" ;;
  esac
}

# ebs_volume ROOT [NAME]: the one EBS volume that is not ROOT (with NAME: the one attached as
# NAME, e.g. sdg: one worker's volume on a host with several). On Nitro instances EBS volumes are
# NVMe devices in whatever order they enumerate; each controller's serial is its volume id
# (vol...), while instance-store disks say otherwise, and its vendor-specific data (bytes
# 3072-3103 of Identify Controller, as AWS's ebsnvme-id reads them) the name it was attached as.
# None, or more than one: nothing (the caller waits).
ebs_volume() {
  local ctl dev found="" name
  for ctl in "$OA_VM_ROOT"/sys/block/nvme*n1/device; do
    [ -r "$ctl/serial" ] || continue
    case "$(tr -d ' ' <"$ctl/serial")" in vol*) ;; *) continue ;; esac
    dev="$ctl"; dev="${dev%/device}"; dev="$OA_VM_ROOT/dev/${dev##*/}"
    [ "$(readlink -f "$dev")" = "$1" ] && continue
    if [ -n "${2:-}" ]; then
      name="$(nvme id-ctrl -b "$dev" 2>/dev/null | tail -c +3073 | head -c 32 | tr -d '\0 ')"
      [ "${name#/dev/}" = "$2" ] || continue
    fi
    [ -z "$found" ] || return 1
    found="$dev"
  done
  [ -n "$found" ] && echo "$found"
}

# find_device: the first candidate that exists and is not the root disk; the candidate "ebs" is
# the EBS volume found by its serial (ebs_volume), never an NVMe name; "ebs:NAME" the EBS volume
# attached as NAME.
find_device() {
  local dev root
  root="$(root_disk)"
  root="$(readlink -f "$OA_VM_ROOT$root")"
  for dev in ${OA_VM_STORAGE_DEVICES:-}; do
    case "$dev" in
      ebs) ebs_volume "$root" && return 0; continue ;;
      ebs:*) ebs_volume "$root" "${dev#ebs:}" && return 0; continue ;;
    esac
    if [ -e "$OA_VM_ROOT$dev" ] && [ "$(readlink -f "$OA_VM_ROOT$dev")" != "$root" ]; then
      echo "$OA_VM_ROOT$dev"
      return 0
    fi
  done
  return 1
}

mount_storage() {
  # A host the user owns (--cloud ssh): storage is a folder, the slot's own copy of the image
  # cache (seed_storage.sh), or for a build the cache itself (own_host.BUILD_UNIT_TEXT).
  if [ -n "${OA_VM_IMAGE_CACHE:-}" ]; then
    if [ "$mode" = build ]; then mkdir -p "$OA_VM_STORAGE"; else "$here/seed_storage.sh"; fi
    return
  fi
  step storage "mounting the storage volume on /var/lib/oa-vm/storage"
  mkdir -p "$OA_VM_STORAGE"
  local dev
  # The cloud may attach the volume a little after boot (an image builder's is a separate
  # attachment): wait for it, but not forever.
  local deadline=$(($(date +%s) + ${OA_VM_DEVICE_WAIT_S:-300}))
  until dev="$(find_device)"; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      fail "no storage volume attached (looked for: ${OA_VM_STORAGE_DEVICES:-nothing})"
    fi
    sleep "$poll_s"
  done
  if [ "$mode" = build ] && ! blkid "$dev" >/dev/null 2>&1; then
    mkfs.ext4 -q -L oa-vm-storage "$dev" || fail "could not format $dev"
  fi
  if ! mountpoint -q "$OA_VM_STORAGE"; then
    mount "$dev" "$OA_VM_STORAGE" || fail "could not mount $dev on $OA_VM_STORAGE"
  fi
  if [ "$mode" = pool ] && [ ! -e "$OA_VM_STORAGE/$OA_VM_READY_MARKER" ]; then
    fail "the storage volume holds no prepared Windows disk; make an image with 'oa-vm image-create' and create the pool from it"
  fi
}

# forget_install_source: dockur's windows.base names what Windows was installed from (the ISO's
# file name, from the build's VERSION: a URL's own for 'image-create --iso https://...'), and a
# pool passes VERSION=11e whatever its image was built from. Where the two differ and the source
# was no local ISO, dockur installs Windows again over the prepared disk (windows/src/install.sh,
# needsInstall); without the file it boots a finished install whatever VERSION says.
forget_install_source() {
  if install_complete "$OA_VM_STORAGE"; then rm -f "$OA_VM_STORAGE/windows.base"; fi
}

# repo_digest IMAGE: the pulled image's name@sha256:...; the build fails when docker knows none
# (the image's tags must name what it was built from, never a tag that moves).
repo_digest() {
  local digest
  digest="$(dockerx image inspect --format '{{index .RepoDigests 0}}' "$1" 2>/dev/null)" || digest=""
  case "$digest" in
    *@sha256:*) echo "$digest" ;;
    *) fail "docker knows no digest for $1 after pulling it (got: ${digest:-nothing}); pass an image from a registry" ;;
  esac
}

build_image() {
  step pull "pulling $waa_image and $base_image"
  dockerx pull "$waa_image" >/dev/null ||
    fail "could not pull $waa_image (check the name, Docker Hub's rate limit and outbound HTTPS)"
  dockerx pull "$base_image" >/dev/null ||
    fail "could not pull $base_image (check the name, Docker Hub's rate limit and outbound HTTPS)"
  waa_digest="$(repo_digest "$waa_image")" || exit 1
  base_digest="$(repo_digest "$base_image")" || exit 1
  # Built FROM the digests, not the names: what the image info records is what was built on.
  step build "building the worker image on $base_digest with WAA's files from $waa_digest"
  dockerx build -t "$OA_VM_LOCAL_IMAGE" --build-arg "WAA_IMAGE=$waa_digest" \
    --build-arg "BASE_IMAGE=$base_digest" --build-arg "GUEST_IP=$OA_VM_GUEST_IP" \
    "$here/waa-image" >/dev/null ||
    fail "docker build failed (see: journalctl -u oa-vm-bootstrap)"
}

load_image() {
  step load "loading the worker image from the storage volume"
  dockerx load -i "$OA_VM_STORAGE/$OA_VM_IMAGE_TAR" >/dev/null ||
    fail "could not load $OA_VM_IMAGE_TAR from the storage volume (see: journalctl -u oa-vm-bootstrap)"
}

run_container() {
  step container "starting the WAA container"
  dockerx rm -f "$OA_VM_CONTAINER" >/dev/null 2>&1 || true
  local prepare=false
  local restart=(--restart on-failure:3)
  if [ "$mode" = build ]; then
    # One-shot: in prepare mode WAA installs Windows, shuts it down and exits on purpose, so a
    # restart policy would install, shut down and start again in a loop.
    prepare=true
    restart=()
  fi
  # QMP only on a unix socket in a root-only host folder: no TCP port the guest could reach.
  mkdir -p "$OA_VM_QMP_DIR"
  chmod 0700 "$OA_VM_QMP_DIR"
  # /dev/net/tun: dockur's NAT network needs a tap device; without it dockur falls back to
  # user-mode networking and the guest is not at OA_VM_GUEST_IP (see network_fallback_line).
  # The user's ISO (await_iso) where dockur looks first: it then never downloads.
  local iso=()
  [ "${OA_VM_ISO_BYTES:-0}" = 0 ] || iso=(-v "$OA_VM_ISO_FILE:/custom.iso")
  # The user's own host: the slot's MAC, which Docker keeps across restarts and the pool's
  # egress table on docker0 is keyed on, so the user's other containers pass it untouched.
  local mac=()
  [ -z "${OA_VM_SLOT_MAC:-}" ] || mac=(--mac-address "$OA_VM_SLOT_MAC")
  local cpu=() line
  while IFS= read -r line; do cpu+=(-e "$line"); done < <(dockur_cpu_env)
  # PID 1 is waa_entry.sh around WAA's entry.sh: in prepare mode it waits for QEMU to exit.
  # RAM_CHECK=N: the guest always gets RAM_SIZE. dockur's check (on by default) silently
  # shrinks it to what is free at each start, and a clean snapshot saved at one size does not
  # load at another (QEMU: "Size mismatch: pc.ram"); the plan sized the host already (slots.py).
  dockerx run -d --name "$OA_VM_CONTAINER" "${restart[@]}" "${iso[@]}" "${mac[@]}" \
    --device=/dev/kvm --device=/dev/net/tun --cap-add NET_ADMIN --stop-timeout "$OA_VM_STOP_TIMEOUT_S" \
    -p "127.0.0.1:$OA_VM_WAA_HOST_PORT:5000" -p "127.0.0.1:$OA_VM_VNC_HOST_PORT:8006" \
    -v "$OA_VM_STORAGE:/storage" -v "$here:/oa-vm:ro" -v "$OA_VM_QMP_DIR:$OA_VM_QMP_MOUNT" \
    -e "QMP=unix:$OA_VM_QMP_MOUNT/qmp.sock,server=on,wait=off" -e "VM_NET_IP=$OA_VM_GUEST_IP" \
    -e "VERSION=${VERSION:-11e}" -e "RAM_SIZE=${RAM_SIZE:-8G}" -e "RAM_CHECK=N" \
    -e "CPU_CORES=${CPU_CORES:-4}" -e "DISK_SIZE=${DISK_SIZE:-64G}" \
    "${cpu[@]}" -e "DISK_CACHE=$OA_VM_DISK_CACHE" \
    -e "OA_VM_POWEROFF_TIMEOUT_S=${OA_VM_POWEROFF_TIMEOUT_S:-1800}" \
    --entrypoint /bin/bash "$OA_VM_LOCAL_IMAGE" \
    /oa-vm/waa_entry.sh --prepare-image "$prepare" --start-client false >/dev/null ||
    fail "docker run failed (see: journalctl -u oa-vm-bootstrap)"
}

# await_iso: a build from the user's own ISO file (OA_VM_ISO_BYTES, its size) waits for
# 'oa-vm image-create' to upload it over SSH; the upload is renamed into place whole, so a file
# of that size is the user's ISO.
await_iso() {
  local want="${OA_VM_ISO_BYTES:-0}" t="${OA_VM_ISO_TIMEOUT_S:-3600}" have
  local again="run 'oa-vm image-delete ${OA_VM_POOL:-IMAGE}' if it is left, then 'oa-vm image-create --iso PATH' again"
  [ "$want" != 0 ] || return 0
  local deadline=$(($(date +%s) + t))
  step iso "waiting for 'oa-vm image-create' to upload your Windows ISO ($want bytes, up to ${t}s)"
  until [ -f "$OA_VM_ISO_FILE" ]; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "your Windows ISO was not uploaded within ${t}s: $again"
    sleep "$poll_s"
  done
  have="$(stat -c %s "$OA_VM_ISO_FILE")"
  [ "$have" = "$want" ] || fail "the uploaded ISO has $have bytes, not $want: $again"
}

# await_files: the scorer's and the QMP client's files (units.LATE_FILES), which 'oa-vm pool-wait' delivers over SSH
# into the delivery folder: AWS's user data has no room for them. A rehearsal that ships every
# file has them already.
await_files() {
  local timeout_s="${OA_VM_DELIVERY_TIMEOUT_S:-3600}" name
  local deadline=$(($(date +%s) + timeout_s))
  local delivered="$OA_VM_STATE_DIR/delivery"
  [ -f "$here/scoring_server.py" ] && return 0
  step files "waiting for 'oa-vm pool-wait --name ${OA_VM_POOL:-POOL}' to deliver the scoring server (up to ${timeout_s}s)"
  until [ -f "$delivered/scoring_server.py" ]; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      fail "the scoring server's files were not delivered within ${timeout_s}s: run 'oa-vm pool-wait --name ${OA_VM_POOL:-POOL}'"
    fi
    sleep "$poll_s"
  done
  for name in scoring_server.py scoring_rules.py relay.py qmp_snapshot.py; do
    install -m 0644 "$delivered/$name" "$here/$name" || fail "could not install the delivered $name"
  done
}

# apply_egress: the guest's egress boundary, in place before Windows boots (egress.sh; a worker
# from before egress modes has no OA_VM_EGRESS and keeps its old behaviour).
apply_egress() {
  [ -n "${OA_VM_EGRESS:-}" ] || return 0
  step egress "applying egress policy ${OA_VM_EGRESS}"
  "$here/egress.sh" apply
  systemctl enable --now oa-vm-egress.timer >/dev/null 2>&1 ||
    fail "could not start oa-vm-egress.timer (see: journalctl -u oa-vm-egress)"
}

# prove_egress: from the guest's side, before the worker is ready (egress.sh prove).
prove_egress() {
  [ -n "${OA_VM_EGRESS:-}" ] || return 0
  "$here/egress.sh" prove
}

# container_state: "<running> <exit code>", e.g. "true 0" or "false 1".
container_state() {
  dockerx inspect -f '{{.State.Running}} {{.State.ExitCode}}' "$OA_VM_CONTAINER" 2>/dev/null ||
    echo "false ?"
}

probe() {
  curl -fsS --max-time 5 "http://127.0.0.1:$OA_VM_WAA_HOST_PORT/probe" >/dev/null 2>&1
}

# waa_saw_windows: WAA's own log says its /probe was answered (the container's whole log: a
# guest answering for a few seconds between two of our polls still counts).
waa_saw_windows() {
  dockerx logs "$OA_VM_CONTAINER" 2>&1 | grep -F "$OA_VM_WAA_READY_LINE" >/dev/null
}

# log_hint: the container's last log line, and dockur's last error line when it printed one
# (WAA's own lines come after it: entry_setup.sh polls for Windows for ever).
log_hint() {
  local last said
  last="$(last_log)"
  printf 'last log: %s' "$last"
  if said="$(dockur_error_line)" && [[ "$last" != *"$said"* ]]; then
    printf '; dockur said: %s' "$said"
  fi
}

# check_download_progress LINE: while dockur downloads Windows (LINE, its own words), the
# storage volume must keep growing: a download whose bytes stop arriving (a throttled or
# silently blocked source; wget's 30 s read timeout is reset by a trickle) fails the download
# step after OA_VM_DOWNLOAD_STALL_S without a byte, instead of the whole guest wait.
check_download_progress() {
  local line="$1" bytes now stall_s="${OA_VM_DOWNLOAD_STALL_S:-600}"
  bytes="$(storage_bytes)"
  now="$(date +%s)"
  if [ -z "$stalled_since" ] || [ "$bytes" != "$stalled_bytes" ]; then
    stalled_since="$now" stalled_bytes="$bytes"
    return 0
  fi
  if [ $((now - stalled_since)) -ge "$stall_s" ]; then
    OA_VM_STEP=download
    fail "the Windows download stalled: no byte arrived for ${stall_s}s (a throttled or blocked download: retry later, from another region, or build from your own ISO with 'oa-vm image-create --iso'); dockur said: $line"
  fi
}

# wait_guest TIMEOUT_S: until Windows answers WAA's /probe (pool), or until the one-shot
# container has seen Windows answer, has ended, and left a completed install on the storage
# volume (build). In prepare mode WAA's entry.sh ends with 'wait -n' without child jobs, so its
# exit code (127) says nothing; waa_entry.sh (PID 1) waits for QEMU to exit and exits 3 when it
# did not in time; the storage volume says the rest. dockur falling back to user-mode
# networking fails the network step at once.
wait_guest() {
  local timeout_s="$1"
  local deadline=$(($(date +%s) + timeout_s))
  local answered=0 state fallback
  stalled_since="" stalled_bytes=""
  step guest "waiting for Windows to answer /probe (up to ${timeout_s}s)"
  while :; do
    if probe; then
      answered=1
      if [ "$mode" = pool ]; then
        return 0
      fi
    fi
    if fallback="$(download_failure_line)"; then
      OA_VM_STEP=download
      fail "dockur could not download Windows from Microsoft (a refused or blocked download: retry later, from another region, or build from your own ISO with 'oa-vm image-create --iso'); dockur said: $fallback"
    fi
    if [ "$mode" = build ] && fallback="$(downloading_line)"; then
      check_download_progress "$fallback"
    else
      stalled_since=""
    fi
    if fallback="$(network_fallback_line)"; then
      OA_VM_STEP=network
      fail "dockur fell back to user-mode networking, so Windows is not at $OA_VM_GUEST_IP (check that the container gets /dev/net/tun and NET_ADMIN); dockur said: $fallback"
    fi
    state="$(container_state)"
    if [ "${state%% *}" != true ]; then
      if [ "$mode" = build ] && [ "${state#* }" = 3 ]; then
        fail "Windows did not power off within ${OA_VM_POWEROFF_TIMEOUT_S:-1800}s after WAA's /shutdown and its 180 s (pending updates?); dockur wrote no windows.boot; $(log_hint)"
      fi
      if [ "$answered" = 0 ] && waa_saw_windows; then
        answered=1
      fi
      if [ "$mode" = build ] && [ "$answered" = 1 ]; then
        if install_complete "$OA_VM_STORAGE"; then
          return 0
        fi
        fail "Windows answered, but the storage volume shows no completed install (no windows.boot or an empty data disk); the container exited with code ${state#* }; $(log_hint)"
      fi
      if [ "$answered" = 1 ]; then
        fail "the WAA container exited with code ${state#* } after Windows answered; $(log_hint)"
      fi
      fail "the WAA container exited (code ${state#* }) before Windows answered /probe; $(log_hint)"
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      fail "Windows did not answer /probe within ${timeout_s}s; $(log_hint)"
    fi
    write_status running guest "waiting for Windows to answer /probe; last log: $(last_log)"
    sleep "$guest_poll_s"
  done
}

finish_build() {
  step save "saving the worker image on the storage volume"
  dockerx rm "$OA_VM_CONTAINER" >/dev/null 2>&1 || true
  dockerx save -o "$OA_VM_STORAGE/$OA_VM_IMAGE_TAR" "$OA_VM_LOCAL_IMAGE" ||
    fail "could not save the worker image on the storage volume"
  local info
  info="$(printf 'waa_image=%s\nbase_image=%s\nbuilt=%s\n' "$waa_digest" "$base_digest" "$(now_utc)")"
  printf '%s\n' "$info" >"$OA_VM_STORAGE/$OA_VM_READY_MARKER"
  printf '%s\n' "$info" >"$OA_VM_IMAGE_INFO"
  sync
  [ -n "${OA_VM_IMAGE_CACHE:-}" ] || umount "$OA_VM_STORAGE" ||
    fail "could not unmount the storage volume before the snapshot"
  write_status "done" built "Windows installed and shut down; the storage volume is ready to snapshot ($waa_digest)"
}

# scoring_log: the scoring units' last journal line (why a scorer does not come up).
scoring_log() {
  journalctl -u "oa-vm-scoring$OA_VM_UNIT_SUFFIX" -u "oa-vm-bridge$OA_VM_UNIT_SUFFIX" -n 1 --no-pager -o cat 2>&1 | tail -n 1 | cut -c1-200
}

scoring_probe() {
  curl -fsS --max-time 5 "http://127.0.0.1:$OA_VM_SCORING_HOST_PORT/probe" >/dev/null 2>&1
}

# snapshot_check: whether QEMU would take the clean snapshot (no migration blocker), with its
# -cpu value and command line, as status lines: 'snapshot=ok' or 'snapshot=refused: REASON'.
snapshot_check() {
  local answer state
  answer="$("$here/reset.sh" check 2>&1 | tail -n 1 | tr -d '\r\n')" && state=ok ||
    state="refused: $(printf '%s' "$answer" | sed -n 's/.*"error": "\([^"]*\)".*/\1/p')"
  OA_VM_STATUS_EXTRA="$(printf 'snapshot=%s\nqemu=%s' "$state" "$answer")"
}

# finish_pool: 'ready' only once the scoring server itself answers, through the bridge, on the
# host port the tools use (a unit that starts is not a scorer that works: it may fail to import
# WAA's evaluators and restart forever).
finish_pool() {
  local timeout_s="${OA_VM_SCORING_TIMEOUT_S:-300}"
  step scoring "starting the scoring server and its bridge (up to ${timeout_s}s)"
  systemctl enable --now "oa-vm-scoring$OA_VM_UNIT_SUFFIX.service" "oa-vm-bridge$OA_VM_UNIT_SUFFIX.service" ||
    fail "the scoring units did not start: $(scoring_log) (see: journalctl -u oa-vm-scoring$OA_VM_UNIT_SUFFIX -u oa-vm-bridge$OA_VM_UNIT_SUFFIX)"
  local deadline=$(($(date +%s) + timeout_s))
  until scoring_probe; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      fail "the scoring server did not answer on 127.0.0.1:$OA_VM_SCORING_HOST_PORT within ${timeout_s}s; last log: $(scoring_log) (see: journalctl -u oa-vm-scoring$OA_VM_UNIT_SUFFIX -u oa-vm-bridge$OA_VM_UNIT_SUFFIX)"
    fi
    sleep "$guest_poll_s"
  done
  snapshot_check
  write_status "done" ready "Windows answers /probe and the scoring server answers on 127.0.0.1:$OA_VM_SCORING_HOST_PORT"
}

case "$mode" in
  pool | build) ;;
  *)
    echo "usage: $0 pool|build" >&2
    exit 2
    ;;
esac

check_kvm
free_ports
start_docker
mount_storage
if [ "$mode" = build ]; then
  build_image
  await_iso
  run_container
  apply_egress
  # A build takes about 2 h (1.5-3 h, docs/providers.md): 2.5 h for Windows to install and
  # answer, within the builder's own 4 h expiry.
  wait_guest "${OA_VM_GUEST_TIMEOUT_S:-9000}"
  finish_build
else
  load_image
  forget_install_source
  run_container
  apply_egress
  # The first pool from a new AWS snapshot reads its blocks lazily from S3: 15-35 min to a
  # booted guest; inside pool-wait's 40 min.
  wait_guest "${OA_VM_GUEST_TIMEOUT_S:-2100}"
  prove_egress
  await_files
  finish_pool
fi
