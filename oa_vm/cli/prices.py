"""``oa-vm prices``: show the price catalog, or refresh it from the clouds' public price lists.

Mounted by :mod:`oa_vm.cli.app` as a sub-app. The catalog module is imported inside the commands and
``requests`` only when a refresh fetches, so ``oa-vm --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from oa_vm.kit import safe_fs
from oa_vm.kit.clikit import plain_typer, print_json
from oa_vm.kit.tables import render_table

if TYPE_CHECKING:
    from oa_vm.cost.pricing import PriceCatalog, PriceEntry

CloudOpt = Annotated[
    str | None, typer.Option("--cloud", help="Only this cloud: aws or azure.")
]

prices_app = plain_typer("Show what a worker-hour costs (oa-vm's price catalog), or refresh it.",
                         invoke_without_command=True)


def _kind(basis: str | None) -> str:
    """The first word of a figure's basis: list, derived, estimate or live."""
    text = (basis or "").strip().lower()
    for kind in ("list", "derived", "estimate", "live"):
        if text.startswith(kind):
            return kind
    return "-"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}".rstrip("0").rstrip(".")


def _origin(catalog: PriceCatalog) -> str:
    from oa_vm.cost.pricing import SHIPPED_CATALOG

    if catalog.path == SHIPPED_CATALOG:
        return f"shipped with oa-vm, compiled {catalog.generated}"
    return f"refreshed {catalog.refreshed or catalog.generated}"


def render_catalog(catalog: PriceCatalog, entries: list[PriceEntry]) -> str:
    """The catalog entries as a table, with where the figures come from."""
    rows = [
        (
            e.cloud, e.region, e.size, _rate(e.on_demand), _kind(e.basis), _rate(e.spot),
            _kind(e.spot_basis) if e.spot is not None else "-", e.date,
        )
        for e in entries
    ]
    headers = ("CLOUD", "REGION", "SIZE", "ON-DEMAND/H", "BASIS", "SPOT/H", "SPOT BASIS", "DATE")
    sources = sorted({e.source for e in entries} | {e.spot_source or "" for e in entries} - {""})
    lines = [
        f"Price catalog {catalog.path} ({_origin(catalog)}); USD per hour, Linux.",
        render_table(headers, rows),
        "",
        "Sources: " + ", ".join(sources),
        "Basis: list = as published; derived = computed from a list price; estimate = no "
        "published figure at hand; live = fetched by 'oa-vm prices refresh'.",
    ]
    return "\n".join(lines)


@prices_app.callback()
def show(
    ctx: typer.Context,
    cloud: CloudOpt = None,
    region: Annotated[str | None, typer.Option("--region", help="Only this region.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the entries as JSON.")] = False,
) -> None:
    """Show the catalog: size, region, on-demand and spot $/hour, and the date of each figure."""
    if ctx.invoked_subcommand is not None:
        return
    from oa_vm.cost.pricing import load_catalog

    catalog = load_catalog()
    entries = catalog.select(cloud=cloud, region=region)
    if as_json:
        print_json({
            "path": str(catalog.path),
            "generated": catalog.generated,
            "refreshed": catalog.refreshed,
            "entries": [e.to_json() for e in entries],
        })
        return
    typer.echo(render_catalog(catalog, entries))


@prices_app.command("refresh")
def refresh(
    cloud: CloudOpt = None,
    dest: Annotated[
        Path | None, typer.Option("--dest", help="Write here, not to $OA_VM_HOME/prices.json.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    force: Annotated[bool, typer.Option(
        "--force", help="Replace a file at --dest that is not a price catalog.")] = False,
) -> None:
    """Fetch live prices (Azure Retail Prices API, AWS price list) into your catalog copy.

    AWS's offer files are large (hundreds of MB per region) and take minutes; refresh only
    Azure for a quick update. AWS spot prices are not in its price list, so they are kept.
    """
    from oa_vm.cost.pricing import PriceRefreshError, refresh_catalog
    from oa_vm.cost.pricing.refresh import CATALOG_MARKER

    if dest is not None:  # the --out rule, before anything is fetched
        safe_fs.check_out(dest, marker=CATALOG_MARKER, force=force, option="--dest")
    report = refresh_catalog(clouds=[cloud] if cloud else None, dest=dest)
    if as_json:
        print_json({
            "dest": str(report.dest),
            "written": report.written,
            "changed": report.changed,
            "confirmed": report.confirmed,
            "missing": report.missing,
            "errors": report.errors,
            "kept_spot": report.kept_spot,
        })
    if not report.written:
        raise PriceRefreshError(report.summary())
    if not as_json:
        typer.echo(report.summary())
    if report.errors:
        raise typer.Exit(1)
