"""``oa-vm image-create``, ``image-list``, ``image-delete`` and ``config``.

Registered on the main app by :func:`register` (one line in :mod:`oa_vm.cli.app`). Thin: each
command calls :mod:`oa_vm.images` or :mod:`oa_vm.model.config` and formats the result. Pulumi
loads only inside the commands that need it.
"""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from oa_vm.api import owner
from oa_vm.cli import pool_options as pool_opts
from oa_vm.cli.common import YesOpt, asking, show_removal
from oa_vm.cli.common import echo as _echo
from oa_vm.cli.common import err as _err
from oa_vm.errors import InvalidInputError
from oa_vm.kit.clikit import plain_typer, print_json
from oa_vm.kit.tables import money, render_table

if TYPE_CHECKING:
    from oa_vm.clouds.base import PoolSpec

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


def build_missing_image(spec: PoolSpec, *, stdout_taken: bool = False, yes: bool = False) -> None:
    """``--build-image`` of ``pool-create`` and ``sweep``: build the first region's image now
    when it has none (``image-create``, whose own plan, price and question come first; ``yes``
    skips the question). Nothing happens without ``--build-image``, with ``--image``, or when
    the region already has a usable image. ``stdout_taken``: the command's stdout is for its
    one result (its ``--json`` document, a sweep's summary), so the image's plan and build are
    said on stderr with the progress.
    """
    if pool_opts.needs_image_build(spec):
        with contextlib.redirect_stdout(sys.stderr) if stdout_taken else contextlib.nullcontext():
            image_create(cloud=spec.cloud, region=pool_opts.first_region(spec),
                         size=spec.size, allow_cidr=spec.allow_cidrs, yes=yes)


def image_create(
    cloud: Annotated[str, typer.Option(help="aws or azure.")],
    region: Annotated[str, typer.Option(help="The region the image is for.")],
    size: Annotated[str | None, typer.Option(help="Builder size (cloud default).")] = None,
    allow_cidr: pool_opts.AllowCidrOpt = None,
    plan_only: pool_opts.PlanOpt = False,
    iso: Annotated[str | None, typer.Option(
        "--iso", help="Your own Windows ISO instead of dockur's download from Microsoft: a "
        "local PATH (uploaded to the builder over SSH), an https:// URL (an Azure blob URL with "
        "its SAS) or s3://bucket/key (presigned for the builder).")] = None,
    json_out: JsonOpt = False,
    yes: YesOpt = False,
) -> None:
    """Build a prepared Windows image for a region (once; pools of the region start from it)."""
    from oa_vm import images

    provider = images.cloud_provider(cloud)
    cidrs = list(allow_cidr or [])
    if plan_only:
        plan = images.plan_image(provider, region, size=size, allow_cidrs=cidrs, owner=owner(),
                                 iso=iso)
        print_json(plan.to_json()) if json_out else _echo(plan.describe())
        pool_opts.warn_if_open_to_all(cidrs)
        return
    from oa_vm.clouds import iso_source

    if iso:  # before the engine, the address and anything made
        iso_source.check(iso)
    pool_opts.ensure_engine(cloud)
    with asking(f"Build the {cloud} image for {region}?", yes):  # all it says, before the question
        if not cidrs:
            from oa_vm.api import detect_caller_cidr

            cidrs = [detect_caller_cidr()]
            _err(f"SSH will be open to {cidrs[0]} only (your address; see --allow-cidr)")
        pool_opts.warn_if_open_to_all(cidrs)  # the build host's SSH, as a pool's
        plan = images.plan_image(provider, region, size=size, allow_cidrs=cidrs, owner=owner(),
                                 iso=iso)
        if not json_out:
            _echo(plan.describe())
    record = images.create_image(
        provider, region, size=size, allow_cidrs=cidrs, owner=owner(),
        progress=_err if json_out else _echo, iso=iso,
    )
    if json_out:
        print_json(record.to_json())
        return
    _echo(f"Image {record.id} is ready. Pools in {region} now start from it:")
    _echo(f"  oa-vm pool-create --cloud {cloud} --region {region}")


def image_list(
    cloud: Annotated[str | None, typer.Option(
        help="aws or azure: also list the images the account holds (by their oa-vm:image "
             "tags, a teammate's too), with the cloud's CLI.")] = None,
    region: Annotated[str | None, typer.Option(
        help="With --cloud: only this region (AWS: the region asked; default us-east-1).")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """List prepared images: cloud, region, ID, size, created, licence expiry, $/month."""
    from oa_vm import images
    from oa_vm.model import image_records, state

    listed: list[tuple[image_records.ImageRecord, str | None]]
    records, unreadable = image_records.scan_records()
    for problem in unreadable:  # never hidden: the image it names may still be billing
        _err(f"oa-vm: warning: {problem}")
    if cloud is None:
        if region is not None:
            raise InvalidInputError("--region needs --cloud (aws or azure)")
        listed = [(r, None) for r in records]
    else:
        found = images.list_images(images.cloud_provider(cloud), region)
        listed = [(item.record, item.found) for item in found]
    if json_out:
        print_json([
            {**r.to_json(), "expired": r.is_expired(), **({"found": where} if where else {})}
            for r, where in listed
        ])
        return
    if unreadable and not listed:
        return
    if not listed:
        where_hint = f" in the {cloud} account" if cloud else ""
        _echo(f"No images{where_hint}. Build one per region with: oa-vm image-create --cloud "
              f"{cloud or 'aws'} --region {region or 'us-east-1'}")
        return
    rows = [
        [r.cloud, r.region, r.id, f"{r.size_gb} GB",
         (state.format_time(r.created_at) or "")[:16],
         (state.format_time(r.licence_expires) or "")[:10]
         + (" (EXPIRED)" if r.is_expired() else ""),
         money(r.storage_usd_per_month), r.state, *([where] if cloud else [])]
        for r, where in listed
    ]
    headers = ["CLOUD", "REGION", "ID", "SIZE", "CREATED", "LICENCE EXPIRES", "$/MONTH", "STATE"]
    _echo(render_table(headers + (["FOUND"] if cloud else []), rows))


def image_delete(
    image_id: Annotated[str, typer.Argument(help="The image's ID (see oa-vm image-list).")],
    yes: YesOpt = False,
) -> None:
    """Delete a prepared image (its snapshot stops billing; existing pools are unaffected)."""
    from oa_vm import images
    from oa_vm.model import image_records

    record = image_records.load(image_records.check_image_id(image_id))
    with asking(f"Delete image {record.id} ({record.cloud} {record.region})?", yes):
        pass
    report = images.delete_image(record.id, progress=_echo)
    show_removal(report, f"image {record.id!r}")
    _echo(f"Image {record.id} deleted.")


config_app = plain_typer("Show or change oa-vm's settings (default cloud, cloud disk size).",
                         invoke_without_command=True)


@config_app.callback()
def config_show(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """Show every setting and its value."""
    if ctx.invoked_subcommand is not None:
        return
    from oa_vm.model import config

    values = config.load()
    if json_out:
        print_json(values)
        return
    rows = [[key, values.get(key, "(not set)"), about] for key, (about, _) in config.KEYS.items()]
    _echo(render_table(["SETTING", "VALUE", "WHAT"], rows))


# a value that starts with '-' (disk-gb -1) is the value, refused by the setting's own rule,
# not an unknown option
@config_app.command("set", context_settings={"ignore_unknown_options": True})
def config_set(
    key: Annotated[str, typer.Argument(help="default-cloud or disk-gb.")],
    value: Annotated[str, typer.Argument(help="The value.")],
) -> None:
    """Set one setting, e.g. 'oa-vm config set default-cloud aws'."""
    from oa_vm.model import config

    stored = config.set_value(key, value)
    _echo(f"{key} = {stored}")


@config_app.command("unset")
def config_unset(key: Annotated[str, typer.Argument(help="default-cloud or disk-gb.")]) -> None:
    """Forget one setting."""
    from oa_vm.model import config

    config.unset(key)
    _echo(f"{key} unset")


def register(app: typer.Typer) -> None:
    """Add the image and config commands to the ``oa-vm`` app."""
    app.command("image-create")(image_create)
    app.command("image-list")(image_list)
    app.command("image-delete")(image_delete)
    app.add_typer(config_app, name="config")
