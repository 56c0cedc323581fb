"""The price catalog: what a worker-hour costs, per cloud, region and size, and where it comes from.

The catalog ships with the package as a dated data file (``oa_vm/data/prices.json``): USD per
hour, Linux, on-demand and spot, with the source page, the date and the basis of every figure.
``oa-vm prices refresh`` (:func:`refresh_catalog`) fetches live figures and writes them to
``$OA_VM_HOME/prices.json``, which then wins over the shipped file (:func:`load_catalog`).

Live sources, and the choices made for them:

- Azure: the Retail Prices API (public, no credentials), one filtered query per region, paged by
  ``NextPageLink``. It carries both pay-as-you-go and Spot meters, so both are refreshed.
- AWS: the public price list, one offer file per region
  (``/offers/v1.0/aws/AmazonEC2/current/<region>/index.json``). That file is hundreds of
  megabytes to gigabytes, so it is parsed as a stream (:func:`parse_aws_offer`, with ``ijson``'s
  C parser): one product or one term at a time, never the whole document, stopping once the
  on-demand terms are read. The
  AWS Pricing API would answer with far less data but needs signed (credentialed) requests.
  Spot prices are not in the public price list: a refresh keeps the catalog's dated AWS spot
  figures and says so.

A failed fetch leaves that cloud's figures as they were; the file is only written (atomically)
when at least one cloud was refreshed.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from oa_vm import state
from oa_vm.errors import InvalidInputError, OaVmError

CATALOG_SCHEMA = 1
SHIPPED_CATALOG = Path(__file__).resolve().parent / "data" / "prices.json"
USER_CATALOG_NAME = "prices.json"

AZURE_PRICES_URL = "https://prices.azure.com/api/retail/prices"
AWS_PRICES_URL = "https://pricing.us-east-1.amazonaws.com"
AWS_OFFER_PATH = "/offers/v1.0/aws/AmazonEC2/current/{region}/index.json"
AZURE_URL_ENV = "OA_VM_AZURE_PRICES_URL"
AWS_URL_ENV = "OA_VM_AWS_PRICES_URL"

# (connect, read) seconds. The read timeout bounds each socket read, not the whole download,
# which is what a multi-gigabyte offer file needs.
FETCH_TIMEOUT = (10.0, 60.0)
AZURE_MAX_PAGES = 50


class PriceCatalogError(OaVmError):
    """A price catalog file exists but cannot be used. Nothing is deleted."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(
            f"price catalog {path} is unreadable: {reason}; delete it to fall back to the "
            "shipped catalog, or run 'oa-vm prices refresh' to rewrite it"
        )


class PriceRefreshError(OaVmError):
    """A refresh fetched nothing usable; the catalog was left as it was."""


# --- the catalog -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PriceEntry:
    """The price of one size in one region of one cloud, in USD per hour (Linux).

    Attributes:
        cloud: ``aws`` or ``azure``.
        region: the cloud's region code (``us-east-1``, ``eastus``).
        size: the instance size (``m8i.2xlarge``, ``Standard_D8s_v5``).
        on_demand: on-demand (pay-as-you-go) price.
        spot: spot price, or None when the catalog has none.
        source: where the on-demand figure comes from (a public page or API URL).
        date: the day the on-demand figure was taken (ISO date).
        basis: how it was obtained: a list price as published, derived from one, or live.
        spot_source, spot_date, spot_basis: the same for the spot figure.
    """

    cloud: str
    region: str
    size: str
    on_demand: float
    spot: float | None
    source: str
    date: str
    basis: str = ""
    spot_source: str | None = None
    spot_date: str | None = None
    spot_basis: str | None = None

    def price(self, spot: bool = False) -> float:
        """The hourly price, spot or on-demand.

        Raises:
            InvalidInputError: spot was asked and the catalog has no spot figure here.
        """
        if not spot:
            return self.on_demand
        if self.spot is None:
            raise InvalidInputError(
                f"no spot price for {self.cloud} {self.size} in {self.region}; "
                "drop --spot or run 'oa-vm prices refresh'"
            )
        return self.spot

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict, in the field order of the shipped file."""
        return {
            "cloud": self.cloud,
            "region": self.region,
            "size": self.size,
            "on_demand": self.on_demand,
            "spot": self.spot,
            "source": self.source,
            "date": self.date,
            "basis": self.basis,
            "spot_source": self.spot_source,
            "spot_date": self.spot_date,
            "spot_basis": self.spot_basis,
        }

    @classmethod
    def from_json(cls, data: Any) -> PriceEntry:
        """Inverse of :meth:`to_json`. Raises ``ValueError`` when a field is missing or wrong."""
        if not isinstance(data, dict):
            raise ValueError("an entry is not a JSON object")
        for key in ("cloud", "region", "size", "source", "date"):
            if not isinstance(data.get(key), str) or not data[key]:
                raise ValueError(f"entry field {key!r} is missing or not a string")
        where = f"{data['cloud']} {data['size']} {data['region']}"
        spot = data.get("spot")
        return cls(
            cloud=data["cloud"],
            region=data["region"],
            size=data["size"],
            on_demand=_price_field(data.get("on_demand"), f"on_demand of {where}"),
            spot=None if spot is None else _price_field(spot, f"spot of {where}"),
            source=data["source"],
            date=data["date"],
            basis=str(data.get("basis") or ""),
            spot_source=_opt_str(data.get("spot_source")),
            spot_date=_opt_str(data.get("spot_date")),
            spot_basis=_opt_str(data.get("spot_basis")),
        )


def _price_field(value: Any, what: str) -> float:
    # bool is an int subclass: refuse it explicitly rather than read True as $1/h.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{what} is not a number")
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{what} is negative or not finite")
    return number


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True)
class PriceCatalog:
    """A loaded catalog: entries plus the per-cloud default region and size.

    Lookups are case-insensitive on region and size (Azure treats sizes that way) and return the
    catalog's own spelling.
    """

    path: Path
    entries: tuple[PriceEntry, ...]
    defaults: Mapping[str, Mapping[str, str]]
    generated: str = ""
    refreshed: str | None = None
    about: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    def clouds(self) -> list[str]:
        """Clouds that have at least one entry, sorted."""
        return sorted({e.cloud for e in self.entries})

    def _check_cloud(self, cloud: str) -> str:
        name = cloud.strip().lower()
        known = self.clouds()
        if name not in known:
            raise InvalidInputError(
                f"unknown cloud {cloud!r}; known clouds: {', '.join(known)}"
            )
        return name

    def sizes(self, cloud: str) -> list[str]:
        """Sizes priced for ``cloud``, in catalog order."""
        name = self._check_cloud(cloud)
        return _unique(e.size for e in self.entries if e.cloud == name)

    def regions(self, cloud: str) -> list[str]:
        """Regions priced for ``cloud``, in catalog order."""
        name = self._check_cloud(cloud)
        return _unique(e.region for e in self.entries if e.cloud == name)

    def default_region(self, cloud: str) -> str:
        """The region used when none is given (the first catalog region if none is declared)."""
        name = self._check_cloud(cloud)
        declared = self.defaults.get(name, {}).get("region")
        return declared or self.regions(name)[0]

    def default_size(self, cloud: str) -> str:
        """The size used when none is given (the first catalog size if none is declared)."""
        name = self._check_cloud(cloud)
        declared = self.defaults.get(name, {}).get("size")
        return declared or self.sizes(name)[0]

    def lookup(self, cloud: str, region: str | None, size: str) -> PriceEntry:
        """The entry for one cloud, region (None: the default) and size.

        Raises:
            InvalidInputError: unknown cloud, size or region; the message lists the known ones.
        """
        name = self._check_cloud(cloud)
        sizes = {s.lower(): s for s in self.sizes(name)}
        canonical_size = sizes.get(size.strip().lower())
        if canonical_size is None:
            raise InvalidInputError(
                f"unknown {name} size {size!r}; known sizes: {', '.join(sizes.values())}"
            )
        wanted_region = (region or self.default_region(name)).strip().lower()
        by_region = {
            e.region.lower(): e
            for e in self.entries
            if e.cloud == name and e.size == canonical_size
        }
        entry = by_region.get(wanted_region)
        if entry is None:
            known = ", ".join(e.region for e in by_region.values())
            raise InvalidInputError(
                f"no {name} price for {canonical_size} in region {region!r}; "
                f"known regions: {known}"
            )
        return entry

    def select(self, cloud: str | None = None, region: str | None = None) -> list[PriceEntry]:
        """Entries filtered by cloud and region (both optional, both validated)."""
        entries = list(self.entries)
        if cloud is not None:
            name = self._check_cloud(cloud)
            entries = [e for e in entries if e.cloud == name]
        if region is not None:
            wanted = region.strip().lower()
            matching = [e for e in entries if e.region.lower() == wanted]
            if not matching:
                known = _unique(e.region for e in entries)
                scope = f" for {cloud}" if cloud else ""
                raise InvalidInputError(
                    f"unknown region {region!r}{scope}; known regions: {', '.join(known)}"
                )
            entries = matching
        return entries

    def to_json(self) -> dict[str, Any]:
        """The catalog as written to disk."""
        data: dict[str, Any] = {
            "schema": CATALOG_SCHEMA,
            "about": list(self.about),
            **dict(self.extra),
            "generated": self.generated,
        }
        if self.refreshed is not None:
            data["refreshed"] = self.refreshed
        data["defaults"] = {k: dict(v) for k, v in self.defaults.items()}
        data["entries"] = [e.to_json() for e in self.entries]
        return data

    @classmethod
    def from_json(cls, data: Any, path: Path) -> PriceCatalog:
        """Build a catalog from its JSON document; ``path`` names it in error messages.

        Raises:
            PriceCatalogError: the document is not a catalog this version can read.
        """
        if not isinstance(data, dict):
            raise PriceCatalogError(path, "not a JSON object")
        schema = data.get("schema")
        if schema != CATALOG_SCHEMA:
            raise PriceCatalogError(path, f"unsupported schema {schema!r} (expected 1)")
        raw_entries = data.get("entries")
        if not isinstance(raw_entries, list) or not raw_entries:
            raise PriceCatalogError(path, "no entries")
        try:
            entries = tuple(PriceEntry.from_json(e) for e in raw_entries)
        except ValueError as exc:
            raise PriceCatalogError(path, str(exc)) from exc
        defaults = data.get("defaults") or {}
        if not isinstance(defaults, dict) or not all(
            isinstance(v, dict) for v in defaults.values()
        ):
            raise PriceCatalogError(path, "'defaults' is not an object of objects")
        known_keys = {"schema", "about", "generated", "refreshed", "defaults", "entries"}
        return cls(
            path=path,
            entries=entries,
            defaults={str(k): {str(a): str(b) for a, b in v.items()} for k, v in defaults.items()},
            generated=str(data.get("generated") or ""),
            refreshed=_opt_str(data.get("refreshed")),
            about=tuple(str(line) for line in data.get("about") or []),
            extra={k: v for k, v in data.items() if k not in known_keys},
        )


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def user_catalog_path() -> Path:
    """Where a refreshed catalog lives: ``$OA_VM_HOME/prices.json``."""
    return state.home() / USER_CATALOG_NAME


def load_catalog(path: Path | None = None) -> PriceCatalog:
    """Load a price catalog.

    Args:
        path: a catalog file to read. None means the user's refreshed copy
            (``$OA_VM_HOME/prices.json``) when it exists, else the catalog shipped with oa-vm.

    Raises:
        PriceCatalogError: the file cannot be read or is not a catalog. A broken user copy is
            reported, never silently replaced by the shipped figures.
    """
    if path is None:
        user = user_catalog_path()
        path = user if user.is_file() else SHIPPED_CATALOG
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PriceCatalogError(path, exc.strerror or str(exc)) from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PriceCatalogError(path, f"not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    return PriceCatalog.from_json(data, path)


def hourly_price(
    cloud: str,
    region: str | None,
    size: str,
    spot: bool = False,
    *,
    catalog: PriceCatalog | None = None,
) -> float:
    """USD per hour for one worker of ``size`` in ``region`` (None: the cloud's default region).

    Raises:
        InvalidInputError: unknown cloud, size or region (the message lists the known ones), or
            spot asked where the catalog has no spot figure.
    """
    return (catalog or load_catalog()).lookup(cloud, region, size).price(spot)


def default_region(cloud: str, *, catalog: PriceCatalog | None = None) -> str:
    """The region prices are looked up in when none is given."""
    return (catalog or load_catalog()).default_region(cloud)


def default_size(cloud: str, *, catalog: PriceCatalog | None = None) -> str:
    """The size prices are looked up for when none is given."""
    return (catalog or load_catalog()).default_size(cloud)


def known_sizes(cloud: str, *, catalog: PriceCatalog | None = None) -> list[str]:
    """Sizes the catalog prices for ``cloud``."""
    return (catalog or load_catalog()).sizes(cloud)


def known_regions(cloud: str, *, catalog: PriceCatalog | None = None) -> list[str]:
    """Regions the catalog prices for ``cloud``."""
    return (catalog or load_catalog()).regions(cloud)


def pool_cost_so_far(record: state.PoolRecord, now: datetime | None = None) -> float:
    """What a pool has cost since it was created; see :func:`oa_vm.pool_cost.pool_cost_so_far`
    (running hours at the worker price, paused days at the storage price)."""
    from oa_vm.pool_cost import pool_cost_so_far as cost

    return cost(record, now)


# --- live figures: parsers (pure) --------------------------------------------------------------


@dataclass(frozen=True)
class LiveQuote:
    """One live hourly price read from a cloud's price source."""

    cloud: str
    region: str
    size: str
    price: float
    spot: bool
    source: str
    effective: str | None = None


def azure_filter(region: str, sizes: Sequence[str]) -> str:
    """The Retail Prices API ``$filter`` for the consumption meters of ``sizes`` in ``region``."""
    skus = " or ".join(f"armSkuName eq '{s}'" for s in sizes)
    return (
        "serviceName eq 'Virtual Machines' and priceType eq 'Consumption' "
        f"and armRegionName eq '{region}' and ({skus})"
    )


def azure_first_url(base: str, region: str, sizes: Sequence[str]) -> str:
    """The first page's URL of the query for ``sizes`` in ``region``."""
    query = urlencode({"$filter": azure_filter(region, sizes)}, quote_via=quote, safe="$'")
    return f"{base}?{query}"


def parse_azure_items(
    items: Iterable[Mapping[str, Any]], sizes: Iterable[str], source: str
) -> list[LiveQuote]:
    """Linux pay-as-you-go and Spot hourly prices from Retail Prices API items.

    Keeps ``Consumption`` meters billed per hour for the wanted sizes, drops Windows (the
    product name says so), Low Priority and DevTest meters; a Spot meter is one whose
    ``skuName`` ends with "Spot". When a meter appears with several effective dates, the latest
    wins.
    """
    wanted = {s.lower(): s for s in sizes}
    best: dict[tuple[str, str, bool], LiveQuote] = {}
    for item in items:
        size = wanted.get(str(item.get("armSkuName", "")).lower())
        if size is None or item.get("type") != "Consumption":
            continue
        if str(item.get("unitOfMeasure", "")).strip().lower() != "1 hour":
            continue
        if "windows" in str(item.get("productName", "")).lower():
            continue
        sku_name = str(item.get("skuName", ""))
        if "low priority" in sku_name.lower():
            continue
        if item.get("currencyCode", "USD") != "USD":
            continue
        price = item.get("retailPrice", item.get("unitPrice"))
        if isinstance(price, bool) or not isinstance(price, int | float) or price < 0:
            continue
        spot = sku_name.lower().endswith("spot")
        region = str(item.get("armRegionName", ""))
        effective = _opt_str(item.get("effectiveStartDate"))
        quote_ = LiveQuote("azure", region, size, float(price), spot, source, effective)
        key = (region.lower(), size, spot)
        current = best.get(key)
        if current is None or (effective or "") > (current.effective or ""):
            best[key] = quote_
    return list(best.values())


def aws_offer_url(base: str, region: str) -> str:
    """The per-region EC2 offer file of AWS's public price list."""
    return base.rstrip("/") + AWS_OFFER_PATH.format(region=region)


def _aws_product_match(product: Any, sizes: Mapping[str, str]) -> tuple[str, str] | None:
    """(size, region) when ``product`` is a shared-tenancy Linux compute instance we price."""
    # Metal sizes are filed as "Compute Instance (bare metal)".
    family = product.get("productFamily") if isinstance(product, dict) else None
    if not isinstance(family, str) or not family.startswith("Compute Instance"):
        return None
    attrs = product.get("attributes")
    if not isinstance(attrs, dict):
        return None
    size = sizes.get(str(attrs.get("instanceType", "")).lower())
    if size is None:
        return None
    wanted = {
        "operatingSystem": "Linux",
        "tenancy": "Shared",
        "preInstalledSw": "NA",
        "capacitystatus": "Used",
    }
    if any(attrs.get(k) != v for k, v in wanted.items()):
        return None
    if attrs.get("licenseModel", "No License required") != "No License required":
        return None
    return size, str(attrs.get("regionCode", ""))


def _aws_hourly_usd(terms: Any) -> tuple[float, str | None] | None:
    """The per-hour USD price in one SKU's on-demand terms (offer code -> term)."""
    if not isinstance(terms, dict):
        return None
    for term in terms.values():
        if not isinstance(term, dict):
            continue
        for dim in (term.get("priceDimensions") or {}).values():
            if not isinstance(dim, dict) or dim.get("unit") not in ("Hrs", "Hours"):
                continue
            usd = (dim.get("pricePerUnit") or {}).get("USD")
            try:
                price = float(str(usd))
            except ValueError:
                continue
            if math.isfinite(price) and price >= 0:
                return price, _opt_str(term.get("effectiveDate"))
    return None


def parse_aws_offer(
    chunks: Iterable[bytes | str], sizes: Iterable[str], source: str
) -> list[LiveQuote]:
    """On-demand Linux hourly prices from an EC2 offer file, read as a stream.

    The document is walked member by member (``products`` then ``terms.OnDemand``) over
    ``ijson``'s parse events, building one product or one SKU's terms at a time, so memory
    stays small however large the file is.
    Reading stops once the on-demand terms are done: the reserved terms that follow are most of
    the file and are not needed.

    Raises:
        ValueError: the stream is not a JSON object of the offer file's shape.
    """
    import ijson  # lazily: only a price refresh reads offer files

    wanted = {s.lower(): s for s in sizes}
    events = _Events(ijson.parse(_ChunkReader(chunks), use_float=True))
    matched: dict[str, tuple[str, str]] = {}
    prices: dict[str, tuple[float, str | None]] = {}
    products_seen = False
    try:
        for key in events.members():
            if key == "products":
                for sku in events.members():
                    found = _aws_product_match(events.value(), wanted)
                    if found is not None:
                        matched[sku] = found
                products_seen = True
            elif key == "terms":
                for term_type in events.members():
                    if term_type != "OnDemand":
                        events.skip()
                        continue
                    for sku in events.members():
                        # Before the products are known every SKU's price is kept (a float
                        # each); the documented layout puts products first, so this is rare.
                        if products_seen and sku not in matched:
                            events.skip()
                            continue
                        hourly = _aws_hourly_usd(events.value())
                        if hourly is not None:
                            prices[sku] = hourly
                    if products_seen:
                        return _aws_quotes(matched, prices, source)
            else:
                events.skip()
    except ijson.JSONError as exc:
        raise ValueError(f"malformed JSON in the price list ({str(exc).splitlines()[0]})") from exc
    return _aws_quotes(matched, prices, source)


class _ChunkReader:
    """A file-like ``read`` over an iterable of byte (or text) chunks, for ``ijson``."""

    def __init__(self, chunks: Iterable[bytes | str]) -> None:
        self._chunks = iter(chunks)
        self._rest = b""

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes (all that is left when negative); b"" at the end."""
        while size < 0 or len(self._rest) < size:
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            self._rest += chunk.encode("utf-8") if isinstance(chunk, str) else chunk
        if size < 0:
            out, self._rest = self._rest, b""
        else:
            out, self._rest = self._rest[:size], self._rest[size:]
        return out


class _Events:
    """Walks an object's members over ``ijson`` parse events, building only the values asked
    for (one product, one SKU's terms) and stepping over the rest in ``ijson``'s C parser."""

    def __init__(self, events: Iterator[tuple[str, str, Any]]) -> None:
        self._events = events

    def _next(self) -> tuple[str, Any]:
        try:
            _, event, value = next(self._events)
        except StopIteration:
            raise ValueError("unexpected end of the price list") from None
        return event, value

    def members(self) -> Iterator[str]:
        """Yield the keys of the object that starts at the next event; the caller consumes
        each key's value (:meth:`value`, :meth:`skip` or a nested :meth:`members`)."""
        event, _ = self._next()
        if event != "start_map":
            raise ValueError(f"expected an object in the price list, found {event}")
        while True:
            event, value = self._next()
            if event == "end_map":
                return
            yield str(value)

    def value(self) -> Any:
        """Build the next value whole."""
        import ijson

        builder = ijson.ObjectBuilder()
        depth = 0
        while True:
            event, value = self._next()
            builder.event(event, value)
            if event in ("start_map", "start_array"):
                depth += 1
            elif event in ("end_map", "end_array"):
                depth -= 1
            if depth == 0:
                return builder.value

    def skip(self) -> None:
        """Step over the next value without building it."""
        depth = 0
        while True:
            event, _ = self._next()
            if event in ("start_map", "start_array"):
                depth += 1
            elif event in ("end_map", "end_array"):
                depth -= 1
            if depth == 0:
                return


def _aws_quotes(
    matched: Mapping[str, tuple[str, str]],
    prices: Mapping[str, tuple[float, str | None]],
    source: str,
) -> list[LiveQuote]:
    quotes = []
    for sku, (size, region) in matched.items():
        if sku in prices:
            price, effective = prices[sku]
            quotes.append(LiveQuote("aws", region, size, price, False, source, effective))
    return quotes


# --- live figures: fetching and merging --------------------------------------------------------

AzureFetch = Callable[[str], Mapping[str, Any]]
"""Fetch one Retail Prices API page (a full URL) and return its decoded JSON."""

AwsFetch = Callable[[str], Iterable[bytes]]
"""Fetch an offer file (a full URL) and return its body as a stream of byte chunks."""


def fetch_json(url: str) -> Mapping[str, Any]:
    """GET ``url`` and decode its JSON body (the default :data:`AzureFetch`)."""
    import requests  # lazily: listing prices never needs it

    response = requests.get(url, timeout=FETCH_TIMEOUT)
    response.raise_for_status()
    data = response.json()
    if not isinstance(data, dict):
        raise ValueError(f"{url} did not answer with a JSON object")
    return data


def fetch_stream(url: str) -> Iterator[bytes]:
    """GET ``url`` and yield its body in 1 MiB chunks (the default :data:`AwsFetch`)."""
    import requests

    with requests.get(url, timeout=FETCH_TIMEOUT, stream=True) as response:
        response.raise_for_status()
        yield from response.iter_content(chunk_size=1 << 20)


def azure_quotes(
    fetch: AzureFetch, base: str, region: str, sizes: Sequence[str]
) -> list[LiveQuote]:
    """All pages of the Azure query for ``sizes`` in ``region``, parsed."""
    url: str | None = azure_first_url(base, region, sizes)
    seen: set[str] = set()
    items: list[Mapping[str, Any]] = []
    pages = 0
    while url:
        if url in seen or pages >= AZURE_MAX_PAGES:
            raise ValueError(f"the Azure price query for {region} does not end (paging loop)")
        seen.add(url)
        pages += 1
        page = fetch(url)
        page_items = page.get("Items")
        if not isinstance(page_items, list):
            raise ValueError("an Azure price page has no 'Items' list")
        items.extend(i for i in page_items if isinstance(i, dict))
        next_link = page.get("NextPageLink")
        url = next_link if isinstance(next_link, str) and next_link else None
    return parse_azure_items(items, sizes, base)


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


def _today(today: date | None) -> str:
    return (today or datetime.now(UTC).date()).isoformat()


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
        dest: where to write (default ``$OA_VM_HOME/prices.json``).
        source: the catalog to start from (default: what :func:`load_catalog` reads).
        today: the date stamped on refreshed figures (default: today, UTC).

    Raises:
        InvalidInputError: an unknown cloud was asked.
        PriceCatalogError: the starting catalog cannot be read.
    """
    catalog = load_catalog(source)
    target = dest or user_catalog_path()
    asked = [catalog._check_cloud(c) for c in (clouds or catalog.clouds())]
    report = RefreshReport(dest=target)
    stamp = _today(today)
    live: dict[tuple[str, str, str, bool], LiveQuote] = {}
    succeeded: list[str] = []
    for cloud in dict.fromkeys(asked):
        sizes, regions = catalog.sizes(cloud), catalog.regions(cloud)
        try:
            quotes = _fetch_cloud(cloud, regions, sizes, azure_fetch, aws_fetch)
        except Exception as exc:  # any failure leaves this cloud as it was
            report.errors[cloud] = _describe_error(exc)
            continue
        succeeded.append(cloud)
        for q in quotes:
            live[(q.cloud, q.region.lower(), q.size, q.spot)] = q
        if cloud == "aws":
            report.kept_spot.append("aws")
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
    azure_fetch: AzureFetch,
    aws_fetch: AwsFetch,
) -> list[LiveQuote]:
    quotes: list[LiveQuote] = []
    if cloud == "azure":
        base = os.environ.get(AZURE_URL_ENV) or AZURE_PRICES_URL
        for region in regions:
            quotes.extend(azure_quotes(azure_fetch, base, region, sizes))
    elif cloud == "aws":
        base = os.environ.get(AWS_URL_ENV) or AWS_PRICES_URL
        for region in regions:
            url = aws_offer_url(base, region)
            quotes.extend(parse_aws_offer(aws_fetch(url), sizes, url))
    else:
        raise ValueError(f"no live price source for {cloud}")
    return quotes


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
                          basis=f"live: {_source_name(entry.cloud)}")
    spot = live.get((entry.cloud, entry.region.lower(), entry.size, True))
    if spot is not None:
        _note_change(report, f"{where} spot", entry.spot, spot.price)
        updated = replace(updated, spot=spot.price, spot_source=spot.source, spot_date=stamp,
                          spot_basis=f"live: {_source_name(entry.cloud)} (Spot meter)")
    elif entry.cloud == "azure":
        report.missing.append(f"{where} spot")
    return updated


def _note_change(report: RefreshReport, what: str, old: float | None, new: float) -> None:
    if old is not None and math.isclose(old, new, rel_tol=0, abs_tol=1e-9):
        report.confirmed += 1
    else:
        report.changed.append(f"{what} {old} -> {new}")


def _source_name(cloud: str) -> str:
    return "Azure Retail Prices API" if cloud == "azure" else "AWS price list offer file"
