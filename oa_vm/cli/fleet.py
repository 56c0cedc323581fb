"""``oa-vm pool-pause``, ``pool-resume``, ``pool-repair``, ``pool-extend``: a thin layer over
:mod:`oa_vm.fleet`, registered on the main app by :func:`register`."""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer

from oa_vm import fleet
from oa_vm.api import DEFAULT_TTL_HOURS, MAX_TTL_HOURS
from oa_vm.cli.common import NameOpt
from oa_vm.cli.common import echo as _echo
from oa_vm.cli.common import err as _err
from oa_vm.cost.pool_cost import current_paused_per_day
from oa_vm.kit import timings
from oa_vm.kit.clikit import print_json
from oa_vm.kit.duration_options import Duration, duration_option, duration_text_option
from oa_vm.kit.durations import format_duration, parse_duration
from oa_vm.kit.tables import money
from oa_vm.model import state
from oa_vm.model.state import PoolRecord
from oa_vm.reach import replacements

TimeoutOpt = Annotated[
    str, duration_text_option("--timeout", unit="m",
                              help="How long to wait for the workers: 30m, 90s, 1h")
]
REPAIR_TIMEOUT = f"{round(timings.FIRST_POOL_WAIT_S / 60)}m"
"""``pool-repair``'s wait: new workers start from the image (its deadline, which covers the
first pool from a new AWS image too)."""
NoWaitOpt = Annotated[
    bool, typer.Option("--no-wait", help="Return once the workers are starting.")
]
JsonOpt = Annotated[
    bool, typer.Option("--json", help="Print the pool as JSON (progress as plain lines on "
                                      "stderr).")
]


def _pool_json(record: PoolRecord, **extra: Any) -> dict[str, Any]:
    from oa_vm.cli.pool_views import status_json

    return {**status_json(record), **extra}


def pool_pause(
    name: NameOpt = None,
    keep_days: Annotated[
        float,
        duration_option("--keep", "--keep-days", unit="d", bare=("--keep-days",),
                        help="How long the paused pool is kept before it expires: 12h, 7d"),
    ] = Duration(fleet.DEFAULT_KEEP_DAYS, "d"),
    force: Annotated[
        bool, typer.Option("--force", help="Pause even while a run holds the pool (the run's "
                                           "tasks fail); default: refuse.")
    ] = False,
) -> None:
    """Stop every worker, keeping its disk; a paused pool costs only its disks.

    A pool a live run is using is not paused (one line names the run) unless --force.
    """
    record = fleet.pause_pool(name, keep_days=keep_days, progress=_echo, force=force)
    per_day = current_paused_per_day(record)
    _echo(f"Pool {record.name!r} paused: {len(record.workers)} worker(s) stopped, disks kept; "
          f"{money(per_day)}/day while paused; expires {state.show_time(record.expires_at)}.")
    _echo(f"Next: oa-vm pool-resume --pool {record.name}")


def pool_resume(
    name: NameOpt = None,
    ttl_hours: Annotated[
        float,
        duration_option("--ttl", "--ttl-hours", unit="h", bare=("--ttl-hours",),
                        most=MAX_TTL_HOURS,
                        help="How long from now until the resumed pool expires: 90m, 8h, 1d"),
    ] = Duration(DEFAULT_TTL_HOURS, "h"),
    timeout: TimeoutOpt = "30m",
    no_wait: NoWaitOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Start a paused pool's workers again and wait until they are ready."""
    from oa_vm.cli.wait_display import wait_display

    started = time.monotonic()
    timeout_s = parse_duration(timeout)
    # live on a terminal; plain lines when piped, and on stderr beside --json
    with wait_display(_err if json_out else _echo, timeout_s, plain=json_out) as view:
        record = fleet.resume_pool(
            name, ttl_hours=ttl_hours, wait=not no_wait, timeout_s=timeout_s,
            progress=view.echo, on_update=view,
        )
    if json_out:
        print_json(_pool_json(record))
        return
    took = format_duration(time.monotonic() - started)
    verb = "starting" if no_wait else f"ready after {took}"
    _echo(f"Pool {record.name!r} resumed: {len(record.workers)} worker(s) {verb}.")


def pool_repair(
    name: NameOpt = None,
    worker: Annotated[
        list[str] | None, typer.Option(help="Replace this worker even if it looks alive "
                                            "(local pools; repeatable); a draining worker "
                                            "already replaced is retired now. Default: every "
                                            "lost or draining worker (cloud: every instance "
                                            "that is gone).")
    ] = None,
    timeout: TimeoutOpt = REPAIR_TIMEOUT,
    no_wait: NoWaitOpt = False,
    json_out: JsonOpt = False,
    force: Annotated[
        bool, typer.Option("--force", help="Replace the --worker workers even while a run "
                                           "holds the pool (their tasks fail); default: "
                                           "refuse.")
    ] = False,
) -> None:
    """Replace lost workers under the same names, draining ones at once under new names.

    A lost worker (killed, terminated, evicted) is started again under its name. A draining
    worker (a spot notice) gets a new worker under the next name right away, while it finishes
    its task; a later repair retires it once the cloud has ended it (or when --worker names it).
    While a live run holds the pool, --worker is refused (one line names the run) unless --force.
    """
    from oa_vm.cli.wait_display import wait_display

    timeout_s = parse_duration(timeout)
    with wait_display(_err if json_out else _echo, timeout_s, plain=json_out) as view:
        record, replaced = fleet.repair_pool(
            name, workers=list(worker or []) or None, wait=not no_wait, timeout_s=timeout_s,
            progress=view.echo, on_update=view, force=force,
        )
    if json_out:
        print_json(_pool_json(record, replaced=replaced))
        return
    if not replaced:
        _echo(f"Pool {record.name!r}: no worker is lost or newly draining; nothing to repair.")
        return
    stands_for = {new: old for old, new in replacements.replaced_by(record).items()}
    _echo(f"Pool {record.name!r}: replaced " + ", ".join(
        f"{name} (a new worker for draining {stands_for[name]})" if name in stands_for else name
        for name in replaced) + ".")


def pool_extend(
    name: NameOpt = None,
    by: Annotated[
        str, duration_text_option("--by", unit="h",
                                  help="How much longer to keep the pool: 2d, 12h, 90m")
    ] = "1d",
) -> None:
    """Move a pool's expiry later (paused pools included)."""
    record = fleet.extend_pool(name, by_s=parse_duration(by, default_unit="h"), progress=_echo)
    _echo(f"Pool {record.name!r} now expires at {state.show_time(record.expires_at)}.")


def register(app: typer.Typer) -> None:
    """Add the four commands to ``app`` (the ``oa-vm`` app)."""
    app.command("pool-pause")(pool_pause)
    app.command("pool-resume")(pool_resume)
    app.command("pool-repair")(pool_repair)
    app.command("pool-extend")(pool_extend)
