"""A mutation run of the worker host's shell scripts (``infra/worker/*.sh``).

Each mutant is one small, realistic change to one script (a condition dropped, a failure
ignored, a file written to the wrong place, a port opened). The script applies the mutants one at
a time, in place, runs the tests that cover that script (stopping at the first failure), restores
the file, and reports each mutant as killed or survived, with the survival rate apart from the
mutants named equivalent. A mutant whose text is not found fails the run: the list follows the
scripts.

    .venv/bin/python -m bench.mutate_shell            # every mutant
    .venv/bin/python -m bench.mutate_shell -k scoring  # those whose name contains "scoring"
    .venv/bin/python -m bench.mutate_shell --list

The scripts are restored after each mutant, and at start from the backup a killed run left
(``<script>.mutate-backup``). Results: ``docs/reliability.md`` ("Mutation run: host scripts").
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKER = ROOT / "infra" / "worker"

HOST_TESTS = (
    "tests/integration/test_cloud_bootstrap_rehearsal.py",
    "tests/unit/infra/test_worker_status_file.py",
    "tests/unit/infra/test_guest_address_and_qmp.py",
    "tests/unit/infra/test_cloud_init.py",
    "tests/unit/infra/test_install_complete.py",
    "tests/integration/test_waa_entry_rehearsal.py",
)
"""Fast stand-in rehearsal first, the namespace rehearsal (WAA's real entry scripts) last."""
ENTRY_TESTS = ("tests/integration/test_waa_entry_rehearsal.py",)
"""The container's PID 1 (``waa_entry.sh``) runs only in the namespace rehearsal."""
SCORING_TESTS = ("tests/unit/infra/test_guest_address_and_qmp.py",)
SPOT_TESTS = ("tests/integration/test_spot_watch_rehearsal.py",)
AZURE_SPOT_TESTS = ("tests/integration/test_spot_watch_azure_rehearsal.py",)
RESET_TESTS = ("tests/unit/infra/test_cpu_flags.py", "tests/unit/infra/test_cloud_init.py",
               "tests/integration/test_cloud_bootstrap_rehearsal.py",
               "tests/integration/test_qemu_reset.py",
               "tests/integration/test_dockur_qemu_reset.py")
"""The clean reset's shell: dockur's CPU flags and cache mode, reset.sh on real QEMU guests."""


@dataclass(frozen=True)
class Mutant:
    """One change: ``old`` (found exactly once) becomes ``new`` in ``script``."""

    name: str
    script: str
    old: str
    new: str
    tests: tuple[str, ...] = HOST_TESTS
    equivalent: str = ""
    """Why the mutant is the same program for every input that matters (empty: it is not)."""


MUTANTS = (
    Mutant("ready marker not on the storage volume", "bootstrap.sh",
           '>"$OA_VM_STORAGE/$OA_VM_READY_MARKER"', '>"$OA_VM_STATE_DIR/$OA_VM_READY_MARKER"'),
    Mutant("build success without Windows answering", "bootstrap.sh",
           'if [ "$mode" = build ] && [ "$answered" = 1 ]; then',
           'if [ "$mode" = build ]; then'),
    Mutant("build success without a finished install", "bootstrap.sh",
           'if install_complete "$OA_VM_STORAGE"; then', "if true; then"),
    Mutant("WAA's log not taken as evidence", "bootstrap.sh",
           'if [ "$answered" = 0 ] && waa_saw_windows; then', "if false; then"),
    Mutant("pool formats its volume", "bootstrap.sh",
           'if [ "$mode" = build ] && ! blkid "$dev"', 'if ! blkid "$dev"'),
    Mutant("build formats a formatted volume", "bootstrap.sh",
           '[ "$mode" = build ] && ! blkid "$dev" >/dev/null 2>&1', '[ "$mode" = build ]'),
    Mutant("root disk taken for the storage", "bootstrap.sh",
           '!= "$root" ]', '!= "/nonexistent" ]'),
    Mutant("mounted twice", "bootstrap.sh",
           'if ! mountpoint -q "$OA_VM_STORAGE"; then', "if true; then"),
    Mutant("scoring units failing ignored", "bootstrap.sh",
           "oa-vm-scoring.service oa-vm-bridge.service ||",
           "oa-vm-scoring.service oa-vm-bridge.service || true ||"),
    Mutant("scorer not probed before ready", "bootstrap.sh",
           "until scoring_probe; do", "until true; do"),
    Mutant("scorer deadline ignored", "bootstrap.sh",
           '      fail "the scoring server did not answer', '      sleep 0; true "'),
    Mutant("no /dev/kvm accepted", "bootstrap.sh",
           'if [ ! -e "$OA_VM_ROOT/dev/kvm" ]; then', "if false; then"),
    Mutant("pool from a volume without a prepared disk", "bootstrap.sh",
           '[ ! -e "$OA_VM_STORAGE/$OA_VM_READY_MARKER" ]', "false"),
    Mutant("build container restarts", "bootstrap.sh",
           "    restart=()\n", "    restart=(--restart on-failure:3)\n"),
    Mutant("build does not prepare the image", "bootstrap.sh",
           "    prepare=true\n", "    prepare=false\n"),
    Mutant("QMP on a TCP port", "bootstrap.sh",
           '-e "QMP=unix:$OA_VM_QMP_MOUNT/qmp.sock,server=on,wait=off"',
           '-p 127.0.0.1:7200:7200 -e "QMP=tcp:0.0.0.0:7200,server,nowait"'),
    Mutant("QMP folder readable by all", "bootstrap.sh",
           'chmod 0700 "$OA_VM_QMP_DIR"', 'chmod 0755 "$OA_VM_QMP_DIR"'),
    Mutant("guest address not pinned", "bootstrap.sh",
           '-e "VM_NET_IP=$OA_VM_GUEST_IP"', '-e "OA_VM_UNUSED=$OA_VM_GUEST_IP"'),
    Mutant("image built without the guest address", "bootstrap.sh",
           '--build-arg "GUEST_IP=$OA_VM_GUEST_IP"', '--build-arg "OA_VM_UNUSED=1"'),
    Mutant("failed pull ignored", "bootstrap.sh",
           'dockerx pull "$waa_image" >/dev/null ||',
           'dockerx pull "$waa_image" >/dev/null || true ||'),
    Mutant("guest deadline ignored", "bootstrap.sh",
           'if [ "$(date +%s)" -ge "$deadline" ]; then\n      fail "Windows did not answer',
           'if false; then\n      fail "Windows did not answer'),
    Mutant("exit before Windows answered accepted in a build", "bootstrap.sh",
           '      fail "the WAA container exited (code ${state#* }) before',
           '      [ "$mode" = build ] && return 0\n'
           '      fail "the WAA container exited (code ${state#* }) before'),
    Mutant("image not saved", "bootstrap.sh",
           'dockerx save -o "$OA_VM_STORAGE/$OA_VM_IMAGE_TAR"',
           ': save -o "$OA_VM_STORAGE/$OA_VM_IMAGE_TAR"'),
    Mutant("volume not unmounted before the snapshot", "bootstrap.sh",
           'umount "$OA_VM_STORAGE" ||', 'true ||'),
    Mutant("dockur's digest not recorded", "bootstrap.sh",
           'base_digest="$(repo_digest "$base_image")"', 'base_digest="$base_image"'),
    Mutant("Windows not given time to shut down", "bootstrap.sh",
           "--stop-timeout 120", "--stop-timeout 1"),
    Mutant("shipped files writable from the container", "bootstrap.sh",
           '-v "$here:/oa-vm:ro"', '-v "$here:/oa-vm"'),
    Mutant("no systemd-resolved is fatal", "bootstrap.sh",
           "systemctl restart systemd-resolved || true", "systemctl restart systemd-resolved"),
    Mutant("failed load ignored", "bootstrap.sh",
           'dockerx load -i "$OA_VM_STORAGE/$OA_VM_IMAGE_TAR" >/dev/null ||',
           'dockerx load -i "$OA_VM_STORAGE/$OA_VM_IMAGE_TAR" >/dev/null || true ||'),
    Mutant("DNS stub listener left on", "bootstrap.sh",
           "DNSStubListener=no", "DNSStubListener=yes"),
    Mutant("status file written in place", "lib.sh",
           'mv -f "$tmp" "$OA_VM_STATUS_FILE"', 'cp "$tmp" "$OA_VM_STATUS_FILE"'),
    Mutant("a failed step exits 0", "lib.sh",
           '  echo "oa-vm: $OA_VM_STEP failed: $1" >&2\n  exit 1',
           '  echo "oa-vm: $OA_VM_STEP failed: $1" >&2\n  exit 0'),
    Mutant("install complete without the boot marker", "lib.sh",
           '[ -f "$dir/windows.boot" ] || return 1', "true"),
    Mutant("an all-zero data disk counts as installed", "lib.sh",
           '    [ "$rc" = 1 ] && return 0', "    return 0"),
    Mutant("an empty data disk counts as installed", "lib.sh",
           '[ -s "$disk" ] || continue', '[ -e "$disk" ] || continue'),
    Mutant("a qcow2 disk read as a file, not its virtual disk", "lib.sh",
           'if [ "${disk##*.}" = qcow2 ]; then', "if false; then"),
    Mutant("an unreadable qcow2 disk taken for data", "lib.sh",
           '        rm -f "$head"\n        continue', '        rm -f "$head"\n        return 0'),
    Mutant("a status value keeps its line breaks", "lib.sh",
           "tr '\\000-\\037\\177' ' '", "cat"),
    Mutant("dockur's fallback lines not recognised", "lib.sh",
           "OA_VM_NET_FALLBACK='falling back to user-mode networking|",
           "OA_VM_NET_FALLBACK='never printed|"),
    Mutant("no /dev/net/tun for the container", "bootstrap.sh",
           "--device=/dev/kvm --device=/dev/net/tun", "--device=/dev/kvm"),
    Mutant("dockur's fallback to user-mode networking ignored", "bootstrap.sh",
           'if fallback="$(network_fallback_line)"; then', "if false; then"),
    Mutant("a digest falls back to the image's name", "bootstrap.sh",
           '    *@sha256:*) echo "$digest" ;;', '    *) echo "${digest:-$1}" ;;'),
    Mutant("the worker image built from the WAA tag, not its digest", "bootstrap.sh",
           '--build-arg "WAA_IMAGE=$waa_digest"', '--build-arg "WAA_IMAGE=$waa_image"'),
    Mutant("Windows not powering off reported as no install", "bootstrap.sh",
           '[ "${state#* }" = 3 ]', '[ "${state#* }" = 99 ]'),
    Mutant("PID 1 does not wait for QEMU", "waa_entry.sh",
           "while dockur_running; do", "while false; do", tests=ENTRY_TESTS),
    Mutant("PID 1 waits for QEMU without a deadline", "waa_entry.sh",
           '  if [ "$(date +%s)" -ge "$deadline" ]; then', "  if false; then", tests=ENTRY_TESTS),
    Mutant("QEMU still running after the deadline exits 0", "waa_entry.sh",
           'exit "$EXIT_POWEROFF_TIMEOUT"', "exit 0", tests=ENTRY_TESTS),
    Mutant("no boot marker exits 0", "waa_entry.sh",
           'exit "$EXIT_NO_BOOT_MARKER"', "exit 0", tests=ENTRY_TESTS),
    Mutant("dockur's entry script not seen as running", "waa_entry.sh",
           '*" /run/entry.sh"* | /run/entry.sh* | ', "", tests=ENTRY_TESTS),
    Mutant("prepare mode handed to WAA's entry.sh as PID 1", "waa_entry.sh",
           'if [ "$prepare" != true ]; then', "if true; then", tests=ENTRY_TESTS),
    Mutant("WAA's entry.sh failing ends PID 1", "waa_entry.sh",
           '"$OA_VM_ENTRY_WAA" "${args[@]}" || code=$?', '"$OA_VM_ENTRY_WAA" "${args[@]}" || exit',
           tests=ENTRY_TESTS),
    Mutant("WAA's guest address", "lib.sh",
           'OA_VM_GUEST_IP="172.30.0.2"', 'OA_VM_GUEST_IP="20.20.20.21"'),
    Mutant("QMP socket elsewhere", "lib.sh",
           'OA_VM_QMP_DIR="$OA_VM_STATE_DIR/qmp"', 'OA_VM_QMP_DIR="$OA_VM_STATE_DIR/monitor"'),
    Mutant("sudo that may prompt", "lib.sh", "sudo -n docker", "sudo docker"),
    Mutant("scorer on dockur's python3", "scoring.sh",
           '"$OA_VM_WAA_PYTHON" /oa-vm/scoring_server.py', "python3 /oa-vm/scoring_server.py",
           tests=SCORING_TESTS),
    Mutant("scorer without the guest address", "scoring.sh",
           '--vm-ip "$OA_VM_GUEST_IP" ', "", tests=SCORING_TESTS),
    Mutant("old scorer not stopped before a start", "scoring.sh",
           "  start)\n    stop\n", "  start)\n    :\n", tests=SCORING_TESTS),
    Mutant("spot notice not written", "spot_watch.sh",
           '    write_draining "$action" "${when:-unknown}"', "    :", tests=SPOT_TESTS),
    Mutant("spot 404 read as a notice", "spot_watch.sh",
           "    404)\n      rm -f \"$body\"\n      return 0",
           "    404)\n      rm -f \"$body\"\n      write_draining x y; return 0",
           tests=SPOT_TESTS),
    Mutant("spot IMDS without token", "spot_watch.sh",
           '-H "X-aws-ec2-metadata-token: $token" ', "", tests=SPOT_TESTS),
    Mutant("Azure eviction not written", "spot_watch_azure.sh",
           '    write_draining "${when:-unknown}" "$event"', "    :", tests=AZURE_SPOT_TESTS),
    Mutant("dockur's default CPU (invtsc blocks snapshots)", "lib.sh",
           'OA_VM_CPU_FLAGS="-invtsc,-vmx,-svm"', 'OA_VM_CPU_FLAGS=""', tests=RESET_TESTS),
    Mutant("CPU flags not passed to dockur", "bootstrap.sh",
           '    "${cpu[@]}" -e "DISK_CACHE', '    -e "DISK_CACHE', tests=RESET_TESTS),
    Mutant("dockur's hv_passthrough (blocks snapshots)", "lib.sh",
           '"CPU_FLAGS=$flags" "HV=N"', '"CPU_FLAGS=$flags"', tests=RESET_TESTS),
    Mutant("vmstate not through the page cache", "lib.sh",
           'OA_VM_DISK_CACHE="writeback"', 'OA_VM_DISK_CACHE="none"', tests=RESET_TESTS),
    Mutant("reset.sh waits for WAA forever", "reset.sh",
           "    if (((now - start) / 1000000 >= wait_s)); then",
           "    if false; then", tests=RESET_TESTS),
    Mutant("boot check of the snapshot not recorded", "bootstrap.sh",
           "  snapshot_check\n", "", tests=RESET_TESTS),
    Mutant("check does not ask QEMU", "reset.sh", "    helper check\n",
           "    echo '{\"ok\": true}'\n", tests=RESET_TESTS),
)


def _restore_leftovers() -> None:
    for backup in WORKER.glob("*.mutate-backup"):
        shutil.move(str(backup), str(backup.with_suffix("")))


def run_mutant(mutant: Mutant, python: str) -> tuple[bool, float, str]:
    """Apply, test, restore; returns (killed, seconds, the first failing test or '')."""
    path = WORKER / mutant.script
    source = path.read_text(encoding="utf-8")
    count = source.count(mutant.old)
    if count != 1:
        raise SystemExit(f"mutant {mutant.name!r}: its text occurs {count} times in "
                         f"{mutant.script}; update bench/mutate_shell.py")
    backup = path.with_name(path.name + ".mutate-backup")
    shutil.copy2(path, backup)
    started = time.monotonic()
    try:
        path.write_text(source.replace(mutant.old, mutant.new), encoding="utf-8")
        done = subprocess.run(
            [python, "-m", "pytest", "-q", "-x", "-p", "no:randomly", "-p", "no:cacheprovider",
             *mutant.tests], cwd=ROOT, capture_output=True, text=True, timeout=1800, check=False)
    finally:
        shutil.move(str(backup), str(path))
    failed = next((line.split(" ")[1] for line in done.stdout.splitlines()
                   if line.startswith("FAILED ")), "")
    tail = done.stdout.strip().splitlines()[-1:] or [""]
    if done.returncode == 0 and " passed" not in tail[0]:
        # every test skipped (no ../shared upstream code, no root): a mutant nothing tested
        # must not read as a survivor, nor the run as a figure
        raise SystemExit(f"mutant {mutant.name!r}: its tests did not run ({tail[0]}); run "
                         "from a checkout beside ../shared, as root")
    return done.returncode != 0, time.monotonic() - started, failed


def main(argv: list[str] | None = None) -> int:
    """Run the mutants (all, or those matching ``-k``); exit 1 if a non-equivalent one survived."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only mutants whose name contains this")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    args = parser.parse_args(argv)
    _restore_leftovers()
    chosen = [m for m in MUTANTS if args.k.lower() in m.name.lower()]
    if args.list:
        for m in chosen:
            print(f"{m.script:22} {m.name}")
        return 0
    survivors: list[Mutant] = []
    by_script: dict[str, list[int]] = {}
    for mutant in chosen:
        killed, seconds, failed = run_mutant(mutant, sys.executable)
        verdict = "killed" if killed else ("equivalent" if mutant.equivalent else "SURVIVED")
        print(f"{verdict:10} {seconds:6.0f}s  {mutant.script:22} {mutant.name}"
              + (f"  ({failed})" if failed else ""), flush=True)
        counts = by_script.setdefault(mutant.script, [0, 0, 0])
        counts[0] += 1
        if killed:
            counts[1] += 1
        elif not mutant.equivalent:
            survivors.append(mutant)
            counts[2] += 1
    print("\nscript                 mutants  killed  survived (not equivalent)")
    for script, (total, killed, survived) in by_script.items():
        print(f"{script:22} {total:7d} {killed:7d} {survived:9d}")
    total = sum(c[0] for c in by_script.values())
    equivalent = sum(1 for m in chosen if m.equivalent)
    rate = len(survivors) / max(1, total - equivalent)
    print(f"\n{total} mutants, {len(survivors)} survived, {equivalent} equivalent: "
          f"survival {rate:.0%} apart from equivalent mutants")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
