"""``oa-vm smoke``: prove a cloud account end to end with one worker and one task.

Registered on the main app by :func:`register` (one line in :mod:`oa_vm.cli.app`). The plan and the
timeline are :mod:`oa_vm.cli.smoke_plan`, the run :mod:`oa_vm.cli.smoke_run`. Exit codes: 0 every
phase worked, 1 a phase failed (the verdict names it), 2 bad input or a plan over
``--max-cost-usd`` (nothing created), 130 interrupted (after cleaning up).
"""

from __future__ import annotations

from typing import Annotated

import typer

from oa_vm.cli import pool_options as pool_opts
from oa_vm.cli.common import YesOpt, asking
from oa_vm.cli.common import echo as _echo
from oa_vm.cli.common import err as _err
from oa_vm.cli.smoke_plan import DEFAULT_MAX_COST_USD
from oa_vm.errors import InvalidInputError
from oa_vm.kit.clikit import EXIT_INTERRUPTED, print_json, target_option
from oa_vm.kit.duration_options import duration_option


def smoke(
    cloud: Annotated[str, typer.Option(help="aws or azure.")],
    region: Annotated[str | None, typer.Option(help="Region (the cloud's default).")] = None,
    max_cost_usd: Annotated[
        float, typer.Option("--max-cost-usd", help="Refuse when the most it can spend is more.")
    ] = DEFAULT_MAX_COST_USD,
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep the pool at the end (prints how to remove it).")
    ] = False,
    name: Annotated[
        str | None, target_option("--pool", "-n", "--name", what="pool",
                                    help="Pool name (smoke-<time>).")
    ] = None,
    size: Annotated[str | None, typer.Option(help="Worker size (cloud default).")] = None,
    image: Annotated[
        str | None, target_option("--image", what="image",
                                    help="The prepared image (default: the region's newest).")
    ] = None,
    delete_image: Annotated[
        bool, typer.Option("--delete-image", help="Delete an image the smoke built, at the end.")
    ] = False,
    allow_cidr: pool_opts.AllowCidrOpt = None,
    wait_timeout: Annotated[
        float | None,
        duration_option("--wait-timeout", unit="s",
                        help="The wait phase's deadline; default pool-wait's, 70m"),
    ] = None,
    egress: pool_opts.EgressOpt = None,
    plan_only: Annotated[
        bool, typer.Option("--plan", help="Show the plan and the most it can spend; offline.")
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print a JSON document.")] = False,
    yes: YesOpt = False,
) -> None:
    """Prove a cloud account: one worker, one test_small task scored, everything removed."""
    from oa_vm.cli.smoke_run import SmokeOptions, SmokeRun, make_plan

    opts = SmokeOptions(
        cloud=cloud, region=region, size=size, name=name, max_cost_usd=max_cost_usd, keep=keep,
        allow_cidrs=list(allow_cidr or []), image=image, delete_image=delete_image,
        wait_timeout_s=wait_timeout, egress=egress,
    )
    import time

    from oa_vm.clouds import check_name_free

    started = time.monotonic()
    plan = make_plan(opts)
    check_name_free(plan.pool)  # the smoke removes only what it made; --plan refuses it too
    refusal = plan.refusal()
    if plan_only:
        pool_opts.warn_if_open_to_all(opts.allow_cidrs)
        print_json(plan.to_json()) if json_out else _echo(plan.describe())
    # the same refusal with --plan as without: a plan the smoke would refuse does not exit 0
    if refusal:
        raise InvalidInputError(refusal)
    if plan_only:
        return
    from oa_vm import api
    from oa_vm.kit import timings

    pool_opts.ensure_engine(cloud)
    took = timings.IMAGE_BUILD.text()
    build = (f", building the {plan.region} image first ({took})"
             if plan.image_plan is not None else "")
    say = _err if json_out else _echo
    # all it says, before the question
    with asking(f"Run the smoke{build} (it can spend up to ${plan.max_cost_usd:.2f})?", yes):
        pool_opts.warn_if_open_to_all(opts.allow_cidrs)
        if not opts.allow_cidrs:
            opts.allow_cidrs = [api.detect_caller_cidr()]
            _err(f"SSH will be open to {opts.allow_cidrs[0]} only (your address; see "
                 "--allow-cidr)")
        say(plan.describe())
    runner = SmokeRun(opts, plan, say, plan_s=time.monotonic() - started)
    timeline = runner.run()
    if json_out:
        print_json({"plan": plan.to_json(), **timeline.to_json()})
    else:
        _echo(timeline.table())
        _echo(timeline.verdict())
    if runner.interrupted:
        raise typer.Exit(EXIT_INTERRUPTED)
    if timeline.failed is not None or timeline.cleanup_failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``smoke`` to the ``oa-vm`` app."""
    app.command("smoke")(smoke)
