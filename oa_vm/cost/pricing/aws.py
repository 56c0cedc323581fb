"""AWS's live prices: the public price list's per-region EC2 offer file, streamed with
``ijson``."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from oa_vm.cost.pricing.catalog import (
    AWS_OFFER_PATH,
    AWS_PRICES_URL,
    AWS_URL_ENV,
    FETCH_TIMEOUT,
    LiveQuote,
    PriceSource,
    optional_str,
)
from oa_vm.kit.lazy import ijson, requests

AwsFetch = Callable[[str], Iterable[bytes]]
"""Fetch an offer file (a full URL) and return its body as a stream of byte chunks."""


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
                return price, optional_str(term.get("effectiveDate"))
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


def fetch_stream(url: str) -> Iterator[bytes]:
    """GET ``url`` and yield its body in 1 MiB chunks (the default :data:`AwsFetch`)."""
    with requests.get(url, timeout=FETCH_TIMEOUT, stream=True) as response:
        response.raise_for_status()
        yield from response.iter_content(chunk_size=1 << 20)


def region_quotes(fetch: AwsFetch, base: str, region: str, sizes: Sequence[str]) -> list[LiveQuote]:
    """The on-demand figures of ``sizes`` in ``region``, from its offer file."""
    url = aws_offer_url(base, region)
    return parse_aws_offer(fetch(url), sizes, url)


SOURCE = PriceSource("aws", "AWS price list offer file", AWS_URL_ENV, AWS_PRICES_URL,
                     region_quotes, has_spot=False)
"""AWS's public price list (spot prices are not in it)."""
