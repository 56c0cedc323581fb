"""``oa-vm``: create, wait for, inspect, tunnel to and clean up pools of WAA workers.

A thin layer: each command parses its options, calls one function of :mod:`oa_vm.api` and formats
what it returns. Heavy modules (requests, paramiko, Pulumi) are imported inside commands so that
``oa-vm --help`` starts fast and never loads Pulumi.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from oa_vm import api
from oa_vm.cli import images as cli_images
from oa_vm.cli import pool_options as pool_opts
from oa_vm.cli.common import NameOpt, YesOpt, asking, interrupt_says, show_removal
from oa_vm.cli.common import echo as _echo
from oa_vm.cli.common import err as _err
from oa_vm.clouds import check_name_free, facts, load_pool, pool_exists
from oa_vm.errors import InvalidInputError, OaVmError, PoolInUseError
from oa_vm.kit.clikit import plain_typer, print_json, run_main, target_option, typed_name
from oa_vm.kit.duration_options import duration_text_option
from oa_vm.model import state

app = plain_typer("Pools of Windows Agent Arena workers: create, wait, status, tunnel, clean up.",
                  name="oa-vm", no_args_is_help=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]




def _parse_faults(items: list[str]) -> dict[str, str]:
    faults: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise InvalidInputError(f"--fault {item!r}: use KEY=VALUE, e.g. --fault latency=0.2")
        faults[key.strip()] = value.strip()
    return faults


def _parse_ssh_via(via: str | None, key: str | None) -> dict[str, Any] | None:
    """``user@host:port`` plus a key file -> the local provider's ``ssh_via``."""
    if via is None:
        if key is not None:
            raise InvalidInputError("--ssh-key needs --ssh-via user@host:port")
        return None
    from oa_vm.clouds.hosts.facts import HostAddress

    try:
        address = HostAddress.parse(via, "--ssh-via", port_required=True)
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from exc
    if key is None:
        raise InvalidInputError("--ssh-via needs --ssh-key PATH (the private key to log in with)")
    return {"host": address.host, "port": address.port, "user": address.user, "key_path": key}


@app.command("pool-create")
def pool_create(
    name: NameOpt = None,
    cloud: Annotated[
        str | None,
        typer.Option(help="local, aws, azure, or ssh (your own hosts) (default: 'oa-vm "
                          "config'; else asked)."),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(help=f"Number of workers (default {api.DEFAULT_WORKERS}; --cloud ssh: "
                          "every --host's --workers-per-host, which a --workers given must "
                          "equal)."),
    ] = None,
    size: pool_opts.SizeOpt = None,
    region: pool_opts.RegionOpt = None,
    spot: pool_opts.SpotOpt = False,
    ttl_hours: pool_opts.TtlOpt = pool_opts.TTL_DEFAULT,
    allow_cidr: pool_opts.AllowCidrOpt = None,
    fault: Annotated[
        list[str] | None, typer.Option(help="Local pools: fault knob KEY=VALUE (repeatable).")
    ] = None,
    ssh_via: Annotated[
        str | None, typer.Option(help="Local pools: reach workers over SSH at user@host:port.")
    ] = None,
    ssh_key: Annotated[
        str | None, typer.Option(help="Key file for --ssh-via, or for every --host.")
    ] = None,
    host: Annotated[
        list[str] | None,
        typer.Option(help="--cloud ssh: a host of yours with KVM, user@host[:port] (repeatable)."),
    ] = None,
    workers_per_host: Annotated[
        int, typer.Option(help="Workers sharing one host (ssh, aws, azure; local: per "
                                "process).")
    ] = 1,
    price_per_hour: Annotated[
        float | None,
        typer.Option(help="Local pools: pretend $/hour per worker; own hosts: their $/hour "
                          "per worker (default 0)."),
    ] = None,
    tasks_dir: Annotated[
        str | None, typer.Option(help="Local pools: serve this WAA-layout task folder.")
    ] = None,
    image: pool_opts.ImageOpt = None,
    build_image: pool_opts.BuildImageOpt = False,
    iso: Annotated[
        str | None, typer.Option(help="--cloud ssh: a host without a prepared image builds it "
                                      "from this Windows ISO file, not dockur's download.")
    ] = None,
    egress: pool_opts.EgressOpt = None,
    per_process: Annotated[
        int, typer.Option(help="Local pools: workers served by each process.")
    ] = 1,
    plan_only: pool_opts.PlanOpt = False,
    json_out: JsonOpt = False,
    yes: YesOpt = False,
) -> None:
    """Create a pool (shows the plan and its price first)."""
    cloud = pool_opts.choose_cloud(cloud)
    on_hosts = "--host" in facts(cloud).options
    if on_hosts and ssh_via is not None:
        raise InvalidInputError("--ssh-via is for local pools; name your own hosts with --host")
    regions = pool_opts.parse_regions(region)
    spec = api.build_spec(
        name=name, cloud=cloud, workers=workers, size=size, regions=regions, spot=spot,
        ttl_hours=ttl_hours, allow_cidrs=list(allow_cidr or []),
        faults=_parse_faults(list(fault or [])),
        ssh_via=None if on_hosts else _parse_ssh_via(ssh_via, ssh_key),
        price_per_hour=price_per_hour, tasks_dir=tasks_dir, per_process=per_process,
        egress=egress, hosts=list(host or []), ssh_key=ssh_key if on_hosts else None,
        workers_per_host=workers_per_host, image=image, build_image=build_image,
    )
    if iso and "--iso" not in facts(cloud).options:
        raise InvalidInputError("--iso is for your own hosts (--cloud ssh); a cloud image "
                                "takes it at: oa-vm image-create --iso PATH")
    spec.iso = iso
    if plan_only:
        # refused as its create is: no plan of a pool that cannot be made under that name
        check_name_free(spec.name)
        pool_opts.warn_if_open_to_all(spec.allow_cidrs)
        plan = api.plan_pool(spec)
        print_json(plan.to_json()) if json_out else _echo(plan.describe())
        return
    pool_opts.preflight(spec)  # a missing image or bad size: one line, nothing written
    pool_opts.ensure_engine(spec.cloud)
    with asking(f"Create pool {spec.name!r}?", yes):  # all it says, before the question
        pool_opts.warn_if_open_to_all(spec.allow_cidrs)
        cli_images.build_missing_image(spec, stdout_taken=json_out, yes=yes)
        if "--allow-cidr" in facts(spec.cloud).options and not spec.allow_cidrs:
            spec.allow_cidrs = [api.detect_caller_cidr()]
            _err(f"SSH will be open to {spec.allow_cidrs[0]} only (your address; see "
                 "--allow-cidr)")
        plan = api.plan_pool(spec)
        if not json_out:
            _echo(plan.describe())
            _echo(f"Pool {spec.name!r} expires at {state.show_time(spec.expires_at)}")
    with interrupt_says(lambda: _create_left(spec.name)):
        record = api.create_pool(spec, progress=_err if json_out else _echo)
    if json_out:
        from oa_vm.cli.pool_views import status_json

        print_json(status_json(record))
        return
    _echo(f"Pool {record.name!r} created with {len(record.workers)} worker(s).")
    _echo(f"Next: oa-vm pool-wait --pool {record.name}")


def _create_left(name: str) -> str:
    """What an interrupted create left, and what to do with it."""
    if pool_exists(name):
        return (f"pool {name!r} was not created whole; remove what is left with 'oa-vm "
                f"pool-cleanup --pool {name}'")
    return f"pool {name!r} was not created and nothing of it is left"


@app.command("pool-wait")
def pool_wait(
    name: NameOpt = None,
    timeout: Annotated[
        str,
        duration_text_option("--timeout", unit="m", keywords=("auto",),
                             help="How long to wait: 30m, 90s, 1h, or auto for what the "
                                  "pool's start takes, 70m from an image"),
    ] = "auto",
) -> None:
    """Wait until every worker of the pool is ready, showing each worker's phase."""
    from oa_vm.cli.wait_display import wait_display

    pool = api.resolve_name(name)
    timeout_s = pool_opts.wait_timeout(load_pool(pool), timeout)
    left = (f"pool {pool!r} is left as it is, its workers still starting: wait again with "
            f"'oa-vm pool-wait --pool {pool}', or remove it with 'oa-vm pool-cleanup --pool "
            f"{pool}'")
    # live on a terminal, heartbeat lines otherwise
    with interrupt_says(lambda: left), wait_display(_echo, timeout_s) as show:
        record = api.wait_pool(pool, timeout_s=timeout_s, on_update=show)
    _echo(f"Pool {record.name!r} is ready: {len(record.workers)} worker(s).")


@app.command("pool-status")
def pool_status(
    name: NameOpt = None,
    json_out: JsonOpt = False,
    refresh: Annotated[bool, typer.Option(
        help="Ask the cloud, not just the record (a local pool: whether each worker answers)."
    )] = False,
) -> None:
    """Show a pool: its workers, their state and URLs, its cost so far."""
    from oa_vm.cli.pool_views import status_json, status_text

    record = api.pool_status(name, refresh=refresh)
    if json_out:
        print_json(status_json(record))
        return
    _echo(status_text(record))


@app.command("pool-list")
def pool_list(json_out: JsonOpt = False) -> None:
    """List every pool with its cloud, workers, age, state and cost so far."""
    from oa_vm.cli.pool_views import list_json, list_text, unreadable_lines

    items = api.list_pools()
    for line in unreadable_lines(items):
        _err(line)
    if json_out:
        print_json(list_json(items))
        return
    _echo(list_text(items))


def _pools(names: list[str]) -> str:
    """``pool 'a'``, ``pools 'a' and 'b'``."""
    return ("pools " if names[1:] else "pool ") + " and ".join(map(repr, names))


@app.command("pool-cleanup")
def pool_cleanup(
    names: Annotated[list[str] | None, typer.Option(
        "--pool", "-n", "--name", help="Pool name(s) (optional when only one exists); repeat it "
                                       "to remove several.")] = None,
    expired: Annotated[bool, typer.Option(help="Remove every pool past its expiry.")] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Remove a pool even while a run holds it (the "
                                           "run's tasks fail); default: refuse, or skip it "
                                           "with --expired.")
    ] = False,
    purge: Annotated[
        bool, typer.Option("--purge", help="Your own hosts (--cloud ssh): also remove each "
                                           "host's image cache (kept by default for the next "
                                           "pool).")
    ] = False,
    yes: YesOpt = False,
) -> None:
    """Remove everything a pool created, then its record (safe to run again).

    A pool a live run is using is not removed (one line names the run) unless --force.
    """
    if expired:
        if names:  # --expired chooses the pools itself
            raise InvalidInputError("use either --pool or --expired, not both")
        with asking("Remove every expired pool?", yes):
            pass
        reports = api.cleanup_expired(progress=_echo, force=force)
        unreadable = [name for name, r in reports.items() if r.unreadable]
        done = [r for r in reports.values() if r.skipped is None]
        in_use = len(reports) - len(done) - len(unreadable)
        _echo("No expired pools." if len(done) + in_use == 0 else
              f"Removed {len(done)} expired pool(s)"
              + (f"; skipped {in_use} in use (see above)." if in_use else "."))
        if unreadable:
            # Not a success: a pool whose record cannot be read may be past its expiry and billing.
            raise OaVmError(
                f"{len(unreadable)} pool record(s) unreadable, so not cleaned up: "
                f"{', '.join(unreadable)}; do what each one's line above says (fix or move an "
                "unreadable file by hand; remove a pool with no record by its name with "
                "'oa-vm pool-cleanup --pool NAME'), then run 'oa-vm pool-cleanup --expired' again"
            )
        return
    from oa_vm.model.lease import describe, live_holder

    # every pool checked (named, unknown, corrupt, in use) before any is removed
    pools = api.cleanup_names(names or [], typed_name(("--pool", "-n", "--name")) or "--pool",
                              purge=purge)
    present = [pool for pool in pools if state.exists(pool)]
    for pool in present:
        holder = None if force else live_holder(pool)
        if holder is not None:  # before asking: the answer would not matter
            raise PoolInUseError(pool, describe(holder), "pool-cleanup")
    # asked for every pool with something to remove: one whose record was removed by hand too
    asked = [pool for pool in pools if state.exists(pool) or not state.tombstone(pool).exists()]
    if asked:
        with asking(f"Remove {_pools(asked)} and everything {'they' if asked[1:] else 'it'} "
                    "created?", yes):
            pass
    left = []
    for pool in pools:  # the next pool is removed even when one left something: not left billing
        report = api.cleanup_pool(pool, progress=_echo, force=force, purge=purge)
        try:
            show_removal(report, f"pool {pool!r}")
        except OaVmError:
            left.append(pool)
            continue
        if report.removed:
            _echo(f"Pool {pool!r} removed.")
    if left:
        raise OaVmError(f"{_pools(left)} {'were' if left[1:] else 'was'} not fully removed; see "
                        "the lines above")


@app.command("pool-tunnel")
def pool_tunnel(
    name: NameOpt = None,
    worker: Annotated[str | None, target_option("--worker", what="worker",
                                                help="Only this worker.")] = None,
) -> None:
    """Open SSH tunnels to the pool's workers in the foreground (Ctrl-C closes them)."""
    from oa_vm.cli.tunnels import run_foreground

    run_foreground(api.resolve_name(name), worker, echo=_echo)


@app.command("doctor")
def doctor(
    fix: Annotated[
        bool, typer.Option("--fix", help="Install a missing Pulumi CLI into the oa-vm home.")
    ] = False,
) -> None:
    """Check the Pulumi engine, cloud credentials, vCPU quotas, the IAM/Scheduler permissions
    (AWS) and role (Azure) a pool needs, SSH tooling and the oa-vm home."""
    from oa_vm.cli.doctor import check_pulumi, install_pulumi, run_checks

    if fix and not check_pulumi().ok:
        _echo(f"installed {install_pulumi(progress=_echo)}")
    failed = 0
    for check in run_checks():
        mark = "ok  " if check.ok else "FAIL"
        line = f"[{mark}] {check.name}: {check.detail}"
        if not check.ok and check.fix:
            line += f" -> {check.fix}"
            failed += 1
        _echo(line)
    if failed:
        raise typer.Exit(1)


def _mount_prices() -> None:
    try:
        from oa_vm.cli.prices import prices_app
    except ImportError:  # the price catalog is optional for the pool commands
        return
    app.add_typer(prices_app, name="prices")


_mount_prices()
cli_images.register(app)

from oa_vm.cli.fleet import register as _register_fleet  # noqa: E402  (after the app exists)

_register_fleet(app)

from oa_vm.cli.smoke import register as _register_smoke  # noqa: E402

_register_smoke(app)

from oa_vm.kit.version import add_version_and_short_help  # noqa: E402

add_version_and_short_help(app, "oa-vm")


def main() -> None:
    """Console entry point."""
    run_main(app, "oa-vm", known=(OaVmError,))
