"""The price catalog: entries, the shipped and user catalogs, lookups, errors."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oa_vm.errors import InvalidInputError, OaVmError
from oa_vm.model import state

CATALOG_SCHEMA = 1
SHIPPED_CATALOG = Path(__file__).resolve().parent.parent / "data" / "prices.json"
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
        vcpus, memory_gib: what one machine of the size has (None when the file omits them),
            so a plan can compare sizes without a cloud's API.
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
    vcpus: int | None = None
    memory_gib: float | None = None

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
        return {name: getattr(self, name) for name in (
            "cloud", "region", "size", "vcpus", "memory_gib", "on_demand", "spot", "source",
            "date", "basis", "spot_source", "spot_date", "spot_basis")}

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
            spot_source=optional_str(data.get("spot_source")),
            spot_date=optional_str(data.get("spot_date")),
            spot_basis=optional_str(data.get("spot_basis")),
            vcpus=_opt_count(data.get("vcpus"), f"vcpus of {where}"),
            memory_gib=_opt_memory(data.get("memory_gib"), f"memory_gib of {where}"),
        )


def _price_field(value: Any, what: str) -> float:
    # bool is an int subclass: refuse it explicitly rather than read True as $1/h.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{what} is not a number")
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{what} is negative or not finite")
    return number


def _opt_count(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what} is not a positive whole number")
    return value


def _opt_memory(value: Any, what: str) -> float | None:
    if value is None:
        return None
    number = _price_field(value, what)  # the same rule: a finite number, not negative
    if number == 0:
        raise ValueError(f"{what} is zero")
    return int(number) if number.is_integer() else number  # 32 GiB, not 32.0


def optional_str(value: Any) -> str | None:
    """A JSON field that may be missing or null, as text (``None`` stays ``None``)."""
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

    def check_cloud(self, cloud: str) -> str:
        """``cloud`` as the catalog spells it (any case, spaces trimmed).

        Raises:
            InvalidInputError: the catalog prices no such cloud (the known ones are named).
        """
        name = cloud.strip().lower()
        known = self.clouds()
        if name not in known:
            raise InvalidInputError(
                f"unknown cloud {cloud!r}; known clouds: {', '.join(known)}"
            )
        return name

    def sizes(self, cloud: str) -> list[str]:
        """Sizes priced for ``cloud``, in catalog order."""
        name = self.check_cloud(cloud)
        return _unique(e.size for e in self.entries if e.cloud == name)

    def regions(self, cloud: str) -> list[str]:
        """Regions priced for ``cloud``, in catalog order."""
        name = self.check_cloud(cloud)
        return _unique(e.region for e in self.entries if e.cloud == name)

    def default_region(self, cloud: str) -> str:
        """The region used when none is given (the first catalog region if none is declared)."""
        name = self.check_cloud(cloud)
        declared = self.defaults.get(name, {}).get("region")
        return declared or self.regions(name)[0]

    def default_size(self, cloud: str) -> str:
        """The size used when none is given (the first catalog size if none is declared)."""
        name = self.check_cloud(cloud)
        declared = self.defaults.get(name, {}).get("size")
        return declared or self.sizes(name)[0]

    def lookup(self, cloud: str, region: str | None, size: str) -> PriceEntry:
        """The entry for one cloud, region (None: the default) and size.

        Raises:
            InvalidInputError: unknown cloud, size or region; the message lists the known ones.
        """
        name = self.check_cloud(cloud)
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
                f"known regions: {known}{_did_you_mean(wanted_region, list(by_region))}"
            )
        return entry

    def select(self, cloud: str | None = None, region: str | None = None) -> list[PriceEntry]:
        """Entries filtered by cloud and region (both optional, both validated)."""
        entries = list(self.entries)
        if cloud is not None:
            name = self.check_cloud(cloud)
            entries = [e for e in entries if e.cloud == name]
        if region is not None:
            wanted = region.strip().lower()
            matching = [e for e in entries if e.region.lower() == wanted]
            if not matching:
                known = _unique(e.region for e in entries)
                scope = f" for {cloud}" if cloud else ""
                raise InvalidInputError(
                    f"unknown region {region!r}{scope}; known regions: {', '.join(known)}"
                    f"{_did_you_mean(wanted, [k.lower() for k in known])}"
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
            refreshed=optional_str(data.get("refreshed")),
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


@dataclass(frozen=True)
class PriceSource:
    """Where a cloud's live prices come from, declared by its module (:mod:`.aws`,
    :mod:`.azure`) and read by :mod:`.refresh`."""

    cloud: str
    name: str
    """Said in a refreshed figure's basis (``live: <name>``)."""
    url_env: str
    """The variable that overrides :attr:`url` (tests point it at a loopback server)."""
    url: str
    quotes: Any
    """``quotes(fetch, base_url, region, sizes) -> list[LiveQuote]``: one region's figures."""
    has_spot: bool
    """The source carries spot figures; without them the catalog's are kept, and said so."""


def _did_you_mean(wanted: str, known: list[str]) -> str:
    """`` (did you mean eastus?)`` for a near miss (a typo), else nothing."""
    import difflib

    close = difflib.get_close_matches(wanted, known, n=1, cutoff=0.75)
    return f" (did you mean {close[0]}?)" if close else ""
