"""``oa-vm prices refresh``: fetch live figures from every source and merge them into the
user's catalog copy."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from pathlib import Path
from urllib.parse import urlsplit

from oa_vm.cost.pricing import aws, azure
from oa_vm.cost.pricing.aws import AwsFetch, fetch_stream
from oa_vm.cost.pricing.azure import AzureFetch, fetch_json
from oa_vm.cost.pricing.catalog import (
    CATALOG_SCHEMA,
    LiveQuote,
    PriceEntry,
    load_catalog,
    user_catalog_path,
)
from oa_vm.model import state

SOURCES = {source.cloud: source for source in (azure.SOURCE, aws.SOURCE)}
CATALOG_MARKER = f'{{\n  "schema": {CATALOG_SCHEMA},\n  "about": ['.encode()
"""How a written catalog starts (:meth:`PriceCatalog.to_json`'s first keys, two-space indent):
a ``--dest`` file that starts so is one a refresh may replace without ``--force``."""
"""Each cloud's live price source, as its module declares it."""


@dataclass
class RefreshReport:
    """What a refresh did.

    Attributes:
        dest: the catalog file written (or that would have been).
        written: whether it was written.
        changed: one line per figure that changed (``aws us-east-1 m8i.2xlarge on-demand ...``).
        confirmed: figures fetched live and found unchanged (their date was still updated).
        missing: catalog entries the live source had no figure for (kept as they were).
        errors: cloud -> why its fetch failed (its figures were kept as they were).
        kept_spot: clouds whose spot figures were kept because the source has none (AWS).
    """

    dest: Path
    written: bool = False
    changed: list[str] = field(default_factory=list)
    confirmed: int = 0
    missing: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    kept_spot: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line for people."""
        if not self.written:
            failed = "; ".join(f"{c}: {why}" for c, why in self.errors.items())
            return f"prices not refreshed, {self.dest} left as it was ({failed or 'nothing to do'})"
        parts = [f"refreshed {self.dest}: {len(self.changed)} figure(s) changed",
                 f"{self.confirmed} confirmed"]
        if self.missing:
            parts.append(f"{len(self.missing)} without a live figure (kept)")
        if self.kept_spot:
            parts.append(f"spot kept from the catalog for {', '.join(self.kept_spot)} "
                         "(not in its public price list)")
        if self.errors:
            parts.append("failed: " + "; ".join(f"{c}: {w}" for c, w in self.errors.items()))
        return ", ".join(parts)


def _describe_error(exc: BaseException) -> str:
    """One short phrase; HTTP errors name the status or failure and the URL without its query."""
    url = getattr(getattr(exc, "request", None), "url", None)
    if isinstance(url, str):
        parts = urlsplit(url)
        status = getattr(getattr(exc, "response", None), "status_code", None)
        what = f"HTTP {status}" if status else type(exc).__name__
        return f"{what} from {parts.scheme}://{parts.netloc}{parts.path}"
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:200] if text else type(exc).__name__


def refresh_catalog(
    *,
    clouds: Sequence[str] | None = None,
    azure_fetch: AzureFetch = fetch_json,
    aws_fetch: AwsFetch = fetch_stream,
    dest: Path | None = None,
    source: Path | None = None,
    today: date | None = None,
) -> RefreshReport:
    """Replace catalog figures with live ones and write the result atomically.

    Every (region, size) of the current catalog is looked up for each cloud asked. A cloud whose
    fetch or parse fails keeps its figures; nothing is written unless at least one cloud
    succeeded. Base URLs come from ``OA_VM_AZURE_PRICES_URL`` / ``OA_VM_AWS_PRICES_URL`` when set
    (tests point them at a loopback server).

    Args:
        clouds: clouds to refresh (default: every cloud in the catalog).
        azure_fetch: fetches one Azure Retail Prices API page.
        aws_fetch: streams one AWS offer file.
        dest: where to write (default ``$OA_VM_HOME/prices.json``); ``prices refresh --dest``
            checks it first with :data:`CATALOG_MARKER` (the ``--out`` rule).
        source: the catalog to start from (default: what :func:`load_catalog` reads).
        today: the date stamped on refreshed figures (default: today, UTC).

    Raises:
        InvalidInputError: an unknown cloud was asked.
        PriceCatalogError: the starting catalog cannot be read.
    """
    catalog = load_catalog(source)
    target = dest or user_catalog_path()
    asked = [catalog.check_cloud(c) for c in (clouds or catalog.clouds())]
    report = RefreshReport(dest=target)
    stamp = (today or datetime.now(UTC).date()).isoformat()
    live: dict[tuple[str, str, str, bool], LiveQuote] = {}
    fetchers: dict[str, AzureFetch | AwsFetch] = {azure.SOURCE.cloud: azure_fetch,
                                                  aws.SOURCE.cloud: aws_fetch}
    succeeded: list[str] = []
    for cloud in dict.fromkeys(asked):
        sizes, regions = catalog.sizes(cloud), catalog.regions(cloud)
        try:
            quotes = _fetch_cloud(cloud, regions, sizes, fetchers.get(cloud))
        except Exception as exc:  # any failure leaves this cloud as it was
            report.errors[cloud] = _describe_error(exc)
            continue
        succeeded.append(cloud)
        for q in quotes:
            live[(q.cloud, q.region.lower(), q.size, q.spot)] = q
        if not SOURCES[cloud].has_spot:
            report.kept_spot.append(cloud)
    if not succeeded:
        return report
    entries = [
        _merge(entry, live, stamp, report) if entry.cloud in succeeded else entry
        for entry in catalog.entries
    ]
    refreshed = replace(catalog, entries=tuple(entries), refreshed=stamp, path=target)
    state.atomic_write_json(target, refreshed.to_json())
    report.written = True
    return report


def _fetch_cloud(
    cloud: str,
    regions: Sequence[str],
    sizes: Sequence[str],
    fetch: AzureFetch | AwsFetch | None,
) -> list[LiveQuote]:
    source = SOURCES.get(cloud)
    if source is None:
        raise ValueError(f"no live price source for {cloud}")
    base = os.environ.get(source.url_env) or source.url
    return [quote for region in regions for quote in source.quotes(fetch, base, region, sizes)]


def _merge(
    entry: PriceEntry,
    live: Mapping[tuple[str, str, str, bool], LiveQuote],
    stamp: str,
    report: RefreshReport,
) -> PriceEntry:
    where = f"{entry.cloud} {entry.region} {entry.size}"
    updated = entry
    od = live.get((entry.cloud, entry.region.lower(), entry.size, False))
    if od is None:
        report.missing.append(f"{where} on-demand")
    else:
        _note_change(report, f"{where} on-demand", entry.on_demand, od.price)
        updated = replace(updated, on_demand=od.price, source=od.source, date=stamp,
                          basis=f"live: {SOURCES[entry.cloud].name}")
    spot = live.get((entry.cloud, entry.region.lower(), entry.size, True))
    if spot is not None:
        _note_change(report, f"{where} spot", entry.spot, spot.price)
        updated = replace(updated, spot=spot.price, spot_source=spot.source, spot_date=stamp,
                          spot_basis=f"live: {SOURCES[entry.cloud].name} (Spot meter)")
    elif SOURCES[entry.cloud].has_spot:
        report.missing.append(f"{where} spot")
    return updated


def _note_change(report: RefreshReport, what: str, old: float | None, new: float) -> None:
    if old is not None and math.isclose(old, new, rel_tol=0, abs_tol=1e-9):
        report.confirmed += 1
    else:
        report.changed.append(f"{what} {old} -> {new}")
