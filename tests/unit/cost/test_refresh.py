"""Refreshing the catalog: injected fetches, a loopback price server, and failures."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import requests

from oa_vm.cost import pricing
from oa_vm.errors import InvalidInputError
from tests.unit.cost.conftest import PriceServer, azure_page, fixture_text

TODAY = date(2026, 12, 1)
EMPTY_OFFER = '{"formatVersion": "v1.0", "products": {}, "terms": {"OnDemand": {}}}'


def azure_fetch(url: str) -> Mapping[str, Any]:
    """Answers like the Retail Prices API: two pages per region."""
    if url.startswith("next:"):
        return azure_page("azure_page2.json", url.removeprefix("next:"), None)
    region = "westeurope" if "westeurope" in url else "eastus"
    return azure_page("azure_page1.json", region, f"next:{region}")


def aws_fetch(url: str) -> Iterable[bytes]:
    """The sample offer file for us-east-1; an offer without our sizes elsewhere."""
    text = fixture_text("aws_offer_us_east_1.json") if "/us-east-1/" in url else EMPTY_OFFER
    data = text.encode()
    return (data[i : i + 100] for i in range(0, len(data), 100))


def failing_fetch(url: str) -> Any:
    raise requests.ConnectionError(f"cannot reach {url}")


def test_refresh_updates_figures_and_keeps_aws_spot(small_catalog: Path, tmp_path: Path) -> None:
    dest = tmp_path / "home" / "prices.json"
    report = pricing.refresh_catalog(
        azure_fetch=azure_fetch, aws_fetch=aws_fetch, dest=dest, source=small_catalog,
        today=TODAY,
    )
    assert report.written and not report.errors
    refreshed = pricing.load_catalog(dest)
    assert refreshed.refreshed == "2026-12-01"

    m8i = refreshed.lookup("aws", "us-east-1", "m8i.2xlarge")
    assert (m8i.on_demand, m8i.date) == (0.44, "2026-12-01")
    assert m8i.basis.startswith("live")
    assert "/current/us-east-1/index.json" in m8i.source
    # the public price list has no spot prices: the catalog's dated figure stays
    assert (m8i.spot, m8i.spot_date, m8i.spot_basis) == (0.19, "2026-01-01", "estimate")
    assert report.kept_spot == ["aws"]

    d8s = refreshed.lookup("azure", "eastus", "Standard_D8s_v5")
    assert (d8s.on_demand, d8s.spot, d8s.spot_date) == (0.396, 0.0812, "2026-12-01")
    d4s = refreshed.lookup("azure", "eastus", "Standard_D4s_v5")
    assert d4s.on_demand == 0.2

    # eu-west-1's offer had no m8i: kept as it was, and said so
    eu = refreshed.lookup("aws", "eu-west-1", "m8i.2xlarge")
    assert (eu.on_demand, eu.date) == (0.47187, "2026-01-01")
    assert "aws eu-west-1 m8i.2xlarge on-demand" in report.missing
    # m5.metal's live price equals the catalog's: confirmed, not changed
    assert report.confirmed >= 1
    assert any(line.startswith("aws us-east-1 m8i.2xlarge on-demand 0.42336 -> 0.44")
               for line in report.changed)
    assert "refreshed" in report.summary()


def test_refresh_one_cloud_leaves_the_other(small_catalog: Path, tmp_path: Path) -> None:
    dest = tmp_path / "prices.json"
    report = pricing.refresh_catalog(
        clouds=["azure"], azure_fetch=azure_fetch, aws_fetch=failing_fetch, dest=dest,
        source=small_catalog, today=TODAY,
    )
    assert report.written and report.kept_spot == []
    before = pricing.load_catalog(small_catalog)
    after = pricing.load_catalog(dest)
    assert [e for e in after.entries if e.cloud == "aws"] == [
        e for e in before.entries if e.cloud == "aws"
    ]


def test_failing_fetch_leaves_the_file_untouched(small_catalog: Path, tmp_path: Path) -> None:
    dest = tmp_path / "home" / "prices.json"
    dest.parent.mkdir()
    original = fixture_text("azure_page2.json")  # any content: it must survive byte for byte
    dest.write_text(original, encoding="utf-8")
    mtime = dest.stat().st_mtime_ns

    report = pricing.refresh_catalog(
        azure_fetch=failing_fetch, aws_fetch=failing_fetch, dest=dest, source=small_catalog,
    )
    assert not report.written
    assert set(report.errors) == {"aws", "azure"}
    assert "ConnectionError" in report.errors["azure"]
    assert dest.read_text(encoding="utf-8") == original
    assert dest.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in dest.parent.iterdir()) == ["prices.json"]
    summary = report.summary()
    assert "left as it was" in summary and "\n" not in summary


def test_a_cloud_that_fails_midway_keeps_all_its_figures(
    small_catalog: Path, tmp_path: Path
) -> None:
    def aws_fails_in_europe(url: str) -> Iterable[bytes]:
        if "/eu-west-1/" in url:
            raise requests.Timeout("read timed out")
        return aws_fetch(url)

    dest = tmp_path / "prices.json"
    report = pricing.refresh_catalog(
        azure_fetch=azure_fetch, aws_fetch=aws_fails_in_europe, dest=dest, source=small_catalog,
    )
    assert report.written and set(report.errors) == {"aws"}
    after = pricing.load_catalog(dest)
    assert after.lookup("aws", "us-east-1", "m8i.2xlarge").on_demand == 0.42336
    assert after.lookup("azure", "eastus", "Standard_D8s_v5").on_demand == 0.396


def test_unknown_cloud_is_refused(small_catalog: Path, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="known clouds: aws, azure"):
        pricing.refresh_catalog(clouds=["gcp"], dest=tmp_path / "p.json", source=small_catalog)


def test_refresh_over_loopback_http(
    price_server: PriceServer,
    small_catalog: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(pricing.AZURE_URL_ENV, price_server.azure_url)
    monkeypatch.setenv(pricing.AWS_URL_ENV, price_server.aws_url)
    dest = tmp_path / "prices.json"
    report = pricing.refresh_catalog(dest=dest, source=small_catalog, today=TODAY)

    # Azure answered (two pages); AWS answered us-east-1 but 404 for eu-west-1, so every AWS
    # figure stays as it was.
    assert report.written
    assert report.errors["aws"].startswith("HTTP 404 from http://127.0.0.1:")
    after = pricing.load_catalog(dest)
    assert after.lookup("azure", "eastus", "Standard_D8s_v5").on_demand == 0.396
    assert after.lookup("aws", "us-east-1", "m8i.2xlarge").on_demand == 0.42336
    azure_paths = [p for p in price_server.requests if p.startswith("/azure")]
    assert len(azure_paths) == 2 and "page=2" in azure_paths[1]


def test_refreshed_file_is_a_readable_catalog(
    small_catalog: Path, tmp_path: Path
) -> None:
    dest = tmp_path / "prices.json"
    pricing.refresh_catalog(
        azure_fetch=azure_fetch, aws_fetch=aws_fetch, dest=dest, source=small_catalog,
    )
    data = json.loads(dest.read_text(encoding="utf-8"))
    assert data["schema"] == 1 and data["about"] == ["A two-region catalog for the tests."]
    assert len(data["entries"]) == 5
