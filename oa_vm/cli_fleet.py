"""``oa-vm pool-pause``, ``pool-resume``, ``pool-repair``, ``pool-extend``: a thin layer over
:mod:`oa_vm.fleet`, registered on the main app by :func:`register`."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated

import typer

from oa_vm import fleet, state
from oa_vm.api import DEFAULT_TTL_HOURS
from oa_vm.cli_common import echo as _echo
from oa_vm.duration_options import METAVAR, duration
from oa_vm.durations import format_duration, parse_duration
from oa_vm.pool_cost import current_paused_per_day
from oa_vm.state import PoolRecord
from oa_vm.tables import money

NameOpt = Annotated[
    str | None,
    typer.Option("--name", "-n", "--pool", help="Pool name (optional when only one exists)."),
]
TimeoutOpt = Annotated[
    str, typer.Option(help="How long to wait for the workers: 30m, 90s, 1h, or minutes.")
]
NoWaitOpt = Annotated[
    bool, typer.Option("--no-wait", help="Return once the workers are starting.")
]


def _phases() -> tuple[dict[str, str], float]:
    return {}, time.monotonic()


def _shower(seen: dict[str, str], started: float) -> Callable[[PoolRecord], None]:
    def show(record: PoolRecord) -> None:
        for worker in record.workers:
            phase = worker.phase or worker.state.value
            if seen.get(worker.name) != phase:
                seen[worker.name] = phase
                _echo(f"[{format_duration(time.monotonic() - started):>6}] {worker.name}: {phase}")

    return show


def pool_pause(
    name: NameOpt = None,
    keep_days: Annotated[
        float,
        typer.Option("--keep-days", "--keep", parser=duration("d"), metavar=METAVAR,
                     help="How long the paused pool is kept before it expires (12h, 7d; days)."),
    ] = fleet.DEFAULT_KEEP_DAYS,
) -> None:
    """Stop every worker, keeping its disk; a paused pool costs only its disks."""
    record = fleet.pause_pool(name, keep_days=keep_days, progress=_echo)
    per_day = current_paused_per_day(record)
    _echo(f"Pool {record.name!r} paused: {len(record.workers)} worker(s) stopped, disks kept; "
          f"{money(per_day)}/day while paused; expires {state.format_time(record.expires_at)}.")
    _echo(f"Next: oa-vm pool-resume --name {record.name}")


def pool_resume(
    name: NameOpt = None,
    ttl_hours: Annotated[
        float,
        typer.Option("--ttl-hours", "--ttl", parser=duration("h"), metavar=METAVAR,
                     help="How long from now until the resumed pool expires (90m, 1d; hours)."),
    ] = DEFAULT_TTL_HOURS,
    timeout: TimeoutOpt = "30m",
    no_wait: NoWaitOpt = False,
) -> None:
    """Start a paused pool's workers again and wait until they are ready."""
    seen, started = _phases()
    record = fleet.resume_pool(
        name, ttl_hours=ttl_hours, wait=not no_wait, timeout_s=parse_duration(timeout),
        progress=_echo, on_update=_shower(seen, started),
    )
    took = format_duration(time.monotonic() - started)
    verb = "starting" if no_wait else f"ready after {took}"
    _echo(f"Pool {record.name!r} resumed: {len(record.workers)} worker(s) {verb}.")


def pool_repair(
    name: NameOpt = None,
    worker: Annotated[
        list[str] | None, typer.Option(help="Local pools: replace this worker even if it "
                                            "looks alive (repeatable). Default: every lost "
                                            "worker (cloud: every instance that is gone).")
    ] = None,
    timeout: TimeoutOpt = "30m",
    no_wait: NoWaitOpt = False,
) -> None:
    """Replace lost workers (killed, terminated, evicted) under the same names."""
    seen, started = _phases()
    record, replaced = fleet.repair_pool(
        name, workers=list(worker or []) or None, wait=not no_wait,
        timeout_s=parse_duration(timeout), progress=_echo, on_update=_shower(seen, started),
    )
    if not replaced:
        _echo(f"Pool {record.name!r}: no worker is lost; nothing to repair.")
        return
    _echo(f"Pool {record.name!r}: replaced {', '.join(replaced)}.")


def pool_extend(
    name: NameOpt = None,
    by: Annotated[
        str, typer.Option(help="How much longer to keep the pool: 2d, 12h, 90m (default unit h).")
    ] = "1d",
) -> None:
    """Move a pool's expiry later (paused pools included)."""
    record = fleet.extend_pool(name, by_s=fleet.parse_span(by))
    _echo(f"Pool {record.name!r} now expires at {state.format_time(record.expires_at)}.")


def register(app: typer.Typer) -> None:
    """Add the four commands to ``app`` (the ``oa-vm`` app)."""
    app.command("pool-pause")(pool_pause)
    app.command("pool-resume")(pool_resume)
    app.command("pool-repair")(pool_repair)
    app.command("pool-extend")(pool_extend)
