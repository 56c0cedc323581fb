"""The price catalog: what a worker-hour costs, per cloud, region and size, and where it comes from.

One module per part: :mod:`~oa_vm.cost.pricing.catalog` (the catalog, lookups, errors),
:mod:`~oa_vm.cost.pricing.azure` and :mod:`~oa_vm.cost.pricing.aws` (the live sources),
:mod:`~oa_vm.cost.pricing.refresh` (fetch and merge), :mod:`~oa_vm.cost.pricing.regions` (which
regions each cloud has); the names the CLI, ``oa_vm``'s face and the tests use are re-exported
here.

The catalog ships with the package as a dated data file (``oa_vm/cost/data/prices.json``): USD per
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

from oa_vm.cost.pool_cost import pool_cost_so_far
from oa_vm.cost.pricing.aws import aws_offer_url, parse_aws_offer
from oa_vm.cost.pricing.azure import (
    azure_filter,
    azure_first_url,
    azure_quotes,
    parse_azure_items,
)
from oa_vm.cost.pricing.catalog import (
    AWS_URL_ENV,
    AZURE_URL_ENV,
    SHIPPED_CATALOG,
    PriceCatalog,
    PriceCatalogError,
    PriceEntry,
    PriceRefreshError,
    default_region,
    default_size,
    hourly_price,
    known_regions,
    known_sizes,
    load_catalog,
)
from oa_vm.cost.pricing.refresh import refresh_catalog

__all__ = [
    "AWS_URL_ENV",
    "AZURE_URL_ENV",
    "PriceCatalog",
    "PriceCatalogError",
    "PriceEntry",
    "PriceRefreshError",
    "SHIPPED_CATALOG",
    "aws_offer_url",
    "azure_filter",
    "azure_first_url",
    "azure_quotes",
    "default_region",
    "default_size",
    "hourly_price",
    "known_regions",
    "known_sizes",
    "load_catalog",
    "parse_aws_offer",
    "parse_azure_items",
    "pool_cost_so_far",
    "refresh_catalog",
]
