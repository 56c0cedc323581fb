"""Parsers of live price answers, run on small sample answers written for the tests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from oa_vm.cost import pricing
from tests.unit.cost.conftest import azure_page, fixture_text

AZURE_SIZES = ["Standard_D8s_v5", "Standard_D4s_v5"]


def _azure_items() -> list[dict[str, Any]]:
    return [
        *azure_page("azure_page1.json", "eastus", None)["Items"],
        *azure_page("azure_page2.json", "eastus", None)["Items"],
    ]


def test_azure_linux_consumption_and_spot_latest_first() -> None:
    quotes = pricing.parse_azure_items(_azure_items(), AZURE_SIZES, "src")
    found = {(q.size, q.spot): q.price for q in quotes}
    assert found == {
        # the 2026 meter wins over the 2021 one; Windows, Low Priority, DevTest and
        # Reservation meters and the unwanted E8s_v5 are left out
        ("Standard_D8s_v5", False): 0.396,
        ("Standard_D8s_v5", True): 0.0812,
        ("Standard_D4s_v5", False): 0.2,
    }
    assert {q.region for q in quotes} == {"eastus"}
    assert {q.source for q in quotes} == {"src"}


def test_azure_size_match_ignores_case() -> None:
    quotes = pricing.parse_azure_items(_azure_items(), ["standard_d4s_v5"], "src")
    assert [(q.size, q.price) for q in quotes] == [("standard_d4s_v5", 0.2)]


def test_azure_filter_and_url() -> None:
    text = pricing.azure_filter("westeurope", AZURE_SIZES)
    assert "armRegionName eq 'westeurope'" in text
    assert "(armSkuName eq 'Standard_D8s_v5' or armSkuName eq 'Standard_D4s_v5')" in text
    url = pricing.azure_first_url("https://prices.example", "eastus", ["Standard_D8s_v5"])
    assert url.startswith("https://prices.example?$filter=serviceName%20eq%20'Virtual")


def test_azure_paging_follows_next_page_link() -> None:
    pages: dict[str, dict[str, Any]] = {
        "first": {"Items": _azure_items()[:2], "NextPageLink": "second"},
        "second": {"Items": _azure_items()[2:], "NextPageLink": None},
    }
    asked: list[str] = []

    def fetch(url: str) -> dict[str, Any]:
        key = "first" if "$filter" in url else url
        asked.append(key)
        return pages[key]

    quotes = pricing.azure_quotes(fetch, "https://base", "eastus", AZURE_SIZES)
    assert asked == ["first", "second"]
    assert len(quotes) == 3


def test_azure_paging_loop_is_an_error() -> None:
    def fetch(url: str) -> dict[str, object]:
        return {"Items": [], "NextPageLink": "https://base/again"}

    with pytest.raises(ValueError, match="paging loop"):
        pricing.azure_quotes(fetch, "https://base", "eastus", AZURE_SIZES)


def _chunks(text: str, size: int) -> Iterator[bytes]:
    data = text.encode("utf-8")
    for start in range(0, len(data), size):
        yield data[start : start + size]


@pytest.mark.parametrize("chunk_size", [1, 7, 64, 1 << 20])
def test_aws_offer_stream(chunk_size: int) -> None:
    text = fixture_text("aws_offer_us_east_1.json")
    quotes = pricing.parse_aws_offer(
        _chunks(text, chunk_size), ["m8i.2xlarge", "m5.metal", "c8i.2xlarge"], "offer-url"
    )
    found = {(q.region, q.size): q.price for q in quotes}
    # only shared-tenancy Linux with no capacity reservation; metal's family is "(bare metal)"
    assert found == {("us-east-1", "m8i.2xlarge"): 0.44, ("us-east-1", "m5.metal"): 4.608}
    assert all(not q.spot and q.source == "offer-url" for q in quotes)


def test_aws_offer_stops_after_on_demand_terms() -> None:
    # Anything after the on-demand terms is never read: a broken tail does not matter.
    text = fixture_text("aws_offer_us_east_1.json")
    cut = text.index('"Reserved"')
    quotes = pricing.parse_aws_offer([text[:cut] + "THIS IS NOT JSON"], ["m8i.2xlarge"], "u")
    assert [q.price for q in quotes] == [0.44]


def test_aws_offer_with_terms_before_products() -> None:
    data = json.loads(fixture_text("aws_offer_us_east_1.json"))
    reordered = {"terms": data["terms"], "products": data["products"]}
    quotes = pricing.parse_aws_offer([json.dumps(reordered)], ["m8i.2xlarge"], "u")
    assert [q.price for q in quotes] == [0.44]


def test_aws_offer_handles_non_ascii_split_across_chunks() -> None:
    data = json.loads(fixture_text("aws_offer_us_east_1.json"))
    data["disclaimer"] = "prix \u00e0 l'heure \u2014 \u00e9t\u00e9"
    quotes = pricing.parse_aws_offer(_chunks(json.dumps(data, ensure_ascii=False), 3),
                                     ["m8i.2xlarge"], "u")
    assert [q.price for q in quotes] == [0.44]


@pytest.mark.parametrize("text", ["", "[1, 2]", '{"products": {"a": }', '{"products": {'])
def test_aws_offer_malformed_stream_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        pricing.parse_aws_offer([text], ["m8i.2xlarge"], "u")


def test_aws_offer_url() -> None:
    assert pricing.aws_offer_url("https://pricing.us-east-1.amazonaws.com/", "eu-west-1") == (
        "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/"
        "eu-west-1/index.json"
    )
