"""Azure's live prices: the Retail Prices API (public, no credentials), paged by
``NextPageLink``; pay-as-you-go and Spot meters."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode

from oa_vm.cost.pricing.catalog import (
    AZURE_MAX_PAGES,
    AZURE_PRICES_URL,
    AZURE_URL_ENV,
    FETCH_TIMEOUT,
    LiveQuote,
    PriceSource,
    optional_str,
)
from oa_vm.kit.lazy import requests


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
        effective = optional_str(item.get("effectiveStartDate"))
        quote_ = LiveQuote("azure", region, size, float(price), spot, source, effective)
        key = (region.lower(), size, spot)
        current = best.get(key)
        if current is None or (effective or "") > (current.effective or ""):
            best[key] = quote_
    return list(best.values())


AzureFetch = Callable[[str], Mapping[str, Any]]
"""Fetch one Retail Prices API page (a full URL) and return its decoded JSON."""



def fetch_json(url: str) -> Mapping[str, Any]:
    """GET ``url`` and decode its JSON body (the default :data:`AzureFetch`)."""
    response = requests.get(url, timeout=FETCH_TIMEOUT)
    response.raise_for_status()
    data = response.json()
    if not isinstance(data, dict):
        raise ValueError(f"{url} did not answer with a JSON object")
    return data


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


SOURCE = PriceSource("azure", "Azure Retail Prices API", AZURE_URL_ENV, AZURE_PRICES_URL,
                     azure_quotes, has_spot=True)
"""Azure's Retail Prices API (pay-as-you-go and Spot meters)."""
