"""Mutation run over the Python cloud path: hand-written, realistic mutations, one at a time.

Each mutant replaces one exact snippet of one module (it must occur exactly once) with a small
change of the kind a real edit makes (a flipped condition, a dropped argument, a wrong
default), runs its area's tests (``pytest -x``: the first failure kills it) and puts the module
back. A mutant no test kills is a survivor; one that cannot change behaviour is marked
``equivalent`` with the reason, and left out of the survival rate.

Areas and their tests:

- ``programs``: ``infra/aws.py``, ``infra/azure.py``, ``infra/image_*.py`` (the Pulumi programs,
  run under Pulumi's mocks);
- ``driver``: ``oa_vm/clouds/pulumi/driver.py``, ``oa_vm/images.py``,
  ``oa_vm/model/shared_images.py`` (the engine driver and images);
- ``wait``: ``oa_vm/clouds/pulumi/wait.py``, ``oa_vm/reach/drain.py`` (following hosts over real
SSH);
- ``reset``: ``infra/worker/qmp_snapshot.py`` and ``evals/run/reset.py`` (the clean reset: QEMU's
  jobs through the shipped ``reset.sh`` on real QEMU guests, dockur's own command line among them,
  and the fallback to stock). Slow: QEMU under TCG, a few minutes per mutant.

Run from the repository root (the modules are edited in place and always restored; the run
refuses to start if one of them has uncommitted changes, so ``git checkout`` undoes an
interrupted run)::

    .venv/bin/python -m bench.mutate_cloud            # every area
    .venv/bin/python -m bench.mutate_cloud --area wait
    .venv/bin/python -m bench.mutate_cloud --list     # the mutants, run nothing

It prints one line per mutant and a table per area; ``--json PATH`` writes the results.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parents[1]
MUTANT_TIMEOUT_S = 900.0


@dataclass(frozen=True)
class Mutant:
    """One change: in ``path``, ``old`` (exactly once) becomes ``new``."""

    id: str
    area: str
    path: str
    old: str
    new: str
    what: str
    equivalent: str = ""
    """Why the change cannot alter behaviour (then it is not counted), or empty."""


AREA_TESTS: dict[str, list[str]] = {
    "programs": [
        "tests/unit/infra/test_image_programs.py",
        "tests/unit/infra/test_aws_program.py",
        "tests/unit/infra/test_azure_program.py",
        "tests/unit/infra/test_settings_tags_sizes.py",
        "tests/unit/providers/test_image_lifecycle.py",
        "tests/unit/providers/test_cloud_fleet.py",
    ],
    "driver": [
        "tests/unit/providers/test_image_lifecycle.py",
        "tests/unit/providers/test_pulumi_driver.py",
        "tests/unit/providers/test_automation_engine.py",
        "tests/unit/providers/test_cloud_fleet.py",
        "tests/unit/oa_vm/test_smoke_plan.py",
        "tests/unit/providers/test_build_image_cli.py",
        "tests/integration/test_shared_images.py",
        "tests/integration/test_cloud_wait.py",
    ],
    "wait": [
        "tests/unit/providers/test_cloud_wait_parsing.py",
        "tests/integration/test_cloud_wait.py",
        "tests/integration/test_spot_drain.py",
        "tests/integration/test_cloud_wait_cli.py",
        "tests/unit/oa_vm/test_fleet_replacement.py",
        "tests/integration/test_drain_replacement.py",
    ],
    "reset": [
        "tests/unit/evals/test_reset.py",
        "tests/unit/infra/test_cloud_init.py",
        "tests/integration/test_qemu_reset.py",
        "tests/integration/test_dockur_qemu_reset.py",
        "tests/integration/test_slow_restore.py",
    ],
}

A, AZ, IA, IZ = "infra/aws.py", "infra/azure.py", "infra/image_aws.py", "infra/image_azure.py"
D, IM, SH = "oa_vm/clouds/pulumi/driver.py", "oa_vm/images.py", "oa_vm/model/shared_images.py"
W, DR = "oa_vm/clouds/pulumi/wait.py", "oa_vm/reach/drain.py"
Q, R = "infra/worker/qmp_snapshot.py", "evals/run/reset.py"
HS, API, ST = "oa_vm/reach/host_status.py", "oa_vm/api.py", "infra/settings.py"

_BUILDER = (
    '        "volume_size": settings.{size},\n        "volume_type": "gp3",\n'
    '        "encrypted": {enc},\n        "delete_on_termination": {dot},\n'
    '        "tags": tags,\n    }}\n\n\ndef _storage'
)
"""The builder's block device in ``infra/aws.py`` (the one followed by ``_storage_volume_id``)."""

MUTANTS: list[Mutant] = [
    # -- programs ---------------------------------------------------------------------------
    Mutant("p1", "programs", A, '    if v4:\n        rule["cidr_blocks"] = v4\n',
           '    rule["cidr_blocks"] = v4 or ["0.0.0.0/0"]\n',
           "an IPv6-only allow list opens SSH to 0.0.0.0/0"),
    Mutant("p2", "programs", A, _BUILDER.format(size="storage_gb", enc="True", dot="True"),
           _BUILDER.format(size="disk_gb", enc="True", dot="True"),
           "the builder's volume sized as the OS disk"),
    Mutant("p3", "programs", A, _BUILDER.format(size="storage_gb", enc="True", dot="True"),
           _BUILDER.format(size="storage_gb", enc="False", dot="True"),
           "the builder's volume unencrypted"),
    Mutant("p4", "programs", A, _BUILDER.format(size="storage_gb", enc="True", dot="True"),
           _BUILDER.format(size="storage_gb", enc="True", dot="False"),
           "the builder's volume outlives the builder (and its expiry)"),
    Mutant("p5", "programs", A, "        self.ami_id = settings.ami_id or str(",
           "        self.ami_id = str(", "the pinned AMI ignored: looked up on every update"),
    Mutant("p6", "programs", A, '                instance_initiated_shutdown_behavior="terminate",',
           '                instance_initiated_shutdown_behavior="stop",',
           "a worker's own power-off stops instead of terminating (its disks keep billing)"),
    Mutant("p7", "programs", A, "    if utc > whole:\n        whole += timedelta(minutes=1)",
           "    if utc < whole:\n        whole += timedelta(minutes=1)",
           "the expiry schedule rounded down (the pool ends before the time promised)"),
    Mutant("p8", "programs", A, '            "Action": "ec2:TerminateInstances",',
           '            "Action": "ec2:StopInstances",',
           "the expiry role may only stop the instances"),
    Mutant("p9", "programs", A, '"http_tokens": "required"', '"http_tokens": "optional"',
           "IMDSv1 left open"),
    Mutant("p10", "programs", IA, '        image.waa_digest or image.builder.waa_image, '
           'image.licence_expires,\n        base_image=image.base_digest,',
           '        image.builder.waa_image, image.licence_expires,\n'
           '        base_image=image.base_digest,',
           "the snapshot's tag holds winarena:latest, not the digest the builder used"),
    Mutant("p11", "programs", IA, 'create="3h", update="3h"', 'create="10m", update="3h"',
           "the snapshot waits the provider's 10 minutes"),
    Mutant("p12", "programs", IA, "        tags=snapshot_tags(image),",
           "        tags={**snapshot_tags(image), 'oa-vm:pool': image.name},",
           "the image tagged as a pool (pool cleanup would take it)"),
    Mutant("p13", "programs", IA, "        exports[PINNED_EXPORT] = pinned_values(builder, "
           "pool.ami_id)\n", "",
           "the build does not export the AMI it used (nothing to pin)"),
    Mutant("p14", "programs", AZ, '        "destination_port_range": "22",',
           '        "destination_port_range": "*",', "the NSG opens every port to the owner"),
    Mutant("p15", "programs", AZ, '    return "Spot", "Deallocate", {"max_price": -1}',
           '    return "Spot", "Delete", {"max_price": -1}',
           "evicted Spot VMs deleted (the drain's notice-to-end path assumes deallocate)"),
    Mutant("p16", "programs", AZ, '            {"create_option": "Empty"} if settings.mode == '
           '"build"', '            {"create_option": "Empty"} if settings.mode != "build"',
           "pools get empty storage disks, builders a copy"),
    Mutant("p17", "programs", IZ, "            incremental=False,",
           "            incremental=True,",
           "an incremental snapshot (depends on the builder's disk, deleted at keep)"),
    Mutant("p18", "programs", IZ, "            opts=pulumi.ResourceOptions(custom_timeouts="
           "SNAPSHOT_TIMEOUTS),\n", "",
           "the Azure snapshot waits the provider's default"),
    # -- driver and images ----------------------------------------------------------------
    Mutant("d1", "driver", D, "            if after:\n                report.left = after",
           "            if False:\n                report.left = after",
           "a destroy that leaves resources in the state reported as success"),
    Mutant("d2", "driver", D, "                if not failure.try_elsewhere:",
           "                if failure.try_elsewhere:",
           "capacity errors stop the failover, others move on"),
    Mutant("d3", "driver", D, "InsufficientInstanceCapacity|InsufficientCapacity|",
           "InsufficientCapacity|", "AWS's capacity error not recognised"),
    Mutant("d4", "driver", D, "    return not _pid_alive(lock.pid)",
           "    return _pid_alive(lock.pid)", "a live lock holder's lock removed as stale"),
    Mutant("d5", "driver", D,
           "            self._pin(ref, outputs)\n            return CreateResult",
           "            return CreateResult", "the create pins nothing"),
    Mutant("d6", "driver", D, "            for key, value in values.items() if value and key "
           "not in known\n", "            for key, value in values.items() if value\n",
           "a pinned value overwritten by a later update's",
           equivalent="every later update runs with the pinned values (with_pinned), so what "
                      "it exports under pinned equals what is kept"),
    Mutant("d7", "driver", D, "            for key, value in config.items() if key.startswith("
           "PINNED_PREFIX) and value", "            for key, value in config.items() if value",
           "other config keys read as pinned"),
    Mutant("d8", "driver", IM, '        want="built",', '        want="ready",',
           "follow_builder waits for a pool worker's state, not a built image"),
    Mutant("d9", "driver", IM, "            image, builder=with_pinned(image.builder, "
           "provider.driver.pinned(ref)),", "            image, builder=image.builder,",
           "the snapshot update looks the AMI up again (a newer one replaces the builder)"),
    Mutant("d10", "driver", IM, '        record.base_image = info.get("base_image") or '
           'record.base_image\n', "", "dockur's digest recorded nowhere"),
    Mutant("d11", "driver", IM, "    report = provider.driver.destroy(ref, progress)\n"
           "    if report.left:", "    report = provider.driver.destroy(ref, progress)\n"
           "    if False:", "a failed build's rollback that left resources forgets the record"),
    Mutant("d12", "driver", IM, "    if report.left:\n        record.detail = \"left: \" + "
           "\"; \".join(report.left)\n        image_records.save(record)\n        return report",
           "    if False:\n        record.detail = \"left: \" + \"; \".join(report.left)\n"
           "        image_records.save(record)\n        return report",
           "image-delete forgets an image whose snapshot is still there"),
    Mutant("d13", "driver", IM, 'port=int(worker.get("ssh_port") or 22)', "port=22",
           "the builder's SSH port ignored",
           ),
    Mutant("d14", "driver", SH, "    ready = cloud_state in ACCOUNT_READY.get(cloud, ())",
           "    ready = True", "a teammate's unfinished snapshot taken as ready"),
    Mutant("d15", "driver", SH, "        if record.id == image_id and record.region == region:",
           "        if record.id == image_id:", "a shared image of another region accepted",
           equivalent="the listers ask one region (AWS) or filter by it (Azure) before find()"),
    Mutant("d16", "driver", SH, "    out = [ListedImage(r, BOTH if r.id in in_account else "
           "LOCAL) for r in local]", "    out = [ListedImage(r, LOCAL) for r in local]",
           "an image in both places shown as local only"),
    # -- wait and drain -------------------------------------------------------------------
    Mutant("w1", "wait", W, "STATUS_FILE = '\"${OA_VM_STATE_DIR:-/var/lib/oa-vm}/status\"'",
           "STATUS_FILE = '\"${OA_VM_STATE_DIR:-/var/lib/oa-vm}/state\"'",
           "the default status path drifts from lib.sh's"),
    Mutant("w2", "wait", W, "        if report is not None and report.status.get(\"state\") == "
           "\"failed\":", "        if report is not None and report.status.get(\"state\") == "
           "\"error\":", "a failed builder step waited on until the deadline"),
    Mutant("w3", "wait", W, "            if report.status.get(\"step\") != want:",
           "            if report.status.get(\"step\") == want:",
           "follow_status accepts any finished step but the wanted one"),
    Mutant("w4", "wait", W, "        key, sep, value = line.partition(\"=\")",
           "        key, sep, value = line.rpartition(\"=\")",
           "status values holding '=' split at the last one"),
    Mutant("w5", "wait", W, "D=docker; docker info >/dev/null 2>&1 || D='sudo -n docker'; ",
           "D=docker; ", "docker never reached through sudo on a fresh host"),
    Mutant("w6", "wait", W, "    if boot_state == \"error\":",
           "    if boot_state == \"failed\":", "cloud-init errors waited on"),
    Mutant("w7", "wait", W, "    if not report.container.startswith(\"Up\"):",
           "    if not report.container:", "an exited container counted as up"),
    Mutant("w8", "wait", W, "        worker.state = WorkerState.LOST\n        return _fail(worker, "
           "f\"failed at", "        return _fail(worker, f\"failed at",
           "a failed bootstrap leaves the worker booting (waited on forever)"),
    Mutant("w9", "wait", W, "            return \"done\" if value in (\"disabled\", "
           "\"degraded done\") else value",
           "            return \"running\" if value in (\"disabled\", \"degraded done\") "
           "else value", "cloud-init 'degraded done' waited on forever"),
    Mutant("w10", "wait", DR, "    if status.get(\"state\") != DRAINING:\n        return None",
           "    if status.get(\"state\") not in (DRAINING, \"failed\"):\n        return None",
           "a failed host read as draining"),
    Mutant("w11", "wait", DR, "    worker.state = WorkerState.DRAINING\n",
           "    worker.state = WorkerState.READY\n", "a notice does not mark the worker"),
    Mutant("w12", "wait", DR, "    command = f\"cat {cloud_wait.RemoteCommands().status_file} "
           "2>/dev/null || true\"", "    command = \"cat /var/lib/oa-vm/status 2>/dev/null || "
           "true\"", "the drain reads a fixed path, not the wait's"),
    Mutant("r1", "reset", Q, '                 if n.get("drv") == "qcow2" and not n.get("ro")]',
           '                 if n.get("drv") == "qcow2"]', "read-only qcow2 nodes in the devices"),
    Mutant("r2", "reset", Q, '        if job.get("error"):\n            raise',
           '        if job.get("error") and False:\n            raise',
           "a job that concluded with an error counted as done"),
    Mutant("r3", "reset", Q, '        qmp.run("cont")', "        pass",
           "a machine stopped before the load left stopped"),
    Mutant("r4", "reset", Q, '    tag = f"{base}-{time.time_ns()}"', "    tag = base",
           "one fixed snapshot tag"),
    Mutant("r5", "reset", Q,
           "            self.sock.settimeout(max(0.1, deadline - time.monotonic()))",
           "            self.sock.settimeout(10)", "a 10 s socket timeout while a job runs"),
    Mutant("r6", "reset", Q, '        job_id = f"oa-vm-{name}-{os.getpid()}-{time.time_ns()}"',
           "        job_id = name", "fixed job ids"),
    Mutant("r7", "reset", Q, "    refuse_if_blocked(qmp)\n    disks", "    disks",
           "a save tried while QEMU names a blocker"),
    Mutant("r8", "reset", Q, '        if old != tag and old.startswith(base):',
           '        if old.startswith(base):', "the new snapshot deleted with the old ones"),
    Mutant("r9", "reset", R, "            if not self.may_fall_back:\n",
           "            if True:\n", "clean-or-stock fails a worker whose snapshot is refused"),
    Mutant("r10", "reset", R, "            plan.qemu = resolve(connection).check().qemu",
           "            resolve(connection).check()", "the worker's QEMU left out of the run"),
    # -- a host that refuses us, digests, deadlines (issue 27's build part) ---------------------
    Mutant("w13", "wait", W, "    if exc.final:\n        raise WorkerAccessError",
           "    if False:\n        raise WorkerAccessError",
           "a refused key polled until the timeout"),
    Mutant("w14", "wait", HS, "return RemoteUnreachableError(str(exc), final=not "
           "exc.is_infrastructure)", "return RemoteUnreachableError(str(exc))",
           "the SSH error's type erased on the way to pool-wait"),
    Mutant("w15", "wait", API, '                worker.phase, worker.detail = "ssh refused", '
           "str(exc)", '                worker.state = WorkerState.LOST',
           "a refused worker recorded as lost, not as refused"),
    Mutant("w16", "wait", W, "            if exc.final:  # the key refused, a changed host key",
           "            if False:  # the key refused, a changed host key",
           "an image build polls a refused builder until its deadline"),
    Mutant("d17", "driver", IM, "        _require_digests(info)\n", "",
           "a build that reported tag names goes on to the snapshot"),
    Mutant("d18", "driver", IM, "    hours = (cloud_plan.BUILD_READY_S + "
           "cloud_plan.SNAPSHOT_READY_S) / 3600.0", "    hours = cloud_plan.BUILD_READY_S / 3600.0",
           "the build's price leaves the snapshot stage out"),
    Mutant("d19", "driver", IM, "BUILD_WAIT_S + cloud_plan.SNAPSHOT_MAX_S + 30 * 60)",
           "BUILD_WAIT_S)", "the builder expires mid-snapshot"),
    Mutant("p19", "programs", ST, '        if stage == "build" and not self.waa_digest',
           "        if not self.waa_digest", "a snapshot without digests tagged with the tag name"),
    Mutant("p20", "programs", ST, "            if not is_digest(ref):", "            if not ref:",
           "a tag name accepted as a digest"),
]


@dataclass
class Result:
    """What one mutant did."""

    id: str
    area: str
    what: str
    outcome: str  # killed, survived, equivalent-survived, equivalent-killed, error
    seconds: float
    killer: str = ""


def _dirty(paths: set[str]) -> list[str]:
    done = subprocess.run(["git", "status", "--porcelain", "--", *sorted(paths)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=True)
    return [line for line in done.stdout.splitlines() if line.strip()]


def _pytest(tests: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--no-header",
         "-o", "addopts=", *tests],
        cwd=ROOT, capture_output=True, text=True, timeout=MUTANT_TIMEOUT_S, check=False,
    )


def _first_failure(output: str) -> str:
    for line in output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line.split(" - ")[0][:160]
    return ""


def run(mutants: list[Mutant]) -> list[Result]:
    """Apply each mutant in turn, run its area's tests, restore the module."""
    originals: dict[str, str] = {}

    def restore(*_: object) -> None:
        for path, text in originals.items():
            (ROOT / path).write_text(text, encoding="utf-8")

    def on_signal(signum: int, frame: FrameType | None) -> None:
        restore()
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    results: list[Result] = []
    try:
        for mutant in mutants:
            file = ROOT / mutant.path
            text = originals.setdefault(mutant.path, file.read_text(encoding="utf-8"))
            if text.count(mutant.old) != 1:
                results.append(Result(mutant.id, mutant.area, mutant.what, "error", 0.0,
                                      f"snippet found {text.count(mutant.old)} times"))
                print(f"{mutant.id:>4} ERROR snippet found {text.count(mutant.old)} times",
                      flush=True)
                continue
            file.write_text(text.replace(mutant.old, mutant.new), encoding="utf-8")
            started = time.monotonic()
            try:
                done = _pytest(AREA_TESTS[mutant.area])
                killed = done.returncode != 0
                killer = _first_failure(done.stdout) if killed else ""
            except subprocess.TimeoutExpired:
                killed, killer = True, "timeout"
            finally:
                file.write_text(text, encoding="utf-8")
            outcome = "killed" if killed else "survived"
            if mutant.equivalent:
                outcome = f"equivalent-{outcome}"
            seconds = time.monotonic() - started
            results.append(Result(mutant.id, mutant.area, mutant.what, outcome, seconds, killer))
            print(f"{mutant.id:>4} {outcome:<20} {seconds:6.0f}s  {mutant.what}"
                  + (f"  [{killer}]" if killer else ""), flush=True)
    finally:
        restore()
    return results


def summary(results: list[Result]) -> list[dict[str, object]]:
    """Per area: mutants, killed, survived, equivalent, survival rate without equivalents."""
    rows: list[dict[str, object]] = []
    for area in AREA_TESTS:
        mine = [r for r in results if r.area == area]
        if not mine:
            continue
        counted = [r for r in mine if not r.outcome.startswith("equivalent")]
        survived = [r for r in counted if r.outcome == "survived"]
        rows.append({
            "area": area, "mutants": len(mine),
            "killed": sum(r.outcome == "killed" for r in counted),
            "survived": len(survived),
            "equivalent": len(mine) - len(counted),
            "errors": sum(r.outcome == "error" for r in counted),
            "survival": round(len(survived) / len(counted), 3) if counted else 0.0,
            "survivors": [r.id for r in survived],
        })
    return rows


def main(argv: list[str] | None = None) -> int:
    """Run the mutants (all, or one area's) and print a table per area."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--area", choices=sorted(AREA_TESTS))
    parser.add_argument("--id", action="append", help="only these mutants (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if (args.area is None or m.area == args.area)
              and (not args.id or m.id in args.id)]
    if args.list:
        for m in chosen:
            print(f"{m.id:>4} {m.area:<9} {m.path:<34} {m.what}"
                  + (f" (equivalent: {m.equivalent})" if m.equivalent else ""))
        return 0
    dirty = _dirty({m.path for m in chosen})
    if dirty:
        print("refusing to mutate modules with uncommitted changes:\n  " + "\n  ".join(dirty),
              file=sys.stderr)
        return 2
    results = run(chosen)
    rows = summary(results)
    print(f"\n{'area':<9} {'mutants':>7} {'killed':>6} {'survived':>8} {'equiv':>5} "
          f"{'survival':>8}  survivors")
    for row in rows:
        print(f"{row['area']:<9} {row['mutants']:>7} {row['killed']:>6} {row['survived']:>8} "
              f"{row['equivalent']:>5} {float(str(row['survival'])):>8.0%}  "
              f"{' '.join(str(s) for s in row['survivors']) or '-'}")
    if args.json:
        args.json.write_text(json.dumps({"results": [asdict(r) for r in results],
                                         "areas": rows}, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
