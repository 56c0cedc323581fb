"""Clean-reset benchmark: restore time on a real QEMU, and what clean resets cost a local sweep.

Two measurements in one run:

1. **QEMU rehearsal**: the tiny guest of :mod:`bench.tiny_guest` (Debian's cloud kernel, a
   busybox initramfs, a qcow2 disk as ``ide-hd``, TCG unless ``TINY_GUEST_ACCEL=kvm``) under the
   shipped ``infra/worker/reset.sh``: one ``take``, then ``--restores`` times: change the guest's
   memory and disk, ``reset.sh restore`` (load the snapshot and wait for the guest's HTTP
   endpoint), check both came back. Reported: median and max of the whole ``restore`` call and
   of QEMU's load alone. Skipped (and said so) where QEMU cannot run.
2. **Cold boot vs restore of a 2 GB guest** (``--big-mb``): the tiny guest with 2 GB of RAM
   holding non-zero pages (so the vmstate is 2 GB), booted cold (QEMU started until the guest
   serves), then ``reset.sh take`` and ``--big-restores`` restores side by side; once from a
   disk as fast as this machine's page cache (the worker's ``DISK_CACHE=writeback``: a restore
   after the first reads the vmstate from the host's memory) and once through QEMU's
   ``throttle`` filter at 125 MiB/s (gp3's baseline: every restore read from the volume).
3. **Local sweep**: one local pool, the whole local suite with the ``oracle`` agent, once with
   ``--reset stock`` and once with ``--reset clean`` (alternating, ``--rounds`` each); reported
   as the median makespan of each and their ratio clean / stock.

Usage (from the repository root)::

    .venv/bin/python bench/reset.py [--restores 20] [--big-mb 2048] [--big-restores 3]
        [--workers 2] [--rounds 3] [--json]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import tiny_guest
from bench.harness import (
    REPO_ROOT,
    BenchInputError,
    create_local_pool,
    emit,
    isolated_home,
    machine_info,
    parser,
    progress,
    run_cli,
)

PROG = "bench/reset.py"
RESET_SH = REPO_ROOT / "infra" / "worker" / "reset.sh"


def _reset(root: Path, guest: tiny_guest.TinyGuest, *args: str) -> dict[str, Any]:
    env = dict(os.environ, OA_VM_ROOT=str(root),
               **guest.reset_env(wait_s=240))
    done = subprocess.run([str(RESET_SH), *args], env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if done.returncode != 0:
        raise RuntimeError(f"reset.sh {args[0]} failed: {answer.get('error')}")
    return answer


def qemu_restores(restores: int) -> dict[str, Any]:
    """Take once, then restore ``restores`` times; seconds per restore (whole call, load)."""
    try:
        tiny_guest.check_available()
    except tiny_guest.GuestUnavailable as exc:
        return {"skipped": str(exc)}
    with tempfile.TemporaryDirectory(prefix="oa-qemu-") as folder:
        root = Path(folder)
        guest = tiny_guest.start_guest(root, root / "var" / "lib" / "oa-vm" / "qmp" / "qmp.sock")
        try:
            guest.wait_serving()
            guest.set(mem="clean", disk="clean")
            _reset(root, guest, "take", "bench")
            whole, load = [], []
            for i in range(restores):
                guest.set(mem=f"dirty{i}", disk=f"dirty{i}")
                began = time.perf_counter()
                answer = _reset(root, guest, "restore")
                whole.append(time.perf_counter() - began)
                load.append(float(answer["seconds"]))
                if guest.state() != {"mem": "clean", "disk": "clean"}:
                    raise RuntimeError(f"restore {i + 1} did not bring the clean state back")
        finally:
            guest.stop()
    return {
        "accel": guest.accel, "guest_memory_mb": 256, "restores": restores,
        "restore_median_s": round(statistics.median(whole), 3),
        "restore_max_s": round(max(whole), 3),
        "load_median_s": round(statistics.median(load), 3),
        "load_max_s": round(max(load), 3),
    }


def cold_vs_restore(memory_mb: int, restores: int, disk_mibps: float | None) -> dict[str, Any]:
    """Cold boot, take and restores of a ``memory_mb`` guest whose RAM is all non-zero pages."""
    with tempfile.TemporaryDirectory(prefix="oa-big-") as folder:
        root = Path(folder)
        began = time.perf_counter()
        guest = tiny_guest.start_guest(root, root / "var" / "lib" / "oa-vm" / "qmp" / "qmp.sock",
                                       memory_mb=memory_mb, disk_mibps=disk_mibps, prefill=True)
        try:
            guest.wait_serving(timeout=900)
            cold = time.perf_counter() - began
            guest.set(mem="clean", disk="clean")
            began = time.perf_counter()
            _reset(root, guest, "take", "bench")
            take = time.perf_counter() - began
            whole, load = [], []
            for i in range(restores):
                guest.set(mem=f"dirty{i}", disk=f"dirty{i}")
                began = time.perf_counter()
                answer = _reset(root, guest, "restore")
                whole.append(time.perf_counter() - began)
                load.append(float(answer["seconds"]))
                if guest.state() != {"mem": "clean", "disk": "clean"}:
                    raise RuntimeError(f"restore {i + 1} did not bring the clean state back")
        finally:
            guest.stop()
    return {
        "accel": guest.accel, "guest_memory_mb": memory_mb, "disk_mibps": disk_mibps,
        "cold_boot_s": round(cold, 3), "take_s": round(take, 3), "restores": restores,
        "restore_median_s": round(statistics.median(whole), 3),
        "load_median_s": round(statistics.median(load), 3),
        "cold_over_restore": round(cold / statistics.median(whole), 2),
    }


def local_sweeps(workers: int, rounds: int, scratch: Path) -> dict[str, Any]:
    """Median makespan of the local suite with stock and clean resets, alternating."""
    from evals.run.runner import RunConfig, RunEvent, run_evaluation

    create_local_pool("bench-reset", workers)
    makespans: dict[str, list[float]] = {"stock": [], "clean": []}
    reset_s: dict[str, list[float]] = {"stock": [], "clean": []}
    for round_ in range(rounds):
        for mode in ("stock", "clean"):
            marks: dict[str, float] = {}

            def on_event(event: RunEvent, marks: dict[str, float] = marks) -> None:
                if event.kind in ("started", "finished"):
                    marks[event.kind] = time.monotonic()

            config = RunConfig(pool="bench-reset", selection="all", agent="oracle",
                               run_name=f"{mode}-{round_}", results_dir=scratch / "results",
                               reset=mode)
            result = run_evaluation(config, on_event=on_event)
            if result.counts.get("success") != sum(result.counts.values()):
                raise RuntimeError(f"the {mode} sweep did not succeed everywhere: "
                                   f"{result.counts}")
            makespans[mode].append(marks["finished"] - marks["started"])
            for path in (result.run_dir / "tasks").glob("*/execution.json"):
                seconds = json.loads(path.read_text(encoding="utf-8")).get("reset_s")
                if seconds is not None:
                    reset_s[mode].append(float(seconds))
            progress(f"round {round_ + 1}/{rounds} {mode}: "
                     f"{makespans[mode][-1]:.2f} s")
    stock, clean = (statistics.median(makespans[m]) for m in ("stock", "clean"))
    return {
        "workers": workers, "rounds": rounds,
        "stock_makespan_s": round(stock, 3), "clean_makespan_s": round(clean, 3),
        "clean_over_stock": round(clean / stock, 3),
        "stock_reset_median_s": round(statistics.median(reset_s["stock"]), 4),
        "clean_reset_median_s": round(statistics.median(reset_s["clean"]), 4),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run both measurements and print them."""
    args_parser = parser(PROG, "Clean resets: QEMU restore time and local sweep makespans.")
    args_parser.add_argument("--restores", type=int, default=20)
    args_parser.add_argument("--big-mb", type=int, default=2048, help="0: skip")
    args_parser.add_argument("--big-restores", type=int, default=3)
    args_parser.add_argument("--workers", type=int, default=2)
    args_parser.add_argument("--rounds", type=int, default=3)
    args_parser.add_argument("--json", action="store_true")
    args = args_parser.parse_args(argv)
    if args.restores < 1 or args.workers < 1 or args.rounds < 1:
        raise BenchInputError("--restores, --workers and --rounds must be at least 1")
    progress(f"QEMU rehearsal: {args.restores} restores")
    qemu = qemu_restores(args.restores)
    big: dict[str, Any] = {}
    if args.big_mb > 0 and "skipped" not in qemu:
        for name, mibps in (("page_cache", None), ("gp3_125", 125.0)):
            progress(f"{args.big_mb} MB guest ({name}): cold boot, take, "
                     f"{args.big_restores} restores")
            big[name] = cold_vs_restore(args.big_mb, max(1, args.big_restores), mibps)
    with isolated_home() as scratch:
        progress(f"local sweeps: {args.rounds} round(s) of stock and clean")
        sweeps = local_sweeps(args.workers, args.rounds, scratch)
    figures = {"machine": machine_info(), "qemu": qemu, "big_guest": big,
               "local_sweep": sweeps}
    if "skipped" in qemu:
        qemu_text = f"QEMU rehearsal skipped: {qemu['skipped']}"
    else:
        qemu_text = (
            f"QEMU rehearsal ({qemu['accel']}, {qemu['guest_memory_mb']} MB guest), "
            f"{qemu['restores']} restores: reset.sh restore median {qemu['restore_median_s']} s, "
            f"max {qemu['restore_max_s']} s (QEMU's load alone: median {qemu['load_median_s']} "
            f"s, max {qemu['load_max_s']} s)"
        )
    big_text = [
        f"{b['guest_memory_mb']} MB guest, vmstate disk {name} ({b['accel']}): cold boot "
        f"{b['cold_boot_s']} s vs reset.sh restore median {b['restore_median_s']} s "
        f"(load {b['load_median_s']} s, take {b['take_s']} s): cold/restore "
        f"{b['cold_over_restore']}x"
        for name, b in big.items()
    ]
    text = "\n".join([
        qemu_text,
        *big_text,
        f"Local sweep ({sweeps['workers']} workers, median of {sweeps['rounds']}): stock "
        f"{sweeps['stock_makespan_s']} s, clean {sweeps['clean_makespan_s']} s, "
        f"clean/stock {sweeps['clean_over_stock']}x (reset per task: stock "
        f"{sweeps['stock_reset_median_s']} s, clean {sweeps['clean_reset_median_s']} s)",
    ])
    emit(figures, args.json, text)
    return 0


if __name__ == "__main__":
    run_cli(main, PROG)
