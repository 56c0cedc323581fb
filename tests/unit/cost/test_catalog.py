"""The shipped price catalog, lookups, the user's refreshed copy, and a pool's cost so far."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from oa_vm.cost import pricing
from oa_vm.errors import InvalidInputError
from oa_vm.model.state import PoolRecord, PoolState, WorkerRecord

AWS_SIZES = ["m8i.2xlarge", "c8i.2xlarge", "r8i.2xlarge", "m8i.4xlarge", "m5.metal"]
AZURE_SIZES = [
    "Standard_D8s_v5", "Standard_D8ds_v5", "Standard_D8as_v5", "Standard_D8_v3", "Standard_D4s_v5",
    "Standard_D16s_v5",  # a host of four workers (--workers-per-host 4)
]
AWS_REGIONS = ["us-east-1", "us-east-2", "us-west-2", "eu-west-1", "eu-central-1"]
AZURE_REGIONS = ["eastus", "eastus2", "westus2", "westeurope", "northeurope"]
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@pytest.fixture
def shipped(oa_home: Path) -> pricing.PriceCatalog:
    """The catalog shipped with the package (the isolated home has no refreshed copy)."""
    catalog = pricing.load_catalog()
    assert catalog.path == pricing.SHIPPED_CATALOG
    return catalog


def test_shipped_catalog_covers_every_size_and_region(shipped: pricing.PriceCatalog) -> None:
    assert shipped.sizes("aws") == AWS_SIZES
    assert shipped.sizes("azure") == AZURE_SIZES
    assert shipped.regions("aws") == AWS_REGIONS
    assert shipped.regions("azure") == AZURE_REGIONS
    pairs = {(e.cloud, e.region, e.size) for e in shipped.entries}
    assert len(pairs) == len(shipped.entries) == 55


def test_every_entry_names_its_source_date_and_basis(shipped: pricing.PriceCatalog) -> None:
    for e in shipped.entries:
        assert e.source.startswith("https://"), e
        assert ISO_DATE.match(e.date), e
        assert e.basis, e
        assert e.spot is not None and 0 < e.spot < e.on_demand, e
        assert e.spot_source and e.spot_source.startswith("https://"), e
        assert e.spot_date and ISO_DATE.match(e.spot_date), e
        assert e.spot_basis, e


def test_header_says_refresh_replaces_the_figures() -> None:
    data = json.loads(pricing.SHIPPED_CATALOG.read_text(encoding="utf-8"))
    assert "oa-vm prices refresh" in " ".join(data["about"])


def test_anchor_prices(shipped: pricing.PriceCatalog) -> None:
    # M8i lists at 1.05x M7i ($0.4032) in us-east-1; Azure D8s_v5 is $0.384 in East US.
    assert pricing.hourly_price("aws", "us-east-1", "m8i.2xlarge", catalog=shipped) == 0.42336
    assert pricing.hourly_price("azure", "eastus", "Standard_D8s_v5", catalog=shipped) == 0.384
    # derived figures keep the ordering of the families
    assert (
        shipped.lookup("aws", "us-east-1", "c8i.2xlarge").on_demand
        < shipped.lookup("aws", "us-east-1", "m8i.2xlarge").on_demand
        < shipped.lookup("aws", "us-east-1", "r8i.2xlarge").on_demand
    )


def test_defaults(shipped: pricing.PriceCatalog) -> None:
    assert pricing.default_region("aws") == "us-east-1"
    assert pricing.default_region("azure") == "eastus"
    assert pricing.default_size("aws") == "m8i.2xlarge"
    assert pricing.known_sizes("azure") == AZURE_SIZES
    assert pricing.known_regions("aws") == AWS_REGIONS


def test_lookup_is_case_insensitive_and_defaults_the_region(shipped: pricing.PriceCatalog) -> None:
    entry = shipped.lookup("Azure", None, "standard_d8s_v5")
    assert (entry.cloud, entry.region, entry.size) == ("azure", "eastus", "Standard_D8s_v5")


def test_spot_price(shipped: pricing.PriceCatalog) -> None:
    spot = pricing.hourly_price("aws", "us-east-1", "m8i.2xlarge", spot=True, catalog=shipped)
    assert spot == shipped.lookup("aws", "us-east-1", "m8i.2xlarge").spot


@pytest.mark.parametrize(
    ("cloud", "region", "size", "fragment", "listed"),
    [
        ("gcp", None, "n2", "unknown cloud 'gcp'", ["aws", "azure"]),
        ("aws", "us-east-1", "m9.huge", "unknown aws size 'm9.huge'", AWS_SIZES),
        ("azure", "mars", "Standard_D8s_v5", "region 'mars'", AZURE_REGIONS),
    ],
)
def test_unknown_cloud_size_or_region_lists_the_known_ones(
    shipped: pricing.PriceCatalog,
    cloud: str,
    region: str | None,
    size: str,
    fragment: str,
    listed: list[str],
) -> None:
    with pytest.raises(InvalidInputError) as info:
        pricing.hourly_price(cloud, region, size, catalog=shipped)
    message = str(info.value)
    assert fragment in message
    for name in listed:
        assert name in message


def test_user_copy_wins_over_the_shipped_one(oa_home: Path, small_catalog: Path) -> None:
    data = json.loads(small_catalog.read_text(encoding="utf-8"))
    data["entries"][0]["on_demand"] = 0.5
    oa_home.mkdir(parents=True, exist_ok=True)
    (oa_home / "prices.json").write_text(json.dumps(data), encoding="utf-8")
    catalog = pricing.load_catalog()
    assert catalog.path == oa_home / "prices.json"
    assert pricing.hourly_price("aws", "us-east-1", "m8i.2xlarge") == 0.5


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "not a JSON object"),
        ('{"schema": 9, "entries": []}', "unsupported schema"),
        ('{"schema": 1, "entries": [{"cloud": "aws"}]}', "missing"),
    ],
)
def test_a_broken_user_copy_is_reported_not_replaced(
    oa_home: Path, text: str, fragment: str
) -> None:
    oa_home.mkdir(parents=True, exist_ok=True)
    path = oa_home / "prices.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(pricing.PriceCatalogError, match=fragment) as info:
        pricing.load_catalog()
    assert str(path) in str(info.value)
    assert path.read_text(encoding="utf-8") == text


@pytest.mark.parametrize("bad", [-0.1, "0.3", True, None])
def test_a_bad_price_in_a_catalog_is_refused(small_catalog: Path, bad: object) -> None:
    data = json.loads(small_catalog.read_text(encoding="utf-8"))
    data["entries"][1]["on_demand"] = bad
    small_catalog.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(pricing.PriceCatalogError, match="on_demand of aws m5.metal"):
        pricing.load_catalog(small_catalog)


def test_catalog_round_trips(small_catalog: Path) -> None:
    catalog = pricing.load_catalog(small_catalog)
    again = pricing.PriceCatalog.from_json(catalog.to_json(), small_catalog)
    assert again.entries == catalog.entries
    assert again.defaults == catalog.defaults


def test_select_filters_and_validates(small_catalog: Path) -> None:
    catalog = pricing.load_catalog(small_catalog)
    assert {e.region for e in catalog.select(cloud="aws")} == {"us-east-1", "eu-west-1"}
    assert [e.size for e in catalog.select(cloud="azure", region="EASTUS")] == [
        "Standard_D8s_v5", "Standard_D4s_v5",
    ]
    with pytest.raises(InvalidInputError, match="known regions: us-east-1, eu-west-1") as far:
        catalog.select(cloud="aws", region="eastus")
    assert "did you mean" not in str(far.value)
    with pytest.raises(InvalidInputError, match=r"\(did you mean us-east-1\?\)"):
        catalog.select(cloud="aws", region="us-east1")


def test_a_near_miss_region_names_the_closest_known_one(shipped: pricing.PriceCatalog) -> None:
    with pytest.raises(InvalidInputError, match=r"known regions: .*\(did you mean eastus2\?\)"):
        shipped.lookup("azure", "eastus-2", "Standard_D8s_v5")
    with pytest.raises(InvalidInputError) as far:
        shipped.lookup("azure", "mars-1", "Standard_D8s_v5")
    assert "did you mean" not in str(far.value)


# --- pool cost so far --------------------------------------------------------------------------

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def _record(price: float | None, workers: int, expires: datetime | None = None) -> PoolRecord:
    return PoolRecord(
        name="p",
        cloud="aws",
        state=PoolState.READY,
        created_at=T0,
        expires_at=expires,
        price_per_hour=price,
        workers=[WorkerRecord(name=f"w{i}") for i in range(workers)],
    )


def test_pool_cost_is_uptime_times_price_times_workers() -> None:
    record = _record(0.5, 4)
    assert pricing.pool_cost_so_far(record, now=T0 + timedelta(hours=3)) == pytest.approx(6.0)


def test_unpriced_pool_costs_nothing() -> None:
    assert pricing.pool_cost_so_far(_record(None, 4), now=T0 + timedelta(hours=3)) == 0.0


def test_pool_cost_stops_at_expiry() -> None:
    record = _record(1.0, 2, expires=T0 + timedelta(hours=2))
    assert pricing.pool_cost_so_far(record, now=T0 + timedelta(hours=10)) == pytest.approx(4.0)


def test_pool_cost_uses_requested_workers_before_any_is_recorded() -> None:
    record = _record(1.0, 0)
    record.settings["workers"] = 3
    assert pricing.pool_cost_so_far(record, now=T0 + timedelta(hours=1)) == pytest.approx(3.0)


def test_pool_cost_is_never_negative() -> None:
    assert pricing.pool_cost_so_far(_record(1.0, 2), now=T0 - timedelta(hours=1)) == 0.0


def test_shipped_entries_carry_vcpus_and_memory(shipped: pricing.PriceCatalog) -> None:
    from infra.sizes import size_spec

    for entry in shipped.entries:
        assert entry.vcpus and entry.memory_gib, entry
        spec = size_spec(entry.cloud, entry.size)
        if spec is not None:  # the size tables and the catalog agree
            assert (entry.vcpus, entry.memory_gib) == (spec.vcpus, spec.memory_gib), entry
    metal = shipped.lookup("aws", "us-east-1", "m5.metal")
    assert (metal.vcpus, metal.memory_gib) == (96, 384)
    assert pricing.PriceEntry.from_json(metal.to_json()) == metal


@pytest.mark.parametrize(("field", "value"), [("vcpus", 0), ("vcpus", 2.5), ("vcpus", True),
                                              ("memory_gib", -1), ("memory_gib", 0)])
def test_an_impossible_machine_figure_is_refused(
    shipped: pricing.PriceCatalog, field: str, value: object
) -> None:
    data = {**shipped.entries[0].to_json(), field: value}
    with pytest.raises(ValueError, match=field):
        pricing.PriceEntry.from_json(data)
