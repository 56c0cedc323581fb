"""Fixtures of the cost tests: sample price answers and a loopback server that serves them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support.http_servers import LoopbackHttp

FIXTURES = Path(__file__).resolve().parent / "fixtures"
_REGION_RE = re.compile(r"armRegionName eq '([^']+)'")


def fixture_text(name: str) -> str:
    """The text of one sample answer in ``fixtures/``."""
    return (FIXTURES / name).read_text(encoding="utf-8")


def azure_page(name: str, region: str, next_link: str | None) -> dict[str, Any]:
    """A sample Retail Prices API page, moved to ``region`` and linked to ``next_link``."""
    page: dict[str, Any] = json.loads(fixture_text(name))
    for item in page["Items"]:
        item["armRegionName"] = region
    page["NextPageLink"] = next_link
    return page


@dataclass
class PriceServer:
    """A loopback HTTP server answering like the Azure Retail Prices API and the AWS price list.

    ``/azure?$filter=...`` answers page 1 for the filtered region (linking to page 2);
    ``/aws/offers/v1.0/aws/AmazonEC2/current/<region>/index.json`` answers the sample offer
    file for us-east-1 and 404 for any other region. ``requests`` lists the paths asked.
    """

    base: str
    requests: list[str] = field(default_factory=list)

    @property
    def azure_url(self) -> str:
        """Base URL to put in ``OA_VM_AZURE_PRICES_URL``."""
        return f"{self.base}/azure"

    @property
    def aws_url(self) -> str:
        """Base URL to put in ``OA_VM_AWS_PRICES_URL``."""
        return f"{self.base}/aws"


@pytest.fixture
def price_server() -> Iterator[PriceServer]:
    """Start the loopback price server; stopped when the test ends."""
    server_box: dict[str, PriceServer] = {}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            """Keep test output quiet."""

        def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            srv = server_box["server"]
            srv.requests.append(self.path)
            parts = urlsplit(self.path)
            query = parse_qs(parts.query)
            if parts.path == "/azure":
                if "page" in query:
                    region = query["region"][0]
                    page = azure_page("azure_page2.json", region, None)
                else:
                    match = _REGION_RE.search(query.get("$filter", [""])[0])
                    if match is None:
                        self._send(400, b'{"Error": "bad filter"}')
                        return
                    region = match.group(1)
                    nxt = f"{srv.azure_url}?page=2&region={region}"
                    page = azure_page("azure_page1.json", region, nxt)
                self._send(200, json.dumps(page).encode())
                return
            if parts.path == "/aws/offers/v1.0/aws/AmazonEC2/current/us-east-1/index.json":
                self._send(200, fixture_text("aws_offer_us_east_1.json").encode())
                return
            self._send(404, b'{"message": "not found"}')

    with LoopbackHttp(Handler) as served:
        server = PriceServer(base=served.url)
        server_box["server"] = server
        yield server


SMALL_CATALOG: dict[str, Any] = {
    "schema": 1,
    "about": ["A two-region catalog for the tests."],
    "generated": "2026-01-01",
    "defaults": {
        "aws": {"region": "us-east-1", "size": "m8i.2xlarge"},
        "azure": {"region": "eastus", "size": "Standard_D8s_v5"},
    },
    "entries": [
        {"cloud": "aws", "region": "us-east-1", "size": "m8i.2xlarge", "on_demand": 0.42336,
         "spot": 0.19, "source": "https://aws.amazon.com/ec2/pricing/on-demand/",
         "date": "2026-01-01", "basis": "list price as published",
         "spot_source": "https://aws.amazon.com/ec2/spot/pricing/", "spot_date": "2026-01-01",
         "spot_basis": "estimate"},
        {"cloud": "aws", "region": "us-east-1", "size": "m5.metal", "on_demand": 4.608,
         "spot": 1.8, "source": "https://aws.amazon.com/ec2/pricing/on-demand/",
         "date": "2026-01-01", "basis": "list price as published",
         "spot_source": "https://aws.amazon.com/ec2/spot/pricing/", "spot_date": "2026-01-01",
         "spot_basis": "estimate"},
        {"cloud": "aws", "region": "eu-west-1", "size": "m8i.2xlarge", "on_demand": 0.47187,
         "spot": 0.21, "source": "https://aws.amazon.com/ec2/pricing/on-demand/",
         "date": "2026-01-01", "basis": "derived",
         "spot_source": "https://aws.amazon.com/ec2/spot/pricing/", "spot_date": "2026-01-01",
         "spot_basis": "estimate"},
        {"cloud": "azure", "region": "eastus", "size": "Standard_D8s_v5", "on_demand": 0.384,
         "spot": 0.0768, "source": "https://azure.microsoft.com/pricing/",
         "date": "2026-01-01", "basis": "list price as published",
         "spot_source": "https://azure.microsoft.com/pricing/", "spot_date": "2026-01-01",
         "spot_basis": "estimate"},
        {"cloud": "azure", "region": "eastus", "size": "Standard_D4s_v5", "on_demand": 0.192,
         "spot": 0.0384, "source": "https://azure.microsoft.com/pricing/",
         "date": "2026-01-01", "basis": "list price as published",
         "spot_source": "https://azure.microsoft.com/pricing/", "spot_date": "2026-01-01",
         "spot_basis": "estimate"},
    ],
}


@pytest.fixture
def small_catalog(tmp_path: Path) -> Path:
    """A small catalog file in the test's folder."""
    path = tmp_path / "catalog" / "prices.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(SMALL_CATALOG, indent=2), encoding="utf-8")
    return path
